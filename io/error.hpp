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

}  // namespace cairn::io
