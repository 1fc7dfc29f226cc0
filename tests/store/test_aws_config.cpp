// The AWS CLI's conventions for S3 stores: each source of the endpoint, the region, the CA,
// the addressing style and the keys, and their precedence (engine/store/aws_config.hpp).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "engine/store/aws_config.hpp"
#include "tests/io/io_test_support.hpp"

using namespace cairn;

namespace {

// An environment of its own: the variables given, HOME at a temporary directory.
struct FakeAws {
  io::test::TempDir home;
  std::map<std::string, std::string> vars;

  FakeAws() { vars["HOME"] = home.path().string(); }

  AwsEnvironment env() const {
    return {[this](const std::string& name) -> std::optional<std::string> {
      auto it = vars.find(name);
      if (it == vars.end() || it->second.empty()) return std::nullopt;
      return it->second;
    }};
  }
  void write(const std::string& relative, const std::string& text) const {
    std::filesystem::create_directories((home.path() / relative).parent_path());
    std::ofstream(home.path() / relative) << text;
  }
  std::string path(const std::string& relative) const { return (home.path() / relative).string(); }

  AwsProfile profile() const {
    auto p = loadAwsProfile(env());
    REQUIRE(p.ok());
    return *p;
  }
  StoreUrl resolve(const std::string& urlText) const {
    auto url = parseStoreUrl(urlText);
    REQUIRE(url.ok());
    auto resolved = resolveS3Url(*url, env(), profile());
    INFO((resolved.ok() ? std::string() : resolved.error()));
    REQUIRE(resolved.ok());
    return *resolved;
  }
};

}  // namespace

TEST_CASE("AWS conventions: the endpoint, URL first, then the variables, the profile, AWS",
          "[store][aws]") {
  FakeAws aws;
  aws.write(".aws/config",
            "[default]\nregion = eu-central-1\nendpoint_url = http://profile.example:9000\n");
  aws.vars["AWS_ENDPOINT_URL"] = "http://generic.example:8000/";
  aws.vars["AWS_ENDPOINT_URL_S3"] = "http://s3only.example:7000";

  StoreUrl given = aws.resolve("s3://bkt?endpoint=http://url.example:1234");
  CHECK(given.endpoint == "http://url.example:1234");
  CHECK(given.endpointSource == "url");

  StoreUrl u = aws.resolve("s3://bkt");
  CHECK(u.endpoint == "http://s3only.example:7000");
  CHECK(u.endpointSource == "AWS_ENDPOINT_URL_S3");

  aws.vars.erase("AWS_ENDPOINT_URL_S3");
  u = aws.resolve("s3://bkt");
  CHECK(u.endpoint == "http://generic.example:8000");  // one trailing '/' taken off
  CHECK(u.endpointSource == "AWS_ENDPOINT_URL");

  aws.vars.erase("AWS_ENDPOINT_URL");
  u = aws.resolve("s3://bkt");
  CHECK(u.endpoint == "http://profile.example:9000");
  CHECK(u.endpointSource == "profile default in " + aws.path(".aws/config"));

  // Configured endpoints can be switched off, by the environment or by the profile.
  aws.vars["AWS_ENDPOINT_URL_S3"] = "http://s3only.example:7000";
  aws.vars["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] = "true";
  u = aws.resolve("s3://bkt");
  CHECK(u.endpoint == "https://s3.eu-central-1.amazonaws.com");
  CHECK(u.endpointSource == "AWS's regional endpoint");
  aws.vars.erase("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
  aws.vars.erase("AWS_ENDPOINT_URL_S3");
  aws.write(".aws/config",
            "[default]\nendpoint_url = http://p:1\nignore_configured_endpoint_urls = TRUE\n");
  u = aws.resolve("s3://bkt");
  CHECK(u.endpoint == "https://s3.us-east-1.amazonaws.com");

  aws.write(".aws/config", "");
  aws.vars["AWS_REGION"] = "cn-north-1";
  CHECK(aws.resolve("s3://bkt").endpoint == "https://s3.cn-north-1.amazonaws.com.cn");

  // A bad endpoint names its source.
  aws.vars["AWS_ENDPOINT_URL"] = "ftp://nope";
  auto url = parseStoreUrl("s3://bkt");
  REQUIRE(url.ok());
  auto refused = resolveS3Url(*url, aws.env(), aws.profile());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().find("AWS_ENDPOINT_URL") != std::string::npos);
}

TEST_CASE("AWS conventions: the region, URL, AWS_REGION, AWS_DEFAULT_REGION, profile, us-east-1",
          "[store][aws]") {
  FakeAws aws;
  CHECK(aws.resolve("s3://bkt").region == "us-east-1");
  CHECK(aws.resolve("s3://bkt").regionSource == "default");
  aws.write(".aws/config", "[default]\nregion = ap-south-1\n");
  CHECK(aws.resolve("s3://bkt").region == "ap-south-1");
  aws.vars["AWS_DEFAULT_REGION"] = "eu-west-2";
  CHECK(aws.resolve("s3://bkt").region == "eu-west-2");
  aws.vars["AWS_REGION"] = "eu-west-3";
  StoreUrl u = aws.resolve("s3://bkt");
  CHECK(u.region == "eu-west-3");
  CHECK(u.regionSource == "AWS_REGION");
  u = aws.resolve("s3://bkt?region=sa-east-1");
  CHECK(u.region == "sa-east-1");
  CHECK(u.regionSource == "url");
  // The regional endpoint follows the region chosen.
  CHECK(u.endpoint == "https://s3.sa-east-1.amazonaws.com");
  aws.vars["AWS_REGION"] = "us east";
  auto url = parseStoreUrl("s3://bkt");
  REQUIRE(url.ok());
  CHECK_FALSE(resolveS3Url(*url, aws.env(), aws.profile()).ok());
}

TEST_CASE("AWS conventions: the CA bundle and the addressing style", "[store][aws]") {
  FakeAws aws;
  CHECK(aws.resolve("s3://bkt").caFile.empty());
  aws.write(".aws/config", "[default]\nca_bundle = ~/profile-ca.pem\n");
  CHECK(aws.resolve("s3://bkt").caFile == aws.path("profile-ca.pem"));
  aws.vars["AWS_CA_BUNDLE"] = "/etc/env-ca.pem";
  CHECK(aws.resolve("s3://bkt").caFile == "/etc/env-ca.pem");
  CHECK(aws.resolve("s3://bkt").caSource == "AWS_CA_BUNDLE");
  CHECK(aws.resolve("s3://bkt?ca=/etc/url-ca.pem").caFile == "/etc/url-ca.pem");

  // auto: virtual-host for AWS and a one-label bucket; path for any other endpoint, and for
  // a bucket with dots (AWS's wildcard certificate covers one label).
  CHECK(aws.resolve("s3://bkt").virtualHost);
  CHECK_FALSE(aws.resolve("s3://my.bucket").virtualHost);
  CHECK_FALSE(aws.resolve("s3://bkt?endpoint=http://127.0.0.1:7480").virtualHost);
  CHECK(aws.resolve("s3://bkt?endpoint=http://127.0.0.1:7480&addressing=virtual").virtualHost);
  CHECK_FALSE(aws.resolve("s3://bkt?addressing=path").virtualHost);
  // The profile's nested s3.addressing_style, below the URL's.
  aws.write(".aws/config",
            "[default]\ns3 =\n  addressing_style = virtual\n  other = x\nregion = us-west-2\n");
  StoreUrl u = aws.resolve("s3://bkt?endpoint=http://127.0.0.1:7480");
  CHECK(u.virtualHost);
  CHECK(u.region == "us-west-2");  // the nested block ended at the unindented line
  CHECK_FALSE(aws.resolve("s3://bkt?endpoint=http://127.0.0.1:7480&addressing=path").virtualHost);
}

TEST_CASE("AWS conventions: the keys, environment first, then the profile's files",
          "[store][aws]") {
  FakeAws aws;
  aws.write(
      ".aws/credentials",
      "# comment\n[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n"
      "[dev]\naws_access_key_id=DEVKEY\naws_secret_access_key=devsecret\naws_session_token="
      "devtoken\n");
  aws.write(".aws/config",
            "[profile ops]\naws_access_key_id = OPSKEY\naws_secret_access_key = opssecret\n"
            "[profile dev]\naws_access_key_id = CONFIGDEVKEY\naws_secret_access_key = x\n");

  auto keys = resolveAwsCredentials(aws.env(), aws.profile());
  REQUIRE(keys.ok());
  CHECK(keys->keys.accessKey == "FILEKEY");
  CHECK(keys->keys.secretKey == "filesecret");
  CHECK(keys->source == "profile default in " + aws.path(".aws/credentials"));

  aws.vars["AWS_PROFILE"] = "dev";  // the credentials file wins over the config file
  keys = resolveAwsCredentials(aws.env(), aws.profile());
  REQUIRE(keys.ok());
  CHECK(keys->keys.accessKey == "DEVKEY");
  CHECK(keys->keys.sessionToken == "devtoken");

  aws.vars["AWS_PROFILE"] = "ops";  // only in the config file, as [profile ops]
  keys = resolveAwsCredentials(aws.env(), aws.profile());
  REQUIRE(keys.ok());
  CHECK(keys->keys.accessKey == "OPSKEY");
  CHECK(keys->source == "profile ops in " + aws.path(".aws/config"));

  aws.vars.erase("AWS_PROFILE");
  aws.vars["AWS_DEFAULT_PROFILE"] = "ops";  // the older variable, below AWS_PROFILE
  CHECK(resolveAwsCredentials(aws.env(), aws.profile())->keys.accessKey == "OPSKEY");
  aws.vars["AWS_PROFILE"] = "dev";
  CHECK(resolveAwsCredentials(aws.env(), aws.profile())->keys.accessKey == "DEVKEY");

  aws.vars["AWS_ACCESS_KEY_ID"] = "ENVKEY";
  aws.vars["AWS_SECRET_ACCESS_KEY"] = "envsecret";
  keys = resolveAwsCredentials(aws.env(), aws.profile());
  REQUIRE(keys.ok());
  CHECK(keys->keys.accessKey == "ENVKEY");
  CHECK(keys->keys.sessionToken.empty());
  CHECK(keys->source == "environment");
  aws.vars["AWS_SESSION_TOKEN"] = "envtoken";
  CHECK(resolveAwsCredentials(aws.env(), aws.profile())->keys.sessionToken == "envtoken");

  // Half a pair is an error, not a reason to look further.
  aws.vars.erase("AWS_SECRET_ACCESS_KEY");
  keys = resolveAwsCredentials(aws.env(), aws.profile());
  REQUIRE_FALSE(keys.ok());
  CHECK(keys.error().find("without AWS_SECRET_ACCESS_KEY") != std::string::npos);
  aws.vars.erase("AWS_ACCESS_KEY_ID");
  aws.vars.erase("AWS_SESSION_TOKEN");
  aws.write(".aws/credentials", "[dev]\naws_access_key_id = HALF\n");
  aws.write(".aws/config", "[profile dev]\naws_access_key_id = A\naws_secret_access_key = B\n");
  keys = resolveAwsCredentials(aws.env(), aws.profile());
  REQUIRE_FALSE(keys.ok());
  CHECK(keys.error().find("only half") != std::string::npos);

  // A profile named in the environment must exist; the default may be absent, and then
  // there are simply no keys (named, with the places looked at).
  aws.vars["AWS_PROFILE"] = "nosuch";
  auto profile = loadAwsProfile(aws.env());
  REQUIRE_FALSE(profile.ok());
  CHECK(profile.error().find("nosuch") != std::string::npos);
  aws.vars.erase("AWS_PROFILE");
  aws.vars.erase("AWS_DEFAULT_PROFILE");
  keys = resolveAwsCredentials(aws.env(), aws.profile());
  REQUIRE_FALSE(keys.ok());
  CHECK(keys.error().find("no S3 credentials") != std::string::npos);
}

TEST_CASE("AWS conventions: the files' places, and files that cannot be read", "[store][aws]") {
  FakeAws aws;
  aws.write("elsewhere/creds", "[default]\naws_access_key_id = K\naws_secret_access_key = S\n");
  aws.write("elsewhere/conf", "[default]\nregion = eu-north-1\n");
  aws.vars["AWS_SHARED_CREDENTIALS_FILE"] = "~/elsewhere/creds";
  aws.vars["AWS_CONFIG_FILE"] = aws.path("elsewhere/conf");
  CHECK(resolveAwsCredentials(aws.env(), aws.profile())->keys.accessKey == "K");
  CHECK(aws.resolve("s3://bkt").region == "eu-north-1");

  // Present but unreadable, malformed or too large: an error naming the file, never "absent".
  std::filesystem::create_directories(aws.path("elsewhere/conf-dir"));
  aws.vars["AWS_CONFIG_FILE"] = aws.path("elsewhere/conf-dir");
  auto profile = loadAwsProfile(aws.env());
  REQUIRE_FALSE(profile.ok());
  CHECK(profile.error().find("conf-dir") != std::string::npos);

  aws.write("elsewhere/conf", "[default]\nregion eu-north-1\n");
  aws.vars["AWS_CONFIG_FILE"] = aws.path("elsewhere/conf");
  profile = loadAwsProfile(aws.env());
  REQUIRE_FALSE(profile.ok());
  CHECK(profile.error().find("conf:2") != std::string::npos);

  aws.write("elsewhere/conf", "[default\n");
  CHECK_FALSE(loadAwsProfile(aws.env()).ok());
  aws.write("elsewhere/conf", "region = x\n");
  CHECK_FALSE(loadAwsProfile(aws.env()).ok());

  aws.write("elsewhere/conf", "[default]\n# " + std::string(kMaxAwsFileBytes, 'x') + "\n");
  profile = loadAwsProfile(aws.env());
  REQUIRE_FALSE(profile.ok());
  CHECK(profile.error().find("larger than") != std::string::npos);

  // Absent files are fine: nothing is configured there.
  aws.vars["AWS_CONFIG_FILE"] = aws.path("nothing/here");
  aws.vars["AWS_SHARED_CREDENTIALS_FILE"] = aws.path("nothing/there");
  CHECK(loadAwsProfile(aws.env()).ok());
}

TEST_CASE("AWS conventions: the shared files' forms the AWS CLI accepts", "[store][aws]") {
  FakeAws aws;
  // "[profile  NAME]" with more whitespace, or quoted, is profile NAME; "key: value"; CRLF
  // lines; a comment after a section header; comments inside a nested block.
  aws.write(".aws/credentials", "[x]\r\naws_access_key_id: KEY\r\naws_secret_access_key = S\r\n");
  aws.write(".aws/config",
            "[profile   x] ; the lake\n"
            "endpoint_url = http://minio.example:9000\n"
            "s3 =\n"
            "  # nested comment\n"
            "  addressing_style = virtual\n"
            "region: eu-west-1\n"
            "[profile \"y\"]\nregion = ap-east-1\n");
  aws.vars["AWS_PROFILE"] = "x";
  StoreUrl u = aws.resolve("s3://bkt");
  CHECK(u.endpoint == "http://minio.example:9000");
  CHECK(u.region == "eu-west-1");
  CHECK(u.virtualHost);
  auto keys = resolveAwsCredentials(aws.env(), aws.profile());
  REQUIRE(keys.ok());
  CHECK(keys->keys.accessKey == "KEY");
  CHECK(keys->keys.secretKey == "S");  // no '\r' kept
  aws.vars["AWS_PROFILE"] = "y";
  CHECK(aws.resolve("s3://bkt").region == "ap-east-1");

  // Nesting is by depth: in a file indented throughout, a setting at the parent's depth is not
  // nested.
  aws.write(".aws/config",
            "[default]\n  s3 =\n    addressing_style = path\n  region = eu-south-1\n");
  aws.vars.erase("AWS_PROFILE");
  u = aws.resolve("s3://bkt");
  CHECK(u.region == "eu-south-1");
  CHECK_FALSE(u.virtualHost);

  // Text after a section header that is not a comment is refused.
  aws.write(".aws/config", "[default] junk\nregion = x\n");
  CHECK_FALSE(loadAwsProfile(aws.env()).ok());
}

TEST_CASE("AWS conventions: the environment decides whether configured endpoints are ignored",
          "[store][aws]") {
  FakeAws aws;
  aws.write(".aws/config",
            "[default]\nendpoint_url = http://p:1\nignore_configured_endpoint_urls = true\n");
  CHECK(aws.resolve("s3://bkt").endpoint == "https://s3.us-east-1.amazonaws.com");
  aws.vars["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] = "false";  // set: it decides
  CHECK(aws.resolve("s3://bkt").endpoint == "http://p:1");
}

TEST_CASE("AWS conventions: what is not read is refused, not passed over", "[store][aws]") {
  FakeAws aws;
  // A [services] section would decide the endpoint below AWS_ENDPOINT_URL_S3.
  aws.write(".aws/config",
            "[default]\nservices = mine\nendpoint_url = http://p:1\n[services mine]\ns3 =\n  "
            "endpoint_url = http://s:2\n");
  auto url = parseStoreUrl("s3://bkt");
  REQUIRE(url.ok());
  auto refused = resolveS3Url(*url, aws.env(), aws.profile());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().find("services") != std::string::npos);
  aws.vars["AWS_ENDPOINT_URL_S3"] = "http://e:3";  // above the services section: fine
  CHECK(aws.resolve("s3://bkt").endpoint == "http://e:3");

  // Profiles whose keys come from a role, a process or SSO: refused, even beside static keys.
  for (const char* setting : {"role_arn = arn:aws:iam::1:role/r\nsource_profile = default",
                              "credential_process = /bin/keys", "sso_session = s"}) {
    CAPTURE(setting);
    aws.write(".aws/config",
              std::string("[default]\naws_access_key_id = A\naws_secret_access_key = B\n") +
                  setting + "\n");
    auto keys = resolveAwsCredentials(aws.env(), aws.profile());
    REQUIRE_FALSE(keys.ok());
    CHECK(keys.error().find("not read") != std::string::npos);
  }
  // The environment's keys come first, and then the profile is not consulted.
  aws.vars["AWS_ACCESS_KEY_ID"] = "E";
  aws.vars["AWS_SECRET_ACCESS_KEY"] = "F";
  CHECK(resolveAwsCredentials(aws.env(), aws.profile())->keys.accessKey == "E");
}
