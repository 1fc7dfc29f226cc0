#include "net/s3/sigv4.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cassert>
#include <ctime>
#include <map>

#include "base/bytes.hpp"
#include "base/sha256.hpp"

namespace cairn::net {
namespace {

Digest hmac(ByteView key, std::string_view data) {
  Digest out{};
  unsigned int length = 0;
  const unsigned char* done =
      HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &length);
  assert(done != nullptr && length == out.size());
  (void)done;
  return out;
}

bool isUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

bool isSpace(char c) { return c == ' ' || c == '\t'; }

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  });
  return out;
}

// Trim, and collapse every run of spaces/tabs inside the value to one space ("trimall").
std::string canonicalValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  bool pendingSpace = false;
  for (char c : v) {
    if (isSpace(c)) {
      pendingSpace = !out.empty();
      continue;
    }
    if (pendingSpace) out.push_back(' ');
    pendingSpace = false;
    out.push_back(c);
  }
  return out;
}

struct CanonicalHeaders {
  std::string block;        // "name:value\n" lines
  std::string signedNames;  // "a;b;c"
};

// Names are lower-cased and sorted; repeated names keep their values in order, joined by ','.
CanonicalHeaders canonicalHeaders(const std::vector<HttpHeader>& headers) {
  std::map<std::string, std::string> byName;
  for (const auto& h : headers) {
    auto [it, inserted] = byName.try_emplace(lower(h.name), canonicalValue(h.value));
    if (!inserted) {
      it->second.push_back(',');
      it->second += canonicalValue(h.value);
    }
  }
  CanonicalHeaders out;
  for (const auto& [name, value] : byName) {
    out.block += name;
    out.block.push_back(':');
    out.block += value;
    out.block.push_back('\n');
    if (!out.signedNames.empty()) out.signedNames.push_back(';');
    out.signedNames += name;
  }
  return out;
}

std::string canonicalRequest(const SigV4Request& request, const std::string& query,
                             const CanonicalHeaders& headers, std::string_view payloadHash) {
  std::string out;
  out += request.method;
  out.push_back('\n');
  out += request.path.empty() ? std::string("/") : uriEncodePath(request.path);
  out.push_back('\n');
  out += query;
  out.push_back('\n');
  out += headers.block;
  out.push_back('\n');
  out += headers.signedNames;
  out.push_back('\n');
  out += payloadHash;
  return out;
}

std::string credentialScope(std::string_view date, const SigV4Scope& scope) {
  std::string out(date.substr(0, 8));
  out += '/' + scope.region + '/' + scope.service + "/aws4_request";
  return out;
}

std::string stringToSign(std::string_view date, std::string_view scopeText,
                         std::string_view canonical) {
  std::string out(kSigV4Algorithm);
  out.push_back('\n');
  out += date;
  out.push_back('\n');
  out += scopeText;
  out.push_back('\n');
  out += toHex(sha256(asBytes(canonical)));
  return out;
}

std::string signature(const SigV4Credentials& credentials, const SigV4Scope& scope,
                      std::string_view date, std::string_view toSign) {
  const std::string secret = "AWS4" + credentials.secretKey;
  Digest key = hmac(asBytes(secret), date.substr(0, 8));
  key = hmac(key, scope.region);
  key = hmac(key, scope.service);
  key = hmac(key, "aws4_request");
  return toHex(hmac(key, toSign));
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string uriEncode(std::string_view raw, bool encodeSlash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(raw.size() + raw.size() / 2);
  for (char ch : raw) {
    const auto c = static_cast<unsigned char>(ch);
    if (isUnreserved(c) || (c == '/' && !encodeSlash)) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

bool uriDecode(std::string_view encoded, std::string& out) {
  out.clear();
  out.reserve(encoded.size());
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] != '%') {
      out.push_back(encoded[i]);
      continue;
    }
    if (i + 2 >= encoded.size()) return false;
    const int hi = hexValue(encoded[i + 1]);
    const int lo = hexValue(encoded[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

std::string canonicalQueryString(const std::vector<std::pair<std::string, std::string>>& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [name, value] : query) {
    encoded.emplace_back(uriEncode(name, true), uriEncode(value, true));
  }
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [name, value] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += name;
    out.push_back('=');
    out += value;
  }
  return out;
}

std::string amzDate(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[17];
  const std::size_t n = std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &utc);
  assert(n == 16);
  return std::string(text, n);
}

SigV4HeaderSignature signHeaders(const SigV4Request& request, const SigV4Credentials& credentials,
                                 const SigV4Scope& scope, std::chrono::system_clock::time_point now,
                                 const SigV4Options& options) {
  SigV4HeaderSignature out;
  const std::string date = amzDate(now);
  out.addedHeaders.push_back({"X-Amz-Date", date});
  if (options.addContentSha256Header) {
    out.addedHeaders.push_back({"x-amz-content-sha256", options.payloadHash});
  }
  const bool hasToken = !credentials.sessionToken.empty();
  if (hasToken) out.addedHeaders.push_back({"X-Amz-Security-Token", credentials.sessionToken});

  std::vector<HttpHeader> signedHeaders = request.headers;
  for (const auto& h : out.addedHeaders) {
    if (h.name == "X-Amz-Security-Token" && !options.signSessionToken) continue;
    signedHeaders.push_back(h);
  }
  const CanonicalHeaders headers = canonicalHeaders(signedHeaders);
  const std::string scopeText = credentialScope(date, scope);
  out.canonicalRequest =
      canonicalRequest(request, canonicalQueryString(request.query), headers, options.payloadHash);
  out.stringToSign = stringToSign(date, scopeText, out.canonicalRequest);
  out.signature = signature(credentials, scope, date, out.stringToSign);
  out.addedHeaders.push_back(
      {"Authorization", std::string(kSigV4Algorithm) + " Credential=" + credentials.accessKey +
                            '/' + scopeText + ", SignedHeaders=" + headers.signedNames +
                            ", Signature=" + out.signature});
  return out;
}

SigV4QuerySignature presign(const SigV4Request& request, const SigV4Credentials& credentials,
                            const SigV4Scope& scope, std::chrono::system_clock::time_point now,
                            std::chrono::seconds expires, const SigV4Options& options) {
  assert(expires.count() >= 1 && expires <= kMaxPresignExpiry);
  SigV4QuerySignature out;
  const std::string date = amzDate(now);
  const std::string scopeText = credentialScope(date, scope);
  const CanonicalHeaders headers = canonicalHeaders(request.headers);
  const bool hasToken = !credentials.sessionToken.empty();

  auto query = request.query;
  query.emplace_back("X-Amz-Algorithm", std::string(kSigV4Algorithm));
  query.emplace_back("X-Amz-Credential", credentials.accessKey + '/' + scopeText);
  query.emplace_back("X-Amz-Date", date);
  query.emplace_back("X-Amz-Expires", std::to_string(expires.count()));
  if (hasToken && options.signSessionToken) {
    query.emplace_back("X-Amz-Security-Token", credentials.sessionToken);
  }
  query.emplace_back("X-Amz-SignedHeaders", headers.signedNames);

  const std::string signedQuery = canonicalQueryString(query);
  out.canonicalRequest = canonicalRequest(request, signedQuery, headers, options.payloadHash);
  out.stringToSign = stringToSign(date, scopeText, out.canonicalRequest);
  out.signature = signature(credentials, scope, date, out.stringToSign);
  out.query = signedQuery;
  if (hasToken && !options.signSessionToken) {
    out.query += "&X-Amz-Security-Token=" + uriEncode(credentials.sessionToken, true);
  }
  out.query += "&X-Amz-Signature=" + out.signature;
  return out;
}

}  // namespace cairn::net
