#include "cli/run.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "io/uring.hpp"
#include "net/http/http_client.hpp"

namespace cairn::cli {

namespace {
// The command's --timeout (one command runs per process); 0: none.
double commandTimeoutSeconds = 0;

// Descriptors a command must be able to open before its event loop is built
// (docs/decisions/0063-command-starts-only-32-descriptors.md): the loop and the ring take five
// (Asio's eventfd, epoll and timerfd, the io_uring, its eventfd), the command its journal, lock,
// directories, files and connections.
constexpr std::size_t kMinFreeDescriptors = 32;

// Whether kMinFreeDescriptors more descriptors can be opened now (all are closed again). Only
// EMFILE and ENFILE say no; any other refusal of the probe leaves the answer to the command.
bool descriptorsToSpare() {
  std::array<int, kMinFreeDescriptors> probe{};
  std::size_t opened = 0;
  bool spare = true;
  for (; opened < probe.size(); ++opened) {
    probe[opened] = ::eventfd(0, EFD_CLOEXEC);
    if (probe[opened] < 0) {
      spare = errno != EMFILE && errno != ENFILE;
      break;
    }
  }
  for (std::size_t i = 0; i < opened; ++i) ::close(probe[i]);
  return spare;
}
}  // namespace

void addTimeoutOption(CLI::App* cmd, double defaultSeconds) {
  cmd->add_option_function<double>(
         "--timeout", [](double value) { commandTimeoutSeconds = value; },
         "bound on all the command's store requests, in seconds (0: none; default " +
             std::to_string(static_cast<int>(defaultSeconds)) + ")")
      ->check(CLI::Range(0.0, 7.0 * 86400));
  // The default applies when the option is not given (add_option_function runs only then).
  cmd->preparse_callback([defaultSeconds](std::size_t) { commandTimeoutSeconds = defaultSeconds; });
}

int runAsync(const std::function<boost::asio::awaitable<int>(io::Uring&)>& body,
             bool handleSignals) {
  if (commandTimeoutSeconds > 0) {
    net::setProcessDeadline(std::chrono::steady_clock::now() +
                            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(commandTimeoutSeconds)));
  }
  if (!descriptorsToSpare()) {
    return report(Error{Errc::io, "out of a system resource: fewer than " +
                                      std::to_string(kMinFreeDescriptors) +
                                      " file descriptors free (the descriptor limit, ulimit -n, "
                                      "is too low)"});
  }
  boost::asio::io_context context(1);
  auto uring = io::Uring::create(context);
  if (!uring) {
    const std::string refusal = io::Uring::setupRefusal(uring.error());
    return report(Error{Errc::io, "cannot set up io_uring: " + uring.error().message() +
                                      (refusal.empty() ? "" : ": ") + refusal});
  }
  int exitCode = 1;
  // Ends with the body: its last status line and summary, and the waits that would keep the
  // context running.
  CommandRun run(context.get_executor(), handleSignals);
  boost::asio::co_spawn(context, body(**uring), [&](std::exception_ptr e, int code) {
    if (e) {
      exitCode = reportEscaped(e);
    } else {
      exitCode = code;
    }
    exitCode = run.finish(exitCode);
  });
  context.run();
  return exitCode;
}

std::optional<std::u16string> utf8ToUtf16(std::string_view s) {
  std::u16string out;
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    std::uint32_t cp;
    std::size_t n;
    if (c < 0x80) {
      cp = c, n = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F, n = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F, n = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07, n = 4;
    } else {
      return std::nullopt;
    }
    if (i + n > s.size()) return std::nullopt;
    for (std::size_t k = 1; k < n; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return std::nullopt;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr std::uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out.push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
    } else {
      out.push_back(static_cast<char16_t>(cp));
    }
    i += n;
  }
  return out;
}

std::string utf16ToUtf8Lossy(std::u16string_view u) {
  std::string out;
  auto put = [&](std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  };
  for (std::size_t i = 0; i < u.size(); ++i) {
    char16_t c = u[i];
    if (c >= 0xD800 && c <= 0xDBFF && i + 1 < u.size() && u[i + 1] >= 0xDC00 &&
        u[i + 1] <= 0xDFFF) {
      put(0x10000 + ((std::uint32_t(c) - 0xD800) << 10) + (std::uint32_t(u[i + 1]) - 0xDC00));
      ++i;
    } else if (c >= 0xD800 && c <= 0xDFFF) {
      put(0xFFFD);
    } else {
      put(c);
    }
  }
  return out;
}

}  // namespace cairn::cli
