// Retention plans (catalog/maintenance/retention.hpp) against Iceberg's RemoveSnapshots rules, and
// the catalog's holds.
#include <catch2/catch.hpp>

#include <string>

#include "catalog/maintenance/retention.hpp"

using namespace cairn;
using namespace cairn::catalog;

namespace {

constexpr std::int64_t kDay = 24LL * 3600 * 1000;
constexpr std::int64_t kNow = 1'800'000'000'000;

// A v2 table with snapshots 1 <- 2 <- 3 <- 4 on main (one a day, 4 the newest, 1 day old),
// snapshot 10 on branch "dev" (child of 2, 2 days old), 20 tagged "t" (30 days old), and 30
// referenced by nothing (8 days old), with `properties` and `refs`.
TableMetadata table(const std::string& properties, const std::string& refs) {
  auto snapshot = [](std::int64_t id, std::optional<std::int64_t> parent, std::int64_t age) {
    return R"({"snapshot-id":)" + std::to_string(id) +
           (parent ? R"(,"parent-snapshot-id":)" + std::to_string(*parent) : std::string()) +
           R"(,"sequence-number":)" + std::to_string(id) + R"(,"timestamp-ms":)" +
           std::to_string(kNow - age) +
           R"(,"manifest-list":"s3://b/t/m.avro","summary":{"operation":"append"},"schema-id":0})";
  };
  // Main's history, as a table that got there by commits has it (a current snapshot has the
  // snapshot log's latest entry).
  auto logEntry = [](std::int64_t id, std::int64_t age) {
    return R"({"snapshot-id":)" + std::to_string(id) + R"(,"timestamp-ms":)" +
           std::to_string(kNow - age) + "}";
  };
  const std::string text =
      R"({"format-version":2,"table-uuid":"9b2e0f37-1b7c-4d4f-a0f5-6c43a8c3c3a1",)"
      R"("location":"s3://b/t","last-sequence-number":40,"last-updated-ms":)" +
      std::to_string(kNow) +
      R"(,"last-column-id":1,"current-schema-id":0,"schemas":[{"type":"struct","schema-id":0,)"
      R"("fields":[{"id":1,"name":"a","required":false,"type":"int"}]}],"default-spec-id":0,)"
      R"("partition-specs":[{"spec-id":0,"fields":[]}],"last-partition-id":999,)"
      R"("default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}],"properties":)" +
      properties + R"(,"current-snapshot-id":4,"refs":)" + refs + R"(,"snapshots":[)" +
      snapshot(1, std::nullopt, 4 * kDay) + "," + snapshot(2, 1, 3 * kDay) + "," +
      snapshot(3, 2, 2 * kDay) + "," + snapshot(4, 3, 1 * kDay) + "," + snapshot(10, 2, 2 * kDay) +
      "," + snapshot(20, std::nullopt, 30 * kDay) + "," + snapshot(30, std::nullopt, 8 * kDay) +
      R"(],"snapshot-log":[)" + logEntry(1, 4 * kDay) + "," + logEntry(2, 3 * kDay) + "," +
      logEntry(3, 2 * kDay) + "," + logEntry(4, 1 * kDay) + R"(],"metadata-log":[]})";
  auto m = parseTableMetadata(text);
  INFO((m ? std::string() : m.error().message));
  REQUIRE(m.ok());
  return *m;
}

const std::string kRefs =
    R"({"main":{"snapshot-id":4,"type":"branch"},"dev":{"snapshot-id":10,"type":"branch"},)"
    R"("t":{"snapshot-id":20,"type":"tag"}})";

}  // namespace

TEST_CASE("retention: Iceberg's rules by default", "[catalog][retention]") {
  // Max age 5 days, keep 1: main keeps 4..1 (all younger than 5 days), dev keeps 10 and its
  // ancestors 2 and 1; the tag keeps 20; 30 is unreferenced and 8 days old: it expires.
  auto plan = planRetention(table("{}", kRefs), kNow, {});
  REQUIRE(plan.ok());
  CHECK(plan->snapshotsToRemove == std::vector<std::int64_t>{30});
  CHECK(plan->refsToRemove.empty());
}

TEST_CASE("retention: ages, counts and ref ages from the properties and the refs",
          "[catalog][retention]") {
  // Max age 1.5 days, keep 2: main keeps 4 (young) and 3 (the second); 2 and 1 only through dev
  // (10 is 2 days old but dev keeps 2 snapshots: 10 and 2); 1 goes.
  const std::string props = R"({"history.expire.max-snapshot-age-ms":")" +
                            std::to_string(kDay * 3 / 2) +
                            R"(","history.expire.min-snapshots-to-keep":"2"})";
  auto plan = planRetention(table(props, kRefs), kNow, {});
  REQUIRE(plan.ok());
  CHECK(plan->snapshotsToRemove == std::vector<std::int64_t>{1, 30});
  // A tag older than the table's max ref age goes, and its snapshot with it.
  const std::string refAge =
      R"({"history.expire.max-ref-age-ms":")" + std::to_string(10 * kDay) + R"("})";
  auto tagged = planRetention(table(refAge, kRefs), kNow, {});
  REQUIRE(tagged.ok());
  CHECK(tagged->refsToRemove == std::vector<std::string>{"t"});
  CHECK(tagged->snapshotsToRemove == std::vector<std::int64_t>{20, 30});
  // A ref's own min-snapshots-to-keep and max-snapshot-age-ms win over the table's.
  const std::string own =
      R"({"main":{"snapshot-id":4,"type":"branch","min-snapshots-to-keep":4,"max-snapshot-age-ms":1}})";
  auto main = planRetention(table(props, own), kNow, {});
  REQUIRE(main.ok());
  CHECK(main->snapshotsToRemove == std::vector<std::int64_t>{10, 20, 30});
  // main never goes, whatever its age.
  const std::string oldMain = R"({"main":{"snapshot-id":4,"type":"branch","max-ref-age-ms":1}})";
  auto kept = planRetention(table("{}", oldMain), kNow, {});
  REQUIRE(kept.ok());
  CHECK(kept->refsToRemove.empty());
}

TEST_CASE("retention: the catalog's holds win, and gc.enabled=false refuses",
          "[catalog][retention]") {
  const std::string props = R"({"history.expire.max-snapshot-age-ms":")" +
                            std::to_string(kDay * 3 / 2) +
                            R"(","history.expire.min-snapshots-to-keep":"2"})";
  auto plan = planRetention(table(props, kRefs), kNow, {30, 1});
  REQUIRE(plan.ok());
  CHECK(plan->snapshotsToRemove.empty());
  CHECK(plan->keptForTheCatalog == std::vector<std::int64_t>{1, 30});
  auto off = planRetention(table(R"({"gc.enabled":"false"})", kRefs), kNow, {});
  REQUIRE(!off.ok());
  CHECK(off.error().code == Errc::usage);
  auto bad =
      planRetention(table(R"({"history.expire.min-snapshots-to-keep":"x"})", kRefs), kNow, {});
  CHECK(!bad.ok());
}

TEST_CASE("retention: the commit pins the state the plan was made on", "[catalog][retention]") {
  TableMetadata m = table("{}", kRefs);
  RetentionPlan plan;
  plan.refsToRemove = {"t"};
  plan.snapshotsToRemove = {20, 30};
  CommitTableRequest c = retentionCommit(m, plan);
  REQUIRE(c.requirements.size() == 4);  // the uuid and the three refs
  CHECK(c.requirements[0].kind == TableRequirement::Kind::assertTableUuid);
  CHECK(checkRequirements(m, c.requirements).ok());
  auto applied = applyUpdates(m, c.updates, kNow, std::nullopt);
  INFO((applied ? std::string() : applied.error().message));
  REQUIRE(applied.ok());
  CHECK(applied->metadata.snapshots.size() == 5);
  CHECK(!applied->metadata.refs.count("t"));
  // A commit that moved main meanwhile makes the plan's commit fail (409): it is made again.
  TableMetadata moved = m;
  moved.refs.at("main").snapshotId = 3;
  CHECK(checkRequirements(moved, c.requirements).error().code == Errc::conflict);
}
