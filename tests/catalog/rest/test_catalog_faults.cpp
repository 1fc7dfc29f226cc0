// Table commits through `cairn serve` when the store misbehaves: RGW behind the fault proxy
// (tests/net/fault_proxy.hpp) drops the answer to the head's conditional PUT, resets before
// forwarding it, delays it past the client's timeout, or answers 500, 503 or 409 in its place.
// Each gives the answer docs/design.md §9.1 prescribes: 200 only when the store holds the
// commit, 409 only for a requirement that failed against a state read, 504 when the outcome is
// unknown; and a retry with the same Idempotency-Key after a 504 returns the first result.
#include <catch2/catch.hpp>

#include <atomic>
#include <deque>
#include <mutex>

#include "catalog/format/log_record.hpp"
#include "engine/storelog/log.hpp"
#include "tests/catalog/catalog_test_support.hpp"
#include "tests/net/fault_proxy.hpp"
#include "tests/store/s3_test_env.hpp"

using namespace cairn;
using test::HttpReply;
using test::ProxyAction;
using test::ProxyRequest;

namespace {

namespace http = boost::beast::http;

// Faults for the conditional PUTs of table heads (If-Match on a *-current.head that is not the
// lake log's), or with `lake` of the lake log's head, one planned action per request, then
// forwarding.
class Plan {
 public:
  void set(std::deque<ProxyAction> actions, bool failHeadReads = false, bool lake = false) {
    std::lock_guard lock(mutex_);
    actions_ = std::move(actions);
    failHeadReads_ = failHeadReads;
    lake_ = lake;
    headPuts_ = 0;
  }
  void stopFailingReads() {
    std::lock_guard lock(mutex_);
    failHeadReads_ = false;
  }
  int headPuts() {
    std::lock_guard lock(mutex_);
    return headPuts_;
  }
  ProxyAction decide(const ProxyRequest& r, const std::string& lakeHead) {
    const std::string target(r.target());
    std::lock_guard lock(mutex_);
    const bool tableHead = target.find("-current.head") != std::string::npos &&
                           (target.find(lakeHead) != std::string::npos) == lake_;
    if (tableHead && r.method() == http::verb::put && r.find("If-Match") != r.end()) {
      ++headPuts_;
      if (!actions_.empty()) {
        ProxyAction a = actions_.front();
        actions_.pop_front();
        if (a.kind == ProxyAction::Kind::dropResponse) readAfterPut_ = true;
        return a;
      }
      return {};
    }
    if (tableHead && r.method() == http::verb::get && failHeadReads_ && readAfterPut_) {
      return answer(503, "SlowDown");
    }
    return {};
  }
  static ProxyAction answer(int status, const std::string& code) {
    ProxyAction a;
    a.kind = ProxyAction::Kind::answer;
    const std::string body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" + code +
                             "</Code><Message>injected</Message></Error>";
    a.reply =
        "HTTP/1.1 " + std::to_string(status) + " Injected\r\nContent-Type: application/xml\r\n" +
        "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    return a;
  }
  static ProxyAction of(ProxyAction::Kind kind, std::chrono::milliseconds delay = {}) {
    ProxyAction a;
    a.kind = kind;
    a.delay = delay;
    return a;
  }

 private:
  std::mutex mutex_;
  std::deque<ProxyAction> actions_;
  bool failHeadReads_ = false;
  bool readAfterPut_ = false;
  bool lake_ = false;
  int headPuts_ = 0;
};

struct FaultyCatalog {
  std::string rgw;
  Plan plan;
  std::optional<test::FaultProxy> proxy;
  std::optional<test::CatalogRig> rig;
  std::string table = "/v1/prod/namespaces/ns/tables/t";

  // The proxy lives on the rig's context: it goes after the rig's thread stopped, before the
  // context does.
  ~FaultyCatalog() {
    if (rig) rig->stop();
    proxy.reset();
  }

  explicit FaultyCatalog(std::string rgwUrl) : rgw(std::move(rgwUrl)) {
    auto url = parseStoreUrl(rgw);
    REQUIRE(url.ok());
    const std::string hostPort = url->endpoint.substr(std::string("http://").size());
    const auto colon = hostPort.rfind(':');
    const std::string lakeHead = catalog::lakeLogNamespace("prod").compactHex();
    rig.emplace([&](boost::asio::io_context& io) {
      proxy.emplace(io.get_executor(), hostPort.substr(0, colon),
                    static_cast<std::uint16_t>(std::stoi(hostPort.substr(colon + 1))),
                    [this, lakeHead](const ProxyRequest& r) { return plan.decide(r, lakeHead); });
      return "s3://" + url->bucket + "/" + url->root + "?endpoint=" + proxy->endpoint() +
             "&region=" + url->region + "&dialect=rgw&timeout_ms=1000";
    });
    REQUIRE(rig->call("POST", "/v1/prod/namespaces", R"({"namespace":["ns"]})").status == 200);
    const HttpReply created = rig->call(
        "POST", "/v1/prod/namespaces/ns/tables",
        R"({"name":"t","schema":{"type":"struct","fields":[{"id":1,"name":"a","type":"int","required":false}]}})");
    INFO(created.body);
    REQUIRE(created.status == 200);
  }

  HttpReply commit(const std::string& key, const std::string& value,
                   const std::string& requirements = "[]") {
    return rig->call("POST", table,
                     R"({"requirements":)" + requirements +
                         R"(,"updates":[{"action":"set-properties","updates":{"k":")" + value +
                         R"("}}]})",
                     {{"Idempotency-Key", key}});
  }
  boost::json::object load() {
    HttpReply r = rig->call("GET", table);
    REQUIRE(r.status == 200);
    return r.json().as_object();
  }
  std::string property(const std::string& name) {
    auto props = load().at("metadata").at("properties").as_object();
    return props.contains(name) ? std::string(props.at(name).as_string()) : std::string();
  }
  // The table log's revision, read from RGW directly (not through the proxy or the server).
  std::uint64_t revision() {
    const std::string uuid(load().at("metadata").at("table-uuid").as_string());
    boost::asio::io_context io{1};
    io::Uring uring{io, 8};
    auto url = parseStoreUrl(rgw);
    auto store = openStore(uring, io.get_executor(), *url);
    REQUIRE(store.ok());
    auto id = catalog::LogIdentity::make(*Uuid::parse(uuid), rig->config.publisher,
                                         catalog::tableLogDatabaseId(*Uuid::parse(uuid)));
    REQUIRE(id.ok());
    OperationBudget budget;
    const std::optional<catalog::LogCursor> none;
    const catalog::RecordSink sink;
    const std::function<void()> reset;
    auto read =
        io::test::runToCompletion(io, catalog::readLog(**store, *id, none, sink, reset, budget));
    REQUIRE(read.ok());
    REQUIRE(read->cursor);
    return read->cursor->revision();
  }
};

void checkEnvelope(const HttpReply& r, int status, const std::string& type) {
  INFO(r.body);
  CHECK(r.status == status);
  CHECK(r.header("content-type") == "application/json");
  CHECK(r.errorField("type") == type);
  CHECK(r.errorField("code") == std::to_string(status));
}

}  // namespace

TEST_CASE("catalog faults: every store fault gives a proven answer", "[catalog][rgw]") {
  auto rgw = test::rgwUrlText();
  if (!rgw) return;
  FaultyCatalog c(*rgw);
  using Kind = ProxyAction::Kind;
  REQUIRE(c.revision() == 1);

  SECTION("the answer to the head PUT is dropped after it applied: 200, once") {
    c.plan.set({Plan::of(Kind::dropResponse)});
    HttpReply r = c.commit("k-drop", "dropped");
    INFO(r.body);
    CHECK(r.status == 200);
    CHECK(c.plan.headPuts() == 1);  // settled by reading back, never sent again
    CHECK(c.property("k") == "dropped");
    CHECK(c.revision() == 2);
  }
  SECTION("the answer dropped, no key, a requirement the commit itself breaks: 200, not 409") {
    // Rebasing instead of reading back would re-check assert-last-assigned-field-id on the
    // state the commit made, fail it, and answer 409 for a commit that is in the history.
    c.plan.set({Plan::of(Kind::dropResponse)});
    HttpReply r = c.rig->call(
        "POST", c.table,
        R"({"requirements":[{"type":"assert-last-assigned-field-id","last-assigned-field-id":1}],)"
        R"("updates":[{"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[)"
        R"({"id":1,"name":"a","type":"int","required":false},)"
        R"({"id":2,"name":"b","type":"string","required":false}]}},)"
        R"({"action":"set-current-schema","schema-id":-1}]})");
    INFO(r.body);
    CHECK(r.status == 200);
    CHECK(c.plan.headPuts() == 1);
    CHECK(c.load().at("metadata").at("last-column-id").as_int64() == 2);
    CHECK(c.revision() == 2);
  }
  SECTION("the connection is reset before the PUT is forwarded: the same PUT again, 200") {
    c.plan.set({Plan::of(Kind::resetBeforeForward), Plan::of(Kind::resetBeforeForward)});
    HttpReply r = c.commit("k-reset", "reset");
    INFO(r.body);
    CHECK(r.status == 200);
    CHECK(c.plan.headPuts() == 3);
    CHECK(c.property("k") == "reset");
    CHECK(c.revision() == 2);
  }
  SECTION("the PUT is delayed past the client's timeout and lands late: 200, once") {
    c.plan.set({Plan::of(Kind::forward, std::chrono::milliseconds(2500))});
    HttpReply r = c.commit("k-late", "late");
    INFO(r.body);
    CHECK(r.status == 200);
    std::this_thread::sleep_for(std::chrono::seconds(3));  // the late PUT arrives (and fails)
    CHECK(c.property("k") == "late");
    CHECK(c.revision() == 2);
  }
  SECTION("500 and 503 in the store's place: unanswered, sent again, 200") {
    c.plan.set({Plan::answer(500, "InternalError"), Plan::answer(503, "SlowDown")});
    HttpReply r = c.commit("k-5xx", "after-5xx");
    INFO(r.body);
    CHECK(r.status == 200);
    CHECK(c.property("k") == "after-5xx");
    CHECK(c.revision() == 2);
  }
  SECTION("409 in the store's place: a lost race, rebased on the head read again, 200") {
    c.plan.set({Plan::answer(409, "ConditionalRequestConflict")});
    HttpReply r = c.commit("k-409", "after-409");
    INFO(r.body);
    CHECK(r.status == 200);
    CHECK(c.property("k") == "after-409");
    CHECK(c.revision() == 2);
  }
  SECTION(
      "every PUT unanswered: 504 CommitStateUnknownException, never 409; a retry commits once") {
    c.plan.set({Plan::answer(503, "SlowDown"), Plan::answer(503, "SlowDown"),
                Plan::answer(503, "SlowDown")});
    HttpReply r = c.commit("k-unknown", "unknown");
    checkEnvelope(r, 504, "CommitStateUnknownException");
    CHECK(r.errorField("reason") == "commit-state-unknown");
    CHECK(c.revision() == 1);  // nothing landed
    HttpReply again = c.commit("k-unknown", "unknown");
    INFO(again.body);
    CHECK(again.status == 200);
    CHECK(c.revision() == 2);
  }
  SECTION("the PUT applied, its answer lost, the head unreadable: 504; the retry returns it") {
    c.plan.set({Plan::of(Kind::dropResponse)}, /*failHeadReads=*/true);
    HttpReply r = c.commit("k-504", "landed");
    checkEnvelope(r, 504, "CommitStateUnknownException");
    c.plan.stopFailingReads();
    CHECK(c.revision() == 2);  // it did land
    HttpReply again = c.commit("k-504", "landed");
    INFO(again.body);
    REQUIRE(again.status == 200);
    const std::string location(again.json().at("metadata-location").as_string());
    CHECK(location == std::string(c.load().at("metadata-location").as_string()));
    CHECK(c.revision() == 2);  // no second commit
    CHECK(c.plan.headPuts() == 1);
  }
  // A commit that a rebase cannot apply again on the state it made: a schema whose requirement
  // its own result breaks. Rebased after its first candidate landed, it is answered 409 (a
  // commit in the history refused); an update that applies again would be published twice.
  const std::string addSchema =
      R"({"requirements":[{"type":"assert-last-assigned-field-id","last-assigned-field-id":1}],)"
      R"("updates":[{"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[)"
      R"({"id":1,"name":"a","type":"int","required":false},)"
      R"({"id":2,"name":"b","type":"string","required":false}]}},)"
      R"({"action":"set-current-schema","schema-id":-1}]})";
  SECTION("the PUT applied, answered as a lost race (RGW's 500): read back, 200, once") {
    // A lost race is an answer, not proof that nothing was written: the head is read back.
    ProxyAction raced = Plan::answer(500, "UnknownError");
    raced.kind = Kind::replaceResponse;
    c.plan.set({raced});
    HttpReply r = c.rig->call("POST", c.table, addSchema);
    INFO(r.body);
    CHECK(r.status == 200);
    CHECK(c.plan.headPuts() == 1);
    CHECK(c.load().at("metadata").at("last-column-id").as_int64() == 2);
    CHECK(c.revision() == 2);
  }
  SECTION("the PUT applied, answered 412: the rebase finds its own candidate, 200, once") {
    // No store answers 412 for a write it applied; were one to, the rebase, which reads the
    // history again, finds this request's candidate there and answers with it.
    ProxyAction refused = Plan::answer(412, "PreconditionFailed");
    refused.kind = Kind::replaceResponse;
    c.plan.set({refused});
    HttpReply r = c.rig->call("POST", c.table, addSchema);
    INFO(r.body);
    CHECK(r.status == 200);
    CHECK(c.plan.headPuts() == 1);
    CHECK(c.load().at("metadata").at("last-column-id").as_int64() == 2);
    CHECK(c.revision() == 2);
  }
  SECTION("a requirement that fails against the state read: 409, and nothing is sent") {
    c.plan.set({});
    HttpReply r = c.commit("k-req", "never",
                           R"([{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":7}])");
    checkEnvelope(r, 409, "CommitFailedException");
    CHECK(r.errorField("reason") == "requirement-failed");
    CHECK(c.plan.headPuts() == 0);
    CHECK(c.revision() == 1);
  }
}

// A table's first write on a catalog branch publishes a branch-local log, then registers it in
// the lake log (docs/catalog.md, "Branches"): the faults hit that registration, the lake log's
// conditional PUT. 200 only when the registration is in the lake log, 504 when unknown, and a
// retry with the same Idempotency-Key finds the first result or commits once.
TEST_CASE("catalog faults: a branch's first write under store faults", "[catalog][rgw]") {
  auto rgw = test::rgwUrlText();
  if (!rgw) return;
  FaultyCatalog c(*rgw);
  using Kind = ProxyAction::Kind;
  REQUIRE(c.rig->call("POST", "/v1/prod/branches", R"({"name":"dev"})").status == 200);
  const std::string onDev = "/v1/prod~dev/namespaces/ns/tables/t";
  const std::string mainLocation(c.load().at("metadata-location").as_string());
  auto commitOnDev = [&](const std::string& key) {
    return c.rig->call("POST", onDev,
                       R"({"requirements":[],"updates":[{"action":"set-properties",)"
                       R"("updates":{"on":"dev"}}]})",
                       {{"Idempotency-Key", key}});
  };
  auto forks = [&] {
    HttpReply r = c.rig->call("GET", "/v1/prod/branches/dev");
    REQUIRE(r.status == 200);
    return r.json().at("forked-tables").as_array().size();
  };
  auto versionsOnDev = [&] {
    std::size_t n = 0;
    while (c.rig->call("GET", onDev + "?as-of=version:" + std::to_string(n + 1)).status == 200) {
      ++n;
    }
    return n;
  };
  auto devLocation = [&] {
    HttpReply r = c.rig->call("GET", onDev);
    REQUIRE(r.status == 200);
    return std::string(r.json().at("metadata-location").as_string());
  };

  SECTION("the registration's answer is dropped after it applied: 200, one fork") {
    c.plan.set({Plan::of(Kind::dropResponse)}, false, /*lake=*/true);
    HttpReply r = commitOnDev("k-drop");
    INFO(r.body);
    CHECK(r.status == 200);
    CHECK(c.plan.headPuts() == 1);
    CHECK(forks() == 1);
    CHECK(versionsOnDev() == 1);
    CHECK(devLocation() == std::string(r.json().at("metadata-location").as_string()));
  }
  SECTION("every registration PUT unanswered: 504, nothing registered; the retry commits once") {
    c.plan.set({Plan::answer(503, "SlowDown"), Plan::answer(503, "SlowDown"),
                Plan::answer(503, "SlowDown")},
               false, /*lake=*/true);
    HttpReply r = commitOnDev("k-unknown");
    checkEnvelope(r, 504, "CommitStateUnknownException");
    CHECK(forks() == 0);
    CHECK(devLocation() == mainLocation);  // dev still follows main
    HttpReply again = commitOnDev("k-unknown");
    INFO(again.body);
    CHECK(again.status == 200);
    CHECK(forks() == 1);
    CHECK(versionsOnDev() == 1);
  }
  SECTION(
      "the registration applied, its answer lost, the head unreadable: 504; the retry "
      "returns the first result") {
    c.plan.set({Plan::of(Kind::dropResponse)}, /*failHeadReads=*/true, /*lake=*/true);
    HttpReply r = commitOnDev("k-504");
    checkEnvelope(r, 504, "CommitStateUnknownException");
    c.plan.stopFailingReads();
    CHECK(forks() == 1);  // it did land
    HttpReply again = commitOnDev("k-504");
    INFO(again.body);
    REQUIRE(again.status == 200);
    CHECK(std::string(again.json().at("metadata-location").as_string()) == devLocation());
    CHECK(versionsOnDev() == 1);  // no second commit
    CHECK(c.plan.headPuts() == 1);
  }
  // main never changed.
  CHECK(std::string(c.load().at("metadata-location").as_string()) == mainLocation);
}
