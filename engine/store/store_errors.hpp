// Turning a store outcome into the engine's typed error, naming the object.
#pragma once

#include "engine/error.hpp"
#include "engine/store/object_store.hpp"

namespace cairn {

inline Failure<Error> storeError(const StoreOutcome& o, const std::string& key) {
  Errc code = Errc::store;
  switch (o.status) {
    case StoreStatus::missing:
      code = Errc::missing;
      break;
    case StoreStatus::uncertain:
      code = Errc::uncertain;
      break;
    case StoreStatus::undetermined:
      code = Errc::undetermined;
      break;
    default:
      break;
  }
  std::string what = std::string(storeStatusName(o.status));
  if (o.http != 0)
    what += " (HTTP " + std::to_string(o.http) + (o.code.empty() ? "" : " " + o.code) + ")";
  return Failure<Error>{Error{code, key + ": " + what + ": " + o.message, key}};
}

}  // namespace cairn
