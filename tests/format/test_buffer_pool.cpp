// BufferPool (base/buffer_pool.hpp): buffers come back with their memory, empty, and the
// idle ones never exceed the bound.
#include <catch2/catch.hpp>

#include "base/buffer_pool.hpp"

using namespace cairn;

TEST_CASE("buffer pool: a buffer handed back is taken again, empty, with its memory",
          "[format][buffers]") {
  BufferPool pool(1 << 20);
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

TEST_CASE("buffer pool: the smallest buffer that fits is taken; none fits, the largest grows",
          "[format][buffers]") {
  BufferPool pool(1 << 20);
  Bytes small = pool.take(100), large = pool.take(10000);
  const std::uint8_t* smallMemory = small.data();
  pool.give(std::move(large));
  pool.give(std::move(small));
  Bytes fits = pool.take(50);
  CHECK(fits.data() == smallMemory);
  pool.give(std::move(fits));
  Bytes bigger = pool.take(20000);
  CHECK(bigger.capacity() >= 20000);
  CHECK(pool.idleBuffers() == 1);  // the 10,000-byte buffer grew; the small one stays
  Bytes left = pool.take(1);
  CHECK(left.data() == smallMemory);
}

TEST_CASE("buffer pool: idle capacity stays within the bound", "[format][buffers]") {
  BufferPool pool(25000);
  Bytes a = pool.take(10000), b = pool.take(10000), c = pool.take(10000);
  pool.give(std::move(a));
  pool.give(std::move(b));
  CHECK(pool.idleBuffers() == 2);
  pool.give(std::move(c));  // over the bound: freed, not kept
  CHECK(pool.idleBuffers() == 2);
  CHECK(pool.idleBytes() <= 25000);
  pool.give(Bytes{});  // nothing to keep
  CHECK(pool.idleBuffers() == 2);
}
