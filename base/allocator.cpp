#include "base/allocator.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace cairn {

bool keepLargeBuffersForReuse() {
#if defined(__GLIBC__)
  constexpr int kMmapThreshold = 16 << 20;
  constexpr int kTrimThreshold = 256 << 20;
  const bool mmap = mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1;
  const bool trim = mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
  return mmap && trim;
#else
  return false;
#endif
}

}  // namespace cairn
