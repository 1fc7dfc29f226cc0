// AWS Signature Version 4 (header form and presigned query form), with S3's rules:
// - the path is never normalised ("." / ".." / "//" are signed as they are);
// - the path is URI-encoded exactly once, here: callers pass the raw (decoded) path and send
//   uriEncodePath(path) on the wire, so the signed and the sent bytes cannot disagree;
// - the payload hash is either the hex SHA-256 of the body or "UNSIGNED-PAYLOAD", and S3 wants
//   it echoed in an x-amz-content-sha256 header (addContentSha256Header).
// The service name is a parameter ("s3" for S3; the AWS test suite signs for "service").
//
// Everything here is pure (bytes in, strings out) so the published test suite can check the
// canonical request, the string to sign and the signature byte for byte.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/http/http_client.hpp"  // HttpHeader

namespace cairn::net {

struct SigV4Credentials {
  std::string accessKey;
  std::string secretKey;     // never logged, never in an error message
  std::string sessionToken;  // empty when there is none
};

struct SigV4Scope {
  std::string region;
  std::string service;  // "s3"
};

// The parts of a request that are signed. Every header listed is signed (Host must be one).
struct SigV4Request {
  std::string method;                                      // "GET", "PUT", ...
  std::string path;                                        // raw, not encoded: "/bucket/a b"
  std::vector<std::pair<std::string, std::string>> query;  // raw (decoded) names and values
  std::vector<HttpHeader> headers;                         // as sent; names in any case
};

struct SigV4Options {
  // Hex SHA-256 of the payload, or kUnsignedPayload.
  std::string payloadHash;
  // S3 (and sign_body in the suite): send and sign x-amz-content-sha256 = payloadHash.
  bool addContentSha256Header = true;
  // false: the session token is added to the request but not signed (some services want
  // that; S3 signs it).
  bool signSessionToken = true;
};

inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
inline constexpr std::string_view kSigV4Algorithm = "AWS4-HMAC-SHA256";
// Presigned URLs live at most 7 days (AWS's limit).
inline constexpr std::chrono::seconds kMaxPresignExpiry{7 * 24 * 3600};

// Header form: the headers to add to the request (X-Amz-Date, x-amz-content-sha256 and
// X-Amz-Security-Token as needed, then Authorization), plus the intermediate strings.
struct SigV4HeaderSignature {
  std::string canonicalRequest;
  std::string stringToSign;
  std::string signature;  // lowercase hex
  std::vector<HttpHeader> addedHeaders;
};

// Query form: the full encoded query string to send (the request's own parameters, the
// X-Amz-* parameters and X-Amz-Signature), plus the intermediate strings.
struct SigV4QuerySignature {
  std::string canonicalRequest;
  std::string stringToSign;
  std::string signature;
  std::string query;
};

SigV4HeaderSignature signHeaders(const SigV4Request& request, const SigV4Credentials& credentials,
                                 const SigV4Scope& scope, std::chrono::system_clock::time_point now,
                                 const SigV4Options& options);

// expires must be within 1 s .. kMaxPresignExpiry (asserted; callers clamp).
SigV4QuerySignature presign(const SigV4Request& request, const SigV4Credentials& credentials,
                            const SigV4Scope& scope, std::chrono::system_clock::time_point now,
                            std::chrono::seconds expires, const SigV4Options& options);

// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters (A-Z a-z 0-9 - . _ ~)
// stay, every other byte becomes %XX (upper-case hex). '/' stays in paths only.
std::string uriEncode(std::string_view raw, bool encodeSlash);
inline std::string uriEncodePath(std::string_view raw) { return uriEncode(raw, false); }
// Inverse of uriEncode for one component ('+' is not special). False on a malformed %XX.
bool uriDecode(std::string_view encoded, std::string& out);
// The canonical query string: each name and value uriEncode'd (slashes too), sorted, joined
// by '&'. Sending exactly this string keeps the sent and the signed query identical.
std::string canonicalQueryString(const std::vector<std::pair<std::string, std::string>>& query);

// "20150830T123600Z"
std::string amzDate(std::chrono::system_clock::time_point t);

}  // namespace cairn::net
