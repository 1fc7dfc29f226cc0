#include "catalog/access/sts.hpp"

#include <pugixml.hpp>

#include <chrono>

#include "base/sha256.hpp"
#include "engine/store/aws_config.hpp"
#include "net/http/http_client.hpp"
#include "net/s3/sigv4.hpp"

namespace cairn::catalog {

namespace asio = boost::asio;

namespace {

constexpr std::size_t kMaxStsResponse = 64 * 1024;

// application/x-www-form-urlencoded, with SigV4's encoding (RFC 3986).
std::string form(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [k, v] : fields) {
    if (!out.empty()) out += '&';
    out += net::uriEncode(k, true) + "=" + net::uriEncode(v, true);
  }
  return out;
}

std::string childText(const pugi::xml_node& node, const char* name) {
  return node.child(name).text().as_string();
}

// What a person may read of STS's text: printable ASCII, bounded.
std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 300)) out += (c >= 0x20 && c < 0x7F) ? c : '?';
  return out;
}

}  // namespace

struct StsClient::Impl {
  StsConfig config;
  net::Endpoint endpoint;
  net::SigV4Credentials keys;
  std::unique_ptr<net::HttpClient> http;
};

StsClient::StsClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StsClient::~StsClient() = default;

Result<std::unique_ptr<StsClient>, std::string> StsClient::create(asio::any_io_executor ex,
                                                                  const StsConfig& config) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  auto endpoint = net::parseEndpoint(config.endpoint);
  if (!endpoint) return Failure<std::string>{"the STS endpoint: " + endpoint.error()};
  impl->endpoint = *endpoint;
  if (config.roleArn.empty()) return Failure<std::string>{"no role ARN is configured"};
  // The catalog's own keys, found as its stores' are (the environment, then the AWS profile).
  const AwsEnvironment env = AwsEnvironment::process();
  auto profile = loadAwsProfile(env);
  if (!profile) return Failure<std::string>{"STS needs the catalog's keys: " + profile.error()};
  auto keys = resolveAwsCredentials(env, *profile);
  if (!keys) return Failure<std::string>{"STS needs the catalog's keys: " + keys.error()};
  impl->keys = std::move(keys->keys);
  net::HttpClientOptions options;
  options.caFile = config.caFile;
  options.tlsExpected = endpoint->tls;
  options.requestTimeout = std::chrono::seconds(10);
  options.maxAttempts = 3;  // AssumeRole has no effect to repeat: a retry is safe
  try {
    impl->http = std::make_unique<net::HttpClient>(ex, options);
  } catch (const std::exception& e) {
    return Failure<std::string>{std::string("the STS client: ") + e.what()};
  }
  return std::unique_ptr<StsClient>(new StsClient(std::move(impl)));
}

asio::awaitable<Result<SessionCredentials, std::string>> StsClient::assumeRole(
    std::string policy, std::uint32_t seconds, std::string session) {
  const Impl& s = *impl_;
  const std::string body = form({{"Action", "AssumeRole"},
                                 {"Version", "2011-06-15"},
                                 {"RoleArn", s.config.roleArn},
                                 {"RoleSessionName", session},
                                 {"DurationSeconds", std::to_string(seconds)},
                                 {"Policy", policy}});
  net::SigV4Request signed_;
  signed_.method = "POST";
  signed_.path = "/";
  signed_.headers = {{"Host", s.endpoint.hostHeader()},
                     {"Content-Type", "application/x-www-form-urlencoded"}};
  net::SigV4Options options;
  options.payloadHash = toHex(sha256(asBytes(body)));
  const auto signature = net::signHeaders(signed_, s.keys, net::SigV4Scope{s.config.region, "sts"},
                                          std::chrono::system_clock::now(), options);
  net::HttpRequest request;
  request.method = "POST";
  request.target = "/";
  // Host is signed; the HTTP client writes it.
  request.headers = {{"Content-Type", "application/x-www-form-urlencoded"}};
  for (const auto& h : signature.addedHeaders) request.headers.push_back(h);
  request.body = asBytes(body);
  request.maxResponseBody = kMaxStsResponse;
  request.idempotent = true;
  auto answer = co_await s.http->request(s.endpoint, std::move(request));
  if (!answer) {
    co_return Failure<std::string>{"STS at " + s.endpoint.url() +
                                   " did not answer: " + answer.error().message};
  }
  co_return parseAssumeRoleResponse(answer->status, asChars(answer->body));
}

Result<SessionCredentials, std::string> parseAssumeRoleResponse(int status, std::string_view body) {
  pugi::xml_document doc;
  const bool parsed = doc.load_buffer(body.data(), body.size());
  if (status != 200) {
    std::string code, message;
    if (parsed) {
      pugi::xml_node error = doc.select_node("//Error").node();
      code = childText(error, "Code");
      message = childText(error, "Message");
    }
    return Failure<std::string>{"STS refused AssumeRole: HTTP " + std::to_string(status) +
                                (code.empty() ? "" : " " + printable(code)) +
                                (message.empty() ? "" : ": " + printable(message))};
  }
  if (!parsed) return Failure<std::string>{"STS answered AssumeRole with malformed XML"};
  pugi::xml_node c = doc.select_node("//AssumeRoleResult/Credentials").node();
  SessionCredentials out;
  out.accessKeyId = childText(c, "AccessKeyId");
  out.secretAccessKey = childText(c, "SecretAccessKey");
  out.sessionToken = childText(c, "SessionToken");
  auto expires = parseIsoTimeMs(childText(c, "Expiration"));
  if (out.accessKeyId.empty() || out.secretAccessKey.empty() || out.sessionToken.empty() ||
      !expires) {
    return Failure<std::string>{"STS answered AssumeRole without complete credentials"};
  }
  out.expiresAtMs = *expires;
  return out;
}

}  // namespace cairn::catalog
