// The engine's typed error: a code a caller can branch on, and a message a person can read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace cairn {

enum class Errc : std::uint8_t {
  format,        // bytes that do not decode: wrong length, magic, version, CRC, footer, declaration
  reference,     // a decoded object is not the exact one a caller expected (id or length)
  binding,       // namespace, publisher or lineage differs from independent expectations
  transition,    // a head is not a valid successor of its predecessor
  manifest,      // a manifest does not match the head that names it
  io,            // the local disk or file system failed
  busy,          // another process owns the database directory
  usage,         // invalid arguments from a caller
  budget,        // a byte, record or request budget would be exceeded (nothing was done)
  missing,       // an object a graph needs does not exist in the store
  corrupt,       // an object's bytes are not what names it (hash, length, header, frames)
  diverged,      // a checkpoint and the owned journal disagree about the prefix
  store,         // the object store failed (denied, unreachable, malformed answer)
  uncertain,     // the outcome of a store request is unknown
  conflict,      // the selected head is not the one this publisher expects (a lost race, or a
                 // head changed behind its back): refused, evidence kept
  undetermined,  // a property of the store could not be determined (every probe request
                 // failed or was unanswered): neither a yes nor a no
};

std::string_view errcName(Errc code);

struct Error {
  Errc code;
  std::string message;
  std::string key;  // the object the error is about, when there is one
};

template <class T>
using Res = Result<T, Error>;

inline Failure<Error> err(Errc code, std::string message) {
  return Failure<Error>{Error{code, std::move(message)}};
}

}  // namespace cairn
