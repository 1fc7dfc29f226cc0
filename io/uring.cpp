#include "io/uring.hpp"

#include <liburing.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

namespace cairn::io {
namespace {

// Submitting is retried this many times within one loop turn before the rest waits for the
// next turn (the kernel may refuse for a moment with EAGAIN/EBUSY when short of memory).
constexpr unsigned kMaxSubmitAttemptsPerTurn = 4;
// Offsets are loff_t in the kernel, and -1 means "the file position": refuse anything above.
constexpr std::uint64_t kMaxKernelOffset = std::numeric_limits<std::int64_t>::max();

[[noreturn]] void fatal(const char* what, int errnoValue) {
  std::fprintf(stderr, "cairn::io::Uring: %s: %s\n", what, std::strerror(errnoValue));
  std::abort();
}

using OpKind = Uring::Operation::Kind;

struct OpRequest {
  OpKind kind;
  int fd;
  void* data;  // read: destination; write: source (the kernel only reads it)
  std::uint32_t length;
  std::uint64_t offset;
};

bool isTransient(int res) { return res == -EINTR || res == -EAGAIN; }

// One operation from start to completion. The Impl owns it from start() until complete().
class Op {
 public:
  explicit Op(const OpRequest& r) : request(r) {}
  virtual ~Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  // Posts res (bytes >= 0, or -errno) to the caller's handler and deletes this.
  virtual void complete(int res) = 0;

  const OpRequest request;
  unsigned retries = 0;  // transient results retried so far, at most kMaxTransientRetries
  Op* next = nullptr;    // link in the waiting FIFO
};

template <class Handler>
class HandlerOp final : public Op {
 public:
  using Fallback = boost::asio::io_context::executor_type;
  HandlerOp(Handler handler, const OpRequest& r, Fallback fallback)
      : Op(r), handler_(std::move(handler)), fallback_(std::move(fallback)) {}

  void complete(int res) override {
    Handler handler = std::move(handler_);
    auto executor = boost::asio::get_associated_executor(handler, fallback_);
    delete this;
    // Posted, never run inline: the reaping loop must not be re-entered by the caller.
    boost::asio::post(executor,
                      [handler = std::move(handler), res]() mutable { std::move(handler)(res); });
  }

 private:
  Handler handler_;
  Fallback fallback_;
};

// The ring itself; exits the ring when the constructor fails half way or the Impl dies.
struct RingHandle {
  io_uring ring{};
  bool ready = false;
  ~RingHandle() {
    if (ready) io_uring_queue_exit(&ring);
  }
};

}  // namespace

class Uring::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(boost::asio::io_context& context, unsigned entries);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Runs one request through the ring; resumes with bytes (>= 0) or -errno.
  boost::asio::awaitable<int> perform(OpRequest request);
  boost::asio::awaitable<IoResult<void>> writeAll(OpKind kind, int fd,
                                                  std::span<const std::uint8_t> bytes,
                                                  std::uint64_t offset);

  unsigned capacity() const noexcept { return capacity_; }
  const UringStats& stats() const noexcept { return stats_; }
  std::function<int(const Uring::Operation&)> fault;  // Uring::setFaultForTests

 private:
  void start(Op* op);
  void enqueue(Op* op);
  void prepare(Op* op);
  void scheduleFlush();
  void flush();
  void submitPrepared();
  void armWait();
  void onSignal(const boost::system::error_code& ec);
  void reap();
  // A transient result (EINTR, EAGAIN) runs the operation again, at most
  // kMaxTransientRetries times: true when it is to be run again (counted as started).
  bool retry(Op* op, int res);
  void admitWaiting();
  void drainForShutdown();

  boost::asio::io_context& context_;
  RingHandle ring_;
  boost::asio::posix::stream_descriptor eventfd_;
  unsigned capacity_ = 0;
  Op* waitingHead_ = nullptr;  // FIFO of operations waiting for a slot
  Op* waitingTail_ = nullptr;
  bool flushPosted_ = false;
  bool waitArmed_ = false;
  UringStats stats_;
};

Uring::Impl::Impl(boost::asio::io_context& context, unsigned entries)
    : context_(context), eventfd_(context) {
  if (entries == 0 || entries > kMaxEntries) {
    throw std::system_error(errnoCode(EINVAL), "io_uring entries");
  }
  // SUBMIT_ALL (Linux 5.18) keeps submitting past an entry that fails early (e.g. EBADF), so
  // one bad operation does not hold back the rest of its batch. Older kernels: without it.
  int r = io_uring_queue_init(entries, &ring_.ring, IORING_SETUP_SUBMIT_ALL);
  if (r == -EINVAL) r = io_uring_queue_init(entries, &ring_.ring, 0);
  if (r < 0) {
    const std::string refusal = setupRefusal(errnoCode(-r));
    throw std::system_error(
        errnoCode(-r), refusal.empty() ? "io_uring_queue_init" : "io_uring_queue_init: " + refusal);
  }
  ring_.ready = true;

  const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) throw std::system_error(lastErrno(), "eventfd");
  boost::system::error_code ec;
  eventfd_.assign(fd, ec);
  if (ec) {
    ::close(fd);
    throw std::system_error(errnoCode(ec.value()), "eventfd assign");
  }
  r = io_uring_register_eventfd(&ring_.ring, fd);
  if (r < 0) throw std::system_error(errnoCode(-r), "io_uring_register_eventfd");

  capacity_ = ring_.ring.sq.ring_entries;
  // Invariant: completions in flight never exceed the completion queue, so it cannot overflow.
  assert(ring_.ring.cq.ring_entries >= capacity_);
}

Uring::Impl::~Impl() { drainForShutdown(); }

boost::asio::awaitable<int> Uring::Impl::perform(OpRequest request) {
  if (request.offset > kMaxKernelOffset) co_return -EINVAL;
  co_return co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(int)>(
      [this](auto handler, const OpRequest& r) {
        start(new HandlerOp<decltype(handler)>(std::move(handler), r, context_.get_executor()));
      },
      boost::asio::use_awaitable, request);
}

void Uring::Impl::start(Op* op) {
  ++stats_.started;
  if (stats_.inFlight < capacity_ && waitingHead_ == nullptr) {
    prepare(op);
    scheduleFlush();
  } else {
    // Invariant: an operation waits only while every slot is taken.
    assert(stats_.inFlight == capacity_);
    enqueue(op);
  }
}

void Uring::Impl::enqueue(Op* op) {
  op->next = nullptr;
  if (waitingTail_ != nullptr) {
    waitingTail_->next = op;
  } else {
    waitingHead_ = op;
  }
  waitingTail_ = op;
  ++stats_.waiting;
  stats_.peakWaiting = std::max(stats_.peakWaiting, stats_.waiting);
}

void Uring::Impl::prepare(Op* op) {
  assert(stats_.inFlight < capacity_);
  const OpRequest& r = op->request;
  // Bounded: a transient answer is retried at most kMaxTransientRetries times.
  for (int error = 0; fault && (error = fault({r.kind, r.fd, r.offset, r.length})) != 0;) {
    if (!retry(op, -error)) {
      ++stats_.completed;
      op->complete(-error);  // posted: the caller resumes on a later turn
      return;
    }
  }
  // Invariant: a free slot means a free submission entry, since only slot holders use them.
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_.ring);
  if (sqe == nullptr) fatal("no submission entry for a free slot", EBUSY);
  switch (r.kind) {
    case OpKind::read:
      io_uring_prep_read(sqe, r.fd, r.data, r.length, r.offset);
      break;
    case OpKind::write:
      io_uring_prep_write(sqe, r.fd, r.data, r.length, r.offset);
      break;
    case OpKind::writeDsync:
      io_uring_prep_write(sqe, r.fd, r.data, r.length, r.offset);
      sqe->rw_flags = RWF_DSYNC;
      break;
    case OpKind::fsync:
      io_uring_prep_fsync(sqe, r.fd, 0);
      break;
    case OpKind::fdatasync:
      io_uring_prep_fsync(sqe, r.fd, IORING_FSYNC_DATASYNC);
      break;
  }
  io_uring_sqe_set_data(sqe, op);
  ++stats_.inFlight;
  stats_.peakInFlight = std::max(stats_.peakInFlight, stats_.inFlight);
}

// One flush per loop turn submits everything prepared during that turn.
void Uring::Impl::scheduleFlush() {
  if (flushPosted_) return;
  flushPosted_ = true;
  boost::asio::post(context_, [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->flush();
  });
}

void Uring::Impl::flush() {
  flushPosted_ = false;
  submitPrepared();
  armWait();
}

void Uring::Impl::submitPrepared() {
  for (unsigned attempt = 0; io_uring_sq_ready(&ring_.ring) > 0; ++attempt) {
    if (attempt == kMaxSubmitAttemptsPerTurn) {
      scheduleFlush();  // the kernel keeps refusing for now: try again next turn
      return;
    }
    const int r = io_uring_submit(&ring_.ring);
    ++stats_.submitCalls;
    if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) fatal("io_uring_submit", -r);
  }
}

// The eventfd wait is armed exactly while operations hold slots: it keeps io_context::run()
// busy for as long as a completion is owed, and no longer.
void Uring::Impl::armWait() {
  if (waitArmed_ || stats_.inFlight == 0) return;
  waitArmed_ = true;
  eventfd_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                      [weak = weak_from_this()](const boost::system::error_code& ec) {
                        if (auto self = weak.lock()) self->onSignal(ec);
                      });
}

void Uring::Impl::onSignal(const boost::system::error_code& ec) {
  waitArmed_ = false;
  if (ec == boost::asio::error::operation_aborted) return;
  if (ec) fatal("eventfd wait", ec.value());
  // Clear the eventfd before reaping: a completion posted after this point signals again.
  std::uint64_t signals = 0;
  if (::read(eventfd_.native_handle(), &signals, sizeof signals) < 0 && errno != EAGAIN) {
    fatal("eventfd read", errno);
  }
  reap();
  admitWaiting();
  assert(waitingHead_ == nullptr || stats_.inFlight == capacity_);
  submitPrepared();
  armWait();
}

// Consumes every ready completion once, then frees their entries in one step.
void Uring::Impl::reap() {
  assert(!io_uring_cq_has_overflow(&ring_.ring));
  unsigned head = 0;
  unsigned seen = 0;
  io_uring_cqe* cqe = nullptr;
  io_uring_for_each_cqe(&ring_.ring, head, cqe) {
    auto* op = static_cast<Op*>(io_uring_cqe_get_data(cqe));
    const int res = cqe->res;
    ++seen;
    assert(stats_.inFlight > 0);
    --stats_.inFlight;
    if (retry(op, res)) {
      enqueue(op);  // behind earlier waiters; admitWaiting() gives it the freed slot in order
      continue;
    }
    ++stats_.completed;
    op->complete(res);
  }
  assert(seen <= ring_.ring.cq.ring_entries);
  io_uring_cq_advance(&ring_.ring, seen);
}

bool Uring::Impl::retry(Op* op, int res) {
  if (!isTransient(res) || op->retries == kMaxTransientRetries) return false;
  ++op->retries;
  ++stats_.started;
  return true;
}

void Uring::Impl::admitWaiting() {
  while (stats_.inFlight < capacity_ && waitingHead_ != nullptr) {
    Op* op = waitingHead_;
    waitingHead_ = op->next;
    if (waitingHead_ == nullptr) waitingTail_ = nullptr;
    --stats_.waiting;
    prepare(op);
  }
}

void Uring::Impl::drainForShutdown() {
  // The kernel may still write into the callers' buffers: wait for all it holds (blocking).
  // Bounded: file operations finish, and no new operation is admitted meanwhile.
  while (stats_.inFlight > 0) {
    const int r = io_uring_submit_and_wait(&ring_.ring, 1);
    if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) fatal("io_uring_submit_and_wait", -r);
    reap();
  }
  // Operations that never got a slot (or were to be retried) never reached the kernel.
  while (waitingHead_ != nullptr) {
    Op* op = waitingHead_;
    waitingHead_ = op->next;
    --stats_.waiting;
    ++stats_.completed;
    op->complete(-ECANCELED);
  }
  waitingTail_ = nullptr;
}

Uring::Uring(boost::asio::io_context& context, unsigned entries)
    : impl_(std::make_shared<Impl>(context, entries)) {}

// The cause a refused io_uring_queue_init shows on this system, and the fix. Containers'
// seccomp profiles (Docker's since 25.0, Kubernetes' RuntimeDefault) answer EPERM or ENOSYS to
// io_uring_setup, kernel.io_uring_disabled answers EPERM, and kernels before 5.12 charge the
// rings to RLIMIT_MEMLOCK and answer ENOMEM.
std::string Uring::setupRefusal(std::error_code error) {
  std::string disabled;
  if (std::FILE* f = std::fopen("/proc/sys/kernel/io_uring_disabled", "r")) {
    char buf[8] = {};
    if (std::fgets(buf, sizeof buf, f) != nullptr) disabled.assign(buf, strnlen(buf, sizeof buf));
    std::fclose(f);
  }
  while (!disabled.empty() && (disabled.back() == '\n' || disabled.back() == ' ')) {
    disabled.pop_back();
  }
  return setupRefusal(error, disabled);
}

std::string Uring::setupRefusal(std::error_code error, std::string_view ioUringDisabled) {
  if (error.category() != std::system_category()) return {};
  const int err = error.value();
  if (err != EPERM && err != ENOSYS && err != EACCES && err != ENOMEM) return {};
  if (err == ENOMEM) {
    return "io_uring refused: not enough locked memory for the rings (kernels before 5.12 "
           "charge them to RLIMIT_MEMLOCK: raise it with ulimit -l, or LimitMEMLOCK= in a systemd "
           "unit), or the system is out of memory";
  }
  std::string what =
      "io_uring refused by this system (cairn needs io_uring for its journal and files): ";
  if (!ioUringDisabled.empty() && ioUringDisabled != "0") {
    what += "kernel.io_uring_disabled is " + std::string(ioUringDisabled) +
            (ioUringDisabled == "1"
                 ? " (only processes with CAP_SYS_ADMIN or in the group kernel.io_uring_group "
                   "may use it)"
                 : " (no process may use it)") +
            "; allow it with `sysctl kernel.io_uring_disabled=0`, or add this user to the group "
            "kernel.io_uring_group names (with the setting 1)";
  } else if (err == EACCES) {
    what +=
        "a security module (SELinux, AppArmor) or a seccomp profile denies io_uring_setup; "
        "allow io_uring_setup, io_uring_enter and io_uring_register for this program";
  } else {
    what += "a seccomp profile (a container's) blocks io_uring_setup";
    if (err == ENOSYS) what += ", or the kernel was built without io_uring (CONFIG_IO_URING)";
    what +=
        "; allow io_uring_setup, io_uring_enter and io_uring_register in the container's "
        "seccomp profile (e.g. docker run --security-opt seccomp=PROFILE.json, Kubernetes "
        "securityContext.seccompProfile), or run where io_uring is allowed";
  }
  return what;
}

IoResult<std::unique_ptr<Uring>> Uring::create(boost::asio::io_context& context, unsigned entries) {
  try {
    return std::make_unique<Uring>(context, entries);
  } catch (const std::system_error& e) {
    return fail(e.code());
  }
}

Uring::~Uring() = default;

unsigned Uring::capacity() const noexcept { return impl_->capacity(); }
UringStats Uring::stats() const noexcept { return impl_->stats(); }
void Uring::setFaultForTests(std::function<int(const Operation&)> fault) {
  impl_->fault = std::move(fault);
}

boost::asio::awaitable<IoResult<std::size_t>> Uring::read(int fd, std::span<std::uint8_t> buffer,
                                                          std::uint64_t offset) {
  const auto length = static_cast<std::uint32_t>(std::min(buffer.size(), kMaxBytesPerOperation));
  const int res = co_await impl_->perform({OpKind::read, fd, buffer.data(), length, offset});
  if (res < 0) co_return fail(errnoCode(-res));
  assert(static_cast<std::size_t>(res) <= length);
  co_return static_cast<std::size_t>(res);
}

boost::asio::awaitable<IoResult<std::size_t>> Uring::readFull(int fd,
                                                              std::span<std::uint8_t> buffer,
                                                              std::uint64_t offset) {
  std::size_t done = 0;
  // Bounded: every pass reads at least one byte or stops.
  while (done < buffer.size()) {
    auto got = co_await read(fd, buffer.subspan(done), offset + done);
    if (!got) co_return fail(got.error());
    if (*got == 0) break;  // end of file
    done += *got;
  }
  assert(done <= buffer.size());
  co_return done;
}

// Writes all of bytes at offset with operations of `kind`, continuing after short writes.
boost::asio::awaitable<IoResult<void>> Uring::Impl::writeAll(OpKind kind, int fd,
                                                             std::span<const std::uint8_t> bytes,
                                                             std::uint64_t offset) {
  std::size_t done = 0;
  // Bounded: every pass writes at least one byte or fails.
  while (done < bytes.size()) {
    const auto length =
        static_cast<std::uint32_t>(std::min(bytes.size() - done, kMaxBytesPerOperation));
    auto* source = const_cast<std::uint8_t*>(bytes.data() + done);  // the kernel only reads it
    const int res = co_await perform({kind, fd, source, length, offset + done});
    if (res < 0) co_return fail(errnoCode(-res));
    if (res == 0) co_return fail(errnoCode(EIO));  // no progress on a non-empty write
    assert(static_cast<std::uint32_t>(res) <= length);
    done += static_cast<std::size_t>(res);
  }
  co_return IoResult<void>{};
}

boost::asio::awaitable<IoResult<void>> Uring::write(int fd, std::span<const std::uint8_t> bytes,
                                                    std::uint64_t offset) {
  return impl_->writeAll(OpKind::write, fd, bytes, offset);
}

boost::asio::awaitable<IoResult<void>> Uring::writeDurable(int fd,
                                                           std::span<const std::uint8_t> bytes,
                                                           std::uint64_t offset) {
  auto wrote = co_await impl_->writeAll(OpKind::writeDsync, fd, bytes, offset);
  if (wrote || wrote.error() != std::errc::operation_not_supported) co_return wrote;
  // A kernel that refuses the flag refuses it before writing, for every operation alike: the
  // write and an fdatasync instead (writing the same bytes again at their offsets is harmless).
  auto plain = co_await impl_->writeAll(OpKind::write, fd, bytes, offset);
  if (!plain) co_return plain;
  co_return co_await fdatasync(fd);
}

boost::asio::awaitable<IoResult<void>> Uring::fdatasync(int fd) {
  const int res = co_await impl_->perform({OpKind::fdatasync, fd, nullptr, 0, 0});
  if (res < 0) co_return fail(errnoCode(-res));
  co_return IoResult<void>{};
}

boost::asio::awaitable<IoResult<void>> Uring::fsync(int fd) {
  const int res = co_await impl_->perform({OpKind::fsync, fd, nullptr, 0, 0});
  if (res < 0) co_return fail(errnoCode(-res));
  co_return IoResult<void>{};
}

}  // namespace cairn::io
