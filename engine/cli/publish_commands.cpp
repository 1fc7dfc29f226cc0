// cairn checkpoint DIR | cairn status DIR | cairn log --store URL --namespace N |
// cairn recover DIR --store URL --namespace N [--head ID] [--writable] |
// cairn ingest DIR [--store URL]
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/async.hpp"
#include "engine/cli/commands.hpp"
#include "engine/cli/json.hpp"
#include "engine/cli/run.hpp"
#include "engine/database.hpp"
#include "engine/format/keys.hpp"
#include "engine/recovery.hpp"
#include "engine/store/open_store.hpp"
#include "engine/store_errors.hpp"
#include "io/uring.hpp"

namespace cairn::cli {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

// Test-only fault points (docs/protocol.md): CAIRN_TEST_FAULT=POINT[:N] kills this process
// with SIGKILL the N-th time (default 1) the publisher passes POINT.
FaultHook faultHookFromEnvironment() {
  const char* spec = std::getenv("CAIRN_TEST_FAULT");
  if (spec == nullptr || *spec == '\0') return {};
  std::string text(spec);
  std::string point = text;
  long target = 1;
  if (auto colon = text.find(':'); colon != std::string::npos) {
    point = text.substr(0, colon);
    target = std::strtol(text.c_str() + colon + 1, nullptr, 10);
  }
  auto passes = std::make_shared<long>(0);
  return [point, target, passes](std::string_view at) {
    if (at == point && ++*passes == target) ::raise(SIGKILL);
  };
}

struct CheckpointCli {
  std::string dir;
  std::uint64_t segmentMib = 32;
  std::int64_t reuseMaxAge = 600;
  LimitOptions limits;
  bool compact = false;
  bool json = false;
};

DatabaseOptions databaseOptions(std::uint64_t segmentMib, std::int64_t reuseMaxAge = 600,
                                const LimitOptions& limits = {}) {
  DatabaseOptions o;
  o.publish.checkpoint.segmentTargetBytes = segmentMib << 20;
  o.publish.checkpoint.reuseMaxAge = std::chrono::seconds(reuseMaxAge);
  o.publish.fault = faultHookFromEnvironment();
  o.publish.budget = limits.budget();
  o.inflightBytes = limits.inflightMib << 20;
  o.inflightRequests = limits.inflightRequests;
  return o;
}

// The reuse age (docs/operations.md, "Vacuum and concurrent publication").
void addReuseOption(CLI::App* cmd, std::int64_t& seconds) {
  cmd->add_option("--reuse-max-age", seconds,
                  "rely on an existing object only while younger than this many seconds, "
                  "else rewrite it; at most half of every vacuum's grace (default 600, at "
                  "least 5)")
      ->check(CLI::Range(std::int64_t{kMinReuseMaxAge.count()}, std::int64_t{365} * 86400));
}

JsonObject headJson(const Head& h) {
  const HeadFields& f = h.fields();
  JsonObject o;
  o.add("revision", f.revision)
      .add("id", toHex(h.id()))
      .add("prefix_sequence", f.prefixSequence)
      .add("prefix_length", f.prefixLength)
      .add("manifest_sha256", toHex(f.manifestSha256))
      .add("publication", f.publication.text())
      .add("publisher", f.publisher.text());
  return o;
}

void printPublished(const PublishResult& r, bool json, double seconds) {
  const HeadFields& f = r.head.fields();
  if (json) {
    std::cout << JsonObject{}
                     .add("ok", true)
                     .add("outcome", publishOutcomeName(r.outcome))
                     .add("revision", f.revision)
                     .add("head_id", toHex(r.head.id()))
                     .add("prefix_sequence", f.prefixSequence)
                     .add("prefix_length", f.prefixLength)
                     .add("manifest_sha256", toHex(f.manifestSha256))
                     .add("reconciled_intent", r.reconciledIntent)
                     .add("objects_written", r.objectsWritten)
                     .add("objects_reused", r.objectsReused)
                     .add("bytes_uploaded", r.bytesUploaded)
                     .add("objects_rewritten", r.objectsRewritten)
                     .add("segments", r.segments)
                     .add("seconds", seconds)
                     .str()
              << "\n";
  } else {
    std::cout << publishOutcomeName(r.outcome) << ": revision " << f.revision << ", head "
              << toHex(r.head.id()) << ", prefix sequence " << f.prefixSequence
              << (r.reconciledIntent ? " (a pending intent was reconciled first)" : "") << "\n";
  }
}

asio::awaitable<int> runCheckpoint(io::Uring& uring, const CheckpointCli& opt) {
  auto start = Clock::now();
  auto db = co_await Database::open(uring, opt.dir,
                                    databaseOptions(opt.segmentMib, opt.reuseMaxAge, opt.limits));
  if (!db) co_return reportJson(opt.json, db.error(), secondsSince(start));
  Res<PublishResult> published = err(Errc::usage, "not run");
  if (opt.compact) {
    published = co_await (*db)->compact();
  } else {
    published = co_await (*db)->checkpoint();
  }
  if (!published) co_return reportJson(opt.json, published.error(), secondsSince(start));
  printPublished(*published, opt.json, secondsSince(start));
  co_return 0;
}

// ---- status ----------------------------------------------------------------------------------

struct StatusCli {
  std::string dir;
  bool offline = false;
  bool json = false;
};

asio::awaitable<int> runStatus(io::Uring& uring, const StatusCli& opt) {
  auto start = Clock::now();
  DatabaseOptions options;
  options.openStore = !opt.offline;  // offline: no store, no credentials
  auto db = co_await Database::open(uring, opt.dir, options);
  if (!db) co_return reportJson(opt.json, db.error(), secondsSince(start));
  Journal& journal = (*db)->journal();
  const PublisherState* state = (*db)->publisherState();
  JsonObject out;
  out.add("ok", true)
      .add("lineage", toHex(journal.lineage()))
      .add("journal_end_sequence", journal.endSequence())
      .add("journal_end_length", journal.endOffset());
  std::string text = "journal         end sequence " + std::to_string(journal.endSequence()) +
                     " (" + std::to_string(journal.endOffset()) + " bytes)\n";
  if (!state) {
    out.addNull("store");
    text += "store           none (journal only)\n";
  } else {
    const PublisherState& s = *state;
    out.add("store", s.storeUrl).add("namespace", s.ns.text()).add("publisher", s.publisher.text());
    text += "store           " + s.storeUrl + "\nnamespace       " + s.ns.text() +
            "\npublisher       " + s.publisher.text() + "\n";
    if (s.expected) {
      out.addRaw("expected", headJson(s.expected->head).add("etag", s.expected->etag).str());
      text += "expected head   revision " + std::to_string(s.expected->head.fields().revision) +
              ", id " + toHex(s.expected->head.id()) + ", prefix sequence " +
              std::to_string(s.expected->head.fields().prefixSequence) + "\n";
    } else {
      out.addNull("expected");
      text += "expected head   none (the namespace is uninitialized)\n";
    }
    if (s.pending) {
      out.addRaw(
          "pending",
          headJson(s.pending->candidate)
              .add("precondition",
                   s.pending->precondition == Precondition::ifMatch ? "if-match" : "if-none-match")
              .add("etag", s.pending->etag)
              .str());
      text += "pending intent  candidate revision " +
              std::to_string(s.pending->candidate.fields().revision) + ", id " +
              toHex(s.pending->candidate.id()) + " (run cairn checkpoint to reconcile)\n";
    } else {
      out.addNull("pending");
      text += "pending intent  none\n";
    }
    // What the store selects now, judged against the local state; reading only.
    if (!opt.offline) {
      std::string key = keys::currentHead(s.ns);
      auto got = co_await (*db)->store()->get(key, limits::kHeadBytes);
      std::string selected;
      if (!got && got.error().status == StoreStatus::missing) {
        selected = "missing";
      } else if (!got) {
        selected = "unknown";
        out.add("store_error", storeError(got.error(), key).error.message);
      } else if (auto h = decodeHead(got->bytes); !h) {
        selected = "malformed";
      } else {
        if (s.pending && h->image() == s.pending->candidate.image()) {
          selected = "candidate";
        } else if (s.expected && h->image() == s.expected->head.image()) {
          selected = "expected";
        } else {
          selected = "other";
        }
        out.addRaw("store_head", headJson(*h).str());
      }
      out.add("selected", selected);
      text += "store selects   " + selected + "\n";
    }
  }
  if (opt.json) {
    std::cout << out.str() << "\n";
  } else {
    std::cout << text;
  }
  co_return 0;
}

// ---- log -------------------------------------------------------------------------------------

struct LogCli {
  std::string store;
  std::string ns;
  std::uint64_t limit = 0;
  bool json = false;
};

asio::awaitable<int> runLog(io::Uring& uring, const LogCli& opt) {
  auto start = Clock::now();
  auto opened = openNamespace(uring, co_await asio::this_coro::executor, opt.store, opt.ns);
  if (!opened) co_return reportJson(opt.json, opened.error(), secondsSince(start));
  ObjectStore& store = *opened->store;
  const Uuid* ns = &opened->ns;
  // Newest first: the current head, then each predecessor's immutable copy, each checked
  // against the exact reference its successor names.
  std::string key = keys::currentHead(*ns);
  std::optional<HeadReference> expected;
  std::string entries = "[";
  std::uint64_t count = 0;
  std::optional<Error> broken;
  bool historyEnds = false;
  for (;;) {
    auto got = co_await store.get(key, limits::kHeadBytes);
    if (!got) {
      // A predecessor's head copy that is gone ends the history (a vacuum kept fewer
      // revisions, or it was lost); a missing current head, or any failure, is an error.
      if (expected && got.error().status == StoreStatus::missing) {
        historyEnds = true;
        if (!opt.json) {
          std::cout << "(history ends: the head copy of revision " << count
                    << "'s predecessor is gone, reclaimed or lost)\n";
        }
        break;
      }
      broken = storeError(got.error(), key).error;
      break;
    }
    auto head = decodeHead(got->bytes, expected);
    if (!head) {
      broken = Error{head.error().code, key + ": " + head.error().message, key};
      break;
    }
    if (head->fields().ns != *ns) {
      broken = Error{Errc::binding, key + ": the head belongs to another namespace", key};
      break;
    }
    const HeadFields& f = head->fields();
    if (opt.json) {
      entries += (count ? "," : "") + headJson(*head).str();
    } else {
      std::cout << "revision " << f.revision << "  id " << toHex(head->id()) << "  prefix "
                << f.prefixSequence << "  manifest " << toHex(f.manifestSha256) << "\n";
    }
    ++count;
    if (!f.predecessor || (opt.limit != 0 && count >= opt.limit)) break;
    expected = *f.predecessor;
    key = keys::headCopy(*ns, f.predecessor->id);
  }
  entries += "]";
  if (opt.json) {
    JsonObject out;
    out.add("ok", !broken).addRaw("entries", entries).add("history_ends", historyEnds);
    if (broken) out.add("error", errcName(broken->code)).add("key", broken->key);
    std::cout << out.add("seconds", secondsSince(start)).str() << "\n";
  }
  if (broken) {
    if (count > 0 && !opt.json)
      std::cerr << "cairn: the chain breaks after " << count << " heads\n";
    co_return report(*broken);
  }
  co_return 0;
}

// ---- recover ---------------------------------------------------------------------------------

struct RecoverCli {
  std::string dir;
  std::string store;
  std::string ns;
  std::string head;
  bool writable = false;
  bool json = false;
};

asio::awaitable<int> runRecover(io::Uring& uring, const RecoverCli& opt) {
  auto start = Clock::now();
  RecoverRequest request;
  request.storeUrl = opt.store;
  request.writable = opt.writable;
  auto ns = parseNamespaceOption(opt.ns);
  if (!ns) co_return reportJson(opt.json, ns.error(), secondsSince(start));
  request.ns = *ns;
  if (!opt.head.empty()) {
    auto id = fromHex(opt.head);
    if (!id || id->size() != 32) {
      co_return reportJson(opt.json, Error{Errc::usage, "--head is not a SHA-256 head id"},
                           secondsSince(start));
    }
    Digest d{};
    std::copy(id->begin(), id->end(), d.begin());
    request.headId = d;
  }
  auto store = openStore(uring, co_await asio::this_coro::executor, opt.store);
  if (!store)
    co_return reportJson(opt.json, Error{Errc::usage, store.error()}, secondsSince(start));
  EngineLimits limits;
  OperationBudget budget;
  auto r = co_await recoverDatabase(uring, **store, opt.dir, request, limits, budget);
  if (!r) co_return reportJson(opt.json, r.error(), secondsSince(start));
  const HeadFields& f = r->head.fields();
  if (opt.json) {
    std::cout << JsonObject{}
                     .add("ok", true)
                     .add("revision", f.revision)
                     .add("head_id", toHex(r->head.id()))
                     .add("prefix_sequence", f.prefixSequence)
                     .add("prefix_length", f.prefixLength)
                     .add("writable", opt.writable)
                     .add("objects", r->objects)
                     .add("bytes", r->bytes)
                     .add("seconds", secondsSince(start))
                     .str()
              << "\n";
  } else {
    std::cout << "recovered revision " << f.revision << " (head " << toHex(r->head.id())
              << "): " << f.prefixSequence << " records, " << r->bytes << " journal bytes"
              << (opt.writable ? "; this directory now publishes the namespace" : "") << "\n";
  }
  co_return 0;
}

// ---- ingest ----------------------------------------------------------------------------------

// Reads standard input on its own thread (a blocking read must not stall the loop, where
// appends complete and checkpoints run) and hands at most kMaxChunksQueued chunks to the loop.
class StdinReader {
 public:
  static constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
  static constexpr std::size_t kMaxChunksQueued = 8;

  explicit StdinReader(asio::any_io_executor executor)
      : executor_(std::move(executor)), loop_(std::make_shared<LoopSide>()) {
    thread_ = std::thread([this] { run(); });
  }
  // Stops the thread within one poll interval, even if input never ends.
  ~StdinReader() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    room_.notify_all();
    thread_.join();
  }

  // The next chunk; empty at end of input (or after a read error: failed()).
  asio::awaitable<Bytes> next() {
    LoopSide& l = *loop_;
    while (l.chunks.empty() && !l.done) {
      l.ready.reset();
      co_await l.ready.wait();
    }
    if (l.chunks.empty()) co_return Bytes{};
    Bytes chunk = std::move(l.chunks.front());
    l.chunks.pop_front();
    {
      std::lock_guard lock(mutex_);
      --queued_;
    }
    room_.notify_one();
    co_return chunk;
  }
  bool failed() const { return loop_->failed; }

 private:
  // Touched on the loop only; shared so a chunk posted as the reader goes away stays valid.
  struct LoopSide {
    std::deque<Bytes> chunks;
    Signal ready;
    bool done = false;
    bool failed = false;
  };

  void run() {
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        room_.wait(lock, [&] { return stopping_ || queued_ < kMaxChunksQueued; });
        if (stopping_) return;
      }
      pollfd p{STDIN_FILENO, POLLIN, 0};
      int ready = ::poll(&p, 1, 100);
      if (ready == 0 || (ready < 0 && errno == EINTR)) continue;  // look at stopping_ again
      Bytes chunk(kChunkBytes);
      ssize_t n = ready < 0 ? -1 : ::read(STDIN_FILENO, chunk.data(), chunk.size());
      if (n < 0 && errno == EINTR) continue;
      bool end = n <= 0;
      if (n > 0) {
        chunk.resize(static_cast<std::size_t>(n));
        std::lock_guard lock(mutex_);
        ++queued_;
      }
      asio::post(executor_, [loop = loop_, end, error = n < 0, chunk = std::move(chunk)]() mutable {
        if (end) {
          loop->done = true;
          loop->failed = error;
        } else {
          loop->chunks.push_back(std::move(chunk));
        }
        loop->ready.notify();
      });
      if (end) return;
    }
  }

  asio::any_io_executor executor_;
  std::shared_ptr<LoopSide> loop_;
  std::mutex mutex_;
  std::condition_variable room_;
  std::size_t queued_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

// Splits chunks into records: lines (without the newline), or u32 big-endian length + bytes.
class RecordSplitter {
 public:
  explicit RecordSplitter(bool lengthPrefixed) : lengthPrefixed_(lengthPrefixed) {}
  void feed(ByteView chunk) { buffer_.insert(buffer_.end(), chunk.begin(), chunk.end()); }
  // The next whole record, or nullopt when more input is needed. Sets an error on a record
  // over the payload cap.
  std::optional<Bytes> next() {
    if (lengthPrefixed_) {
      if (buffer_.size() - at_ < 4) return compact();
      std::uint32_t n = loadBe32(buffer_.data() + at_);
      if (n > limits::kMaxPayloadBytes) {
        error = "a record of " + std::to_string(n) + " bytes exceeds the 16 MiB record cap";
        return std::nullopt;
      }
      if (buffer_.size() - at_ - 4 < n) return compact();
      Bytes r(buffer_.begin() + static_cast<std::ptrdiff_t>(at_ + 4),
              buffer_.begin() + static_cast<std::ptrdiff_t>(at_ + 4 + n));
      at_ += 4 + n;
      return r;
    }
    auto begin = buffer_.begin() + static_cast<std::ptrdiff_t>(at_);
    auto nl = std::find(begin, buffer_.end(), std::uint8_t{'\n'});
    if (nl == buffer_.end()) {
      if (buffer_.size() - at_ > limits::kMaxPayloadBytes) {
        error = "a line exceeds the 16 MiB record cap";
        return std::nullopt;
      }
      return compact();
    }
    Bytes r(begin, nl);
    at_ = static_cast<std::size_t>(nl - buffer_.begin()) + 1;
    return r;
  }
  // At end of input: the last line without a newline, if any; an incomplete length-prefixed
  // record is an error.
  std::optional<Bytes> finish() {
    if (at_ == buffer_.size()) return std::nullopt;
    if (lengthPrefixed_) {
      error = "the input ends inside a length-prefixed record";
      return std::nullopt;
    }
    Bytes r(buffer_.begin() + static_cast<std::ptrdiff_t>(at_), buffer_.end());
    at_ = buffer_.size();
    return r;
  }
  std::string error;

 private:
  std::nullopt_t compact() {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(at_));
    at_ = 0;
    return std::nullopt;
  }
  bool lengthPrefixed_;
  Bytes buffer_;
  std::size_t at_ = 0;
};

struct IngestCli {
  std::string dir;
  std::string store;
  std::string dbId;
  std::string ns;
  std::string publisher;
  std::uint64_t checkpointMib = 64;
  double checkpointSeconds = 30;
  std::uint64_t segmentMib = 32;
  bool lengthPrefixed = false;
  bool json = false;
};

// Worth another try at the next checkpoint: an unknown outcome (a pending intent records the
// attempt, the next checkpoint reconciles it). Everything else, store failures included (a
// 403 or a missing bucket is not transient), stops ingestion; what was acknowledged stays
// durable and a new `cairn ingest` continues.
bool transient(const Error& e) { return e.code == Errc::uncertain; }

asio::awaitable<Res<std::unique_ptr<Database>>> openOrCreate(io::Uring& uring,
                                                             const IngestCli& opt) {
  DatabaseOptions options = databaseOptions(opt.segmentMib);
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(opt.dir) / Journal::kFileName, ec)) {
    auto db = co_await Database::open(uring, opt.dir, std::move(options));
    if (!db) co_return db;
    Publisher* p = (*db)->publisher();
    if (!opt.store.empty() && (!p || p->state().storeUrl != opt.store)) {
      co_return err(Errc::usage, "--store differs from the store " + opt.dir + " publishes to (" +
                                     (p ? p->state().storeUrl : std::string("none")) + ")");
    }
    co_return db;
  }
  std::string id = opt.dbId.empty() ? std::filesystem::path(opt.dir).filename().string() : opt.dbId;
  auto units = utf8ToUtf16(id);
  if (!units || units->empty()) co_return err(Errc::usage, "--db-id is not valid UTF-8");
  std::optional<PublishTarget> target;
  if (!opt.store.empty()) {
    target = PublishTarget{opt.store, Uuid::random(), Uuid::random()};
    if (!opt.ns.empty()) {
      auto ns = Uuid::parse(opt.ns);
      if (!ns) co_return err(Errc::usage, "--namespace is not a canonical UUID");
      target->ns = *ns;
    }
    if (!opt.publisher.empty()) {
      auto p = Uuid::parse(opt.publisher);
      if (!p) co_return err(Errc::usage, "--publisher is not a canonical UUID");
      target->publisher = *p;
    }
  }
  co_return co_await Database::create(uring, opt.dir, *units, target, std::move(options));
}

asio::awaitable<int> runIngest(io::Uring& uring, const IngestCli& opt) {
  auto start = Clock::now();
  if (opt.checkpointMib == 0 || opt.checkpointSeconds <= 0) {
    co_return reportJson(
        opt.json, Error{Errc::usage, "--checkpoint-mib and --checkpoint-seconds must be > 0"},
        secondsSince(start));
  }
  auto opened = co_await openOrCreate(uring, opt);
  if (!opened) co_return reportJson(opt.json, opened.error(), secondsSince(start));
  Database& db = **opened;
  auto executor = co_await asio::this_coro::executor;
  bool tty = ::isatty(STDERR_FILENO) != 0;

  // Appends in flight (the journal's group commit shares each fdatasync among them).
  constexpr std::size_t kAppendConcurrency = 4096;
  std::size_t inFlight = 0;
  Signal appendDone;
  std::optional<Error> failure;
  std::uint64_t records = 0, bytes = 0, lastSequence = db.journal().endSequence();
  // Checkpoints: one at a time, in the background, every N MiB or T seconds.
  bool publishing = false;
  Signal publishDone;
  std::uint64_t checkpoints = 0, bytesAtLastCheckpoint = 0;
  auto lastCheckpointAt = Clock::now();
  std::optional<PublishResult> lastPublished;
  auto publish = [&]() -> asio::awaitable<void> {
    auto r = co_await db.checkpoint();
    if (r) {
      if (r->outcome == PublishOutcome::selected) ++checkpoints;
      lastPublished = *r;
    } else if (transient(r.error())) {
      std::fprintf(stderr, "\ncairn: checkpoint will be retried: %s\n", r.error().message.c_str());
    } else if (!failure) {
      failure = r.error();
    }
    publishing = false;
    publishDone.notify();
  };
  auto startCheckpointIfDue = [&] {
    if (!db.publisher() || publishing || failure) return;
    bool bytesDue = bytes - bytesAtLastCheckpoint >= (opt.checkpointMib << 20);
    bool timeDue =
        secondsSince(lastCheckpointAt) >= opt.checkpointSeconds && db.journal().endSequence() > 0;
    if (!bytesDue && !timeDue) return;
    // Marked before the spawn: the next trigger must see it whatever co_spawn runs first.
    publishing = true;
    lastCheckpointAt = Clock::now();
    bytesAtLastCheckpoint = bytes;
    asio::co_spawn(executor, publish(), asio::detached);
  };
  // The time trigger and the progress line, while input lasts.
  bool inputDone = false;
  bool tickerRunning = true;
  Signal tickerDone;
  asio::steady_timer tick(executor);
  asio::co_spawn(
      executor,
      [&]() -> asio::awaitable<void> {
        while (!inputDone) {
          tick.expires_after(std::chrono::milliseconds(500));
          boost::system::error_code ec;
          co_await tick.async_wait(asio::redirect_error(asio::use_awaitable, ec));
          if (inputDone) break;
          startCheckpointIfDue();
          if (tty) {
            double s = std::max(secondsSince(start), 1e-3);
            std::fprintf(stderr, "\r%llu records  %.1f MiB  %.1f MiB/s  %llu checkpoints   ",
                         static_cast<unsigned long long>(records),
                         static_cast<double>(bytes) / (1 << 20),
                         static_cast<double>(bytes) / (1 << 20) / s,
                         static_cast<unsigned long long>(checkpoints));
          }
        }
        tickerRunning = false;
        tickerDone.notify();
      },
      asio::detached);

  StdinReader reader(executor);
  RecordSplitter splitter(opt.lengthPrefixed);
  auto appendOne = [&](Bytes record) -> asio::awaitable<void> {
    while (inFlight >= kAppendConcurrency) {
      appendDone.reset();
      co_await appendDone.wait();
    }
    ++inFlight;
    bytes += record.size();
    ++records;
    asio::co_spawn(
        executor,
        [&, payload = std::move(record)]() -> asio::awaitable<void> {
          auto r = co_await db.append(payload);
          if (r) {
            lastSequence = std::max(lastSequence, *r);
          } else if (!failure) {
            failure = r.error();
          }
          --inFlight;
          appendDone.notify();
        },
        asio::detached);
  };
  while (!failure) {
    Bytes chunk = co_await reader.next();
    if (chunk.empty()) break;
    splitter.feed(chunk);
    while (!failure) {
      auto record = splitter.next();
      if (!record) break;
      co_await appendOne(std::move(*record));
    }
    if (!splitter.error.empty()) failure = Error{Errc::usage, splitter.error};
    startCheckpointIfDue();
  }
  if (!failure) {
    if (reader.failed()) failure = Error{Errc::io, "cannot read standard input"};
    auto last = splitter.finish();
    if (last && !failure) co_await appendOne(std::move(*last));
    if (!splitter.error.empty() && !failure) failure = Error{Errc::usage, splitter.error};
  }
  while (inFlight > 0) {
    appendDone.reset();
    co_await appendDone.wait();
  }
  inputDone = true;
  tick.cancel();
  while (tickerRunning) {
    tickerDone.reset();
    co_await tickerDone.wait();
  }
  while (publishing) {
    publishDone.reset();
    co_await publishDone.wait();
  }
  // The final checkpoint covers everything acknowledged.
  if (!failure && db.publisher()) {
    auto r = co_await db.checkpoint();
    if (r) {
      if (r->outcome == PublishOutcome::selected) ++checkpoints;
      lastPublished = *r;
    } else {
      failure = r.error();
    }
  }
  if (tty) std::fprintf(stderr, "\n");
  double s = secondsSince(start);
  if (failure) {
    std::cerr << "cairn: records up to sequence " << lastSequence
              << " are durable in the journal\n";
    co_return reportJson(opt.json, *failure, secondsSince(start));
  }
  if (opt.json) {
    JsonObject out;
    out.add("ok", true)
        .add("records", records)
        .add("bytes", bytes)
        .add("last_sequence", lastSequence)
        .add("checkpoints", checkpoints)
        .add("seconds", s);
    if (lastPublished) {
      out.add("revision", lastPublished->head.fields().revision)
          .add("head_id", toHex(lastPublished->head.id()))
          .add("prefix_sequence", lastPublished->head.fields().prefixSequence);
    }
    if (db.publisher()) out.add("namespace", db.publisher()->state().ns.text());
    std::cout << out.str() << "\n";
  } else {
    std::cout << records << " records (" << bytes << " bytes) durable through sequence "
              << lastSequence << " in " << s << " s; " << checkpoints << " checkpoints";
    if (lastPublished) {
      std::cout << ", current revision " << lastPublished->head.fields().revision << " (head "
                << toHex(lastPublished->head.id()) << ")";
    }
    std::cout << "\n";
  }
  co_return 0;
}

}  // namespace

void addPublishCommands(CLI::App& app, int& exitCode) {
  {
    auto opt = std::make_shared<CheckpointCli>();
    CLI::App* cmd = app.add_subcommand(
        "checkpoint", "publish a checkpoint of the journal (reconciling a pending intent first)");
    cmd->add_option("DIR", opt->dir, "database directory")->required();
    cmd->add_option("--segment-mib", opt->segmentMib, "segment target size, 1..64 MiB")
        ->check(CLI::Range(1, 64));
    addReuseOption(cmd, opt->reuseMaxAge);
    addLimitOptions(cmd, opt->limits);
    cmd->add_flag("--json", opt->json, "print one JSON object");
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runCheckpoint(u, *opt); });
    });
  }
  {
    auto opt = std::make_shared<CheckpointCli>();
    opt->compact = true;
    opt->segmentMib = 64;
    CLI::App* cmd = app.add_subcommand(
        "compact",
        "publish the current head's cutoff again in fewer, larger segments (a new generation)");
    cmd->add_option("DIR", opt->dir, "database directory")->required();
    cmd->add_option("--segment-mib", opt->segmentMib, "segment target size, 1..64 MiB (default 64)")
        ->check(CLI::Range(1, 64));
    addReuseOption(cmd, opt->reuseMaxAge);
    addLimitOptions(cmd, opt->limits);
    cmd->add_flag("--json", opt->json, "print one JSON object");
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runCheckpoint(u, *opt); });
    });
  }
  {
    auto opt = std::make_shared<StatusCli>();
    CLI::App* cmd = app.add_subcommand(
        "status",
        "the expected head, any pending intent, the journal's end, and what the store "
        "selects");
    cmd->add_option("DIR", opt->dir, "database directory")->required();
    cmd->add_flag("--offline", opt->offline, "local files only: no store, no credentials");
    cmd->add_flag("--json", opt->json, "print one JSON object");
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runStatus(u, *opt); });
    });
  }
  {
    auto opt = std::make_shared<LogCli>();
    CLI::App* cmd = app.add_subcommand("log", "the head history of a namespace, newest first");
    cmd->add_option("--store", opt->store, "store URL")->required();
    cmd->add_option("--namespace", opt->ns, "namespace UUID")->required();
    cmd->add_option("--limit", opt->limit, "at most this many heads (0: all)");
    cmd->add_flag("--json", opt->json, "print one JSON object with an \"entries\" array");
    cmd->callback(
        [&exitCode, opt] { exitCode = runAsync([opt](io::Uring& u) { return runLog(u, *opt); }); });
  }
  {
    auto opt = std::make_shared<RecoverCli>();
    CLI::App* cmd = app.add_subcommand(
        "recover", "rebuild a database directory from a verified checkpoint in the store");
    cmd->add_option("DIR", opt->dir, "a new (absent or empty) database directory")->required();
    cmd->add_option("--store", opt->store, "store URL")->required();
    cmd->add_option("--namespace", opt->ns, "namespace UUID")->required();
    cmd->add_option("--head", opt->head,
                    "recover exactly this head id (default: the current head, never an older "
                    "one by itself)");
    cmd->add_flag("--writable", opt->writable,
                  "also install the publisher state: this directory continues the namespace");
    cmd->add_flag("--json", opt->json, "print one JSON object");
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runRecover(u, *opt); });
    });
  }
  {
    auto opt = std::make_shared<IngestCli>();
    CLI::App* cmd = app.add_subcommand(
        "ingest", "append records from standard input durably and publish checkpoints as it goes");
    cmd->add_option("DIR", opt->dir, "database directory (created if it holds no journal)")
        ->required();
    cmd->add_option("--store", opt->store, "store URL to publish to (for a new database)");
    cmd->add_option("--db-id", opt->dbId, "database id of a new database (default: DIR's name)");
    cmd->add_option("--namespace", opt->ns, "namespace UUID of a new database (default: random)");
    cmd->add_option("--publisher", opt->publisher,
                    "publisher UUID of a new database (default: random)");
    cmd->add_option("--checkpoint-mib", opt->checkpointMib,
                    "publish after this many MiB of records (default 64)");
    cmd->add_option("--checkpoint-seconds", opt->checkpointSeconds,
                    "publish after this many seconds (default 30)");
    cmd->add_option("--segment-mib", opt->segmentMib, "segment target size, 1..64 MiB")
        ->check(CLI::Range(1, 64));
    cmd->add_flag("--length-prefixed", opt->lengthPrefixed,
                  "records are a u32 big-endian length and the bytes (default: one per line)");
    cmd->add_flag("--json", opt->json, "print one JSON object at the end");
    cmd->callback([&exitCode, opt] {
      exitCode = runAsync([opt](io::Uring& u) { return runIngest(u, *opt); });
    });
  }
}

}  // namespace cairn::cli
