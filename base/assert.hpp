// CAIRN_ASSERT: an invariant, checked where it holds, in every build (release included), so
// only cheap checks belong here. A failed one is a defect of cairn, never of its input: it
// names the place and the condition on stderr and aborts, rather than go on from a state the
// code says cannot be.
#pragma once

namespace cairn {
[[noreturn]] void assertionFailed(const char* condition, const char* file, int line);
}  // namespace cairn

#define CAIRN_ASSERT(condition) \
  ((condition) ? void(0) : ::cairn::assertionFailed(#condition, __FILE__, __LINE__))
