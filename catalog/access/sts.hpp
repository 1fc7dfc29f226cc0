// AssumeRole against an STS endpoint (AWS, or Ceph RGW's STS at the S3 endpoint): temporary
// credentials limited by a session policy (catalog/access/credentials.hpp). Signed with SigV4
// (service "sts") by the catalog's own keys (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN); the answer is never logged and no secret is ever in a message.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <string>

#include "base/result.hpp"
#include "catalog/access/credentials.hpp"

namespace cairn::catalog {

struct StsConfig {
  std::string endpoint;  // "http://127.0.0.1:7480", "https://sts.eu-west-1.amazonaws.com"
  std::string region;    // the signing region
  std::string roleArn;
  std::string caFile;  // TLS: the trust store (empty: the system's)
};

class StsClient {
 public:
  // The error is a message for a person (an endpoint that does not parse, keys missing).
  static Result<std::unique_ptr<StsClient>, std::string> create(boost::asio::any_io_executor ex,
                                                                const StsConfig& config);
  ~StsClient();

  // AssumeRole with `policy` for `seconds`; the session is named `session` (2..64 of
  // [\w+=,.@-]). The error is a message naming STS's answer (its code), never a secret.
  boost::asio::awaitable<Result<SessionCredentials, std::string>> assumeRole(std::string policy,
                                                                             std::uint32_t seconds,
                                                                             std::string session);

 private:
  struct Impl;
  explicit StsClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The parts of an AssumeRole answer (XML): credentials, or the error's code and message.
Result<SessionCredentials, std::string> parseAssumeRoleResponse(int status, std::string_view body);

}  // namespace cairn::catalog
