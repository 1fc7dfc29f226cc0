// cairn du --store URL --namespace N [--keep-revisions K] |
// cairn vacuum --store URL --namespace N [--keep-revisions K] [--grace-seconds S] [--apply] |
// cairn backup --store URL --namespace N --to URL2 |
// cairn repair-head --store URL --namespace N --to ID [--force]
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/json.hpp"
#include "cli/progress.hpp"
#include "cli/run.hpp"
#include "engine/ops/backup.hpp"
#include "engine/ops/repair.hpp"
#include "engine/ops/vacuum.hpp"
#include "engine/ops/vacuum_lease.hpp"
#include "engine/store/open_store.hpp"
#include "io/uring.hpp"

namespace cairn::cli {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

JsonObject countJson(const UsageCount& count) {
  return JsonObject{}.add("objects", count.objects).add("bytes", count.bytes);
}

JsonObject classCounts(const std::array<UsageCount, kObjectClasses>& counts) {
  JsonObject o;
  UsageCount total;
  for (std::size_t c = 0; c < kObjectClasses; ++c) {
    o.add(objectClassName(static_cast<ObjectClass>(c)), countJson(counts[c]));
    total.objects += counts[c].objects;
    total.bytes += counts[c].bytes;
  }
  return o.add("total", countJson(total));
}

JsonObject leftoversJson(const LeftoverUsage& l) {
  return JsonObject{}
      .add("files", l.files)
      .add("bytes", l.bytes)
      .add("deleted", l.reclaimed)
      .add("in_use", l.inUse);
}

UsageCount total(const std::array<UsageCount, kObjectClasses>& counts) {
  UsageCount t;
  for (const auto& c : counts) {
    t.objects += c.objects;
    t.bytes += c.bytes;
  }
  return t;
}

// ---- du ------------------------------------------------------------------------------------

struct DuCli {
  std::string store;
  std::string ns;
  std::uint64_t keepRevisions = 0;
  bool json = false;
};

asio::awaitable<int> runDu(io::Uring& uring, const DuCli& opt) {
  auto start = Clock::now();
  auto target = openNamespace(uring, co_await asio::this_coro::executor, opt.store, opt.ns);
  if (!target) co_return reportJson(opt.json, target.error(), secondsSince(start));
  auto& [ns, store] = *target;
  OperationBudget budget;
  auto usage = co_await namespaceUsage(*store, ns, opt.keepRevisions, budget);
  if (!usage) co_return reportJson(opt.json, usage.error(), secondsSince(start));
  if (opt.json) {
    printJson(JsonObject{}
                  .add("ok", true)
                  .add("revisions", usage->revisions)
                  .add("history_ends", usage->historyEnds)
                  .add("reachable", classCounts(usage->reachable))
                  .add("reclaimable", classCounts(usage->unreachable))
                  .add("leftovers", leftoversJson(usage->leftovers))
                  .add("seconds", secondsSince(start)));
    co_return 0;
  }
  std::cout << "class        reachable objects/bytes    reclaimable objects/bytes\n";
  for (std::size_t c = 0; c < kObjectClasses; ++c) {
    std::printf("%-12s %9llu %14llu    %9llu %14llu\n",
                std::string(objectClassName(static_cast<ObjectClass>(c))).c_str(),
                static_cast<unsigned long long>(usage->reachable[c].objects),
                static_cast<unsigned long long>(usage->reachable[c].bytes),
                static_cast<unsigned long long>(usage->unreachable[c].objects),
                static_cast<unsigned long long>(usage->unreachable[c].bytes));
  }
  std::cout << usage->revisions << " retained heads walked"
            << (usage->historyEnds ? " (the history ends there: older head copies are gone)" : "")
            << "; reachable " << total(usage->reachable).bytes << " bytes, reclaimable "
            << total(usage->unreachable).bytes << " bytes\n";
  if (usage->leftovers.files > 0 || usage->leftovers.inUse > 0) {
    std::cout << "store leftovers: " << usage->leftovers.files << " temporary files ("
              << usage->leftovers.bytes << " bytes) of writers that died (vacuum --apply "
              << "deletes them), " << usage->leftovers.inUse << " in use\n";
  }
  co_return 0;
}

// ---- vacuum --------------------------------------------------------------------------------

struct VacuumCli {
  std::string store;
  std::string ns;
  std::uint64_t keepRevisions = kDefaultKeepRevisions;
  std::int64_t graceSeconds = kDefaultGraceSeconds;
  std::string metricsFile;
  bool apply = false;
  bool json = false;
};

void printVacuum(const VacuumCli& opt, const VacuumReport& report, double seconds) {
  const VacuumReport* r = &report;
  if (opt.json) {
    JsonArray objects;
    for (const auto& v : r->unreachable) {
      objects.add(JsonObject{}
                      .add("key", v.key)
                      .add("class", objectClassName(v.cls))
                      .add("bytes", v.size)
                      .add("age_seconds", v.ageSeconds)
                      .add("verdict", vacuumVerdictName(v.verdict))
                      .add("deleted", v.deleted));
    }
    JsonObject out;
    out.add("ok", true).add("apply", opt.apply);
    if (r->current) {
      out.add("head_revision", r->current->fields().revision)
          .add("head_id", toHex(r->current->id()));
    }
    printJson(out.add("revisions", r->revisions)
                  .add("history_ends", r->historyEnds)
                  .add("grace_seconds", opt.graceSeconds)
                  .add("reachable", classCounts(r->reachable))
                  .add("reclaimable", classCounts(r->reclaimable))
                  .add("kept", classCounts(r->kept))
                  .add("deleted", classCounts(r->deleted))
                  .add("restarts", r->restarts)
                  .add("verified", r->verified)
                  .add("lease_released", r->leaseReleased)
                  .add("leftovers", leftoversJson(r->leftovers))
                  .add("objects", std::move(objects))
                  .add("seconds", seconds));
    return;
  }
  for (const auto& v : r->unreachable) {
    std::printf("%-9s %-10s %8lld s %12llu  %s%s\n", std::string(objectClassName(v.cls)).c_str(),
                std::string(vacuumVerdictName(v.verdict)).c_str(),
                static_cast<long long>(v.ageSeconds), static_cast<unsigned long long>(v.size),
                v.key.c_str(), v.deleted ? "  (deleted)" : "");
  }
  UsageCount reclaim = total(r->reclaimable), kept = total(r->kept), gone = total(r->deleted);
  std::cout << r->revisions << " retained heads; " << reclaim.objects << " objects ("
            << reclaim.bytes << " bytes) unreachable and older than " << opt.graceSeconds << " s; "
            << kept.objects << " unreachable kept (young, candidate, unknown age)\n";
  if (r->leftovers.files > 0) {
    std::cout << "store leftovers: " << r->leftovers.files << " temporary files ("
              << r->leftovers.bytes << " bytes) of writers that died"
              << (opt.apply ? "; deleted " + std::to_string(r->leftovers.reclaimed) : "") << "\n";
  }
  if (opt.apply) {
    std::cout << "deleted " << gone.objects << " objects (" << gone.bytes << " bytes)"
              << (r->verified ? "; the current head verifies" : "") << "\n";
    if (!r->leaseReleased) {
      std::cout << "the vacuum lease could not be removed; it expires in at most "
                << kVacuumLeaseTermSeconds << " s\n";
    }
  } else {
    std::cout << "dry run: nothing deleted (--apply deletes)\n";
  }
}

// A failed vacuum says what it had deleted before it stopped: with --json in its one object
// (`deleted`, the counts, and `deleted_objects`: key, class, bytes), else on stderr after the
// error.
int reportVacuumFailure(const VacuumCli& opt, Error e, const VacuumReport& sofar, double seconds) {
  JsonArray keys;
  std::uint64_t count = 0;
  for (const auto& v : sofar.unreachable) {
    if (!v.deleted) continue;
    keys.add(
        JsonObject{}.add("key", v.key).add("class", objectClassName(v.cls)).add("bytes", v.size));
    ++count;
  }
  if (!opt.json) {
    e.message += "; it had deleted " + std::to_string(count) + " objects";
    return report(e);
  }
  printJson(JsonObject{}
                .add("ok", false)
                .add("error", errcName(e.code))
                .add("key", e.key)
                .add("reason", e.message)
                .add("deleted", classCounts(sofar.deleted))
                .add("deleted_objects", std::move(keys))
                .add("seconds", seconds));
  return report(e);
}

asio::awaitable<int> runVacuum(io::Uring& uring, const VacuumCli& opt) {
  auto start = Clock::now();
  auto target = openNamespace(uring, co_await asio::this_coro::executor, opt.store, opt.ns);
  if (!target) co_return reportJson(opt.json, target.error(), secondsSince(start));
  auto& [ns, store] = *target;
  VacuumOptions options;
  options.keepRevisions = opt.keepRevisions;
  options.graceSeconds = opt.graceSeconds;
  options.apply = opt.apply;
  // Tests only (docs/operations.md): no publisher runs beside this vacuum, any grace will do.
  if (const char* unsafe = std::getenv("CAIRN_TEST_UNSAFE_GRACE"); unsafe && *unsafe == '1') {
    options.publisherReuseMaxAge = std::chrono::seconds(0);
  }
  EngineLimits limits;
  OperationBudget budget;
  VacuumReport sofar;
  auto r = co_await vacuumNamespace(*store, ns, options, limits, budget, &sofar);
  if (!r) co_return reportVacuumFailure(opt, r.error(), sofar, secondsSince(start));
  printVacuum(opt, *r, secondsSince(start));
  co_return 0;
}

// ---- backup --------------------------------------------------------------------------------

struct BackupCli {
  std::string store;
  std::string ns;
  std::string to;
  std::string metricsFile;
  bool json = false;
};

asio::awaitable<int> runBackup(io::Uring& uring, const BackupCli& opt) {
  auto start = Clock::now();
  auto ns = parseNamespaceOption(opt.ns);
  if (!ns) co_return reportJson(opt.json, ns.error(), secondsSince(start));
  auto executor = co_await asio::this_coro::executor;
  auto source = openStore(uring, executor, opt.store);
  if (!source) {
    co_return reportJson(opt.json, Error{Errc::usage, "--store: " + source.error()},
                         secondsSince(start));
  }
  auto target = openStore(uring, executor, opt.to, StoreCreation::createIfMissing);
  if (!target) {
    co_return reportJson(opt.json, Error{Errc::usage, "--to: " + target.error()},
                         secondsSince(start));
  }
  auto from = watchStore(std::move(*source));
  auto to = watchStore(std::move(*target));
  EngineLimits limits;
  OperationBudget budget;
  auto r = co_await backupNamespace(*from, *to, *ns, limits, budget);
  if (!r) co_return reportJson(opt.json, r.error(), secondsSince(start));
  const HeadFields& f = r->head.fields();
  if (opt.json) {
    JsonObject out;
    out.add("ok", true)
        .add("revision", f.revision)
        .add("head_id", toHex(r->head.id()))
        .add("prefix_sequence", f.prefixSequence);
    if (r->targetBefore) {
      out.add("target_revision_before", r->targetBefore->fields().revision);
    } else {
      out.addNull("target_revision_before");
    }
    printJson(out.add("objects_copied", r->objectsCopied)
                  .add("objects_present", r->objectsPresent)
                  .add("bytes_copied", r->bytesCopied)
                  .add("objects_verified", r->objectsVerified)
                  .add("bytes_verified", r->bytesVerified)
                  .add("head_updated", r->headUpdated)
                  .add("seconds", secondsSince(start)));
  } else {
    std::cout << "backed up revision " << f.revision << " (head " << toHex(r->head.id())
              << "): " << r->objectsCopied << " objects copied (" << r->bytesCopied << " bytes), "
              << r->objectsPresent << " already there; the copy verifies"
              << (r->headUpdated ? "; the target's head now selects it" : "") << "\n";
  }
  co_return 0;
}

// ---- repair-head ---------------------------------------------------------------------------

struct RepairCli {
  std::string store;
  std::string ns;
  std::string to;
  bool force = false;
  bool json = false;
};

asio::awaitable<int> runRepair(io::Uring& uring, const RepairCli& opt) {
  auto start = Clock::now();
  auto id = fromHex(opt.to);
  if (!id || id->size() != 32) {
    co_return reportJson(opt.json, Error{Errc::usage, "--to is not a SHA-256 head id"},
                         secondsSince(start));
  }
  Digest d{};
  std::copy(id->begin(), id->end(), d.begin());
  auto target = openNamespace(uring, co_await asio::this_coro::executor, opt.store, opt.ns);
  if (!target) co_return reportJson(opt.json, target.error(), secondsSince(start));
  EngineLimits limits;
  OperationBudget budget;
  auto r = co_await repairHead(*target->store, target->ns, d, opt.force, limits, budget);
  if (!r) co_return reportJson(opt.json, r.error(), secondsSince(start));
  if (opt.json) {
    printJson(JsonObject{}
                  .add("ok", true)
                  .add("revision", r->target.fields().revision)
                  .add("head_id", toHex(r->target.id()))
                  .add("before", headConditionName(r->before))
                  .add("reason", r->reason)
                  .add("replaced", r->replaced)
                  .add("seconds", secondsSince(start)));
  } else {
    std::cout << "the current head was " << headConditionName(r->before)
              << (r->reason.empty() ? "" : " (" + r->reason + ")") << "; "
              << (r->replaced ? "it now selects " : "it already selected ") << "revision "
              << r->target.fields().revision << " (head " << toHex(r->target.id()) << ")\n";
  }
  co_return 0;
}

}  // namespace

Res<Uuid> parseNamespaceOption(const std::string& text) {
  auto ns = Uuid::parse(text);
  if (!ns || ns->isNil()) return err(Errc::usage, "--namespace is not a canonical UUID");
  return *ns;
}

Res<NamespaceInStore> openNamespace(io::Uring& uring, const asio::any_io_executor& executor,
                                    const std::string& storeUrl, const std::string& ns) {
  auto parsed = parseNamespaceOption(ns);
  if (!parsed) return failureOf(parsed);
  auto store = openStore(uring, executor, storeUrl);
  if (!store) return err(Errc::usage, store.error());
  return NamespaceInStore{*parsed, watchStore(std::move(*store))};
}

void addOpsCommands(CLI::App& app, int& exitCode) {
  {
    auto opt = std::make_shared<DuCli>();
    CLI::App* cmd = app.add_subcommand(
        "du", "bytes a namespace holds: reachable from the retained heads, and reclaimable");
    cmd->add_option("--store", opt->store, "store URL")->required();
    cmd->add_option("--namespace", opt->ns, "namespace UUID")->required();
    cmd->add_option("--keep-revisions", opt->keepRevisions,
                    "heads retained, newest first (default 0: all)")
        ->check(anyUnsigned());
    cmd->add_flag("--json", opt->json, "print one JSON object");
    addTimeoutOption(cmd, kDefaultCommandTimeout);
    cmd->callback(
        [&exitCode, opt] { exitCode = runAsync([opt](io::Uring& u) { return runDu(u, *opt); }); });
  }
  {
    auto opt = std::make_shared<VacuumCli>();
    CLI::App* cmd = app.add_subcommand(
        "vacuum", "list (and with --apply delete) the objects no retained head reaches");
    cmd->add_option("--store", opt->store, "store URL")->required();
    cmd->add_option("--namespace", opt->ns, "namespace UUID")->required();
    cmd->add_option("--keep-revisions", opt->keepRevisions,
                    "heads retained, newest first (default 10; 0 keeps all)")
        ->check(anyUnsigned());
    cmd->add_option("--grace-seconds", opt->graceSeconds,
                    "never delete an object younger than this (default and least 3600: twice "
                    "the longest --reuse-max-age a publisher accepts)")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{3650} * 86400));
    cmd->add_flag("--apply", opt->apply, "delete (default: a dry run)");
    cmd->add_flag("--json", opt->json, "print one JSON object");
    addProgressOptions(cmd, &opt->json);
    addCommandMetricsFile(cmd, opt->metricsFile);
    addTimeoutOption(cmd, 0);
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runVacuum(u, *opt); });
    });
  }
  {
    auto opt = std::make_shared<BackupCli>();
    CLI::App* cmd = app.add_subcommand(
        "backup", "copy the current head's graph into another store, verify it, select it there");
    cmd->add_option("--store", opt->store, "source store URL")->required();
    cmd->add_option("--namespace", opt->ns, "namespace UUID")->required();
    cmd->add_option("--to", opt->to, "target store URL (either backend)")->required();
    cmd->add_flag("--json", opt->json, "print one JSON object");
    addProgressOptions(cmd, &opt->json);
    addCommandMetricsFile(cmd, opt->metricsFile);
    addTimeoutOption(cmd, 0);
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runBackup(u, *opt); });
    });
  }
  {
    auto opt = std::make_shared<RepairCli>();
    CLI::App* cmd = app.add_subcommand(
        "repair-head",
        "re-point a missing or damaged current head at a verified head (docs/operations.md)");
    cmd->add_option("--store", opt->store, "store URL")->required();
    cmd->add_option("--namespace", opt->ns, "namespace UUID")->required();
    cmd->add_option("--to", opt->to, "the head id to select (its immutable copy must verify)")
        ->required();
    cmd->add_flag("--force", opt->force, "replace even a healthy current head");
    cmd->add_flag("--json", opt->json, "print one JSON object");
    addTimeoutOption(cmd, kDefaultCommandTimeout);
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runRepair(u, *opt); });
    });
  }
}

}  // namespace cairn::cli
