// Store URLs (docs/stores.md):
//   /path/to/dir  or  file:///path/to/dir                the directory store
//   s3://BUCKET[/ROOT]?endpoint=URL&region=R[&dialect=auto|rgw|aws][&addressing=path|virtual]
//                      [&ca=FILE][&timeout_ms=MS]         S3; credentials from the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), never from the URL.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace cairn {

struct StoreUrl {
  enum class Kind { directory, s3 };
  Kind kind = Kind::directory;
  std::filesystem::path directory;  // directory store
  // S3
  std::string bucket;
  std::string root;  // key prefix, without a trailing '/' ("" for none)
  std::string endpoint;
  std::string region = "us-east-1";
  std::string dialect = "auto";
  bool virtualHost = false;
  std::string caFile;
  std::uint64_t requestTimeoutMs = 60'000;  // timeout_ms: per attempt, request and response

  // The URL as given, safe to print (it never holds secrets).
  std::string text;
};

Result<StoreUrl, std::string> parseStoreUrl(std::string_view url);

}  // namespace cairn
