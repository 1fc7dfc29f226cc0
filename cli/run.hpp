// Runs one command's coroutine on an io_context with an io_uring bound to it.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "engine/error.hpp"

namespace cairn::io {
class Uring;
}

namespace cairn::cli {

// Runs `body` to completion and returns its exit code; an exception escaping it is reported
// by reportEscaped (exit 1: io when a descriptor, a thread or memory ran out, else internal). While
// it runs, the command's status lines are shown and SIGINT/SIGTERM stop it
// (cli/progress.hpp; `handleSignals` false: the body handles them itself, as `serve` does);
// a command a signal interrupted exits 128 + the signal.
int runAsync(const std::function<boost::asio::awaitable<int>(io::Uring&)>& body,
             bool handleSignals = true);

// UTF-8 to UTF-16 code units; nullopt for invalid UTF-8.
std::optional<std::u16string> utf8ToUtf16(std::string_view text);
// UTF-16 code units to UTF-8 for display; an unpaired surrogate becomes U+FFFD.
std::string utf16ToUtf8Lossy(std::u16string_view units);

}  // namespace cairn::cli
