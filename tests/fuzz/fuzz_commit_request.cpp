// Fuzzes a commit request from its body to the metadata it would publish: the strict JSON
// reader, parseCommitTableRequest, checkRequirements and applyUpdates against one table.
// Any input may be refused (format, conflict or usage, the codes the HTTP layer maps), but
// nothing crashes, and metadata a commit produces is metadata a load accepts: its writing
// reads back as the same metadata.
#include <cstdlib>
#include <string_view>

#include "catalog/iceberg/table_metadata.hpp"
#include "catalog/iceberg/table_update.hpp"

namespace {

using namespace cairn;
using namespace cairn::catalog;

// A small v2 table: one schema, one identity spec, no snapshots.
constexpr std::string_view kBase = R"({"format-version":2,
 "table-uuid":"6f2a8a3e-0c55-4a59-9e4b-2d1f0c3a7b11","location":"s3://lake/tables/t",
 "last-sequence-number":0,"last-updated-ms":1764633600000,"last-column-id":2,
 "current-schema-id":0,"schemas":[{"type":"struct","schema-id":0,"fields":[
  {"id":1,"name":"id","required":true,"type":"long"},
  {"id":2,"name":"data","required":false,"type":"string"}]}],
 "default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[
  {"name":"id_bucket","transform":"bucket[16]","source-id":1,"field-id":1000}]}],
 "last-partition-id":1000,"default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}],
 "properties":{"owner":"fuzz"}})";

bool expectedCode(Errc code) {
  return code == Errc::format || code == Errc::conflict || code == Errc::usage;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const TableMetadata base = [] {
    auto parsed = parseTableMetadata(kBase);
    if (!parsed) std::abort();
    return *parsed;
  }();
  auto body = parseStrictJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!body) {
    if (body.error().code != Errc::format) std::abort();
    return 0;
  }
  auto request = parseCommitTableRequest(*body);
  if (!request) {
    if (!expectedCode(request.error().code)) std::abort();
    return 0;
  }
  if (auto checked = checkRequirements(base, request->requirements); !checked) {
    if (checked.error().code != Errc::conflict) std::abort();
    return 0;
  }
  auto applied = applyUpdates(base, request->updates, 1764633700000,
                              std::string("s3://lake/tables/t/metadata/00000-a.metadata.json"));
  if (!applied) {
    if (!expectedCode(applied.error().code)) std::abort();
    return 0;
  }
  if (!applied->changed && !(applied->metadata == base)) std::abort();
  const std::string written = serializeTableMetadata(applied->metadata);
  auto again = parseTableMetadata(written);
  if (!again || !(*again == applied->metadata)) std::abort();
  return 0;
}
