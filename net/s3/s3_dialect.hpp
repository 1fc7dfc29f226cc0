// Where S3 providers differ, in one place (docs/design.md §3.4), and a probe that checks a store
// really enforces conditional writes before anything is published to it.
//
//                          aws (and the HTTP standard)     rgw (Ceph RGW 16, measured)
//   If-Match value          the quoted ETag: "abc"          the bare ETag: abc (quoted -> 412)
//   lost conditional race   409 ConditionalRequestConflict  412, or 500 UnknownError
//
// A lost race is reported as S3Status::conflict: the caller must re-read and judge; it is
// never retried automatically and never counted as applied.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/http/http_client.hpp"

namespace cairn::net {

class S3Client;

enum class S3Dialect { aws, rgw };

std::string_view dialectName(S3Dialect dialect);

// The If-Match header value for a strong ETag as GET/HEAD/PUT returned it ("\"abc\"").
std::string ifMatchValue(S3Dialect dialect, std::string_view strongEtag);

// True when this response to a conditional PUT means "another writer won" (besides 412).
bool isLostConditionalRace(S3Dialect dialect, int http, std::string_view code);

struct ProbeCheck {
  std::string name;
  bool passed = false;
  // Failed because the store accepted a write it had to refuse: proof that conditions are
  // not enforced. A check that failed otherwise (the request failed, or went unanswered)
  // proves nothing either way.
  bool violation = false;
  std::string detail;  // what was observed
};

// What the probe found out. Only an observed violation means "not enforced": failures and
// unanswered requests leave the question open, and never read as a "no".
enum class ProbeVerdict : std::uint8_t { enforced, notEnforced, undetermined };
std::string_view probeVerdictName(ProbeVerdict v);

struct ProbeReport {
  ProbeVerdict verdict = ProbeVerdict::undetermined;
  bool enforced = false;             // verdict == enforced: every check passed
  std::optional<S3Dialect> dialect;  // the If-Match form the store honours, if any
  bool cleanedUp = false;            // every scratch key was deleted
  std::vector<ProbeCheck> checks;
  HttpClientStats transport;  // what the probe's own client sent (attempts, retries, timeouts)

  std::string summary() const;  // one line per check, for operators
  // One line: the verdict and, unless enforced, the first violation or failure seen.
  std::string verdictLine() const;
};

// Writes, races and deletes a few small objects under scratchKeyPrefix (relative to the
// client's root prefix), e.g. "probe/". Checks that:
// - If-None-Match: * creates an absent key, and refuses (412) a present one;
// - If-Match with the current ETag succeeds (trying the quoted form, then the bare one, which
//   picks the dialect), with a stale ETag or on an absent key it never succeeds;
// - racing conditional writers (If-None-Match: * on a new key, If-Match on one observed ETag)
//   produce exactly one success, and the stored content is the winner's;
// then deletes its keys. A store that ignores conditions comes out as not enforced. Every
// request of the probe is over within kProbeTimeLimit (a server that never answers leaves it
// undetermined in that time). Run it from a coroutine on the client's executor.
inline constexpr std::chrono::seconds kProbeTimeLimit{60};
boost::asio::awaitable<ProbeReport> probeConditions(S3Client& client, std::string scratchKeyPrefix);

}  // namespace cairn::net
