#include "io/read_ring.hpp"

#include <liburing.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <utility>
#include <vector>

#include "base/assert.hpp"
#include "io/file.hpp"
#include "io/uring.hpp"

namespace cairn::io {

namespace {

// The ring itself failed (not a read): reads may still be in the kernel, writing into buffers
// their owner would free on unwinding, so nothing can be returned safely (as io::Uring does).
[[noreturn]] void ringFailed(const char* what, int errnoValue) {
  std::fprintf(stderr, "cairn::io::ReadRing: %s: %s\n", what, std::strerror(errnoValue));
  std::abort();
}

}  // namespace

struct ReadRing::Ring {
  io_uring ring{};
  ~Ring() { io_uring_queue_exit(&ring); }
};

ReadRing::ReadRing(bool useIoUring) {
  if (!useIoUring) return;
  auto ring = std::make_unique<Ring>();
  // Completions are posted to the ring's memory as the reads finish (no DEFER_TASKRUN, which
  // would hold them until the next io_uring_enter), so wait() often finds one without a call.
  if (io_uring_queue_init(kMaxReads, &ring->ring, 0) == 0) ring_ = std::move(ring);
  // Refused (io_uring disabled, a seccomp profile): blocking preads, correct but not overlapped.
}

ReadRing::~ReadRing() {
  // Nothing may be in flight: readSequential waits for every read it started.
  CAIRN_ASSERT(outstanding_ == 0);
  unregisterBuffers();
}

ReadRing& ReadRing::forThisThread() {
  thread_local ReadRing ring;
  return ring;
}

bool ReadRing::overlapped() const noexcept { return ring_ != nullptr; }

bool ReadRing::registerBuffers(std::span<std::uint8_t* const> buffers, std::size_t bytes) {
  CAIRN_ASSERT(outstanding_ == 0 && !registered_);
  if (!ring_) return false;
  std::vector<iovec> vectors;
  vectors.reserve(buffers.size());
  for (std::uint8_t* b : buffers) vectors.push_back({b, bytes});
  registered_ = io_uring_register_buffers(&ring_->ring, vectors.data(),
                                          static_cast<unsigned>(vectors.size())) == 0;
  return registered_;
}

void ReadRing::unregisterBuffers() {
  CAIRN_ASSERT(outstanding_ == 0);
  if (registered_) io_uring_unregister_buffers(&ring_->ring);
  registered_ = false;
}

void ReadRing::startRead(int fd, std::uint8_t* into, std::size_t length, std::uint64_t offset,
                         std::uint64_t tag, int registered) {
  CAIRN_ASSERT(outstanding_ < kMaxReads);
  ++outstanding_;
  if (!ring_) {
    long r;
    do {
      r = ::pread(fd, into, length, static_cast<off_t>(offset));
    } while (r < 0 && errno == EINTR);
    done_.push_back({tag, r < 0 ? -static_cast<long>(errno) : r});
    return;
  }
  // Never null: at most kMaxReads are outstanding and the queue has kMaxReads entries, all
  // submitted by the previous wait().
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_->ring);
  CAIRN_ASSERT(sqe != nullptr);
  if (registered_ && registered >= 0) {
    io_uring_prep_read_fixed(sqe, fd, into, static_cast<unsigned>(length), offset, registered);
  } else {
    io_uring_prep_read(sqe, fd, into, static_cast<unsigned>(length), offset);
  }
  io_uring_sqe_set_data64(sqe, tag);
  ++unsubmitted_;
}

ReadRing::Completion ReadRing::wait() {
  CAIRN_ASSERT(outstanding_ > 0);
  if (!ring_) {
    Completion c = done_.front();
    done_.pop_front();
    --outstanding_;
    return c;
  }
  io_uring* ring = &ring_->ring;
  io_uring_cqe* cqe = nullptr;
  // Bounded: a call fails only with EINTR/EAGAIN/EBUSY (retried: a signal, or the kernel short
  // of memory for a moment) or returns with a completion; one is owed (outstanding_ > 0).
  for (;;) {
    int r;
    if (unsubmitted_ > 0) {
      // One call submits the new reads and, if no completion is ready yet, waits for one.
      r = io_uring_peek_cqe(ring, &cqe) == 0 ? io_uring_submit(ring)
                                             : io_uring_submit_and_wait(ring, 1);
      if (r >= 0) unsubmitted_ -= std::min<unsigned>(unsubmitted_, static_cast<unsigned>(r));
    } else {
      r = io_uring_wait_cqe(ring, &cqe);
    }
    if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) ringFailed("io_uring_enter", -r);
    if (io_uring_peek_cqe(ring, &cqe) == 0) break;
  }
  Completion c{io_uring_cqe_get_data64(cqe), static_cast<long>(cqe->res)};
  io_uring_cqe_seen(ring, cqe);
  --outstanding_;
  return c;
}

IoResult<ReadBuffers> ReadBuffers::map(std::size_t count, std::size_t bytes) {
  if (count == 0 || bytes == 0 || bytes % kDirectAlign != 0 ||
      bytes > (std::numeric_limits<std::size_t>::max() - 2 * kHugePage) / count) {
    return fail(errnoCode(EINVAL));
  }
  const std::size_t used = count * bytes;
  const std::size_t huge = (used + kHugePage - 1) & ~(kHugePage - 1);
  ReadBuffers r;
  r.mapped_ = huge + kHugePage;  // room to start at a 2 MiB boundary
  void* base =
      ::mmap(nullptr, r.mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return fail(lastErrno());
  r.base_ = base;
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  auto* start = reinterpret_cast<std::uint8_t*>((address + kHugePage - 1) & ~(kHugePage - 1));
  // A hint: without transparent huge pages (or with them off) the buffers are 4 KiB pages.
  ::madvise(start, huge, MADV_HUGEPAGE);
  r.bytes_ = bytes;
  for (std::size_t i = 0; i < count; ++i) r.pointers_.push_back(start + i * bytes);
  return r;
}

ReadBuffers::ReadBuffers(ReadBuffers&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      mapped_(std::exchange(other.mapped_, 0)),
      bytes_(other.bytes_),
      pointers_(std::move(other.pointers_)) {}

ReadBuffers& ReadBuffers::operator=(ReadBuffers&& other) noexcept {
  if (this != &other) {
    release();
    base_ = std::exchange(other.base_, nullptr);
    mapped_ = std::exchange(other.mapped_, 0);
    bytes_ = other.bytes_;
    pointers_ = std::move(other.pointers_);
  }
  return *this;
}

ReadBuffers::~ReadBuffers() { release(); }

void ReadBuffers::release() noexcept {
  if (base_ != nullptr) ::munmap(base_, mapped_);
  base_ = nullptr;
  pointers_.clear();
}

namespace {

constexpr std::uint64_t alignDown(std::uint64_t v) { return v & ~(kDirectAlign - 1); }
constexpr std::uint64_t alignUp(std::uint64_t v) { return alignDown(v + kDirectAlign - 1); }

// One chunk's read: the window [windowStart, windowStart + wanted) holds its bytes from
// `skip`; a direct read asks for `capacity` (the window rounded up to whole blocks).
struct Slot {
  std::uint8_t* buffer = nullptr;
  std::uint64_t windowStart = 0;
  std::size_t wanted = 0, capacity = 0, skip = 0, got = 0;
  bool direct = false;
  bool finished = false;
  unsigned retries = 0;
  std::error_code failure;

  std::size_t delivered() const { return got > skip ? std::min(got, wanted) - skip : 0; }
  bool complete() const { return got >= wanted; }
};

class Sequence {
 public:
  Sequence(const SequentialRead& how, ReadRing& ring) : how_(how), ring_(ring), next_(how.start) {
    slots_.resize(how.buffers.size());
    for (std::size_t i = 0; i < slots_.size(); ++i) slots_[i].buffer = how.buffers[i];
  }

  // Starts chunk reads into every idle buffer, then passes chunks on in order.
  IoResult<std::uint64_t> run(const std::function<void(std::span<const std::uint8_t>)>& consume) {
    for (std::size_t i = 0; i < slots_.size() && next_ < how_.end; ++i) launch(i);
    std::uint64_t total = 0;
    // Bounded: each pass consumes one started chunk; at most (end - start) / chunk + 1 start.
    for (std::size_t k = 0; launched_ > consumed_; ++k) {
      const std::size_t i = k % slots_.size();
      Slot& slot = slots_[i];
      while (!slot.finished) settle(ring_.wait());
      ++consumed_;
      if (slot.failure) {
        drain();
        return fail(slot.failure);
      }
      const std::size_t n = slot.delivered();
      try {
        if (n > 0) consume(std::span<const std::uint8_t>(slot.buffer + slot.skip, n));
      } catch (...) {
        drain();
        throw;
      }
      total += n;
      if (!slot.complete()) {  // the file ends inside this chunk
        drain();
        return total;
      }
      if (next_ < how_.end) launch(i);
    }
    return total;
  }

 private:
  void launch(std::size_t i) {
    Slot& slot = slots_[i];
    const std::uint64_t offset = next_;
    bool direct = how_.directFd >= 0;
    if (direct && how_.cachedChunksFromCache) {
      const std::uint64_t length = std::min<std::uint64_t>(how_.end - offset, how_.chunk);
      auto cached = cachedPages(how_.fd, offset, length);
      direct = !cached || cached->cached * 2 < cached->pages;
    }
    // A direct read's window starts at the block holding its first byte and ends at a block
    // boundary or at `end`: at most one chunk.
    const std::uint64_t windowStart = direct ? alignDown(offset) : offset;
    const std::uint64_t stop = std::min(how_.end, windowStart + how_.chunk);
    slot.windowStart = windowStart;
    slot.skip = static_cast<std::size_t>(offset - windowStart);
    slot.wanted = static_cast<std::size_t>(stop - windowStart);
    slot.capacity = direct ? static_cast<std::size_t>(alignUp(stop) - windowStart) : slot.wanted;
    slot.got = 0;
    slot.direct = direct;
    slot.finished = false;
    slot.retries = 0;
    slot.failure = {};
    next_ = stop;
    ++launched_;
    submit(i);
  }

  void submit(std::size_t i) {
    Slot& slot = slots_[i];
    const std::size_t until = slot.direct ? slot.capacity : slot.wanted;
    ring_.startRead(slot.direct ? how_.directFd : how_.fd, slot.buffer + slot.got, until - slot.got,
                    slot.windowStart + slot.got, i, static_cast<int>(i));
  }

  // A read's completion: the chunk is finished, or its next read is started.
  void settle(ReadRing::Completion c) {
    Slot& slot = slots_[c.tag];
    if (draining_) {
      slot.finished = true;
      return;
    }
    const long r = c.result;
    if (r == -EINTR || r == -EAGAIN) {
      if (++slot.retries <= Uring::kMaxTransientRetries) return submit(c.tag);
    } else if (r == -EINVAL && slot.direct) {
      slot.direct = false;  // the file system refuses this direct read: through the cache
      return submit(c.tag);
    }
    if (r < 0) {
      slot.failure = errnoCode(static_cast<int>(-r));
      slot.finished = true;
      return;
    }
    slot.retries = 0;  // the budget is per read: this one made progress
    slot.got += static_cast<std::size_t>(r);
    if (r == 0 || slot.complete()) {
      slot.finished = true;
      return;
    }
    // Short: a direct read that ended unaligned reached the end of the file; what is missing
    // is read through the cache (which returns 0 at the end).
    if (slot.got % kDirectAlign != 0) slot.direct = false;
    submit(c.tag);
  }

  // Waits for every read still in the kernel (their buffers are the caller's).
  void drain() {
    draining_ = true;
    while (ring_.outstanding() > 0) settle(ring_.wait());
  }

  const SequentialRead& how_;
  ReadRing& ring_;
  std::vector<Slot> slots_;
  std::uint64_t next_;
  std::uint64_t launched_ = 0, consumed_ = 0;
  bool draining_ = false;
};

}  // namespace

IoResult<std::uint64_t> readSequential(
    const SequentialRead& how, const std::function<void(std::span<const std::uint8_t>)>& consume,
    ReadRing& ring) {
  CAIRN_ASSERT(!how.buffers.empty() && how.buffers.size() <= ReadRing::kMaxReads);
  CAIRN_ASSERT(how.chunk > 0 && how.chunk % kDirectAlign == 0 &&
               how.chunk <= Uring::kMaxBytesPerOperation);
  CAIRN_ASSERT(ring.outstanding() == 0);
  if (how.end <= how.start) return std::uint64_t{0};
  // Registered for this range only: a ring outlives the buffers of any one caller.
  ring.registerBuffers(how.buffers, how.chunk);
  struct Unregister {
    ReadRing& ring;
    ~Unregister() { ring.unregisterBuffers(); }
  } unregister{ring};
  return Sequence(how, ring).run(consume);
}

}  // namespace cairn::io
