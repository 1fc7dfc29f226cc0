// The real S3 server the integration tests use (Ceph RGW from ../shared/s3/start-rgw.sh), from
// S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_REGION, S3_BUCKET. Without them a test FAILS,
// unless CAIRN_ALLOW_NO_S3=1 outside CI (then it warns): S3 tests never skip silently.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>
#include <random>
#include <string>

#include "engine/store/store_url.hpp"

namespace cairn::test {

inline std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The store URL text for a fresh root prefix per call, so runs and sections never see each
// other's keys; nullopt (after a warning) only when S3 is explicitly allowed to be absent.
inline std::optional<std::string> rgwUrlText() {
  if (env("S3_ENDPOINT").empty() || env("S3_BUCKET").empty() || env("S3_ACCESS_KEY").empty()) {
    bool required = env("CI") == "true" || env("CAIRN_REQUIRE_S3") == "1";
    std::string help =
        "S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_REGION and S3_BUCKET "
        "must be set (eval \"$(bash ../shared/s3/start-rgw.sh)\")";
    if (required || env("CAIRN_ALLOW_NO_S3") != "1") FAIL(help);
    WARN("S3 store test NOT run (CAIRN_ALLOW_NO_S3=1): " + help);
    return std::nullopt;
  }
  ::setenv("AWS_ACCESS_KEY_ID", env("S3_ACCESS_KEY").c_str(), 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", env("S3_SECRET_KEY").c_str(), 1);
  static std::mt19937_64 rng(std::random_device{}());
  std::string root = "cairn-test-" + std::to_string(rng() % 1'000'000'000'000ull);
  std::string region = env("S3_REGION").empty() ? "us-east-1" : env("S3_REGION");
  return "s3://" + env("S3_BUCKET") + "/" + root + "?endpoint=" + env("S3_ENDPOINT") +
         "&region=" + region;
}

inline std::optional<StoreUrl> rgwUrl() {
  auto text = rgwUrlText();
  if (!text) return std::nullopt;
  auto url = parseStoreUrl(*text);
  REQUIRE(url.ok());
  return *url;
}

}  // namespace cairn::test
