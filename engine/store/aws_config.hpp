// The AWS CLI's configuration conventions for S3 stores (docs/stores.md, "Endpoint, region and
// credentials"): what an s3:// URL leaves open is taken, in the AWS CLI's order, from the
// environment and from the shared files (~/.aws/credentials, ~/.aws/config), and each value
// says where it came from. A file that exists but cannot be read or parsed is an error, never
// taken as absent.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "base/result.hpp"
#include "engine/store/store_url.hpp"
#include "net/s3/sigv4.hpp"

namespace cairn {

// Where the conventions read from: the process environment by default; tests give their own.
struct AwsEnvironment {
  // The value of an environment variable; nullopt when it is unset or empty.
  std::function<std::optional<std::string>(const std::string&)> variable;
  static AwsEnvironment process();
};

// StoreUrl::endpointSource when no source gave an endpoint and AWS's regional one is used.
inline constexpr std::string_view kAwsRegionalEndpoint = "AWS's regional endpoint";
// AWS's regional endpoint of a service ("s3", "sts"): https://SERVICE.REGION.amazonaws.com
// (.amazonaws.com.cn in China's regions).
std::string awsRegionalEndpoint(std::string_view service, const std::string& region);

// A shared file is read only up to this size (larger is an error).
inline constexpr std::size_t kMaxAwsFileBytes = 1024 * 1024;

// One profile: its settings in the credentials file ([NAME]) and in the config file
// ([profile NAME], or [default]). A nested setting ("s3 =" then indented lines) is named
// "s3.KEY".
struct AwsProfile {
  std::string name = "default";
  std::string nameSource = "default";  // "AWS_PROFILE", "AWS_DEFAULT_PROFILE" or "default"
  std::string credentialsFile;         // paths as used (after ~ expansion)
  std::string configFile;
  std::map<std::string, std::string> credentials;  // settings of the credentials file
  std::map<std::string, std::string> config;       // settings of the config file
  // The profile's value of key: the credentials file's first, then the config file's; with
  // where it came from ("profile NAME in FILE").
  std::optional<std::pair<std::string, std::string>> find(const std::string& key) const;
};

// Reads the profile the environment names (AWS_PROFILE, then AWS_DEFAULT_PROFILE, else
// "default") from AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE (defaults under $HOME/.aws).
// A profile named in the environment must exist in one of the files; "default" may be absent.
Result<AwsProfile, std::string> loadAwsProfile(const AwsEnvironment& env);

// Fills in what an s3:// URL left open (a directory store is returned as it is):
//   endpoint   the URL's, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's endpoint_url
//              (the last three skipped when AWS_IGNORE_CONFIGURED_ENDPOINT_URLS or the
//              profile's ignore_configured_endpoint_urls is true), else AWS's regional
//              endpoint https://s3.REGION.amazonaws.com
//   region     the URL's, AWS_REGION, AWS_DEFAULT_REGION, the profile's region, else us-east-1
//   ca         the URL's, AWS_CA_BUNDLE, the profile's ca_bundle, else the system's store
//   addressing the URL's, the profile's s3.addressing_style, else auto: virtual-host for an
//              amazonaws.com endpoint and a bucket without dots, path-style otherwise
// The StoreUrl's *Source fields say where each came from.
Result<StoreUrl, std::string> resolveS3Url(StoreUrl url, const AwsEnvironment& env,
                                           const AwsProfile& profile);

struct AwsCredentials {
  net::SigV4Credentials keys;
  std::string source;  // "environment" or "profile NAME in FILE"
};

// The keys, in the AWS CLI's order: AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY (and
// AWS_SESSION_TOKEN), then the profile's aws_access_key_id, aws_secret_access_key and
// aws_session_token (credentials file, then config file). Half a pair in one source is an
// error, not a reason to look further.
Result<AwsCredentials, std::string> resolveAwsCredentials(const AwsEnvironment& env,
                                                          const AwsProfile& profile);

// The two above on the process environment, for an s3:// URL (a directory URL is returned
// as it is).
Result<StoreUrl, std::string> resolveStoreUrl(const StoreUrl& url);

}  // namespace cairn
