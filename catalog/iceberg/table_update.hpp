// A commit request's requirements and updates (the REST spec's CommitTableRequest), read
// strictly and applied to table metadata as apache/iceberg's TableMetadata.Builder does
// (core/src/main/java/org/apache/iceberg/{TableMetadata,UpdateRequirement,MetadataUpdate}.java).
//
// Three steps, three functions, and the caller maps each failure to an answer:
//   1. parseCommitTableRequest / parseTableRequirements / parseTableUpdates: malformed input
//      (unknown `type` or `action`, a missing or mistyped field, an unknown key, an element
//      that the table metadata reader refuses) → Errc::format (HTTP 400).
//   2. checkRequirements(current, requirements): a requirement that the state read proves
//      false → Errc::conflict, message "Requirement failed: <type>: ... expected X != Y"
//      (HTTP 409 CommitFailedException). It never fails otherwise.
//   3. applyUpdates(base, updates, nowMs, baseMetadataLocation): an update that cannot apply
//      (unknown schema id, downgrade, a ref to a missing snapshot, ...) → Errc::usage (400); a
//      snapshot whose sequence number is not past the table's (a concurrent commit moved it;
//      Java's RetryableValidationException) → Errc::conflict (409, the client retries).
//
// Elements (schemas, specs, sort orders, snapshots, refs, statistics) are checked by the
// table metadata reader itself (table_metadata.hpp), so a commit can add nothing that a load
// would refuse, and the result is re-read before it is returned.
//
// Deliberate differences from Java, each so that a commit which changes nothing publishes
// nothing, or so that the table log's identity holds:
//   - set-properties, remove-properties and set-statistics count as a change only when they
//     change a value (Java records them even when they do not);
//   - assign-uuid may not change an existing table-uuid (it is the table log's namespace);
//   - add-spec gives a field sent without `field-id` the next id after last-partition-id
//     (Java's unbound-spec binding counts from 1000 again, which can repeat an id).
// add-schema's deprecated `last-column-id` is read and ignored, as Java does.
//
// Every schema, spec and sort order a commit adds passes checkAdmitted (table_create.hpp), the
// one check of what enters a table by any route; remove-schemas and remove-partition-specs may
// not remove the current schema or the default spec (ids the table does not have are ignored).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "catalog/iceberg/table_metadata.hpp"
#include "engine/error.hpp"

namespace cairn::catalog {

// `set-current-schema`, `set-default-spec` and `set-default-sort-order` take -1 for "the one
// added last in this commit".
inline constexpr std::int64_t kLastAdded = -1;
// The table property that bounds the metadata log, and Java's default.
inline constexpr std::string_view kPreviousVersionsMaxProperty =
    "write.metadata.previous-versions-max";
inline constexpr std::int64_t kPreviousVersionsMaxDefault = 100;
// Bounds on a request (an HTTP body cap bounds the bytes; these bound the work).
inline constexpr std::size_t kMaxRequirements = 1'000;
inline constexpr std::size_t kMaxUpdates = 10'000;

struct TableRequirement {
  enum class Kind {
    assertCreate,
    assertTableUuid,
    assertRefSnapshotId,
    assertLastAssignedFieldId,
    assertCurrentSchemaId,
    assertLastAssignedPartitionId,
    assertDefaultSpecId,
    assertDefaultSortOrderId,
  };
  Kind kind = Kind::assertCreate;
  std::string name;                // assert-table-uuid: the uuid; assert-ref-snapshot-id: the ref
  std::optional<std::int64_t> id;  // the expected id; for a ref, none = "must not exist"
  bool operator==(const TableRequirement&) const = default;
};

struct TableUpdate {
  enum class Action {
    assignUuid,
    upgradeFormatVersion,
    addSchema,
    setCurrentSchema,
    addSpec,
    setDefaultSpec,
    addSortOrder,
    setDefaultSortOrder,
    addSnapshot,
    setSnapshotRef,
    removeSnapshotRef,
    removeSnapshots,
    setLocation,
    setProperties,
    removeProperties,
    setStatistics,
    removeStatistics,
    setPartitionStatistics,
    removePartitionStatistics,
    removeSchemas,
    removePartitionSpecs,
  };
  Action action = Action::assignUuid;
  // assign-uuid: the uuid; set-location: the location; set/remove-snapshot-ref: the ref name.
  std::string name;
  // upgrade-format-version: the version; set-current-schema, set-default-spec,
  // set-default-sort-order: the id (or kLastAdded);
  // remove-(partition-)statistics: the snapshot id.
  std::optional<std::int64_t> id;
  // add-schema, add-spec, add-sort-order, add-snapshot, set-(partition-)statistics: the
  // element as sent; set-snapshot-ref: the ref object (snapshot-id, type, retention).
  boost::json::value element;
  // remove-snapshots: the snapshot ids; remove-schemas, remove-partition-specs: the ids.
  std::vector<std::int64_t> snapshotIds;
  std::map<std::string, std::string> propertyUpdates;  // set-properties
  std::vector<std::string> propertyRemovals;           // remove-properties
  bool operator==(const TableUpdate&) const = default;
};

struct CommitTableRequest {
  boost::json::value identifier;  // as sent (null when absent); the route names the table
  std::vector<TableRequirement> requirements;
  std::vector<TableUpdate> updates;
};

Res<CommitTableRequest> parseCommitTableRequest(const boost::json::value& body);
Res<std::vector<TableRequirement>> parseTableRequirements(const boost::json::value& list);
Res<std::vector<TableUpdate>> parseTableUpdates(const boost::json::value& list);

// The readers under add-schema, add-spec and add-sort-order, for any request that carries such
// an element (a create-table request too): the table metadata reader checks it, as in a loaded
// table; a refusal is Errc::format, "commit request: <path>...: what". `element` must be an
// object. A spec field without `field-id` gets the next one from 1000, a missing `spec-id` or
// `order-id` reads as 0.
Res<Schema> readSchemaElement(const boost::json::value& element, std::string_view path);
Res<PartitionSpec> readSpecElement(const boost::json::value& element, std::string_view path);
Res<SortOrder> readSortOrderElement(const boost::json::value& element, std::string_view path);

// `current` is none when the table does not exist (a create transaction).
Res<void> checkRequirements(const std::optional<TableMetadata>& current,
                            const std::vector<TableRequirement>& requirements);

struct AppliedUpdates {
  TableMetadata metadata;  // == base when nothing changed
  bool changed = false;    // false: nothing to publish
};

// `updates` are as parseTableUpdates returns them (their elements already checked).
// `base` may be empty (no schema, spec or sort order: a create transaction, table_create.hpp);
// the result must then have a current schema, default spec and default sort order, else usage.
// `baseMetadataLocation` is the file `base` was read from; when given, a changed result's
// metadata-log ends with it (timestamped base.lastUpdatedMs), bounded by
// write.metadata.previous-versions-max. A changed result has last-updated-ms = nowMs.
Res<AppliedUpdates> applyUpdates(const TableMetadata& base, const std::vector<TableUpdate>& updates,
                                 std::int64_t nowMs,
                                 const std::optional<std::string>& baseMetadataLocation);

}  // namespace cairn::catalog
