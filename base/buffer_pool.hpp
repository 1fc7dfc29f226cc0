// BufferPool: large buffers handed back by one operation and taken again by its next step.
//
// A segment body (8-64 MiB) allocated fresh is a new mapping: every 4 KiB page of it costs a
// page fault on first touch, and the copy into it runs at the speed of faulting. On this
// machine those faults and copies were about 40 % of a checkpoint's CPU and half of a deep
// verification's (docs/performance.md). A pool per operation keeps the buffers mapped while
// the operation runs and frees them with it, so memory is bounded by what the operation had
// in flight, not by the process's lifetime (a process-wide allocator setting that kept freed
// memory made a checkpoint's peak RSS grow with the graph, docs/decisions/). Buffers are
// not advised onto transparent huge pages: here their first touch cost 27-573 ms per 170 MiB
// from one process to the next, 4 KiB pages a steady 125-169 ms (docs/decisions/).
//
// Not thread-safe: one executor takes and gives (the CPU pool may read and write the bytes of
// a buffer it was lent in between).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/bytes.hpp"

namespace cairn {

class BufferPool {
 public:
  // Holds at most `maxBytes` of capacity in all, buffers lent and idle: a buffer handed back
  // beyond that is freed, and idle ones are freed to make room for a new one. (Lent buffers
  // alone may exceed it only by what their callers asked for: a lent buffer is at most one
  // rounding step, 2 MiB, larger than its request.)
  explicit BufferPool(std::size_t maxBytes) : maxBytes_(maxBytes) {}

  // An empty buffer with room for at least `capacity` bytes: the smallest idle one that fits
  // within a rounding step (its pages are mapped already), or a new one.
  Bytes take(std::size_t capacity) { return takeBuffer(capacity, false); }

  // A buffer of `size` bytes for a caller that overwrites them all (a download into it): a
  // reused buffer keeps the bytes of its last use, so only growth beyond them is zero-filled,
  // where take() followed by resize() would zero-fill every byte again.
  Bytes takeSized(std::size_t size) {
    Bytes out = takeForOverwrite(size);
    out.resize(size);
    return out;
  }

  // A buffer with room for `capacity` bytes for a caller that overwrites or replaces its
  // contents and sizes it itself (ObjectStore::getInto): a reused buffer keeps the bytes and
  // size of its last use, a new one is empty. Unlike takeSized, a new buffer's pages are not
  // touched here: a download appends into them as its body arrives, instead of zero-filling
  // (and faulting in) every page before its request is sent (docs/decisions/).
  Bytes takeForOverwrite(std::size_t capacity) { return takeBuffer(capacity, /*keepBytes=*/true); }

  // Hands a buffer back (it may have grown while lent); its contents are kept for takeSized().
  void give(Bytes buffer) {
    const std::size_t c = buffer.capacity();
    lentBytes_ -= std::min(lentBytes_, c);
    if (c == 0 || idleBytes_ + lentBytes_ + c > maxBytes_) return;
    idleBytes_ += c;
    idle_.push_back(std::move(buffer));
  }

  std::size_t idleBytes() const { return idleBytes_; }
  std::size_t idleBuffers() const { return idle_.size(); }

 private:
  Bytes takeBuffer(std::size_t capacity, bool keepBytes) {
    const std::size_t want = roundUp(capacity);
    std::size_t best = idle_.size();
    for (std::size_t i = 0; i < idle_.size(); ++i) {
      const std::size_t c = idle_[i].capacity();
      if (c >= want && c - want <= kRoundingStep &&
          (best == idle_.size() || c < idle_[best].capacity())) {
        best = i;
      }
    }
    Bytes out;
    if (best < idle_.size()) {
      out = std::move(idle_[best]);
      idle_[best] = std::move(idle_.back());
      idle_.pop_back();
      idleBytes_ -= out.capacity();
      if (!keepBytes) out.clear();
    } else {
      // Room for the new buffer: idle ones that do not fit go first, the largest first.
      while (!idle_.empty() && idleBytes_ + lentBytes_ + want > maxBytes_) dropLargestIdle();
      out.reserve(want);
    }
    lentBytes_ += out.capacity();
    return out;
  }

  static constexpr std::size_t kRoundingStep = std::size_t{2} << 20;

  // Sizes that differ by a frame (segments close at the first frame boundary past the target)
  // share a buffer: large requests are rounded up to whole 2 MiB.
  static std::size_t roundUp(std::size_t n) {
    return n < kRoundingStep ? n : (n + kRoundingStep - 1) / kRoundingStep * kRoundingStep;
  }

  void dropLargestIdle() {
    std::size_t largest = 0;
    for (std::size_t i = 1; i < idle_.size(); ++i) {
      if (idle_[i].capacity() > idle_[largest].capacity()) largest = i;
    }
    idleBytes_ -= idle_[largest].capacity();
    idle_[largest] = std::move(idle_.back());
    idle_.pop_back();
  }

  std::size_t maxBytes_;
  std::size_t idleBytes_ = 0;
  std::size_t lentBytes_ = 0;
  std::vector<Bytes> idle_;
};

}  // namespace cairn
