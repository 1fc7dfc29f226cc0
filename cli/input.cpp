#include "cli/input.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <cerrno>
#include <cstring>

#include "engine/format/limits.hpp"

namespace cairn::cli {

namespace asio = boost::asio;

namespace {

std::string capText() { return std::to_string(limits::kMaxPayloadBytes) + "-byte record cap"; }

}  // namespace

StdinReader::StdinReader(asio::any_io_executor executor)
    : executor_(std::move(executor)), loop_(std::make_shared<LoopSide>()) {
  thread_ = std::thread([this] { run(); });
}

StdinReader::~StdinReader() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  room_.notify_all();
  thread_.join();
}

asio::awaitable<Bytes> StdinReader::next() {
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

const std::string& StdinReader::error() const { return loop_->error; }

void StdinReader::stop() {
  LoopSide& l = *loop_;
  std::size_t dropped = l.chunks.size();
  l.chunks.clear();
  l.done = true;
  l.stopped = true;
  l.ready.notify();
  if (dropped != 0) {
    {
      std::lock_guard lock(mutex_);
      queued_ -= dropped;
    }
    room_.notify_one();
  }
}

void StdinReader::run() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      room_.wait(lock, [&] { return stopping_ || queued_ < kMaxChunksQueued; });
      if (stopping_) return;
    }
    pollfd p{STDIN_FILENO, POLLIN, 0};
    int ready = ::poll(&p, 1, kPollMilliseconds);
    if (ready == 0 || (ready < 0 && errno == EINTR)) continue;  // look at stopping_ again
    Bytes chunk(kChunkBytes);
    ssize_t n = ready < 0 ? -1 : ::read(STDIN_FILENO, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    std::string error;
    if (n < 0) error = std::string("cannot read standard input: ") + std::strerror(errno);
    const bool end = n <= 0;
    if (n > 0) {
      chunk.resize(static_cast<std::size_t>(n));
      std::lock_guard lock(mutex_);
      ++queued_;
    }
    asio::post(executor_,
               [loop = loop_, end, error = std::move(error), chunk = std::move(chunk)]() mutable {
                 if (loop->stopped) return;
                 if (end) {
                   loop->done = true;
                   loop->error = std::move(error);
                 } else {
                   loop->chunks.push_back(std::move(chunk));
                 }
                 loop->ready.notify();
               });
    if (end) return;
  }
}

void RecordSplitter::feed(ByteView chunk) {
  buffer_.insert(buffer_.end(), chunk.begin(), chunk.end());
}

std::optional<Bytes> RecordSplitter::next() {
  if (!error_.empty()) return std::nullopt;
  if (lengthPrefixed_) {
    if (buffer_.size() - at_ < 4) return compact();
    std::uint32_t n = loadBe32(buffer_.data() + at_);
    if (n > limits::kMaxPayloadBytes) {
      error_ = "a record of " + std::to_string(n) + " bytes exceeds the " + capText();
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
  if (static_cast<std::size_t>(nl - begin) > limits::kMaxPayloadBytes) {
    error_ = "a line of more than " + std::to_string(limits::kMaxPayloadBytes) +
             " bytes exceeds the " + capText();
    return std::nullopt;
  }
  if (nl == buffer_.end()) return compact();
  Bytes r(begin, nl);
  at_ = static_cast<std::size_t>(nl - buffer_.begin()) + 1;
  return r;
}

std::optional<Bytes> RecordSplitter::finish() {
  if (!error_.empty() || at_ == buffer_.size()) return std::nullopt;
  if (lengthPrefixed_) {
    error_ = "the input ends inside a length-prefixed record";
    return std::nullopt;
  }
  Bytes r(buffer_.begin() + static_cast<std::ptrdiff_t>(at_), buffer_.end());
  at_ = buffer_.size();
  return r;
}

std::nullopt_t RecordSplitter::compact() {
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(at_));
  at_ = 0;
  return std::nullopt;
}

asio::awaitable<Res<std::optional<Bytes>>> StdinRecords::next() {
  // Bounded: each pass takes a record, or reads a chunk, or ends.
  for (;;) {
    if (stopped_) co_return std::nullopt;
    if (auto record = splitter_.next()) co_return std::optional<Bytes>{std::move(*record)};
    if (!splitter_.error().empty()) co_return err(Errc::usage, splitter_.error());
    if (ended_) co_return std::nullopt;
    Bytes chunk = co_await reader_.next();
    if (stopped_) co_return std::nullopt;  // stop() while it waited: no tail record
    if (!chunk.empty()) {
      splitter_.feed(chunk);
      continue;
    }
    if (!reader_.error().empty()) co_return err(Errc::io, reader_.error());
    ended_ = true;
    auto tail = splitter_.finish();
    if (!splitter_.error().empty()) co_return err(Errc::usage, splitter_.error());
    if (tail) co_return std::optional<Bytes>{std::move(*tail)};
  }
}

void StdinRecords::stop() {
  stopped_ = true;
  reader_.stop();
}

}  // namespace cairn::cli
