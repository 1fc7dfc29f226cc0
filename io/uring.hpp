// Uring: one io_uring bound to one boost::asio::io_context, so a coroutine can co_await a file
// operation beside sockets and timers on the same loop.
//
// How completions reach the loop. An eventfd is registered with the ring
// (io_uring_register_eventfd) and awaited by Asio as a posix::stream_descriptor. The kernel
// signals it for every completion it posts; the wait handler clears the eventfd, then reaps
// every ready completion in one pass and posts each operation's handler to that handler's
// executor. Clearing before reaping means a completion posted meanwhile signals again, so
// none is missed; each completion queue entry is consumed exactly once, so each handler runs
// exactly once. The eventfd wait is armed only while operations are in flight, so
// io_context::run() returns once the program's work is done.
//
// Slots and waiting. At most capacity() operations hold a ring slot at a time (prepared in the
// submission queue or in the kernel). The completion queue has twice as many entries, so it
// can never overflow. An operation started while every slot is taken waits in an intrusive
// FIFO (no allocation beyond the operation itself) and takes the next free slot in order; it
// never fails for lack of room. The FIFO's bound is the number of suspended callers: each
// waiter is a coroutine that issued one operation, and the engine's in-flight budgets
// (docs/design.md §1.5) bound those.
//
// Batching. Operations started during one turn of the loop are prepared into the submission
// queue, and one posted flush submits them with a single io_uring_enter. Waiters admitted
// after a reap are submitted with one call too.
//
// Threading. Exactly one thread runs the io_context, and the Uring is used only from it
// (the ring's own handlers run on the io_context directly, not on a strand).
//
// Destruction. Drain first: destroy a Uring when no operation is in flight, from the loop's
// thread, while the io_context is alive. If operations remain, the destructor still keeps
// every buffer safe and every completion delivered exactly once: it submits what is
// prepared, blocks until the kernel has finished every submitted operation (file operations
// finish in bounded time), posts their real results, and posts ECANCELED to operations that
// were still waiting for a slot. Resumed callers must not use the destroyed Uring.
//
// Operations are not cancellable (an Asio cancellation signal is ignored): a file read or
// write in the kernel runs to completion anyway, and its buffer must stay valid until then.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include "io/error.hpp"

namespace boost::asio {
class io_context;
}

namespace cairn::io {

// Counters for tests and metrics; read on the loop's thread.
struct UringStats {
  std::uint64_t started = 0;      // operations started, each retry again (a test fault's too)
  std::uint64_t completed = 0;    // completions delivered (including ECANCELED at destruction)
  std::uint64_t submitCalls = 0;  // io_uring_enter calls made to submit
  std::uint32_t inFlight = 0;     // operations holding a slot now
  std::uint32_t waiting = 0;      // operations waiting for a slot now
  std::uint32_t peakInFlight = 0;
  std::uint32_t peakWaiting = 0;
};

class Uring {
 public:
  // One read or write SQE moves at most this many bytes; a larger span is served by several
  // (read() returns short; readFull() and write() loop).
  static constexpr std::size_t kMaxBytesPerOperation = std::size_t{1} << 30;
  // EINTR / EAGAIN results are retried at most this many times per call.
  static constexpr unsigned kMaxTransientRetries = 8;
  // The kernel accepts at most 32,768 submission queue entries.
  static constexpr unsigned kMaxEntries = 32768;

  // Sets up the ring (entries is rounded up to a power of two by the kernel) and registers
  // the eventfd. Throws std::system_error if the kernel refuses (e.g. io_uring disabled);
  // create() reports the same as an error code instead.
  explicit Uring(boost::asio::io_context& context, unsigned entries = 256);
  static IoResult<std::unique_ptr<Uring>> create(boost::asio::io_context& context,
                                                 unsigned entries = 256);
  // For an error create() returned: what refused the ring on this system and how to allow it
  // (a container's seccomp profile, kernel.io_uring_disabled, RLIMIT_MEMLOCK before Linux
  // 5.12); empty when the error is not a refusal.
  static std::string setupRefusal(std::error_code error);
  // The same, for a given value of /proc/sys/kernel/io_uring_disabled ("" when absent).
  static std::string setupRefusal(std::error_code error, std::string_view ioUringDisabled);
  ~Uring();
  Uring(const Uring&) = delete;
  Uring& operator=(const Uring&) = delete;

  // One pread: fewer bytes than requested only at end of file (or above
  // kMaxBytesPerOperation); 0 at or past end of file.
  boost::asio::awaitable<IoResult<std::size_t>> read(int fd, std::span<std::uint8_t> buffer,
                                                     std::uint64_t offset);
  // Reads until the buffer is full or end of file; returns the bytes read.
  boost::asio::awaitable<IoResult<std::size_t>> readFull(int fd, std::span<std::uint8_t> buffer,
                                                         std::uint64_t offset);
  // Writes all of bytes at offset, continuing after short writes.
  boost::asio::awaitable<IoResult<void>> write(int fd, std::span<const std::uint8_t> bytes,
                                               std::uint64_t offset);
  // write() with every operation O_DSYNC (RWF_DSYNC): the bytes, and what is needed to read
  // them back (the file's size), are durable when it returns, as after write() and
  // fdatasync(), in one operation instead of two. Bytes written earlier and not yet synced are
  // not covered.
  boost::asio::awaitable<IoResult<void>> writeDurable(int fd, std::span<const std::uint8_t> bytes,
                                                      std::uint64_t offset);
  boost::asio::awaitable<IoResult<void>> fdatasync(int fd);
  boost::asio::awaitable<IoResult<void>> fsync(int fd);

  // For tests of error paths: `fault` sees each operation each time it is to be submitted
  // (a retry too) and may answer for it with an errno instead of the kernel: the operation is
  // not submitted and fails with that errno, except that EINTR and EAGAIN count against the
  // same kMaxTransientRetries as the kernel's transient results and are retried at once; 0
  // lets it run. Empty (the default): every operation runs. Loop thread only; `fault` must
  // neither throw nor call setFaultForTests.
  struct Operation {
    enum class Kind : std::uint8_t { read, write, writeDsync, fsync, fdatasync } kind;
    int fd;
    std::uint64_t offset;
    std::uint32_t length;
  };
  void setFaultForTests(std::function<int(const Operation&)> fault);

  // Slots: the submission queue's size (entries rounded up to a power of two).
  unsigned capacity() const noexcept;
  UringStats stats() const noexcept;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace cairn::io
