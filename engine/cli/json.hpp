// A small JSON object writer for --json output: one object, keys in the order written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cairn::cli {

class JsonObject {
 public:
  JsonObject& add(std::string_view key, std::string_view value);
  JsonObject& add(std::string_view key, const char* value) {
    return add(key, std::string_view(value));
  }
  JsonObject& add(std::string_view key, std::uint64_t value);
  JsonObject& add(std::string_view key, std::int64_t value);
  JsonObject& add(std::string_view key, int value) { return add(key, std::int64_t{value}); }
  JsonObject& add(std::string_view key, double value);
  JsonObject& add(std::string_view key, bool value);
  JsonObject& addNull(std::string_view key);
  // `json` must already be valid JSON (a nested object or array).
  JsonObject& addRaw(std::string_view key, std::string_view json);
  std::string str() const { return body_ + "}"; }

 private:
  void key(std::string_view k);
  std::string body_ = "{";
};

std::string jsonString(std::string_view s);

}  // namespace cairn::cli
