// The S3 client against a server that behaves correctly except for one misbehaviour at a
// time (issue 31): interim responses, answers that cannot be read whole, echoed secrets,
// bytes that would break the output, listings that never end, limits that must hold.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "engine/ops/usage.hpp"
#include "engine/store/s3_store.hpp"
#include "engine/store/store_errors.hpp"
#include "engine/store/store_url.hpp"
#include "net/s3/s3_client.hpp"
#include "tests/net/net_test_support.hpp"

namespace {

using namespace cairn;
using namespace cairn::net;
using namespace cairn::net::test;
using namespace std::chrono_literals;

// Whether `text` is valid UTF-8 without control characters (what a terminal or a JSON
// parser may be given).
bool printable(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) return false;
    std::size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (n == 0 || i + n > text.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

std::string listPage(const std::vector<std::string>& keys, bool truncated,
                     const std::string& token = {}) {
  std::string xml = "<?xml version=\"1.0\"?><ListBucketResult><EncodingType>url</EncodingType>";
  for (const auto& k : keys) {
    xml += "<Contents><Key>" + k +
           "</Key><Size>1</Size><ETag>\"e\"</ETag><LastModified>2026-11-29T18:13:21.000Z"
           "</LastModified></Contents>";
  }
  xml += std::string("<IsTruncated>") + (truncated ? "true" : "false") + "</IsTruncated>";
  if (truncated) xml += "<NextContinuationToken>" + token + "</NextContinuationToken>";
  return httpResponse(200, {{"Content-Type", "application/xml"}}, xml + "</ListBucketResult>");
}

// An S3Store on the rig's server.
std::unique_ptr<S3Store> storeOn(const FakeServer& server, asio::io_context& io,
                                 const std::string& extra = "") {
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDFAKE", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", std::string(kSecret).c_str(), 1);
  auto url = parseStoreUrl("s3://bkt?endpoint=" + server.endpoint() + "&dialect=aws" + extra);
  REQUIRE(url.ok());
  auto store = S3Store::open(io.get_executor(), *url);
  REQUIRE(store.ok());
  return std::move(*store);
}

}  // namespace

// Defect 1: a 100 Continue (unasked) or 103 Early Hints before the real answer was taken for
// the answer, and the connection then paired answers with the wrong requests.
TEST_CASE("S3 hostile: interim 1xx responses are skipped, the final one is the answer",
          "[net][s3hostile]") {
  for (const char* interim : {"HTTP/1.1 100 Continue\r\n\r\n",
                              "HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n",
                              "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"}) {
    INFO(interim);
    Rig rig([&](const FakeRequest& r) {
      if (r.method == "PUT") return FakeReply{interim + okWithEtag("\"put-etag\"", "")};
      return FakeReply{okWithEtag("\"get-etag\"", "the object")};
    });
    auto put = rig.put("k", "v", PutCondition::ifMatch, "\"old\"");
    REQUIRE(put.outcome.ok());
    CHECK(put.etag == "\"put-etag\"");
    // The next request on the same connection gets its own answer.
    auto got = rig.get("k");
    REQUIRE(got.outcome.ok());
    CHECK(textOf(got.body) == "the object");
    CHECK(got.etag == "\"get-etag\"");
    CHECK(rig.server.stats().accepted == 1);
  }
  SECTION("101 Switching Protocols is no answer: uncertain, and the connection is not reused") {
    Rig rig([&](const FakeRequest& r) {
      if (r.method == "PUT") return FakeReply{"HTTP/1.1 101 Switching Protocols\r\n\r\n"};
      return FakeReply{okWithEtag("\"get-etag\"", "the object")};
    });
    auto put = rig.put("k", "v", PutCondition::ifMatch, "\"old\"");
    CHECK(put.outcome.status == S3Status::uncertain);
    auto got = rig.get("k");
    REQUIRE(got.outcome.ok());
    CHECK(textOf(got.body) == "the object");
    CHECK(rig.server.stats().accepted == 2);
  }
  SECTION("endless interim responses are bounded") {
    std::string many;
    for (int i = 0; i < 100; ++i) many += "HTTP/1.1 100 Continue\r\n\r\n";
    Rig rig([&](const FakeRequest&) { return FakeReply{many}; });
    auto put = rig.put("k", "v", PutCondition::ifMatch, "\"old\"");
    CHECK(put.outcome.status == S3Status::uncertain);
  }
}

// Defect 2: a PUT the server applied and answered with a body over the bound was "failure";
// on the head's conditional PUT that skipped the re-read the outcome table requires.
TEST_CASE("S3 hostile: an answer that cannot be read whole after a write is uncertain",
          "[net][s3hostile]") {
  const std::string big(70 * 1024, 'x');
  for (int status : {200, 500, 412}) {
    INFO("status " << status);
    Rig rig([&](const FakeRequest&) {
      return FakeReply{httpResponse(status, {{"ETag", "\"e\""}}, big)};
    });
    for (auto condition : {PutCondition::ifMatch, PutCondition::ifNoneMatch, PutCondition::none}) {
      auto put = rig.put("k", "v", condition, "\"old\"");
      CHECK(put.outcome.status == S3Status::uncertain);
    }
    auto removed = rig.run(rig.client.remove("k"));
    CHECK(removed.status == S3Status::uncertain);
    // A read that cannot be read whole changed nothing: a failure, as before.
    auto got = rig.get("k", 1024);
    CHECK(got.outcome.status == S3Status::failure);
  }
}

// Defect 3: redaction ran after messages were cut to 512 bytes, so a token echoed by the
// server survived as a prefix; a token echoed in a listing's ETag was printed whole.
TEST_CASE("S3 hostile: no fragment of the secret or the token survives in any message",
          "[net][s3hostile]") {
  std::string token;
  for (int i = 0; i < 40; ++i) token += "SessionTokenPart" + std::to_string(1000 + i) + "x";
  REQUIRE(token.size() > 800);
  for (const std::string& echoed :
       {token, "prefix " + token.substr(0, 300), token.substr(100, 40), std::string(kSecret),
        "before " + std::string(kSecret).substr(3, 20) + " after"}) {
    INFO(echoed.substr(0, 40));
    Rig rig(
        [&](const FakeRequest&) {
          return FakeReply{
              s3Error(403, "AccessDenied" + echoed.substr(0, 30), "your token was " + echoed)};
        },
        [&](S3Config& c) { c.sessionToken = token; });
    auto got = rig.get("k");
    REQUIRE_FALSE(got.outcome.ok());
    for (const std::string& secret : {token, std::string(kSecret)}) {
      for (std::size_t at = 0; at + 16 <= secret.size(); at += 4) {
        CHECK(got.outcome.message.find(secret.substr(at, 16)) == std::string::npos);
        CHECK(got.outcome.code.find(secret.substr(at, 16)) == std::string::npos);
      }
    }
    CHECK(got.outcome.message.find("[redacted]") != std::string::npos);
  }
  SECTION("a listing's ETag") {
    Rig rig(
        [&](const FakeRequest&) {
          std::string xml =
              "<?xml "
              "version=\"1.0\"?><ListBucketResult><Contents><Key>k</Key><Size>1</Size><ETag>\"" +
              token +
              "\"</ETag><LastModified>2026-11-29T18:13:21.000Z</LastModified></Contents>"
              "<IsTruncated>false</IsTruncated></ListBucketResult>";
          return FakeReply{httpResponse(200, {}, xml)};
        },
        [&](S3Config& c) { c.sessionToken = token; });
    auto listed = rig.run(rig.client.list("", "", 10));
    REQUIRE(listed.outcome.ok());
    REQUIRE(listed.entries.size() == 1);
    CHECK(listed.entries[0].etag.find(token.substr(0, 16)) == std::string::npos);
  }
}

// Defect 4: server bytes reached stdout, stderr and --json raw.
TEST_CASE("S3 hostile: server text is made printable, cut on character boundaries",
          "[net][s3hostile]") {
  const std::string nasty = "line one\nline two\r\x1b[31mred\x1b[0m \xff\xfe bad \xc3 \x7f end";
  Rig rig([&](const FakeRequest&) { return FakeReply{s3Error(500, "Bad\nCode\x1b", nasty)}; });
  auto got = rig.get("k");
  REQUIRE_FALSE(got.outcome.ok());
  CHECK(printable(got.outcome.message));
  CHECK(printable(got.outcome.code));
  CHECK(got.outcome.message.find("line one") != std::string::npos);

  // A long valid UTF-8 message is cut between characters, not inside one.
  std::string long_;
  for (int i = 0; i < 400; ++i) long_ += "\xc3\xa9\xe2\x82\xac";  // é€
  Rig utf8([&](const FakeRequest&) { return FakeReply{s3Error(500, "Code", long_)}; });
  auto cut = utf8.get("k");
  CHECK(printable(cut.outcome.message));
  CHECK(cut.outcome.message.size() < long_.size());
  CHECK(cut.outcome.message.find("\xc3\xa9") != std::string::npos);  // kept as text

  // Listed keys outside the key grammar, or outside the prefix asked for, are refused.
  for (const char* key : {"a%0Ab", "a%1B%5B31m", "a%00b", "a%FFb", "a%20b", "../x"}) {
    INFO(key);
    Rig listing([&](const FakeRequest&) { return FakeReply{listPage({key}, false)}; });
    auto store = storeOn(listing.server, listing.io);
    auto page = runAsync(listing.io, store->list("", "", 100));
    REQUIRE_FALSE(page.ok());
    CHECK(printable(page.error().message));
  }
  Rig other([&](const FakeRequest&) { return FakeReply{listPage({"ns-other"}, false)}; });
  auto store = storeOn(other.server, other.io);
  auto page = runAsync(other.io, store->list("ns-mine", "", 100));
  REQUIRE_FALSE(page.ok());
  CHECK(page.error().message.find("outside") != std::string::npos);
}

// Defect 5: a ListObjectsV2 that always answered IsTruncated=true with the same token drove
// vacuum and `store ls` to gigabytes of memory.
TEST_CASE("S3 hostile: a listing that does not advance is an error, and listings are bounded",
          "[net][s3hostile]") {
  SECTION("the same token again") {
    Rig rig([&](const FakeRequest& r) {
      const std::string target = r.target;
      const bool first = target.find("continuation-token") == std::string::npos;
      return FakeReply{listPage({first ? "a" : "b"}, true, "same")};
    });
    auto store = storeOn(rig.server, rig.io);
    OperationBudget budget;
    std::uint64_t seen = 0;
    auto walked = runAsync(rig.io, forEachObject(*store, "", budget, [&](const ObjectInfo&) {
                             ++seen;
                             return Res<void>{};
                           }));
    REQUIRE_FALSE(walked.ok());
    CHECK(walked.error().message.find("does not advance") != std::string::npos);
    CHECK(rig.requests() <= 3);
  }
  SECTION("new tokens, but the same keys again") {
    int n = 0;
    Rig rig([&](const FakeRequest&) {
      return FakeReply{listPage({"a", "b"}, true, "t" + std::to_string(++n))};
    });
    auto store = storeOn(rig.server, rig.io);
    OperationBudget budget;
    auto walked = runAsync(
        rig.io, forEachObject(*store, "", budget, [](const ObjectInfo&) { return Res<void>{}; }));
    REQUIRE_FALSE(walked.ok());
    CHECK(walked.error().message.find("does not advance") != std::string::npos);
    CHECK(rig.requests() <= 3);
  }
}

// Defect 6: the response header limit was 184-249 KB, not kMaxResponseHeaderBytes.
TEST_CASE("S3 hostile: the response header limit is the one named", "[net][s3hostile]") {
  for (std::size_t size :
       {kMaxResponseHeaderBytes - 1024, kMaxResponseHeaderBytes + 1024, std::size_t{200} * 1024}) {
    INFO("header of " << size << " bytes");
    for (bool manyLines : {false, true}) {
      INFO((manyLines ? "many short lines" : "one long line"));
      Rig rig([&](const FakeRequest&) {
        std::string filler;
        if (manyLines) {
          while (filler.size() + 300 < size) filler += "X-F: " + std::string(40, 'f') + "\r\n";
        } else {
          filler = "X-Filler: " + std::string(size - 200, 'f') + "\r\n";
        }
        return FakeReply{"HTTP/1.1 200 OK\r\nETag: \"e\"\r\n" + filler +
                         "Content-Length: 4\r\n\r\ndata"};
      });
      auto got = rig.get("k");
      CHECK(got.outcome.ok() == (size < kMaxResponseHeaderBytes));
    }
  }
}

// Defect 6: a server that accepts and never answers kept `store ls`, `status` and `log` for
// 240 s (4 attempts of 60 s) and the probe for about 14 timeouts: every request now ends by
// the deadline its command sets, and the probe by its own.
TEST_CASE("S3 hostile: a silent server is waited on only until the deadline", "[net][s3hostile]") {
  Rig rig(
      [&](const FakeRequest&) {
        FakeReply r;
        r.delay = std::chrono::milliseconds(30000);  // accepts, reads, never answers in time
        r.bytes = okWithEtag("\"e\"");
        return r;
      },
      [](S3Config& c) {
        c.requestTimeout = 20s;
        c.deadline = std::chrono::steady_clock::now() + 1s;
      });
  const auto start = std::chrono::steady_clock::now();
  auto got = rig.get("k");
  auto put = rig.put("k", "v", PutCondition::ifMatch, "\"e\"");
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(got.outcome.status == S3Status::failure);
  CHECK(put.outcome.status != S3Status::ok);
  CHECK(took < 3s);

  SECTION("the process's deadline bounds every client") {
    Rig other(
        [&](const FakeRequest&) {
          FakeReply r;
          r.delay = std::chrono::milliseconds(30000);
          r.bytes = okWithEtag("\"e\"");
          return r;
        },
        [](S3Config& c) { c.requestTimeout = 20s; });
    setProcessDeadline(std::chrono::steady_clock::now() + 1s);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = other.get("k");
    setProcessDeadline(std::nullopt);
    CHECK(r.outcome.status == S3Status::failure);
    CHECK(std::chrono::steady_clock::now() - t0 < 3s);
  }
  SECTION("the probe ends within its client's deadline, undetermined") {
    Rig silent(
        [&](const FakeRequest&) {
          FakeReply r;
          r.delay = std::chrono::milliseconds(30000);
          r.bytes = okWithEtag("\"e\"");
          return r;
        },
        [](S3Config& c) {
          c.requestTimeout = 20s;
          c.deadline = std::chrono::steady_clock::now() + 2s;
        });
    const auto t0 = std::chrono::steady_clock::now();
    auto report = silent.run(probeConditions(silent.client, "scratch/"));
    CHECK(report.verdict == ProbeVerdict::undetermined);
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
  }
}
