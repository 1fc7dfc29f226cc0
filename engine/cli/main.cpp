// The `cairn` command.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <optional>

#include "base/bytes.hpp"
#include "cairn/version.hpp"
#include "engine/cli/commands.hpp"
#include "engine/cli/json.hpp"

namespace cairn::cli {

namespace {

// The longest error line printed (a message is built from bounded parts; this bounds the sum).
constexpr std::size_t kMaxReportBytes = 16 * 1024;

// The last error reported: main() prints it as the JSON object of a --json command that
// printed none.
std::optional<Error> lastError;

int exitCodeOf(Errc code) {
  switch (code) {
    case Errc::usage:
      return kExitUsage;
    case Errc::busy:
      return kExitBusy;
    case Errc::uncertain:
      return kExitUncertain;
    case Errc::undetermined:
      return kExitUndetermined;
    default:
      return kExitFailed;
  }
}

// A standard descriptor the caller closed gets a descriptor that fails every use in its
// direction (/dev/null opened the other way), before anything else opens a file: otherwise
// the next descriptor (an eventfd, the journal) would land on it, and stdin would read it, or
// stdout write into it. Reading a closed stdin is then an error, writing a closed stdout too.
void guardStandardDescriptors() {
  for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int opened = ::open("/dev/null", (fd == STDIN_FILENO ? O_WRONLY : O_RDONLY));
    if (opened >= 0 && opened != fd) {
      ::dup2(opened, fd);
      ::close(opened);
    }
  }
}

// The subcommand that ran (the deepest one parsed).
CLI::App* ranCommand(CLI::App& app) {
  CLI::App* at = &app;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (CLI::App* sub : at->get_subcommands()) {
      if (sub->parsed()) {
        at = sub;
        deeper = true;
        break;
      }
    }
  }
  return at;
}

// A --json command prints exactly one object on standard output, whatever happened.
void finishJson(CLI::App& app, int exitCode, const std::optional<Error>& fallback = {}) {
  if (fallback && !lastError) lastError = fallback;
  CLI::Option* json = ranCommand(app)->get_option_no_throw("--json");
  if (json == nullptr || json->count() == 0 || jsonPrinted()) return;
  JsonObject out;
  out.add("ok", false);
  if (lastError) {
    out.add("error", errcName(lastError->code))
        .add("key", lastError->key)
        .add("reason", lastError->message);
  } else {
    out.add("error", "internal").add("reason", "the command printed no result");
  }
  printJson(out.add("exit", exitCode));
}

}  // namespace

int report(const Error& e) {
  lastError = e;
  // One line, whatever the message holds (a server's text, a file name): control characters
  // and invalid UTF-8 are escaped, and it is bounded.
  const std::string line = boundedDisplay(e.message, kMaxReportBytes, /*escapeBackslash=*/false);
  std::fprintf(stderr, "cairn: %.*s: %s\n", static_cast<int>(errcName(e.code).size()),
               errcName(e.code).data(), line.c_str());
  return exitCodeOf(e.code);
}

int reportJson(bool json, const Error& e, double seconds) {
  if (json) {
    printJson(JsonObject{}
                  .add("ok", false)
                  .add("error", errcName(e.code))
                  .add("key", e.key)
                  .add("reason", e.message)
                  .add("seconds", seconds));
  }
  return report(e);
}

}  // namespace cairn::cli

int main(int argc, char** argv) {
  cairn::cli::guardStandardDescriptors();
  CLI::App app{"cairn: a durable journal published as verified checkpoints to object storage"};
  app.set_version_flag("--version", "cairn " CAIRN_VERSION " (" CAIRN_REVISION ")",
                       "print the version and the git revision it was built from");
  app.require_subcommand(1);
  int exitCode = 0;
  cairn::cli::addHeadCommands(app, exitCode);
  cairn::cli::addJournalCommands(app, exitCode);
  cairn::cli::addStoreCommands(app, exitCode);
  cairn::cli::addCheckpointCommands(app, exitCode);
  cairn::cli::addPublishCommands(app, exitCode);
  cairn::cli::addOpsCommands(app, exitCode);
  cairn::cli::addCatalogCommands(app, exitCode);
  cairn::cli::addCompletionCommands(app, exitCode, CAIRN_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    exitCode = cairn::cli::kExitUsage;
    cairn::cli::finishJson(app, exitCode, cairn::Error{cairn::Errc::usage, e.what()});
    std::fflush(stdout);
    return exitCode;
  }
  cairn::cli::finishJson(app, exitCode);
  // Output that could not be written is a failure, never a silent success.
  std::cout.flush();
  if ((!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) && exitCode == 0) {
    std::fprintf(stderr, "cairn: io: cannot write standard output\n");
    exitCode = cairn::cli::kExitFailed;
  }
  return exitCode;
}
