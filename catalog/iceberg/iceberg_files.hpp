// Iceberg's Avro files as garbage collection reads them (docs/catalog.md, "Garbage
// collection"): a snapshot's manifest list names its manifests, a manifest names its data and
// delete files. Read with Avro C (the writer's schema from the file; fields found by name, so
// format v1 and v2 files both read), after a check of our own that Avro C is given only a
// file whose every declared size is bounded: each block fits the bytes there are, its records
// are at most kMaxAvroEntries, deflate blocks inflate to at most kMaxAvroInflatedBytes in all,
// the schema has no array of items that take no bytes, and every record steps over by the
// schema within its block (each length, branch and symbol fits; the records fill the block).
// Pure: the caller fetches the bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "engine/error.hpp"

namespace cairn::catalog {

inline constexpr std::uint64_t kMaxAvroFileBytes = 64u << 20;   // a manifest or manifest list
inline constexpr std::size_t kMaxAvroEntries = 1'000'000;       // records in one file
inline constexpr std::size_t kMaxAvroSchemaBytes = 256u << 10;  // the header's avro.schema
inline constexpr std::size_t kMaxFilePathBytes = 4096;
inline constexpr std::uint64_t kMaxAvroInflatedBytes = 256u << 20;  // deflate blocks, in all

// One entry of a manifest list (manifest_file in the spec).
struct ManifestFileEntry {
  std::string path;          // manifest_path
  std::int64_t length = 0;   // manifest_length
  std::int32_t content = 0;  // 0 data, 1 deletes (v1 files have no field: 0)
};

// One entry of a manifest (manifest_entry with its data_file).
struct ManifestEntry {
  std::int32_t status = 0;     // 0 existing, 1 added, 2 deleted
  std::int32_t content = 0;    // data_file.content: 0 data, 1 position deletes, 2 equality deletes
  std::string path;            // data_file.file_path
  std::int64_t sizeBytes = 0;  // data_file.file_size_in_bytes
};

// Errc::format for bytes that are not such a file (framing, schema, a field missing or of
// another type, a bound above exceeded).
Res<std::vector<ManifestFileEntry>> readManifestList(ByteView avro);
Res<std::vector<ManifestEntry>> readManifest(ByteView avro);

}  // namespace cairn::catalog
