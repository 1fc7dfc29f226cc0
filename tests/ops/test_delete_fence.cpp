// ObjectStore::removeFenced, vacuum's DELETE (engine/store/object_store.hpp, DeleteFence): the
// directory store deletes only the version the fence names and never after its deadline; S3
// sends nothing after the deadline.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "engine/store/object_store.hpp"
#include "tests/ops/ops_test_support.hpp"
#include "tests/publish/publish_test_support.hpp"
#include "tests/store/s3_test_env.hpp"

using namespace cairn;
using test::World;

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr std::string_view kContent = "the same bytes, written again by a publisher";

DeleteFence fenceFor(std::int64_t modified,
                     SteadyClock::duration sendIn = std::chrono::seconds(1)) {
  const auto now = SteadyClock::now();
  return DeleteFence{modified, now + sendIn, now + sendIn + std::chrono::seconds(1)};
}

std::int64_t modifiedOf(World& w, const std::string& key) {
  auto info = w.run(w.inner->head(key));
  REQUIRE(info.ok());
  return info->modifiedUnixSeconds;
}

std::string freshKey(const char* name) { return "fence-" + Uuid::random().text() + "/" + name; }

}  // namespace

TEST_CASE("directory store: a fenced DELETE removes only the version its HEAD saw",
          "[store][vacuum][late]") {
  World w(std::nullopt);
  const std::string key = freshKey("object");
  REQUIRE(w.run(w.inner->putIfAbsent(key, asBytes(kContent))).ok());
  // Old, as vacuum judged it.
  const std::int64_t old = unixSecondsNow() - 3600;
  const struct timespec times[2] = {{old, 0}, {old, 0}};
  REQUIRE(::utimensat(AT_FDCWD, test::objectFile(w, key).c_str(), times, 0) == 0);
  REQUIRE(modifiedOf(w, key) == old);

  SECTION("unchanged: deleted") {
    REQUIRE(w.run(w.inner->removeFenced(key, fenceFor(old))).ok());
    CHECK_FALSE(exists(w, key));
    SECTION("and a second DELETE of a missing key is ok") {
      CHECK(w.run(w.inner->removeFenced(key, fenceFor(old))).ok());
    }
  }
  SECTION("rewritten since (a publisher relies on it): kept") {
    REQUIRE(w.run(w.inner->rewrite(key, asBytes(kContent))).ok());
    auto r = w.run(w.inner->removeFenced(key, fenceFor(old)));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == StoreStatus::preconditionFailed);
    CHECK_THAT(r.error().message, Catch::Contains("written again"));
    CHECK(exists(w, key));
  }
  SECTION("past its deadline: not deleted, whatever its version") {
    auto r = w.run(w.inner->removeFenced(key, fenceFor(old, -std::chrono::milliseconds(1))));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().status == StoreStatus::preconditionFailed);
    CHECK_THAT(r.error().message, Catch::Contains("after its deadline"));
    CHECK(exists(w, key));
  }
}

TEST_CASE("S3 store: a fenced DELETE is not sent after its deadline", "[store][vacuum][late][s3]") {
  auto url = test::rgwUrlText();
  if (!url) return;
  World w(url);
  const std::string key = freshKey("object");
  REQUIRE(w.run(w.inner->putIfAbsent(key, asBytes(kContent))).ok());
  const std::int64_t modified = modifiedOf(w, key);
  auto late = w.run(w.inner->removeFenced(key, fenceFor(modified, -std::chrono::milliseconds(1))));
  REQUIRE_FALSE(late.ok());
  CHECK(late.error().status == StoreStatus::preconditionFailed);
  CHECK(exists(w, key));
  REQUIRE(w.run(w.inner->removeFenced(key, fenceFor(modified))).ok());
  CHECK_FALSE(exists(w, key));
}
