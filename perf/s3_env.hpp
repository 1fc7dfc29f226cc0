// The store of the S3 benchmarks, from the environment (shared/s3/README.md): S3_ENDPOINT,
// S3_REGION, S3_BUCKET, S3_ACCESS_KEY, S3_SECRET_KEY, S3_SESSION_TOKEN, AWS_CA_BUNDLE, and
// S3_DIALECT (rgw or aws, default `dialect`).
#pragma once

#include <cstdlib>
#include <string>

#include "net/s3/s3_client.hpp"

namespace cairn::perf {

inline std::string envOr(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : std::move(fallback);
}

inline net::S3Config s3ConfigFromEnv(const std::string& dialect) {
  net::S3Config config;
  config.endpoint = envOr("S3_ENDPOINT", "");
  config.region = envOr("S3_REGION", "us-east-1");
  config.bucket = envOr("S3_BUCKET", "");
  config.accessKey = envOr("S3_ACCESS_KEY", "");
  config.secretKey = envOr("S3_SECRET_KEY", "");
  config.sessionToken = envOr("S3_SESSION_TOKEN", "");
  config.caFile = envOr("AWS_CA_BUNDLE", "");
  config.dialect =
      envOr("S3_DIALECT", dialect) == "rgw" ? net::S3Dialect::rgw : net::S3Dialect::aws;
  return config;
}

}  // namespace cairn::perf
