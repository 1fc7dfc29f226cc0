// CPU-heavy work (SHA-256 of large buffers, frame checks) runs off the I/O loop, so one
// coroutine's hashing never stalls another's reads and both cores are used (docs/design.md §1.3).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>

namespace cairn {

// Runs `work` on the process's CPU pool (one thread per core, at least one) and resumes the
// caller on its own executor when it is done. `work` must not touch state the loop thread
// uses meanwhile; the caller is suspended until it returns, so the caller's own locals are
// safe to use.
boost::asio::awaitable<void> onCpuPool(std::function<void()> work);

// Runs `work` on the CPU pool without waiting for it; `work` owns whatever it touches.
void postToCpuPool(std::function<void()> work);

}  // namespace cairn
