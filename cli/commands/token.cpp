// `cairn token create`: a bearer token for a lake; the configuration keeps its SHA-256.
#include <cstdio>
#include <string>

#include "catalog/access/config.hpp"
#include "cli/commands.hpp"
#include "engine/store/object_store.hpp"

namespace cairn::cli {

namespace asio = boost::asio;
using namespace cairn::catalog;

namespace {

struct TokenCreateOptions {
  std::string config;
  std::string lake;
  std::string role;
  std::int64_t expiresIn = 0;
  bool json = false;
};

int runTokenCreate(const TokenCreateOptions& o) {
  auto role = parseRole(o.role);
  if (!role) return reportJson(o.json, Error{Errc::usage, "--role is read or read-write"}, 0);
  const std::string token = newToken();
  const std::int64_t now = unixSecondsNow();
  auto updated = updateConfig(o.config, [&](CatalogConfig& c) -> Res<void> {
    if (!c.lake(o.lake)) {
      return err(Errc::usage, "no lake " + o.lake + " in " + o.config + " (cairn lake create)");
    }
    TokenEntry t;
    t.sha256 = tokenHash(token);
    t.lake = o.lake;
    t.role = *role;
    t.createdUnixSeconds = now;
    if (o.expiresIn > 0) t.expiresUnixSeconds = now + o.expiresIn;
    c.tokens.push_back(t);
    return {};
  });
  if (!updated) return reportJson(o.json, updated.error(), 0);
  if (o.json) {
    printJson(JsonObject{}.add("token", token));
  } else {
    std::printf("%s\n", token.c_str());
    std::fprintf(stderr, "cairn: the token is shown once; %s keeps only its SHA-256\n",
                 o.config.c_str());
  }
  return 0;
}

}  // namespace

void addTokenCommands(CLI::App& app, int& exitCode) {
  auto* token = app.add_subcommand("token", "the catalog's bearer tokens");
  token->require_subcommand(1);
  auto tokenCreate = std::make_shared<TokenCreateOptions>();
  auto* tcreate = token->add_subcommand(
      "create", "make a bearer token for a lake; it is printed once, the file keeps its SHA-256");
  tcreate->add_option("--config", tokenCreate->config, "the configuration file")->required();
  tcreate->add_option("--lake", tokenCreate->lake, "the lake the token is for")->required();
  tcreate->add_option("--role", tokenCreate->role, "read or read-write")->required();
  tcreate->add_option("--expires-in", tokenCreate->expiresIn, "seconds until it expires (none)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{100} * 365 * 86400));
  tcreate->add_flag("--json", tokenCreate->json, "print {\"token\": \"...\"}");
  tcreate->callback([tokenCreate, &exitCode] { exitCode = runTokenCreate(*tokenCreate); });
}

}  // namespace cairn::cli
