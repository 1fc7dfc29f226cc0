// The catalog's promise at its edges: a permanent refusal is never answered as transient, an
// Idempotency-Key binds the request it was first used for, and what the service keeps of
// refusals is bounded in bytes.
#include <catch2/catch.hpp>

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>

#include "catalog/lake/directory.hpp"
#include "catalog/rest/key_bindings.hpp"
#include "tests/catalog/catalog_test_support.hpp"

using namespace cairn;
using test::CatalogRig;
using test::HttpReply;

namespace {

constexpr std::string_view kFileScheme = "file://";

std::string pathOf(const std::string& location) {
  REQUIRE(location.starts_with(kFileScheme));
  return location.substr(kFileScheme.size());
}

HttpReply registerAt(CatalogRig& rig, const std::string& name, const std::string& location) {
  return rig.call("POST", "/v1/prod/namespaces/ns/register",
                  R"({"name":")" + name + R"(","metadata-location":")" + location + R"("})");
}

}  // namespace

TEST_CASE("catalog service: register of a directory or a symbolic link is a permanent 400",
          "[catalog]") {
  io::test::TempDir store;
  CatalogRig rig((store.path() / "lake").string());
  REQUIRE(rig.call("POST", "/v1/prod/namespaces", R"({"namespace":["ns"]})").status == 200);
  HttpReply created = rig.call("POST", "/v1/prod/namespaces/ns/tables",
                               R"({"name":"t","schema":{"type":"struct","fields":[]}})");
  REQUIRE(created.status == 200);
  const std::string file(created.json().at("metadata-location").as_string());
  const std::string metadataDir = file.substr(0, file.rfind('/'));
  // A directory inside the lake, and a symbolic link to the table's own metadata file.
  std::filesystem::create_directories(pathOf(metadataDir) + "/a-directory.metadata.json");
  std::filesystem::create_symlink(pathOf(file), pathOf(metadataDir) + "/link.metadata.json");
  for (const std::string& location :
       {metadataDir + "/a-directory.metadata.json", metadataDir + "/link.metadata.json",
        metadataDir + "/absent.metadata.json"}) {
    HttpReply r = registerAt(rig, "copy", location);
    INFO(location << ": " << r.status << " " << r.body);
    CHECK(r.status == 400);
    CHECK(r.errorField("reason") == "no-such-metadata-file");
    CHECK(r.header("retry-after").empty());
  }
}

namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

Headers keyed(const std::string& key) { return {{"Idempotency-Key", key}}; }

const std::string kEmptySchema = R"("schema":{"type":"struct","fields":[]})";
const std::string kSetProperty =
    R"({"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]})";

HttpReply createNamespace(CatalogRig& rig, const std::string& ns, const std::string& key) {
  return rig.call("POST", "/v1/prod/namespaces", R"({"namespace":[")" + ns + R"("]})", keyed(key));
}

void checkReused(const HttpReply& r) {
  INFO(r.status << " " << r.body);
  CHECK(r.status == 422);
  CHECK(r.errorField("reason") == "idempotency-key-reused");
}

std::size_t metricOf(const CatalogRig& rig, const std::string& name) {
  HttpReply m = test::httpRequest(rig.port, "GET", "/metrics");
  REQUIRE(m.status == 200);
  const auto at = m.body.find("\n" + name + " ");
  REQUIRE(at != std::string::npos);
  return static_cast<std::size_t>(std::stod(m.body.substr(at + name.size() + 2)));
}

}  // namespace

TEST_CASE("catalog service: an Idempotency-Key binds the request it was first used for",
          "[catalog]") {
  io::test::TempDir store;
  const std::string path = (store.path() / "lake").string();
  {
    CatalogRig rig(path);
    REQUIRE(createNamespace(rig, "ns", "k-ns").status == 200);
    REQUIRE(createNamespace(rig, "ns", "k-ns").status == 200);  // the same request: its result
    REQUIRE(rig.call("POST", "/v1/prod/namespaces/ns/tables",
                     R"({"name":"t",)" + kEmptySchema + "}", keyed("k-create"))
                .status == 200);
    // A namespace create's 409 is not a commit's answer.
    REQUIRE(createNamespace(rig, "ns", "k-409").status == 409);
    checkReused(rig.call("POST", "/v1/prod/namespaces/ns/tables/t", kSetProperty, keyed("k-409")));
    // A commit's 404 is not a namespace create's, and the namespace is not created under it.
    REQUIRE(rig.call("POST", "/v1/prod/namespaces/ns/tables/none", kSetProperty, keyed("k-404"))
                .status == 404);
    checkReused(createNamespace(rig, "other", "k-404"));
    // Another namespace with a key a namespace create used.
    checkReused(createNamespace(rig, "second", "k-ns"));
    // A commit with the key of its table's create: never the creation's metadata as its 200.
    checkReused(
        rig.call("POST", "/v1/prod/namespaces/ns/tables/t", kSetProperty, keyed("k-create")));
    HttpReply loaded = rig.call("GET", "/v1/prod/namespaces/ns/tables/t");
    REQUIRE(loaded.status == 200);
    const boost::json::value body = loaded.json();
    const auto& metadata = body.at("metadata").as_object();
    const bool applied =
        metadata.contains("properties") && metadata.at("properties").as_object().contains("k");
    CHECK(!applied);
    // A commit repeated with its key: one revision, the same answer.
    HttpReply first =
        rig.call("POST", "/v1/prod/namespaces/ns/tables/t", kSetProperty, keyed("k-commit"));
    REQUIRE(first.status == 200);
    HttpReply again =
        rig.call("POST", "/v1/prod/namespaces/ns/tables/t", kSetProperty, keyed("k-commit"));
    CHECK(again.status == 200);
    CHECK(again.json().at("metadata-location") == first.json().at("metadata-location"));
  }
  // Another process, which holds nothing of the first one's: the logs' records tell.
  CatalogRig fresh(path, false);
  checkReused(createNamespace(fresh, "second", "k-ns"));
  checkReused(
      fresh.call("POST", "/v1/prod/namespaces/ns/tables/t", kSetProperty, keyed("k-create")));
  HttpReply sameCreate = fresh.call("POST", "/v1/prod/namespaces/ns/tables",
                                    R"({"name":"t",)" + kEmptySchema + "}", keyed("k-create"));
  CHECK(sameCreate.status == 200);
  CHECK(createNamespace(fresh, "ns", "k-ns").status == 200);
  HttpReply commitAgain =
      fresh.call("POST", "/v1/prod/namespaces/ns/tables/t", kSetProperty, keyed("k-commit"));
  CHECK(commitAgain.status == 200);
  checkReused(fresh.call("POST", "/v1/prod/namespaces/ns/tables/t",
                         R"({"requirements":[],"updates":[{"action":"set-properties",)"
                         R"("updates":{"k":"other"}}]})",
                         keyed("k-commit")));
  CHECK(fresh.call("GET", "/v1/prod/namespaces/second").status == 404);
  CHECK(fresh.call("GET", "/v1/prod/namespaces/other").status == 404);
}

namespace {

// Two requests with one key at once, made deterministic: once armed, the first head PUT (the
// first request's publication) waits until the test says the second request was answered, or
// until another head PUT comes (the second request got as far as publishing), at most kHold.
constexpr auto kHold = std::chrono::seconds(20);
constexpr auto kPollStep = std::chrono::milliseconds(5);
constexpr std::string_view kHeadSuffix = "current.head";

struct Race {
  std::atomic<bool> armed{false};
  std::atomic<bool> held{false};      // the first head PUT waits
  std::atomic<bool> answered{false};  // the second request has its answer
  std::atomic<int> heads{0};          // head PUTs since armed
  std::atomic<int> logsMade{0};       // of them, the first heads of new logs
};

InterceptStore::Before holding(Race& race) {
  return [&race](StoreOp op, const std::string& key, ByteView,
                 const std::string&) -> boost::asio::awaitable<std::optional<StoreOutcome>> {
    const bool headPut =
        (op == StoreOp::putIfMatch || op == StoreOp::putIfAbsent) && key.ends_with(kHeadSuffix);
    if (!race.armed || !headPut) co_return std::nullopt;
    if (op == StoreOp::putIfAbsent) ++race.logsMade;
    if (++race.heads > 1) co_return std::nullopt;
    race.held = true;
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
    const auto until = std::chrono::steady_clock::now() + kHold;
    while (!race.answered && race.heads < 2 && std::chrono::steady_clock::now() < until) {
      timer.expires_after(kPollStep);
      co_await timer.async_wait(boost::asio::use_awaitable);
    }
    co_return std::nullopt;
  };
}

// `first` sent and held at its head PUT, then `second` sent and answered, then the first's
// answer: {first's, second's}.
std::pair<HttpReply, HttpReply> race2(CatalogRig& rig, Race& race, const std::string& target1,
                                      const std::string& body1, const std::string& target2,
                                      const std::string& body2, const std::string& key) {
  Headers headers = keyed(key);
  headers.emplace_back("Authorization", "Bearer " + rig.writeToken);
  race.armed = true;
  const int first = test::sendRequest(rig.port, "POST", target1, body1, headers);
  const auto until = std::chrono::steady_clock::now() + kHold;
  while (!race.held && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(kPollStep);
  }
  REQUIRE(race.held);
  HttpReply second = rig.call("POST", target2, body2, keyed(key));
  race.answered = true;
  HttpReply firstReply = test::receiveReply(first, "POST");
  return {firstReply, second};
}

bool hasProperty(CatalogRig& rig, const std::string& table) {
  HttpReply loaded = rig.call("GET", "/v1/prod/namespaces/ns/tables/" + table);
  REQUIRE(loaded.status == 200);
  const boost::json::value body = loaded.json();
  const auto& metadata = body.at("metadata").as_object();
  return metadata.contains("properties") && metadata.at("properties").as_object().contains("k");
}

std::string lakeAt(const io::test::TempDir& store) { return (store.path() / "lake").string(); }

}  // namespace

TEST_CASE("catalog service: one Idempotency-Key on two tables at once applies one request",
          "[catalog]") {
  io::test::TempDir store;
  Race race;
  CatalogRig rig([&](boost::asio::io_context&) { return lakeAt(store); }, true, holding(race));
  REQUIRE(rig.call("POST", "/v1/prod/namespaces", R"({"namespace":["ns"]})").status == 200);
  for (const char* name : {"a", "b"}) {
    REQUIRE(rig.call("POST", "/v1/prod/namespaces/ns/tables",
                     R"({"name":")" + std::string(name) + R"(",)" + kEmptySchema + "}")
                .status == 200);
  }
  const auto [first, second] = race2(rig, race, "/v1/prod/namespaces/ns/tables/a", kSetProperty,
                                     "/v1/prod/namespaces/ns/tables/b", kSetProperty, "k-both");
  INFO("first: " << first.status << " " << first.body);
  CHECK(first.status == 200);
  checkReused(second);  // refused while the first is in flight, not applied beside it
  CHECK(hasProperty(rig, "a"));
  CHECK(!hasProperty(rig, "b"));
  // Once the first has its answer, the key stays bound to it.
  checkReused(rig.call("POST", "/v1/prod/namespaces/ns/tables/b", kSetProperty, keyed("k-both")));
  CHECK(!hasProperty(rig, "b"));
}

TEST_CASE(
    "catalog service: one request sent twice at once with its Idempotency-Key is applied "
    "once",
    "[catalog]") {
  io::test::TempDir store;
  Race race;
  CatalogRig rig([&](boost::asio::io_context&) { return lakeAt(store); }, true, holding(race));
  REQUIRE(rig.call("POST", "/v1/prod/namespaces", R"({"namespace":["ns"]})").status == 200);
  const std::string tables = "/v1/prod/namespaces/ns/tables";
  const std::string create = R"({"name":"t",)" + kEmptySchema + "}";
  const auto [first, second] = race2(rig, race, tables, create, tables, create, "k-twice");
  INFO("first: " << first.status << " " << first.body);
  INFO("second: " << second.status << " " << second.body);
  CHECK(first.status == 200);
  // The same request while the first is in flight: retry later, never a second application.
  CHECK(second.status == 503);
  CHECK(second.errorField("reason") == "idempotency-key-in-flight");
  CHECK(second.header("retry-after") == "1");
  CHECK(race.logsMade == 1);  // one table log: the first request's
  // Retried once the first has its answer: that answer, and still one table log.
  HttpReply retry = rig.call("POST", tables, create, keyed("k-twice"));
  REQUIRE(retry.status == 200);
  CHECK(retry.json().at("metadata-location") == first.json().at("metadata-location"));
  CHECK(race.logsMade == 1);
}

TEST_CASE("catalog service: a drop's key binds whether it purges", "[catalog]") {
  io::test::TempDir store;
  CatalogRig rig((store.path() / "lake").string());
  REQUIRE(rig.call("POST", "/v1/prod/namespaces", R"({"namespace":["ns"]})").status == 200);
  REQUIRE(rig.call("POST", "/v1/prod/namespaces/ns/tables", R"({"name":"d",)" + kEmptySchema + "}")
              .status == 200);
  const std::string table = "/v1/prod/namespaces/ns/tables/d";
  REQUIRE(rig.call("DELETE", table, "", keyed("k-drop")).status == 204);
  // The same drop, the default said aloud: its result again.
  CHECK(rig.call("DELETE", table + "?purgeRequested=false", "", keyed("k-drop")).status == 204);
  // A drop that purges is another request: never the kept drop's 204 (its files would stay).
  checkReused(rig.call("DELETE", table + "?purgeRequested=true", "", keyed("k-drop")));
}

TEST_CASE("catalog service: refusals kept for Idempotency-Keys are bounded in bytes", "[catalog]") {
  io::test::TempDir store;
  CatalogRig rig((store.path() / "lake").string());
  constexpr std::size_t kRequests = 40;
  constexpr std::size_t kNameBytes = 512 * 1024;
  const std::string name(kNameBytes, 'n');
  for (std::size_t i = 0; i < kRequests; ++i) {
    HttpReply r =
        rig.call("POST", "/v1/prod/namespaces", R"({"namespace":["a"],")" + name + R"(":1})",
                 keyed("k-" + std::to_string(i)));
    REQUIRE(r.status == 400);
    CHECK(r.body.size() < 4096);  // the quoted name is cut
  }
  const std::size_t bytes = metricOf(rig, "cairn_catalog_idempotency_bytes");
  CHECK(metricOf(rig, "cairn_catalog_idempotency_keys") == kRequests);
  CHECK(bytes > 0);
  CHECK(bytes < kRequests * 4096);
}

TEST_CASE("key bindings: a key binds one request, and is counted in bytes, bounded and expired",
          "[catalog]") {
  using catalog::KeyBindings;
  const Digest one = sha256(asBytes(std::string("one")));
  const Digest two = sha256(asBytes(std::string("two")));
  constexpr std::size_t kBound = 4 * 1024;
  KeyBindings b(kBound, 100);
  const auto t0 = KeyBindings::Clock::now();
  net::ServerResponse refusal;
  refusal.status = 409;
  refusal.body = std::string(1000, 'x');
  b.bind("k1", one, refusal, t0);
  CHECK(b.find("k1", one, t0).kind == KeyBindings::Found::Kind::same);
  REQUIRE(b.find("k1", one, t0).refusal != nullptr);
  CHECK(b.find("k1", one, t0).refusal->status == 409);
  CHECK(b.find("k1", two, t0).kind == KeyBindings::Found::Kind::other);
  CHECK(b.find("k2", one, t0).kind == KeyBindings::Found::Kind::unbound);
  b.bind("k1", two, std::nullopt, t0);  // bound already: the first binding stays
  CHECK(b.find("k1", two, t0).kind == KeyBindings::Found::Kind::other);
  CHECK(b.bytes() >= 1000);
  for (int i = 2; i < 20; ++i) {
    b.bind("k" + std::to_string(i), one, refusal, t0);
    CHECK(b.bytes() <= kBound);
  }
  CHECK(b.find("k1", one, t0).kind == KeyBindings::Found::Kind::unbound);  // the oldest went
  CHECK(b.find("k19", one, t0).kind == KeyBindings::Found::Kind::same);
  // A refusal larger than the whole bound: the key is bound, the refusal not kept.
  net::ServerResponse huge = refusal;
  huge.body = std::string(2 * kBound, 'y');
  b.bind("big", one, huge, t0);
  CHECK(b.find("big", one, t0).kind == KeyBindings::Found::Kind::same);
  CHECK(b.find("big", one, t0).refusal == nullptr);
  CHECK(b.bytes() <= kBound);
  const auto later = t0 + std::chrono::milliseconds(catalog::kIdempotencyLifetimeMs + 1);
  CHECK(b.find("k19", one, later).kind == KeyBindings::Found::Kind::unbound);
  CHECK(b.bytes() == 0);
  CHECK(b.size() == 0);
}

TEST_CASE(
    "key bindings: a key is held from its admission to its answer and the flights are bounded",
    "[catalog]") {
  using catalog::KeyBindings;
  using Kind = KeyBindings::Entered::Kind;
  const Digest one = sha256(asBytes(std::string("one")));
  const Digest two = sha256(asBytes(std::string("two")));
  constexpr std::size_t kInFlight = 2;
  KeyBindings b(KeyBindings::kMaxBytes, KeyBindings::kMaxEntries, kInFlight);
  const auto t0 = KeyBindings::Clock::now();
  {
    auto first = b.enter("k1", one, t0);
    REQUIRE(first.kind == Kind::admitted);
    CHECK(b.enter("k1", one, t0).kind == Kind::flying);
    CHECK(b.enter("k1", two, t0).kind == Kind::other);
    auto second = b.enter("k2", one, t0);
    REQUIRE(second.kind == Kind::admitted);
    CHECK(b.enter("k3", one, t0).kind == Kind::full);
    CHECK(b.inFlight() == 2);
    second.flight.abandon();  // the log showed k2 is another request's: not bound here
    CHECK(b.find("k2", two, t0).kind == KeyBindings::Found::Kind::unbound);
    net::ServerResponse refusal;
    refusal.status = 409;
    first.flight.land(refusal);
    CHECK(b.inFlight() == 0);
    const auto again = b.enter("k1", one, t0);
    CHECK(again.kind == Kind::kept);
    REQUIRE(again.refusal != nullptr);
    CHECK(again.refusal->status == 409);
    CHECK(b.enter("k1", two, t0).kind == Kind::other);
    auto cut = b.enter("k4", one, t0);
    REQUIRE(cut.kind == Kind::admitted);
  }  // k4's flight cut off before its answer: bound to its digest, not in flight
  CHECK(b.inFlight() == 0);
  CHECK(b.find("k4", one, t0).kind == KeyBindings::Found::Kind::same);
  CHECK(b.find("k4", two, t0).kind == KeyBindings::Found::Kind::other);
  CHECK(b.enter("k4", one, t0).kind == Kind::admitted);  // judged afresh
}

TEST_CASE("catalog service: register refuses a file whose schema Java's Schema refuses",
          "[catalog]") {
  io::test::TempDir store;
  CatalogRig rig((store.path() / "lake").string());
  REQUIRE(rig.call("POST", "/v1/prod/namespaces", R"({"namespace":["ns"]})").status == 200);
  HttpReply created = rig.call("POST", "/v1/prod/namespaces/ns/tables",
                               R"({"name":"t","schema":{"type":"struct","fields":[
          {"id":1,"name":"a","required":true,"type":"long"}]}})");
  REQUIRE(created.status == 200);
  boost::json::object m = created.json().at("metadata").as_object();
  const std::string location(m.at("location").as_string());
  const std::string moved = location.substr(0, location.rfind('/')) + "/duplicated";
  m["location"] = moved;
  m["table-uuid"] = "9c12d441-03fe-4693-9a96-a0705ddf69c1";
  m["metadata-log"] = boost::json::array();
  boost::json::array& fields = m["schemas"].as_array()[0].as_object()["fields"].as_array();
  fields.push_back(
      boost::json::object{{"id", 1}, {"name", "b"}, {"required", true}, {"type", "long"}});
  const std::string file = moved + "/metadata/00001-dup.metadata.json";
  std::filesystem::create_directories(pathOf(moved) + "/metadata");
  {
    std::ofstream out(pathOf(file), std::ios::binary);
    out << boost::json::serialize(m);
  }
  HttpReply r = registerAt(rig, "dup", file);
  INFO(r.body);
  CHECK(r.status == 400);
  CHECK(r.errorField("reason") == "invalid-metadata");
  CHECK(rig.call("GET", "/v1/prod/namespaces/ns/tables/dup").status == 404);
}
