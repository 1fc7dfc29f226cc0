// cairn_s3_bench: measures cairn::net::S3Client throughput and CPU per GiB and prints one JSON
// object.
//
//   upload    PUTs --objects objects of --size bytes (random, or the files <source-dir>/obj-NNNN)
//             as <prefix>/obj-NNNN with --concurrency coroutines on one io_context over one
//             S3Client (maxConnections = concurrency). Plain PUTs, payload signed with SHA-256.
//   download  GETs the same keys the same way, each into a body buffer reused from an earlier
//             GET (base/buffer_pool.hpp); each body is checked for its size and, with
//             --out-dir, written to <out-dir>/obj-NNNN (as rclone copy does; whole 4 KiB blocks
//             with O_DIRECT, see writeFile) while the coroutine's next object downloads.
//             With --hash-twice, each body is also hashed with SHA-256 twice over, as two
//             interleaved lanes on the CPU pool (engine/runtime/cpu_pool.hpp): the least a deep
//             verification of cairn's format does with every byte (the object's hash and the
//             prefix hash it rebuilds), so its throughput bounds any verifier's on this store.
//             With --compare-dir DIR as well, each body also gets a CRC32C of every 4 KiB (a
//             record's frame check) and is compared with DIR/obj-NNNN, mapped (the journal's
//             bytes, without a copy): the rest of what a deep verification must do with it.
//   delete    removes the same keys (not timed for the comparison; cleanup).
//   write     no network: writes --objects random bodies of --size bytes to <out-dir>/obj-NNNN
//             exactly as download --out-dir does, so its CPU per GiB is what the file system
//             alone costs a download to files.
//
// Only the transfer phase is timed: wall seconds on a steady clock, CPU seconds from
// getrusage(RUSAGE_SELF) user + sys around it. Loading the source files is outside the timing.
// The store comes from S3_ENDPOINT, S3_REGION, S3_BUCKET, S3_ACCESS_KEY, S3_SECRET_KEY (and
// S3_SESSION_TOKEN), as in shared/s3/README.md. perf/run_s3.sh runs it beside rclone.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/buffer_pool.hpp"
#include "base/bytes.hpp"
#include "base/crc32c.hpp"
#include "base/sha256.hpp"
#include "engine/runtime/cpu_pool.hpp"
#include "io/file.hpp"
#include "io/uring.hpp"
#include "net/s3/s3_client.hpp"
#include "perf/s3_env.hpp"

namespace {

using namespace cairn;
namespace asio = boost::asio;
using namespace boost::asio::experimental::awaitable_operators;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kMaxObjectBytes = std::uint64_t{5} << 30;  // S3's single-PUT limit
constexpr unsigned kMaxObjects = 100'000;
constexpr unsigned kMaxConcurrency = 1024;

// "8MiB", "512KiB", "1GiB", "1000" (bytes), "4k"; 0 on error.
std::uint64_t parseSize(const std::string& text) {
  std::size_t pos = 0;
  std::uint64_t n = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])) != 0) {
    n = n * 10 + static_cast<std::uint64_t>(text[pos] - '0');
    if (n > kMaxObjectBytes) return 0;
    ++pos;
  }
  if (pos == 0) return 0;
  std::string unit = text.substr(pos);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::uint64_t mult = 1;
  if (unit.empty() || unit == "b") {
    mult = 1;
  } else if (unit == "k" || unit == "kib") {
    mult = 1024;
  } else if (unit == "m" || unit == "mib") {
    mult = 1024 * 1024;
  } else if (unit == "g" || unit == "gib") {
    mult = 1024 * 1024 * 1024;
  } else {
    return 0;
  }
  return n * mult;
}

double cpuSeconds(const rusage& r, bool user) {
  const timeval& t = user ? r.ru_utime : r.ru_stime;
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

std::string objectName(unsigned i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "obj-%04u", i);
  return buf;
}

std::string fmt(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

struct Options {
  std::string mode;
  unsigned objects = 64;
  std::string size = "8MiB";
  unsigned concurrency = 8;
  std::string prefix = "cairn-s3-bench";
  std::string sourceDir;
  std::string outDir;
  std::uint64_t seed = 1;
  bool hashTwice = false;
  std::string compareDir;
};

using Stage = io::AlignedBuffer;

struct Run {
  const Options* opt = nullptr;
  std::uint64_t objectBytes = 0;
  net::S3Client* client = nullptr;
  io::Uring* uring = nullptr;   // download --out-dir
  std::vector<Bytes> payloads;  // upload
  // Download bodies land in buffers handed back by earlier ones (as the engine's operations
  // do, base/buffer_pool.hpp): set to the concurrency's worth in main().
  BufferPool buffers{0};
  std::vector<Stage> stages;  // --out-dir, write: aligned buffers for O_DIRECT, reused
  unsigned next = 0;
  unsigned done = 0;
  unsigned failures = 0;
  std::uint64_t bytes = 0;
  std::uint8_t digestBits = 0;  // --hash-twice: the digests' bits, so they are used
  std::string firstError;

  std::string key(unsigned i) const { return opt->prefix + "/" + objectName(i); }

  void noteFailure(unsigned i, const net::S3Outcome& o) {
    ++failures;
    if (firstError.empty()) {
      firstError = key(i) + ": " + std::string(net::statusName(o.status)) + " " +
                   std::to_string(o.http) + " " + o.code + " " + o.message;
    }
  }
};

// Writes one downloaded object to a file through io_uring, so the copy into the page cache
// does not stop the other transfers on the loop (a blocking write() of 8 MiB did). Whole
// 4 KiB blocks are written with O_DIRECT from an aligned staging buffer kept for reuse (no
// page-cache pages: on this machine every fresh page costs more than the copy into it);
// the unaligned tail, if any, through the page cache.
asio::awaitable<bool> writeFile(io::Uring& uring, std::vector<Stage>& stages,
                                std::size_t stageBytes, const std::string& path, ByteView body) {
  const std::size_t whole = body.size() / io::kDirectAlign * io::kDirectAlign;
  std::size_t written = 0;
  if (whole > 0 && body.size() <= stageBytes) {
    Stage stage;
    if (stages.empty()) {
      stage = io::allocateAligned(stageBytes);
    } else {
      stage = std::move(stages.back());
      stages.pop_back();
    }
    std::memcpy(stage.get(), body.data(), whole);
    if (auto direct = io::File::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT)) {
      auto wrote = co_await uring.write(direct->fd(), ByteView(stage.get(), whole), 0);
      if (wrote && direct->close()) written = whole;
    }
    stages.push_back(std::move(stage));
  }
  if (written == body.size()) co_return true;
  // The tail, or everything where O_DIRECT was refused.
  auto file = io::File::open(path, O_WRONLY | O_CREAT | (written == 0 ? O_TRUNC : 0));
  if (!file) co_return false;
  auto wrote = co_await uring.write(file->fd(), body.subspan(written), written);
  co_return wrote && file->close();
}

// Writes object i to <out-dir>/obj-NNNN; a failure is counted as the object's.
asio::awaitable<bool> writeObject(Run& run, unsigned i, ByteView body) {
  std::string path = run.opt->outDir + "/" + objectName(i);
  if (co_await writeFile(*run.uring, run.stages, run.objectBytes, path, body)) co_return true;
  net::S3Outcome o;
  o.message = "cannot write to " + run.opt->outDir;
  run.noteFailure(i, o);
  co_return false;
}

// Whether the file at `path` holds exactly `bytes`, compared through a read-only mapping.
bool sameAsFile(const std::string& path, ByteView bytes) {
  auto file = io::File::open(path, O_RDONLY);
  if (!file) return false;
  struct stat st {};
  if (::fstat(file->fd(), &st) != 0 || static_cast<std::uint64_t>(st.st_size) != bytes.size()) {
    return false;
  }
  if (bytes.empty()) return true;
  void* map = ::mmap(nullptr, bytes.size(), PROT_READ, MAP_SHARED, file->fd(), 0);
  if (map == MAP_FAILED) return false;
  const bool same = std::memcmp(map, bytes.data(), bytes.size()) == 0;
  ::munmap(map, bytes.size());
  return same;
}

asio::awaitable<void> worker(Run& run) {
  const Options& opt = *run.opt;
  Bytes unwritten;  // download --out-dir: the last body, not yet written
  unsigned unwrittenIndex = 0;
  while (run.next < opt.objects) {
    const unsigned i = run.next++;
    // Arguments are named locals, not temporaries inside co_await: GCC 12 mishandles
    // non-trivial temporaries in a co_await expression (double free).
    std::string key = run.key(i);
    if (opt.mode == "upload") {
      net::PutOptions options;
      ByteView body(run.payloads[i]);
      net::S3Object r = co_await run.client->put(std::move(key), body, std::move(options));
      if (r.outcome.ok()) {
        run.bytes += run.payloads[i].size();
      } else {
        run.noteFailure(i, r.outcome);
      }
    } else if (opt.mode == "download") {
      Bytes storage = run.buffers.take(run.objectBytes);
      net::S3Object r;
      if (unwritten.empty()) {
        r = co_await run.client->get(std::move(key), run.objectBytes, std::move(storage));
      } else {
        // The previous object is written while this one downloads (rclone's writes return
        // once in the page cache; these go to the disk).
        std::tie(r, std::ignore) =
            co_await (run.client->get(std::move(key), run.objectBytes, std::move(storage)) &&
                      writeObject(run, unwrittenIndex, unwritten));
        run.buffers.give(std::exchange(unwritten, Bytes{}));
      }
      if (!r.outcome.ok()) {
        run.noteFailure(i, r.outcome);
      } else if (r.body.size() != run.objectBytes) {
        net::S3Outcome o;
        o.message = "size " + std::to_string(r.body.size());
        run.noteFailure(i, o);
      } else {
        run.bytes += r.body.size();
        if (opt.hashTwice) {
          ByteView body(r.body);
          Digest first{}, second{};
          std::uint32_t crcs = 0;
          bool equal = true;
          std::string path = opt.compareDir.empty() ? "" : opt.compareDir + "/" + objectName(i);
          co_await onCpuPool([&] {
            Sha256Lane a, b;
            updateTogether(a, body, b, body);
            first = a.finish();
            second = b.finish();
            if (!path.empty()) {
              for (std::size_t at = 0; at < body.size(); at += 4096) {
                crcs ^= crc32c(body.subspan(at, std::min<std::size_t>(4096, body.size() - at)));
              }
              equal = sameAsFile(path, body);
            }
          });
          run.digestBits ^= static_cast<std::uint8_t>(first[0] ^ second[0] ^ crcs);
          if (!equal) {
            net::S3Outcome o;
            o.message = "differs from " + path;
            run.noteFailure(i, o);
          }
        }
        if (!opt.outDir.empty()) {
          unwritten = std::move(r.body);
          unwrittenIndex = i;
        }
      }
      run.buffers.give(std::move(r.body));
    } else if (opt.mode == "write") {
      if (co_await writeObject(run, i, run.payloads[i])) run.bytes += run.payloads[i].size();
    } else {
      net::S3Outcome o = co_await run.client->remove(std::move(key));
      if (!o.ok()) run.noteFailure(i, o);
    }
    ++run.done;
  }
  if (!unwritten.empty()) co_await writeObject(run, unwrittenIndex, unwritten);
}

bool loadPayloads(Run& run) {
  const Options& opt = *run.opt;
  run.payloads.resize(opt.objects);
  std::mt19937_64 rng(opt.seed);
  for (unsigned i = 0; i < opt.objects; ++i) {
    Bytes& b = run.payloads[i];
    b = run.buffers.take(run.objectBytes);  // from a pool, as the engine's segment buffers
    if (!opt.sourceDir.empty()) {
      std::ifstream in(opt.sourceDir + "/" + objectName(i), std::ios::binary);
      if (!in) return false;
      b.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (b.size() != run.objectBytes) return false;
    } else {
      b.resize(run.objectBytes);
      std::size_t j = 0;
      for (; j + 8 <= b.size(); j += 8) {
        std::uint64_t x = rng();
        for (int k = 0; k < 8; ++k)
          b[j + static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(x >> (8 * k));
      }
      for (; j < b.size(); ++j) b[j] = static_cast<std::uint8_t>(rng());
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"cairn_s3_bench: S3Client PUT/GET throughput and CPU per GiB (JSON on stdout)"};
  app.add_option("mode", opt.mode, "upload | download | delete | write")
      ->required()
      ->check(CLI::IsMember({"upload", "download", "delete", "write"}));
  app.add_option("--objects", opt.objects, "number of objects")->check(CLI::Range(1U, kMaxObjects));
  app.add_option("--size", opt.size, "object size, e.g. 8MiB");
  app.add_option("--concurrency", opt.concurrency, "coroutines = maxConnections")
      ->check(CLI::Range(1U, kMaxConcurrency));
  app.add_option("--prefix", opt.prefix, "key prefix (keys are <prefix>/obj-NNNN)");
  app.add_option("--source-dir", opt.sourceDir, "upload: read <dir>/obj-NNNN instead of random");
  app.add_option("--out-dir", opt.outDir, "download: write each object to <dir>/obj-NNNN");
  app.add_option("--seed", opt.seed, "random payload seed");
  app.add_flag("--hash-twice", opt.hashTwice,
               "download: SHA-256 each body twice (two interleaved lanes on the CPU pool)");
  app.add_option("--compare-dir", opt.compareDir,
                 "download --hash-twice: also CRC32C every 4 KiB of each body and compare it "
                 "with <dir>/obj-NNNN");
  CLI11_PARSE(app, argc, argv);
  if (!opt.compareDir.empty() && !opt.hashTwice) {
    std::fprintf(stderr, "s3_bench: --compare-dir needs --hash-twice\n");
    return 2;
  }

  Run run;
  run.opt = &opt;
  run.objectBytes = parseSize(opt.size);
  if (run.objectBytes == 0 || run.objectBytes > kMaxObjectBytes) {
    std::fprintf(stderr, "s3_bench: bad --size %s\n", opt.size.c_str());
    return 2;
  }
  // Room for one body per coroutine (2 MiB of rounding each).
  run.buffers = BufferPool(opt.concurrency * (run.objectBytes + (std::uint64_t{2} << 20)));

  net::S3Config config = perf::s3ConfigFromEnv("aws");
  config.maxConnections = opt.concurrency;
  config.requestTimeout = std::chrono::milliseconds(300'000);
  if (config.endpoint.empty() || config.bucket.empty()) {
    std::fprintf(stderr, "s3_bench: set S3_ENDPOINT, S3_BUCKET, S3_ACCESS_KEY, S3_SECRET_KEY\n");
    return 2;
  }

  if (opt.mode == "write" && opt.outDir.empty()) {
    std::fprintf(stderr, "s3_bench: write needs --out-dir\n");
    return 2;
  }
  if ((opt.mode == "upload" || opt.mode == "write") && !loadPayloads(run)) {
    std::fprintf(stderr, "s3_bench: cannot read %u objects of %llu bytes from %s\n", opt.objects,
                 static_cast<unsigned long long>(run.objectBytes), opt.sourceDir.c_str());
    return 1;
  }

  asio::io_context context(1);
  auto client = net::S3Client::create(context.get_executor(), config);
  if (!client) {
    std::fprintf(stderr, "s3_bench: config: %s\n", client.error().c_str());
    return 2;
  }
  run.client = client->get();
  io::Uring uring(context);
  run.uring = &uring;

  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  const auto start = Clock::now();
  unsigned crashed = 0;
  for (unsigned w = 0; w < opt.concurrency; ++w) {
    asio::co_spawn(context, worker(run), [&](std::exception_ptr e) {
      if (e) ++crashed;
    });
  }
  context.run();
  const auto stop = Clock::now();
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);

  const double seconds = std::chrono::duration<double>(stop - start).count();
  const double user = cpuSeconds(after, true) - cpuSeconds(before, true);
  const double sys = cpuSeconds(after, false) - cpuSeconds(before, false);
  const double cpu = user + sys;
  const double gib = static_cast<double>(run.bytes) / (1024.0 * 1024.0 * 1024.0);
  const double mib = static_cast<double>(run.bytes) / (1024.0 * 1024.0);
  const net::HttpClientStats stats = (*client)->httpStats();

  std::string json = "{\"tool\": \"cairn\", \"mode\": \"" + opt.mode + "\"";
  json += ", \"objects\": " + std::to_string(opt.objects);
  json += ", \"object_bytes\": " + std::to_string(run.objectBytes);
  json += ", \"concurrency\": " + std::to_string(opt.concurrency);
  json += ", \"hash_twice\": " + std::string(opt.hashTwice ? "true" : "false");
  json += ", \"compared\": " + std::string(opt.compareDir.empty() ? "false" : "true");
  json += ", \"digest_bits\": " + std::to_string(run.digestBits);
  json += ", \"bytes\": " + std::to_string(run.bytes);
  json += ", \"seconds\": " + fmt(seconds);
  json += ", \"mib_per_s\": " + fmt(seconds > 0 ? mib / seconds : NAN);
  json += ", \"cpu_seconds\": " + fmt(cpu);
  json += ", \"cpu_user_seconds\": " + fmt(user);
  json += ", \"cpu_sys_seconds\": " + fmt(sys);
  json += ", \"cpu_seconds_per_gib\": " + fmt(gib > 0 ? cpu / gib : NAN);
  json += ", \"failures\": " + std::to_string(run.failures + crashed);
  json += ", \"connections_opened\": " + std::to_string(stats.connectionsOpened);
  json += ", \"requests_sent\": " + std::to_string(stats.requestsSent);
  json += ", \"retries\": " + std::to_string(stats.retries) + "}";
  std::printf("%s\n", json.c_str());
  if (!run.firstError.empty()) std::fprintf(stderr, "s3_bench: %s\n", run.firstError.c_str());
  return (run.failures + crashed) == 0 && run.done == opt.objects ? 0 : 1;
}
