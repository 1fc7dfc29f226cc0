// Helpers shared by the ops/ tests: a database with a few published revisions (the World of
// tests/publish/publish_test_support.hpp), a second directory store beside it, and direct
// access to the objects a store holds, as a test checks and damages them.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/format/keys.hpp"
#include "engine/publish/publisher.hpp"
#include "engine/store/object_store.hpp"
#include "engine/store/open_store.hpp"
#include "tests/publish/publish_test_support.hpp"

namespace cairn::test {

// One database publishing to the World's store: a checkpoint after each round of records
// (round i appends rounds[i] records tagged "round i").
struct Published {
  World w;
  Db db;
  std::vector<PublishResult> revisions;  // revisions[0] is revision 1

  explicit Published(std::optional<std::string> storeUrl = std::nullopt,
                     const std::vector<int>& rounds = {300, 200})
      : w(std::move(storeUrl)) {
    db = w.create("db");
    for (std::size_t i = 0; i < rounds.size(); ++i) {
      w.append(db, rounds[i], "round " + std::to_string(i));
      auto r = w.checkpoint(db);
      REQUIRE(r.ok());
      REQUIRE(r->outcome == PublishOutcome::selected);
      revisions.push_back(*r);
    }
  }
  const Head& head(std::size_t revision) const { return revisions.at(revision - 1).head; }
  const Head& newest() const { return revisions.back().head; }
};

// The payloads World::append wrote for `rounds` (as Published did), in no particular order.
inline std::multiset<std::string> payloadsOf(const std::vector<int>& rounds) {
  std::multiset<std::string> all;
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    for (int n = 0; n < rounds[i]; ++n) {
      all.insert("round " + std::to_string(i) + " " + std::to_string(n));
    }
  }
  return all;
}

// Whether the World's store answers a HEAD of `key` (through its inner store, uncounted).
inline bool exists(World& w, const std::string& key) { return w.run(w.inner->head(key)).ok(); }

// The file that holds `key` in the World's directory store.
inline std::filesystem::path objectFile(const World& w, const std::string& key) {
  return w.tmp.path() / "store" / key;
}

// Flips the low bit of the byte at `at` (from the end when negative) of a file.
inline void flipByte(const std::filesystem::path& file, std::int64_t at) {
  const auto size = static_cast<std::int64_t>(std::filesystem::file_size(file));
  const std::int64_t offset = at < 0 ? size + at : at;
  REQUIRE(offset >= 0);
  REQUIRE(offset < size);
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char c = 0;
  f.get(c);
  f.seekp(offset);
  f.put(static_cast<char>(c ^ 1));
  REQUIRE(f.good());
}

// Another directory store, at `name` in the World's scratch directory.
inline std::unique_ptr<ObjectStore> openDirectoryStore(World& w, const std::string& name) {
  auto opened = openStore(w.uring, w.context.get_executor(), (w.tmp.path() / name).string(),
                          StoreCreation::createIfMissing);
  REQUIRE(opened.ok());
  return std::move(*opened);
}

// Every key under `prefix` in `store`, in key order (every page).
inline std::vector<std::string> keysUnder(World& w, ObjectStore& store, const std::string& prefix) {
  std::vector<std::string> keys;
  std::string continuation;
  do {
    auto page = w.run(store.list(prefix, continuation, kMaxListPage));
    REQUIRE(page.ok());
    for (const auto& o : page->objects) keys.push_back(o.key);
    continuation = page->continuation;
  } while (!continuation.empty());
  return keys;
}

// Every object of the World's namespace in `store`: key -> bytes.
inline std::map<std::string, Bytes> objectsOf(World& w, ObjectStore& store) {
  std::map<std::string, Bytes> objects;
  for (const auto& key : keysUnder(w, store, keys::namespacePrefix(w.ns))) {
    auto got = w.run(store.get(key, std::uint64_t{1} << 30));
    REQUIRE(got.ok());
    objects[key] = std::move(got->bytes);
  }
  return objects;
}

// The segment keys of the World's namespace in `store`.
inline std::set<std::string> segmentKeys(World& w, ObjectStore& store) {
  auto keys = keysUnder(w, store, keys::namespacePrefix(w.ns) + "segment-");
  return {keys.begin(), keys.end()};
}

// The names in a directory; none when it does not exist.
inline std::set<std::string> entriesOf(const std::filesystem::path& dir) {
  std::set<std::string> names;
  if (!std::filesystem::exists(dir)) return names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.insert(e.path().filename().string());
  }
  return names;
}

// The current head object's bytes in `store` (std::nullopt when there is none).
inline std::optional<Bytes> currentHeadBytes(World& w, ObjectStore& store) {
  auto got = w.run(store.get(keys::currentHead(w.ns), 4096));
  if (!got) {
    REQUIRE(got.error().status == StoreStatus::missing);
    return std::nullopt;
  }
  return got->bytes;
}

inline Bytes imageOf(const Head& h) { return Bytes(h.image().begin(), h.image().end()); }

}  // namespace cairn::test
