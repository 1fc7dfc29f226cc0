// Helpers shared by the io/ tests: a scratch directory, whole-file access, and running one
// coroutine to completion on an io_context.
#pragma once

#include <stdlib.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/bytes.hpp"

namespace cairn::io::test {

// A fresh directory under the system temp directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cairn-io-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  // Names of the directory's entries.
  std::set<std::string> entries() const {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_)) {
      names.insert(entry.path().filename().string());
    }
    return names;
  }

 private:
  std::filesystem::path path_;
};

inline void writeWholeFile(const std::filesystem::path& path, ByteView bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

inline Bytes readWholeFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A deterministic, position-dependent pattern, so a read at the wrong offset shows.
inline Bytes pattern(std::size_t size, std::uint32_t seed = 1) {
  Bytes bytes(size);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& b : bytes) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::uint8_t>(x >> 24);
  }
  return bytes;
}

// Runs task on context until the context runs out of work; returns the task's value and
// rethrows its exception.
template <class T>
T runToCompletion(boost::asio::io_context& context, boost::asio::awaitable<T> task) {
  std::optional<T> result;
  std::exception_ptr error;
  boost::asio::co_spawn(
      context, [&]() -> boost::asio::awaitable<void> { result.emplace(co_await std::move(task)); },
      [&](std::exception_ptr e) { error = e; });
  context.restart();
  context.run();
  if (error) std::rethrow_exception(error);
  if (!result) throw std::logic_error("coroutine did not finish");
  return std::move(*result);
}

}  // namespace cairn::io::test
