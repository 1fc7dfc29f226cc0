// The `cairn` command.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "engine/cli/commands.hpp"
#include "engine/cli/json.hpp"

namespace cairn::cli {

int report(const Error& e) {
  std::fprintf(stderr, "cairn: %.*s: %s\n", static_cast<int>(errcName(e.code).size()),
               errcName(e.code).data(), e.message.c_str());
  switch (e.code) {
    case Errc::usage:
      return kExitUsage;
    case Errc::busy:
      return kExitBusy;
    case Errc::uncertain:
      return kExitUncertain;
    default:
      return kExitFailed;
  }
}

int reportJson(bool json, const Error& e, double seconds) {
  if (json) {
    std::cout << JsonObject{}
                     .add("ok", false)
                     .add("error", errcName(e.code))
                     .add("key", e.key)
                     .add("reason", e.message)
                     .add("seconds", seconds)
                     .str()
              << "\n";
  }
  return report(e);
}

}  // namespace cairn::cli

int main(int argc, char** argv) {
  CLI::App app{"cairn: a durable journal published as verified checkpoints to object storage"};
  app.require_subcommand(1);
  int exitCode = 0;
  cairn::cli::addHeadCommands(app, exitCode);
  cairn::cli::addJournalCommands(app, exitCode);
  cairn::cli::addStoreCommands(app, exitCode);
  cairn::cli::addCheckpointCommands(app, exitCode);
  cairn::cli::addPublishCommands(app, exitCode);
  cairn::cli::addOpsCommands(app, exitCode);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return cairn::cli::kExitUsage;
  }
  return exitCode;
}
