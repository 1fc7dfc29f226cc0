// Catch2's main lives alone in this file so that test files rebuild without it.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>

int main(int argc, char* argv[]) {
  // The AWS shared files and profile of whoever runs the tests never reach the stores under
  // test (they would change the RGW stores' region, addressing or keys): no files, no profile.
  ::setenv("AWS_CONFIG_FILE", "/nonexistent/cairn-tests/aws-config", 1);
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/cairn-tests/aws-credentials", 1);
  for (const char* name : {"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL",
                           "AWS_ENDPOINT_URL_S3", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"}) {
    ::unsetenv(name);
  }
  return Catch::Session().run(argc, argv);
}
