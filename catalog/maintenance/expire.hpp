// Retention over a lake's tables: each table's plan (catalog/maintenance/retention.hpp) on main
// and on each catalog branch it was written on, and, when applied, its commit through the
// catalog's commit path. `cairn lake expire` prints what this reports.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/error.hpp"

namespace cairn::catalog {

class Lake;
struct CatalogConfig;

// One table on one branch (or main): the plan, and what came of it.
struct TableExpiry {
  std::string table;
  std::optional<std::string> branch;
  bool planned = false;  // snapshots .. keptForCatalog hold its plan
  std::size_t snapshots = 0;
  std::vector<std::int64_t> expire;
  std::vector<std::string> removeRefs;
  std::vector<std::int64_t> keptForCatalog;
  std::optional<std::string> metadataLocation;  // committed
  std::optional<std::string> skipped;           // why nothing was planned
  std::optional<std::string> errorCode;         // failed: code and reason
  std::string errorReason;
};

struct ExpireSettings {
  std::string table;  // NS.NAME (levels joined by '.'), or empty: every table
  bool apply = false;
  // Called before each table (its name, its place and how many there are); true stops the walk
  // between tables (a commit in flight has finished).
  std::function<bool(const std::string& name, std::size_t done, std::size_t total)> beforeTable;
  // Called after each table with what came of it.
  std::function<void(const TableExpiry&)> afterTable;
};

struct ExpireReport {
  std::vector<TableExpiry> tables;
  std::uint64_t expired = 0;  // snapshots removed by commits
  std::uint64_t failed = 0;   // tables whose plan or commit failed
};

// How often a table's plan is made again when commits keep moving the table.
inline constexpr int kExpireAttempts = 5;

// Errors: the lake's directory could not be read, or `settings.table` names no table (usage).
// A table that fails is reported in its TableExpiry and the walk goes on.
boost::asio::awaitable<Res<ExpireReport>> expireLake(Lake& lake, const CatalogConfig& config,
                                                     const ExpireSettings& settings);

}  // namespace cairn::catalog
