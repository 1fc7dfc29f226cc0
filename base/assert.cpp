#include "base/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace cairn {

void assertionFailed(const char* condition, const char* file, int line) {
  std::fprintf(stderr, "cairn: internal: %s:%d: invariant failed: %s\n", file, line, condition);
  std::abort();
}

}  // namespace cairn
