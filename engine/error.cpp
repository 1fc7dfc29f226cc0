#include "engine/error.hpp"

namespace cairn {

std::string_view errcName(Errc code) {
  switch (code) {
    case Errc::format:
      return "format";
    case Errc::reference:
      return "reference";
    case Errc::binding:
      return "binding";
    case Errc::transition:
      return "transition";
    case Errc::manifest:
      return "manifest";
    case Errc::io:
      return "io";
    case Errc::busy:
      return "busy";
    case Errc::usage:
      return "usage";
    case Errc::budget:
      return "budget";
    case Errc::missing:
      return "missing";
    case Errc::corrupt:
      return "corrupt";
    case Errc::diverged:
      return "diverged";
    case Errc::store:
      return "store";
    case Errc::uncertain:
      return "uncertain";
    case Errc::undetermined:
      return "undetermined";
    case Errc::conflict:
      return "conflict";
  }
  return "unknown";
}

}  // namespace cairn
