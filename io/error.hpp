// IoResult: the outcome of a local I/O call. Failures are errno values in the system category,
// so callers compare them with std::errc (e.g. `r.error() ==
// std::errc::no_such_file_or_directory`).
#pragma once

#include <cerrno>
#include <system_error>

#include "base/result.hpp"

namespace cairn::io {

template <class T>
using IoResult = cairn::Result<T, std::error_code>;

// An errno value (positive, as in errno; io_uring's negative results are negated by the caller).
inline std::error_code errnoCode(int errnoValue) { return {errnoValue, std::system_category()}; }

// The current errno, for a libc call that just returned -1.
inline std::error_code lastErrno() { return errnoCode(errno); }

// Refusals of cairn's own, in their own category (errno has no words for them).
enum class FileErrc {
  symbolicLink = 1,  // the path names a symbolic link, which cairn never follows
  notRegular,        // the path names a FIFO, device, socket or directory, not a regular file
};
const std::error_category& fileCategory();
inline std::error_code fileError(FileErrc e) { return {static_cast<int>(e), fileCategory()}; }

}  // namespace cairn::io
