// The `cairn` command.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/system/system_error.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <optional>
#include <system_error>

#include "base/bytes.hpp"
#include "cairn/version.hpp"
#include "cli/commands.hpp"
#include "cli/json.hpp"
#include "cli/options.hpp"

namespace cairn::cli {

namespace {

// The longest error line printed (a message is built from bounded parts; this bounds the sum).
constexpr std::size_t kMaxReportBytes = 16 * 1024;

// The last error reported: main() prints it as the JSON object of a --json command that
// printed none.
std::optional<Error> lastError;
// Why the command failed when no Error says it (an exception nothing expected escaped it).
std::optional<std::string> internalReason;

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

// Whether the command line asked for JSON: the command's --json was parsed or, when the line
// did not parse (an unknown command, a bad option), "--json" is one of its words before "--".
bool jsonAsked(CLI::App& app, int argc, char** argv, bool parsed) {
  CLI::Option* json = ranCommand(app)->get_option_no_throw("--json");
  if (json != nullptr && json->count() != 0) return true;
  if (parsed) return false;
  for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) return true;
  }
  return false;
}

// A --json command prints exactly one object on standard output, whatever happened.
void finishJson(bool asked, int exitCode, const std::optional<Error>& fallback = {}) {
  if (fallback && !lastError) lastError = fallback;
  if (!asked || jsonPrinted()) return;
  JsonObject out;
  out.add("ok", false);
  if (lastError) {
    out.add("error", errcName(lastError->code))
        .add("key", lastError->key)
        .add("reason", lastError->message);
  } else {
    out.add("error", "internal")
        .add("reason", internalReason.value_or("the command printed no result"));
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

int reportJson(bool json, const Error& e, double seconds, JsonObject fields) {
  if (json) {
    printJson(fields.add("ok", false)
                  .add("error", errcName(e.code))
                  .add("key", e.key)
                  .add("reason", e.message)
                  .add("seconds", seconds));
  }
  return report(e);
}

namespace {

int reportOutOf(const std::string& what, bool descriptors) {
  return report(
      Error{Errc::io, "out of a system resource: " + what +
                          (descriptors ? " (the descriptor limit, ulimit -n, is too low)" : "")});
}

}  // namespace

int reportEscaped(const std::exception_ptr& escaped) {
  try {
    std::rethrow_exception(escaped);
  } catch (const boost::system::system_error& e) {
    // Asio's way to say a descriptor ran out (epoll, eventfd, its signal pipe).
    return reportOutOf(e.what(), e.code() == boost::system::errc::too_many_files_open);
  } catch (const std::system_error& e) {
    // std::thread's and the standard library's.
    return reportOutOf(e.what(), e.code() == std::errc::too_many_files_open);
  } catch (const std::bad_alloc&) {
    return report(Error{Errc::io, "out of memory"});
  } catch (const std::exception& e) {
    internalReason = e.what();
  } catch (...) {
    internalReason = "an unknown exception";
  }
  std::fprintf(stderr, "cairn: internal: %s\n", internalReason->c_str());
  return kExitFailed;
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
  cairn::cli::addVerifyCommands(app, exitCode);
  cairn::cli::addCheckpointCommands(app, exitCode);
  cairn::cli::addStatusCommands(app, exitCode);
  cairn::cli::addRecoverCommand(app, exitCode);
  cairn::cli::addIngestCommand(app, exitCode);
  cairn::cli::addOpsCommands(app, exitCode);
  cairn::cli::addLakeCommands(app, exitCode);
  cairn::cli::addTokenCommands(app, exitCode);
  cairn::cli::addServeCommand(app, exitCode);
  cairn::cli::addCompletionCommands(app, exitCode, CAIRN_VERSION);
  cairn::cli::checkEveryOption(app);
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
    cairn::cli::finishJson(cairn::cli::jsonAsked(app, argc, argv, false), exitCode,
                           cairn::Error{cairn::Errc::usage, e.what()});
    std::fflush(stdout);
    return exitCode;
  } catch (...) {
    // An exception a command did not expect (descriptors or memory ran out before its loop
    // ran): the documented failure, never an abort.
    exitCode = cairn::cli::reportEscaped(std::current_exception());
  }
  cairn::cli::finishJson(cairn::cli::jsonAsked(app, argc, argv, true), exitCode);
  // Output that could not be written is a failure, never a silent success.
  std::cout.flush();
  if ((!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) && exitCode == 0) {
    std::fprintf(stderr, "cairn: io: cannot write standard output\n");
    exitCode = cairn::cli::kExitFailed;
  }
  return exitCode;
}
