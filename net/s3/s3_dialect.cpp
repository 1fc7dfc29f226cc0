#include "net/s3/s3_dialect.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <random>

#include "net/s3/s3_client.hpp"

namespace cairn::net {

std::string_view dialectName(S3Dialect dialect) {
  switch (dialect) {
    case S3Dialect::aws:
      return "aws";
    case S3Dialect::rgw:
      return "rgw";
  }
  return "unknown";
}

std::string ifMatchValue(S3Dialect dialect, std::string_view strongEtag) {
  // RGW compares the raw header with its stored ETag, which has no quotes.
  if (dialect == S3Dialect::rgw && strongEtag.size() >= 2 && strongEtag.front() == '"' &&
      strongEtag.back() == '"') {
    return std::string(strongEtag.substr(1, strongEtag.size() - 2));
  }
  return std::string(strongEtag);
}

bool isLostConditionalRace(S3Dialect dialect, int http, std::string_view code) {
  if (http == 409) return true;  // AWS: ConditionalRequestConflict
  // RGW: the RADOS compare-and-swap lost (ECANCELED inside) and surfaces as a 500.
  return dialect == S3Dialect::rgw && http == 500 && code == "UnknownError";
}

std::string_view probeVerdictName(ProbeVerdict v) {
  switch (v) {
    case ProbeVerdict::enforced:
      return "enforced";
    case ProbeVerdict::notEnforced:
      return "not-enforced";
    case ProbeVerdict::undetermined:
      return "undetermined";
  }
  return "undetermined";
}

std::string ProbeReport::verdictLine() const {
  const ProbeCheck* first = nullptr;
  for (const auto& c : checks) {
    if (!c.passed && (!first || (c.violation && !first->violation))) first = &c;
  }
  switch (verdict) {
    case ProbeVerdict::enforced:
      return "conditional writes are enforced (dialect " +
             std::string(dialect ? dialectName(*dialect) : "none") + ")";
    case ProbeVerdict::notEnforced:
      return "conditional writes are NOT enforced: the store accepted a write it had to refuse (" +
             (first ? first->name + ": " + first->detail : std::string("?")) + ")";
    case ProbeVerdict::undetermined:
      break;
  }
  return "whether conditional writes are enforced could not be determined (" +
         (first ? first->name + ": " + first->detail : std::string("no check ran")) + ")";
}

std::string ProbeReport::summary() const {
  std::string out = verdictLine() + "; scratch keys " +
                    (cleanedUp ? "deleted" : "left behind (delete the probe's keys)") + "\n";
  for (const auto& c : checks) {
    out += (c.passed      ? "  pass  "
            : c.violation ? "  FAIL  "
                          : "  ????  ") +
           c.name + ": " + c.detail + "\n";
  }
  return out;
}

namespace {

namespace asio = boost::asio;

// Writers per race: enough to collide, few enough for any store.
constexpr int kRaceWriters = 4;
// The probe's objects are tiny; a bigger answer is wrong.
constexpr std::size_t kMaxProbeObjectBytes = 4096;

std::string describe(const S3Outcome& o) {
  std::string out(statusName(o.status));
  if (o.http != 0)
    out += " (HTTP " + std::to_string(o.http) + (o.code.empty() ? "" : " " + o.code) + ")";
  return out;
}

bool refused(const S3Outcome& o) {
  return o.status == S3Status::preconditionFailed || o.status == S3Status::conflict;
}

class Probe {
 public:
  Probe(S3Client& client, std::string prefix) : client_(client) {
    std::random_device random;
    const std::string run = std::to_string(random()) + std::to_string(random());
    const std::string base = prefix + "cairn-probe-" + run;
    casKey_ = base + "-cas";
    raceKey_ = base + "-race";
    absentKey_ = base + "-absent";
  }

  asio::awaitable<ProbeReport> run() {
    const bool created = co_await createChecks();
    if (created) co_await ifMatchChecks();
    co_await createRaceCheck();
    co_await cleanUp();
    bool all = report_.dialect.has_value() && !report_.checks.empty();
    bool violated = false;
    for (const auto& c : report_.checks) {
      all = all && c.passed;
      violated = violated || c.violation;
    }
    report_.verdict = violated ? ProbeVerdict::notEnforced
                      : all    ? ProbeVerdict::enforced
                               : ProbeVerdict::undetermined;
    report_.enforced = report_.verdict == ProbeVerdict::enforced;
    co_return std::move(report_);
  }

 private:
  // If-None-Match: * creates an absent key and refuses a present one.
  asio::awaitable<bool> createChecks() {
    Bytes first = nextBody();
    auto created = co_await client_.put(casKey_, first, PutCondition::ifNoneMatch);
    check("If-None-Match: * creates an absent key", created.outcome.ok(),
          describe(created.outcome));
    if (!created.outcome.ok()) co_return false;
    current_ = created.etag;
    stale_ = created.etag;
    lastBody_ = first;

    auto again = co_await client_.put(casKey_, nextBody(), PutCondition::ifNoneMatch);
    check("If-None-Match: * refuses a present key (412)",
          again.outcome.status == S3Status::preconditionFailed, describe(again.outcome),
          again.outcome.ok());
    co_return co_await contentIsLastWrite(
        "the PUT's ETag is the stored ETag, refused writes left it");
  }

  // If-Match: which form works, stale and absent refused, a race has one winner.
  asio::awaitable<void> ifMatchChecks() {
    S3Config awsConfig = client_.config();
    awsConfig.dialect = S3Dialect::aws;
    S3Config rgwConfig = client_.config();
    rgwConfig.dialect = S3Dialect::rgw;
    S3Client aws(client_.executor(), awsConfig);
    S3Client rgw(client_.executor(), rgwConfig);

    Bytes quotedBody = nextBody();
    auto quoted = co_await aws.put(casKey_, quotedBody, PutCondition::ifMatch, current_);
    std::string detail = "quoted: " + describe(quoted.outcome);
    S3Client* chosen = nullptr;
    if (quoted.outcome.ok()) {
      report_.dialect = S3Dialect::aws;
      chosen = &aws;
      accept(quoted, quotedBody);
    } else {
      Bytes bareBody = nextBody();
      auto bare = co_await rgw.put(casKey_, bareBody, PutCondition::ifMatch, current_);
      detail += "; bare: " + describe(bare.outcome);
      if (bare.outcome.ok()) {
        report_.dialect = S3Dialect::rgw;
        chosen = &rgw;
        accept(bare, bareBody);
      }
    }
    check("If-Match with the current ETag succeeds", chosen != nullptr, detail);
    if (chosen == nullptr) co_return;

    auto stale = co_await chosen->put(casKey_, nextBody(), PutCondition::ifMatch, stale_);
    check("If-Match with a stale ETag is refused", refused(stale.outcome), describe(stale.outcome),
          stale.outcome.ok());
    auto absent = co_await chosen->put(absentKey_, nextBody(), PutCondition::ifMatch, current_);
    check("If-Match on an absent key is refused",
          refused(absent.outcome) || absent.outcome.status == S3Status::missing,
          describe(absent.outcome), absent.outcome.ok());
    co_await contentIsLastWrite("refused If-Match writes changed nothing");

    auto race1 = co_await race(*chosen, casKey_, PutCondition::ifMatch, current_);
    check("racing If-Match writers on one ETag: exactly one wins", race1.winners == 1, race1.detail,
          race1.violation);
  }

  asio::awaitable<void> createRaceCheck() {
    auto race2 = co_await race(client_, raceKey_, PutCondition::ifNoneMatch, {});
    check("racing If-None-Match: * writers: exactly one wins", race2.winners == 1, race2.detail,
          race2.violation);
  }

  struct RaceResult {
    int winners = 0;         // -1: an answer was neither a success nor a refusal
    bool violation = false;  // more than one success, or the stored object is not the winner's
    std::string detail;
  };

  // kRaceWriters concurrent conditional PUTs with distinct bodies: the number of ok answers
  // (-1 if any answer is neither ok nor a refusal), and whether what the store did proves it
  // accepted a write it had to refuse.
  asio::awaitable<RaceResult> race(S3Client& writer, const std::string& key, PutCondition condition,
                                   std::string etag) {
    std::vector<Bytes> bodies;
    for (int i = 0; i < kRaceWriters; ++i) bodies.push_back(nextBody());
    std::vector<S3Object> results(bodies.size());
    std::size_t pending = bodies.size();
    asio::steady_timer allDone(writer.executor(), asio::steady_timer::time_point::max());
    for (std::size_t i = 0; i < bodies.size(); ++i) {
      asio::co_spawn(writer.executor(), writer.put(key, bodies[i], condition, etag),
                     [&, i](std::exception_ptr error, S3Object result) {
                       if (!error) results[i] = std::move(result);
                       if (--pending == 0) allDone.cancel();
                     });
    }
    if (pending > 0) co_await allDone.async_wait(asio::as_tuple(asio::use_awaitable));

    int winners = 0;
    bool clean = true;
    std::string detail;
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& o = results[i].outcome;
      detail += (detail.empty() ? "" : ", ") + describe(o);
      if (o.ok()) {
        ++winners;
        accept(results[i], bodies[i]);
      } else if (!refused(o)) {
        clean = false;
      }
    }
    RaceResult out;
    out.violation = winners > 1;
    if (winners == 1) {
      auto read = co_await client_.get(key, kMaxProbeObjectBytes);
      if (!read.outcome.ok()) {
        clean = false;
        detail += "; reading the winner back: " + describe(read.outcome);
      } else if (read.body != lastBody_ || read.etag != current_) {
        clean = false;
        out.violation = true;  // a loser's bytes were stored
        detail += "; the stored object is not the winner's";
      }
    }
    out.winners = clean ? winners : -1;
    out.detail = std::move(detail);
    co_return out;
  }

  // The stored object is the last accepted write, with the ETag that write returned: another
  // one means a refused write was applied after all.
  asio::awaitable<bool> contentIsLastWrite(std::string name) {
    auto read = co_await client_.get(casKey_, kMaxProbeObjectBytes);
    const bool same = read.outcome.ok() && read.body == lastBody_ && read.etag == current_;
    check(std::move(name), same,
          read.outcome.ok() ? (same ? "stored bytes and ETag as expected" : "stored object differs")
                            : describe(read.outcome),
          read.outcome.ok() && !same);
    co_return same;
  }

  asio::awaitable<void> cleanUp() {
    bool all = true;
    for (const auto& key : {casKey_, raceKey_, absentKey_}) {
      auto removed = co_await client_.remove(key);
      all = all && (removed.ok() || removed.status == S3Status::missing);
    }
    report_.cleanedUp = all;
  }

  void accept(const S3Object& written, const Bytes& body) {
    current_ = written.etag;
    lastBody_ = body;
  }

  Bytes nextBody() {
    const std::string text =
        "cairn conditional-write probe " + casKey_ + " #" + std::to_string(++bodies_);
    return Bytes(text.begin(), text.end());
  }

  void check(std::string name, bool passed, std::string detail, bool violation = false) {
    report_.checks.push_back({std::move(name), passed, !passed && violation, std::move(detail)});
  }

  S3Client& client_;
  std::string casKey_, raceKey_, absentKey_;
  std::string current_;  // ETag of the last accepted write
  std::string stale_;    // an ETag that was replaced
  Bytes lastBody_;
  int bodies_ = 0;
  ProbeReport report_;
};

}  // namespace

boost::asio::awaitable<ProbeReport> probeConditions(S3Client& client,
                                                    std::string scratchKeyPrefix) {
  // A client of its own, whose requests all end within the probe's time limit.
  S3Config bounded = client.config();
  const auto limit = std::chrono::steady_clock::now() + kProbeTimeLimit;
  bounded.deadline = bounded.deadline ? std::min(*bounded.deadline, limit) : limit;
  S3Client own(client.executor(), bounded);
  Probe probe(own, std::move(scratchKeyPrefix));
  ProbeReport report = co_await probe.run();
  report.transport = own.httpStats();
  co_return report;
}

}  // namespace cairn::net
