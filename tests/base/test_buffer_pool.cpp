// BufferPool (base/buffer_pool.hpp): buffers come back with their memory, empty (take) or
// with the bytes of their last use (takeSized, takeForOverwrite); only close fits are lent; the
// pool never holds more than its bound.
#include <catch2/catch.hpp>

#include <algorithm>

#include "base/buffer_pool.hpp"

using namespace cairn;

namespace {
constexpr std::size_t kMiB = std::size_t{1} << 20;
}

TEST_CASE("buffer pool: a buffer handed back is taken again, empty, with its memory",
          "[format][buffers]") {
  BufferPool pool(64 * kMiB);
  Bytes first = pool.take(1000);
  CHECK(first.empty());
  CHECK(first.capacity() >= 1000);
  first.assign(1000, 0xAB);
  const std::uint8_t* memory = first.data();
  pool.give(std::move(first));
  CHECK(pool.idleBuffers() == 1);
  Bytes again = pool.take(900);
  CHECK(again.empty());
  CHECK(again.data() == memory);
  CHECK(pool.idleBuffers() == 0);
  CHECK(pool.idleBytes() == 0);
}

TEST_CASE("buffer pool: takeForOverwrite lends a new buffer empty and a reused one as it was",
          "[format][buffers]") {
  BufferPool pool(64 * kMiB);
  // New: room for the bytes, none of them written (a download appends as its body arrives).
  Bytes fresh = pool.takeForOverwrite(1000);
  CHECK(fresh.empty());
  CHECK(fresh.capacity() >= 1000);
  fresh.assign(1000, 0xAB);
  const std::uint8_t* memory = fresh.data();
  pool.give(std::move(fresh));
  // Reused: the same memory with the size and bytes of its last use, nothing zero-filled.
  Bytes reused = pool.takeForOverwrite(900);
  CHECK(reused.data() == memory);
  CHECK(reused.size() == 1000);
  CHECK(std::all_of(reused.begin(), reused.end(), [](std::uint8_t b) { return b == 0xAB; }));
  pool.give(std::move(reused));
  Bytes empty = pool.take(1000);
  CHECK(empty.data() == memory);
  CHECK(empty.empty());
}

TEST_CASE("buffer pool: takeSized lends a buffer of that size, its old bytes not zero-filled",
          "[format][buffers]") {
  BufferPool pool(64 * kMiB);
  Bytes fresh = pool.takeSized(1000);
  CHECK(fresh.size() == 1000);
  CHECK(std::all_of(fresh.begin(), fresh.end(), [](std::uint8_t b) { return b == 0; }));
  std::fill(fresh.begin(), fresh.end(), std::uint8_t{0xAB});
  const std::uint8_t* memory = fresh.data();
  pool.give(std::move(fresh));
  // Shorter: the same memory, its bytes as the last user left them (a download overwrites
  // them; zero-filling them first would write every byte twice).
  Bytes shorter = pool.takeSized(900);
  CHECK(shorter.data() == memory);
  CHECK(shorter.size() == 900);
  CHECK(std::all_of(shorter.begin(), shorter.end(), [](std::uint8_t b) { return b == 0xAB; }));
  pool.give(std::move(shorter));
  // Longer: only the growth is zero-filled.
  Bytes longer = pool.takeSized(1000);
  CHECK(longer.data() == memory);
  CHECK(
      std::all_of(longer.begin(), longer.begin() + 900, [](std::uint8_t b) { return b == 0xAB; }));
  CHECK(std::all_of(longer.begin() + 900, longer.end(), [](std::uint8_t b) { return b == 0; }));
  pool.give(std::move(longer));
  // take() still lends it empty.
  Bytes empty = pool.take(1000);
  CHECK(empty.data() == memory);
  CHECK(empty.empty());
}

TEST_CASE("buffer pool: segment sizes share buffers, a much larger buffer is not lent",
          "[format][buffers]") {
  BufferPool pool(256 * kMiB);
  // Segments close at the first frame past the target: 32 MiB plus a little, rounded to 34.
  Bytes a = pool.take(32 * kMiB + 76 + 4000);
  CHECK(a.capacity() == 34 * kMiB);
  const std::uint8_t* aMemory = a.data();
  pool.give(std::move(a));
  Bytes b = pool.take(32 * kMiB + 76);
  CHECK(b.data() == aMemory);
  pool.give(std::move(b));
  // A small request does not take the 34 MiB buffer: it gets its own.
  Bytes small = pool.take(kMiB);
  CHECK(small.capacity() == kMiB);
  CHECK(pool.idleBuffers() == 1);
  // Of two that fit, the smaller is lent.
  Bytes c = pool.take(33 * kMiB);  // 34 MiB: the idle one
  CHECK(c.data() == aMemory);
  Bytes d = pool.take(35 * kMiB);  // 36 MiB, new
  pool.give(std::move(d));
  pool.give(std::move(c));
  CHECK(pool.take(33 * kMiB).data() == aMemory);
}

TEST_CASE("buffer pool: buffers lent and idle stay within the bound", "[format][buffers]") {
  BufferPool pool(25000);
  Bytes a = pool.take(10000), b = pool.take(10000), c = pool.take(10000);  // 30,000 lent
  pool.give(std::move(a));  // 20,000 lent + 10,000 idle would exceed 25,000: freed
  CHECK(pool.idleBuffers() == 0);
  pool.give(std::move(b));  // 10,000 lent + 10,000 idle
  CHECK(pool.idleBuffers() == 1);
  pool.give(std::move(c));  // 20,000 idle
  CHECK(pool.idleBuffers() == 2);
  CHECK(pool.idleBytes() == 20000);
  // A new buffer that does not fit the bound with the idle ones frees idle ones first.
  Bytes big = pool.take(20000);
  CHECK(big.capacity() >= 20000);
  CHECK(pool.idleBytes() + big.capacity() <= 25000);
  pool.give(Bytes{});  // nothing to keep
  CHECK(pool.idleBytes() <= 5000);
}
