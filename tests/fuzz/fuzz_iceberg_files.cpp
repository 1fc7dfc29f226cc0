// Fuzzes the readers of Iceberg's Avro files (catalog/iceberg/iceberg_files.hpp), which hand the
// bytes to Avro C only after bounding them: the first byte picks the manifest list's reader (even)
// or the manifest's (odd). Any input is read or refused with code format, without a crash, a
// sanitizer report or an allocation past libFuzzer's bound.
#include <cstdlib>

#include "catalog/iceberg/iceberg_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  cairn::ByteView file(data + 1, size - 1);
  if ((data[0] & 1) == 0) {
    auto r = cairn::catalog::readManifestList(file);
    if (!r && r.error().code != cairn::Errc::format) std::abort();
  } else {
    auto r = cairn::catalog::readManifest(file);
    if (!r && r.error().code != cairn::Errc::format) std::abort();
  }
  return 0;
}
