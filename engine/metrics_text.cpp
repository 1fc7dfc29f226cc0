#include "engine/metrics_text.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <system_error>

namespace cairn {

void PrometheusWriter::family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += help;
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PrometheusWriter::sample(std::string_view name, std::string_view labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    out_ += labels;
    out_ += '}';
  }
  char number[64];
  std::snprintf(number, sizeof number, " %.17g\n", value);
  out_ += number;
}

void PrometheusWriter::counter(std::string_view name, std::string_view help, double value) {
  family(name, "counter", help);
  sample(name, {}, value);
}

void PrometheusWriter::gauge(std::string_view name, std::string_view help, double value) {
  family(name, "gauge", help);
  sample(name, {}, value);
}

std::string prometheusLabel(std::string_view name, std::string_view value) {
  std::string out(name);
  out += "=\"";
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

namespace {

void publications(PrometheusWriter& w, std::string_view what, const PublicationStats& p) {
  const std::string total = "cairn_" + std::string(what) + "s_total";
  w.family(total, "counter", "calls of " + std::string(what) + "() by outcome");
  w.sample(total, "outcome=\"published\"", static_cast<double>(p.published));
  w.sample(total, "outcome=\"failed\"", static_cast<double>(p.failed));
  w.sample(total, "outcome=\"uncertain\"", static_cast<double>(p.uncertain));
  w.sample(total, "outcome=\"conflict\"", static_cast<double>(p.conflict));
  w.counter("cairn_" + std::string(what) + "_seconds_total",
            "time spent in " + std::string(what) + "(), summed", p.seconds);
  w.gauge("cairn_" + std::string(what) + "_last_seconds",
          "the latest " + std::string(what) + "() call's duration", p.lastSeconds);
}

void storeMetrics(PrometheusWriter& w, const StoreStats& store) {
  w.family("cairn_store_operations_total", "counter",
           "object store operations by kind and by the outcome they ended in");
  for (std::size_t op = 0; op < kStoreOps; ++op) {
    for (std::size_t status = 0; status < kStoreStatuses; ++status) {
      w.sample("cairn_store_operations_total",
               "op=\"" + std::string(storeOpName(static_cast<StoreOp>(op))) + "\",outcome=\"" +
                   std::string(storeStatusName(static_cast<StoreStatus>(status))) + "\"",
               static_cast<double>(store.operations[op][status]));
    }
  }
  w.family("cairn_store_bytes_total", "counter",
           "bodies of the store operations that succeeded, by direction");
  w.sample("cairn_store_bytes_total", "direction=\"written\"",
           static_cast<double>(store.bytesWritten));
  w.sample("cairn_store_bytes_total", "direction=\"read\"", static_cast<double>(store.bytesRead));
  if (const auto& t = store.transport) {
    w.counter("cairn_store_attempts_total", "HTTP attempts sent to the store",
              static_cast<double>(t->attempts));
    w.counter("cairn_store_retries_total", "HTTP attempts that were retries",
              static_cast<double>(t->retries));
    w.counter("cairn_store_timeouts_total",
              "HTTP attempts that ran out of time (connect, TLS handshake, exchange)",
              static_cast<double>(t->timeouts));
  }
}

}  // namespace

std::string prometheusText(const DatabaseStats& stats) {
  PrometheusWriter w;
  const JournalStats& j = stats.journal;
  w.counter("cairn_journal_appends_total", "records acknowledged durable",
            static_cast<double>(j.appends));
  w.counter("cairn_journal_bytes_total", "bytes written for acknowledged records (their frames)",
            static_cast<double>(j.bytes));
  w.counter("cairn_journal_syncs_total", "group-commit batches: one O_DSYNC write each",
            static_cast<double>(j.syncs));
  w.counter("cairn_journal_sync_seconds_total", "time from each batch's durable write to its end",
            j.syncSeconds);
  w.counter("cairn_journal_room_bytes_total", "zeros written ahead of the journal's frames",
            static_cast<double>(j.roomBytes));
  w.counter("cairn_journal_room_seconds_total",
            "time writing and syncing them (part of the sync seconds)", j.roomSeconds);
  w.gauge("cairn_journal_largest_batch_records", "records in the largest batch",
          static_cast<double>(j.largestBatch));
  w.family("cairn_journal_batch_records", "histogram", "records per group-commit batch");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < JournalStats::kBatchBounds.size(); ++i) {
    cumulative += j.batches[i];
    w.sample("cairn_journal_batch_records_bucket",
             "le=\"" + std::to_string(JournalStats::kBatchBounds[i]) + "\"",
             static_cast<double>(cumulative));
  }
  cumulative += j.batches.back();
  w.sample("cairn_journal_batch_records_bucket", "le=\"+Inf\"", static_cast<double>(cumulative));
  w.sample("cairn_journal_batch_records_sum", {}, static_cast<double>(j.appends));
  w.sample("cairn_journal_batch_records_count", {}, static_cast<double>(j.syncs));

  publications(w, "checkpoint", stats.checkpoints);
  publications(w, "compaction", stats.compactions);

  if (stats.store) storeMetrics(w, *stats.store);
  return w.take();
}

std::string prometheusCommandText(std::string_view command, const StoreStats& store, double seconds,
                                  std::optional<int> exitCode) {
  PrometheusWriter w;
  const std::string label = prometheusLabel("command", command);
  w.family("cairn_command_running", "gauge", "1 while the command runs, 0 once it ended");
  w.sample("cairn_command_running", label, exitCode ? 0 : 1);
  w.family("cairn_command_seconds", "gauge", "time since the command started, or its duration");
  w.sample("cairn_command_seconds", label, seconds);
  if (exitCode) {
    w.family("cairn_command_exit_code", "gauge", "the exit code the command ended with");
    w.sample("cairn_command_exit_code", label, *exitCode);
  }
  storeMetrics(w, store);
  return w.take();
}

Result<void, std::string> writeMetricsFile(const std::filesystem::path& path,
                                           std::string_view text) {
  std::filesystem::path temporary = path;
  temporary += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      return Failure<std::string>{"cannot write " + temporary.string()};
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    return Failure<std::string>{"cannot rename " + temporary.string() + " to " + path.string() +
                                ": " + ec.message()};
  }
  return {};
}

}  // namespace cairn
