// Fuzzes parseTableMetadata: any input is refused or accepted without a crash; an accepted
// one serializes to a document that parses to the same metadata and serializes identically.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "catalog/iceberg/table_metadata.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto first = cairn::catalog::parseTableMetadata(input);
  if (!first) return 0;
  std::string written = cairn::catalog::serializeTableMetadata(*first);
  auto second = cairn::catalog::parseTableMetadata(written);
  if (!second || !(*second == *first)) std::abort();
  if (cairn::catalog::serializeTableMetadata(*second) != written) std::abort();
  return 0;
}
