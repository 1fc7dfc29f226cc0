// Store URLs (docs/stores.md):
//   /path/to/dir, a relative path, file:///path/to/dir or file:/path/to/dir   the directory
//                      store (a relative path is made absolute against the working directory
//                      when the URL is parsed)
//   s3://BUCKET[/ROOT][?endpoint=URL][&region=R][&dialect=auto|rgw|aws]
//                      [&addressing=auto|path|virtual][&ca=FILE][&timeout_ms=MS]
//                      [&connections=N]                                           S3
// What the URL leaves open (endpoint, region, addressing, CA) and the credentials (never in the
// URL) come from the environment and the AWS shared files, in the AWS CLI's order
// (engine/store/aws_config.hpp: resolveStoreUrl).
#pragma once

#include <filesystem>
#include <optional>
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
  // Empty until given or resolved (resolveStoreUrl fills them and says where from).
  std::string endpoint;
  std::string region;
  std::string dialect = "auto";
  std::string addressing = "auto";  // auto, path or virtual; resolved into virtualHost
  bool virtualHost = false;
  std::string caFile;
  std::string endpointSource, regionSource, addressingSource, caSource;  // "url", "AWS_REGION", ...
  std::uint64_t requestTimeoutMs = 60'000;  // timeout_ms: per attempt, request and response
  // connections: the most connections open to the endpoint at once (requests beyond wait for
  // one); unset, the opener's default (kDefaultStoreConnections, or cairn serve's own).
  std::optional<std::size_t> connections;

  // The URL as given, safe to print (it never holds secrets).
  std::string text;
};

inline constexpr std::size_t kDefaultStoreConnections = 8;
inline constexpr std::size_t kMaxStoreConnections = 1024;

// A text that starts with a scheme ("name:" with letters, digits, '+', '-' or '.') is a URL:
// file: and s3:// are parsed, any other scheme is refused (a directory named "a:b" is given
// as ./a:b). A directory store's `directory` is absolute and lexically normal.
Result<StoreUrl, std::string> parseStoreUrl(std::string_view url);

// The form of a store URL that is recorded (a database's publisher state): a directory
// store's absolute path, an S3 URL as given. A relative path recorded verbatim would name
// another directory for a command run from elsewhere. `databaseDir`: the database directory
// the URL is recorded for; a directory store that is it, holds it or lies inside it is
// refused (the store's listing would hold the journal, or the database's files the objects).
Result<std::string, std::string> recordedStoreUrl(std::string_view url,
                                                  const std::filesystem::path& databaseDir);

}  // namespace cairn
