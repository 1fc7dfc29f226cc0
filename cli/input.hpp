// Records from standard input, for `cairn append` and `cairn ingest`: one reader thread, a
// bounded queue of chunks, and a splitter that enforces the record cap while it reads (a line
// longer than the cap is refused once the cap is passed, never buffered whole).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "base/bytes.hpp"
#include "engine/error.hpp"
#include "engine/runtime/async.hpp"

namespace cairn::cli {

// Reads standard input on its own thread (a blocking read must not stall the loop, where
// appends complete and checkpoints run) and hands at most kMaxChunksQueued chunks to the loop.
class StdinReader {
 public:
  static constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
  static constexpr std::size_t kMaxChunksQueued = 8;
  // How long the thread waits for input before it looks whether it should stop.
  static constexpr int kPollMilliseconds = 100;

  explicit StdinReader(boost::asio::any_io_executor executor);
  // Stops the thread within one poll interval, even if input never ends.
  ~StdinReader();
  StdinReader(const StdinReader&) = delete;
  StdinReader& operator=(const StdinReader&) = delete;

  // The next chunk; empty at end of input, or after a read error (error()).
  boost::asio::awaitable<Bytes> next();
  // Ends the input now: what was read and not yet taken is dropped, next() returns empty.
  void stop();
  // Why reading stopped early: empty unless read(2) failed (a directory, a closed
  // descriptor, an I/O error).
  const std::string& error() const;

 private:
  // Touched on the loop only; shared so a chunk posted as the reader goes away stays valid.
  struct LoopSide {
    std::deque<Bytes> chunks;
    Signal ready;
    bool done = false;
    bool stopped = false;  // stop(): chunks still posted are dropped
    std::string error;
  };
  void run();

  boost::asio::any_io_executor executor_;
  std::shared_ptr<LoopSide> loop_;
  std::mutex mutex_;
  std::condition_variable room_;
  std::size_t queued_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

// Splits chunks into records: lines (without the newline), or a u32 big-endian length and
// that many bytes. A record over the payload cap is an error as soon as the cap is passed:
// at most the cap and one chunk are ever buffered.
class RecordSplitter {
 public:
  explicit RecordSplitter(bool lengthPrefixed) : lengthPrefixed_(lengthPrefixed) {}
  void feed(ByteView chunk);
  // The next whole record, or nullopt when more input is needed (or on an error: error()).
  std::optional<Bytes> next();
  // At end of input: the last line without a newline, if any; an incomplete length-prefixed
  // record is an error.
  std::optional<Bytes> finish();
  const std::string& error() const { return error_; }

 private:
  std::nullopt_t compact();
  bool lengthPrefixed_;
  Bytes buffer_;
  std::size_t at_ = 0;
  std::string error_;
};

// The records of standard input, one at a time (a RecordSource of the ingest job): the next
// one, std::nullopt at the end, or the input's own error (io: read(2) failed; usage: a record
// over the cap, a cut length-prefixed record).
class StdinRecords {
 public:
  StdinRecords(boost::asio::any_io_executor executor, bool lengthPrefixed)
      : reader_(std::move(executor)), splitter_(lengthPrefixed) {}
  boost::asio::awaitable<Res<std::optional<Bytes>>> next();
  // Ends the records at the last whole one returned (a signal stops `cairn ingest`): input
  // read after it, a part of a record included, is never a record.
  void stop();

 private:
  StdinReader reader_;
  RecordSplitter splitter_;
  bool ended_ = false;
  bool stopped_ = false;
};

}  // namespace cairn::cli
