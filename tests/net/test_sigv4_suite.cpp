// The AWS SigV4 test suite (aws-c-auth, see shared/testdata/sigv4-suite/PROVENANCE.md), run
// with S3's signing rules, plus S3's own published examples.
//
// Which cases apply. S3 never normalises a path and encodes it exactly once, so a case
// applies when its context says normalize=false, or when normalising its path changes
// nothing (no "." or ".." segment, no empty segment from "//"): then the expected strings are
// the same under either rule. The cases excluded are the six "-normalized" twins whose paths
// normalisation rewrites (//, /./, /example/.., ...). Their "-unnormalized" twins run, and
// show the S3 rule: the path is signed as sent. Everything else (header folding and order,
// query encoding and sorting, UTF-8, session tokens signed or added after signing, signed
// bodies, both the header and the presigned form) does not depend on normalisation and runs.
// The suite signs for service "service", so the signer is given the service from context.
//
// The directory comes from $CAIRN_SIGV4_SUITE or <source>/../shared/testdata/sigv4-suite.
// A missing directory fails the test: it is never skipped.

#include <time.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/sha256.hpp"
#include "net/s3/sigv4.hpp"

namespace {

namespace fs = std::filesystem;
using namespace cairn;
using namespace cairn::net;

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

fs::path suiteDirectory() {
  if (const char* env = std::getenv("CAIRN_SIGV4_SUITE"); env != nullptr && *env != '\0') {
    return env;
  }
  return fs::path(CAIRN_SOURCE_DIR) / ".." / "shared" / "testdata" / "sigv4-suite";
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

struct SuiteRequest {
  SigV4Request request;
  std::string body;
};

// request.txt: "METHOD target HTTP/1.1", header lines ("Name:value"; a line starting with
// whitespace continues the previous value), a blank line, the body. The target's path is
// raw text; its query is percent-decoded here so the signer encodes it canonically.
SuiteRequest parseRequest(const std::string& text) {
  SuiteRequest out;
  const auto headEnd = text.find("\n\n");
  const std::string head = text.substr(0, headEnd);
  if (headEnd != std::string::npos) out.body = text.substr(headEnd + 2);
  const auto lines = splitLines(head);
  REQUIRE(!lines.empty());
  const std::string& first = lines.front();
  const auto methodEnd = first.find(' ');
  const auto versionStart = first.rfind(' ');
  out.request.method = first.substr(0, methodEnd);
  const std::string target = first.substr(methodEnd + 1, versionStart - methodEnd - 1);
  const auto question = target.find('?');
  out.request.path = target.substr(0, question);
  if (question != std::string::npos) {
    std::istringstream query(target.substr(question + 1));
    for (std::string part; std::getline(query, part, '&');) {
      const auto eq = part.find('=');
      std::string name;
      std::string value;
      REQUIRE(uriDecode(part.substr(0, eq), name));
      if (eq != std::string::npos) REQUIRE(uriDecode(part.substr(eq + 1), value));
      out.request.query.emplace_back(name, value);
    }
  }
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (!line.empty() && (line[0] == ' ' || line[0] == '\t')) {
      REQUIRE(!out.request.headers.empty());
      out.request.headers.back().value += " " + line;
      continue;
    }
    const auto colon = line.find(':');
    REQUIRE(colon != std::string::npos);
    out.request.headers.push_back({line.substr(0, colon), line.substr(colon + 1)});
  }
  return out;
}

std::chrono::system_clock::time_point parseTimestamp(const std::string& text) {
  std::tm tm{};
  REQUIRE(strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) != nullptr);
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

// True when RFC 3986 normalisation would rewrite this path.
bool normalisationChanges(const std::string& path) {
  if (path.find("//") != std::string::npos) return true;
  std::istringstream in(path);
  for (std::string segment; std::getline(in, segment, '/');) {
    if (segment == "." || segment == "..") return true;
  }
  return false;
}

// Decoded "name=value" parameters (the expected files keep raw UTF-8 in the request line).
std::multiset<std::string> queryParameters(const std::string& query) {
  std::multiset<std::string> out;
  std::istringstream in(query);
  for (std::string part; std::getline(in, part, '&');) {
    std::string decoded;
    REQUIRE(uriDecode(part, decoded));
    out.insert(decoded);
  }
  return out;
}

// The query of the first line of a *-signed-request.txt file.
std::string signedRequestQuery(const std::string& text) {
  const std::string first = text.substr(0, text.find('\n'));
  const auto question = first.find('?');
  REQUIRE(question != std::string::npos);
  return first.substr(question + 1, first.rfind(' ') - question - 1);
}

struct CaseContext {
  SigV4Credentials credentials;
  SigV4Scope scope;
  std::chrono::system_clock::time_point now;
  std::chrono::seconds expires{0};
  bool normalize = true;
  bool signBody = false;
  bool omitSessionToken = false;
};

CaseContext readContext(const fs::path& file) {
  boost::property_tree::ptree json;
  boost::property_tree::read_json(file.string(), json);
  CaseContext c;
  c.credentials.accessKey = json.get<std::string>("credentials.access_key_id");
  c.credentials.secretKey = json.get<std::string>("credentials.secret_access_key");
  c.credentials.sessionToken = json.get<std::string>("credentials.token", "");
  c.scope.region = json.get<std::string>("region");
  c.scope.service = json.get<std::string>("service");
  c.now = parseTimestamp(json.get<std::string>("timestamp"));
  // Values are read as text: property_tree's numeric translators trip GCC's
  // -Wmaybe-uninitialized under the sanitizers.
  c.expires = std::chrono::seconds(std::stol(json.get<std::string>("expiration_in_seconds")));
  c.normalize = json.get<std::string>("normalize") == "true";
  c.signBody = json.get<std::string>("sign_body") == "true";
  c.omitSessionToken = json.get<std::string>("omit_session_token", "false") == "true";
  return c;
}

void runCase(const fs::path& dir, const CaseContext& context, const SuiteRequest& parsed) {
  SigV4Options options;
  options.payloadHash = toHex(sha256(asBytes(parsed.body)));
  options.addContentSha256Header = context.signBody;
  options.signSessionToken = !context.omitSessionToken;

  const auto header =
      signHeaders(parsed.request, context.credentials, context.scope, context.now, options);
  CHECK(header.canonicalRequest == readFile(dir / "header-canonical-request.txt"));
  CHECK(header.stringToSign == readFile(dir / "header-string-to-sign.txt"));
  CHECK(header.signature == readFile(dir / "header-signature.txt"));
  // Every header the signer adds (Authorization included) appears verbatim in the expected
  // signed request.
  const auto signedLines = splitLines(readFile(dir / "header-signed-request.txt"));
  const std::set<std::string> expectedLines(signedLines.begin(), signedLines.end());
  for (const auto& added : header.addedHeaders) {
    INFO("added header " << added.name);
    CHECK(expectedLines.count(added.name + ":" + added.value) == 1);
  }

  // The presigned form signs no x-amz-content-sha256 header; it hashes the body as above.
  SigV4Options queryOptions = options;
  queryOptions.addContentSha256Header = false;
  const auto query = presign(parsed.request, context.credentials, context.scope, context.now,
                             context.expires, queryOptions);
  CHECK(query.canonicalRequest == readFile(dir / "query-canonical-request.txt"));
  CHECK(query.stringToSign == readFile(dir / "query-string-to-sign.txt"));
  CHECK(query.signature == readFile(dir / "query-signature.txt"));
  CHECK(queryParameters(query.query) ==
        queryParameters(signedRequestQuery(readFile(dir / "query-signed-request.txt"))));
}

}  // namespace

TEST_CASE("SigV4 test suite, S3 rules (no normalisation)", "[net][sigv4]") {
  const fs::path root = suiteDirectory();
  INFO("suite directory: " << root.string());
  REQUIRE(fs::is_directory(root));

  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory()) cases.push_back(entry.path());
  }
  std::sort(cases.begin(), cases.end());

  std::set<std::string> ran;
  std::set<std::string> excluded;
  for (const auto& dir : cases) {
    const std::string name = dir.filename().string();
    const CaseContext context = readContext(dir / "context.json");
    const SuiteRequest parsed = parseRequest(readFile(dir / "request.txt"));
    if (context.normalize && normalisationChanges(parsed.request.path)) {
      excluded.insert(name);
      continue;
    }
    SECTION(name) { runCase(dir, context, parsed); }
    ran.insert(name);
  }
  // The decision above, spelled out: exactly the normalised twins are left out.
  CHECK(excluded ==
        std::set<std::string>{"get-relative-normalized", "get-relative-relative-normalized",
                              "get-slash-dot-slash-normalized", "get-slash-normalized",
                              "get-slash-pointless-dot-normalized", "get-slashes-normalized"});
  CHECK(ran.size() == 32);  // 38 cases in the suite, 6 excluded
  CHECK(ran.count("get-slashes-unnormalized") == 1);
  CHECK(ran.count("post-x-www-form-urlencoded") == 1);
  CHECK(ran.count("post-sts-header-after") == 1);
}

// AWS's S3 examples ("Signature Calculations for the Authorization Header: Transferring
// Payload in a Single Chunk" and "Authenticating Requests: Using Query Parameters").
TEST_CASE("SigV4 S3 examples: GET and PUT object, presigned GET", "[net][sigv4]") {
  const SigV4Credentials credentials{"AKIAIOSFODNN7EXAMPLE",
                                     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
  const SigV4Scope scope{"us-east-1", "s3"};
  const auto when = std::chrono::system_clock::from_time_t(1369353600);  // 2013-05-24
  REQUIRE(amzDate(when) == "20130524T000000Z");

  SECTION("GET object with a range") {
    SigV4Request request{"GET",
                         "/test.txt",
                         {},
                         {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"}}};
    SigV4Options options{
        std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")};
    const auto s = signHeaders(request, credentials, scope, when, options);
    CHECK(s.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
    CHECK(s.addedHeaders.back().value ==
          "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
          "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
          "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  }
  SECTION("PUT object: the key is encoded once ($ -> %24)") {
    const std::string body = "Welcome to Amazon S3.";
    SigV4Request request{"PUT",
                         "/test$file.text",
                         {},
                         {{"Host", "examplebucket.s3.amazonaws.com"},
                          {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                          {"x-amz-storage-class", "REDUCED_REDUNDANCY"}}};
    SigV4Options options{toHex(sha256(asBytes(body)))};
    const auto s = signHeaders(request, credentials, scope, when, options);
    CHECK(s.canonicalRequest.substr(0, s.canonicalRequest.find('\n', 4)) ==
          "PUT\n/test%24file.text");
    CHECK(s.signature == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
  }
  SECTION("presigned GET, 24 hours, UNSIGNED-PAYLOAD") {
    SigV4Request request{"GET", "/test.txt", {}, {{"Host", "examplebucket.s3.amazonaws.com"}}};
    SigV4Options options{std::string(kUnsignedPayload), false};
    const auto s = presign(request, credentials, scope, when, std::chrono::hours(24), options);
    CHECK(s.signature == "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
    CHECK(s.query.ends_with("&X-Amz-Signature=" + s.signature));
  }
}

TEST_CASE("SigV4 S3 rules: paths encoded once, never normalised", "[net][sigv4]") {
  CHECK(uriEncodePath("/bkt/a b/c%d+e~f.g_h-i") == "/bkt/a%20b/c%25d%2Be~f.g_h-i");
  CHECK(uriEncodePath("/bkt/./x/../y//z") == "/bkt/./x/../y//z");
  CHECK(uriEncode("a/b", true) == "a%2Fb");
  CHECK(uriEncodePath("/\xE1\x88\xB4") == "/%E1%88%B4");
  std::string decoded;
  CHECK(uriDecode("a%20b%2F", decoded));
  CHECK(decoded == "a b/");
  CHECK_FALSE(uriDecode("a%2", decoded));
  CHECK_FALSE(uriDecode("a%zz", decoded));
}
