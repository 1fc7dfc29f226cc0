// The journal's torn tail (docs/journal.md, "Torn tails"): what a crash can leave is cut, with
// the cut bytes kept beside the journal; damage no crash explains, and any damage inside the
// prefix the publisher state proves acknowledged, is refused with nothing cut (issue 22,
// defect 1: a flipped byte in a published prefix was cut as a "torn tail" and its sequence
// numbers reused).
#include <catch2/catch.hpp>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "base/sha256.hpp"
#include "engine/format/journal_format.hpp"
#include "engine/format/publisher_state.hpp"
#include "engine/journal/journal.hpp"
#include "io/file.hpp"
#include "io/uring.hpp"
#include "tests/io/io_test_support.hpp"
#include "tests/journal/journal_test_support.hpp"

using namespace cairn;
namespace asio = boost::asio;
namespace fs = std::filesystem;
using io::test::readWholeFile;
using io::test::runToCompletion;
using io::test::writeWholeFile;

namespace {

// A journal of three regions: records 1..100 published (the publisher state's expected head
// covers them), 101..200 acknowledged one batch at a time but not published, and a last
// batch of 10 records appended together (one write, one fdatasync).
struct Regions {
  io::test::TempDir dir;
  asio::io_context context{1};
  io::Uring uring{context, 64};
  std::uint64_t published = 0;  // prefix length through record 100
  std::uint64_t lastBatch = 0;  // offset of record 201
  Bytes file;                   // the journal as written

  fs::path db() const { return dir.path() / "db"; }
  fs::path journalFile() const { return db() / Journal::kFileName; }

  explicit Regions(bool withState = true) {
    // A file of frames only, no room after them (test_journal_room.cpp has the room): the
    // cases below lay out what a crash leaves at the file's end.
    JournalOptions framesOnly;
    framesOnly.preallocate = false;
    auto j = std::move(*runToCompletion(context, Journal::create(uring, db(), u"db", framesOnly)));
    for (int i = 1; i <= 200; ++i) {
      REQUIRE(runToCompletion(context, j->append(asBytes(payload(i)))).ok());
    }
    std::vector<std::string> batch;
    for (int i = 201; i <= 210; ++i) batch.push_back(payload(i));
    int failures = 0;
    for (auto& p : batch) {
      asio::co_spawn(
          context,
          [&]() -> asio::awaitable<void> {
            if (!co_await j->append(asBytes(p))) ++failures;
          },
          asio::detached);
    }
    context.restart();
    context.run();
    REQUIRE(failures == 0);
    REQUIRE(j->endSequence() == 210);
    published = j->offsetAfter(100);
    lastBatch = j->offsetAfter(200);
    if (withState) writeState(*j, 100);
    ends.assign(211, 0);
    for (std::uint64_t s = 0; s <= 210; ++s) ends[s] = j->offsetAfter(s);
    j.reset();
    file = readWholeFile(journalFile());
  }
  std::vector<std::uint64_t> ends;

  static std::string payload(int i) {
    return "record " + std::to_string(i) + " " + std::string(300 + i % 400, 'a' + i % 26);
  }
  // publisher.state with an expected head whose prefix is the journal's at `sequence`.
  void writeState(Journal& j, std::uint64_t sequence) {
    HeadFields f;
    f.ns = Uuid::random();
    f.publisher = Uuid::random();
    f.publication = Uuid::random();
    f.lineage = j.lineage();
    f.revision = 1;
    f.manifestSha256 = sha256(asBytes("manifest"));
    f.manifestLength = 100;
    f.prefixSequence = sequence;
    f.prefixLength = j.offsetAfter(sequence);
    f.prefixSha256 = sha256(asBytes("prefix"));
    PublisherState state;
    state.storeUrl = "/nowhere";
    state.ns = f.ns;
    state.publisher = f.publisher;
    state.lineage = f.lineage;
    state.expected = ExpectedHead{*makeHead(f), "\"etag\""};
    auto bytes = encodePublisherState(state);
    REQUIRE(bytes.ok());
    writeWholeFile(db() / kPublisherStateFile, *bytes);
  }
  Res<std::unique_ptr<Journal>> open(JournalOptions o = {}) {
    return runToCompletion(context, Journal::open(uring, db(), o));
  }
  void damage(const Bytes& bytes) { writeWholeFile(journalFile(), bytes); }
  std::vector<fs::path> tornFiles() const { return test::tornFilesIn(db()); }
};

// The frame whose bytes hold `offset`.
std::uint64_t frameAt(const Regions& r, std::uint64_t offset) {
  for (std::uint64_t s = 1; s < r.ends.size(); ++s) {
    if (offset < r.ends[s]) return s;
  }
  return 0;
}

}  // namespace

TEST_CASE("journal tail: a flipped byte is refused in every region, nothing cut", "[journal]") {
  Regions r;
  struct Place {
    const char* region;
    std::uint64_t offset;
    bool insideAcknowledged;
  };
  const std::vector<Place> places{
      {"the published prefix, far from the end", r.ends[10] + 20, true},
      {"the published prefix, within one batch of the end", r.ends[99] + 20, true},
      {"the published prefix's last byte", r.published - 1, true},
      {"acknowledged, not published", r.ends[150] + 20, false},
      {"the last frame before the last batch", r.ends[199] + 14, false},
      {"the last batch, its first frame", r.lastBatch + 20, false},
      {"the last batch, a length field", r.ends[204] + 1, false},
      {"the last batch, a sequence field", r.ends[206] + 6, false},
      {"the last frame's CRC", r.file.size() - 1, false},
  };
  for (const Place& p : places) {
    INFO(p.region);
    Bytes bad = r.file;
    bad[p.offset] ^= 0x40;
    r.damage(bad);
    auto opened = r.open();
    REQUIRE_FALSE(opened.ok());
    CHECK(opened.error().code == Errc::format);
    const std::uint64_t frame = frameAt(r, p.offset);
    CHECK_THAT(opened.error().message,
               Catch::Contains("offset " + std::to_string(r.ends[frame - 1])));
    CHECK_THAT(opened.error().message, Catch::Contains("nothing was cut"));
    if (p.insideAcknowledged) {
      CHECK_THAT(opened.error().message, Catch::Contains("proves acknowledged"));
      CHECK_THAT(opened.error().message, Catch::Contains("publisher.state"));
    }
    CHECK(readWholeFile(r.journalFile()) == bad);  // nothing cut
    CHECK(r.tornFiles().empty());
    // A read-only open refuses it the same way.
    JournalOptions ro;
    ro.readOnly = true;
    CHECK_FALSE(r.open(ro).ok());
  }
  r.damage(r.file);
  auto whole = r.open();
  REQUIRE(whole.ok());
  CHECK((*whole)->endSequence() == 210);
  CHECK_FALSE((*whole)->tornTail());
}

TEST_CASE("journal tail: truncated at every frame boundary of the last batch, nothing is cut",
          "[journal]") {
  Regions r;
  for (std::uint64_t s = 200; s <= 210; ++s) {
    INFO("ends after record " << s);
    Bytes shorter(r.file.begin(), r.file.begin() + static_cast<std::ptrdiff_t>(r.ends[s]));
    r.damage(shorter);
    auto opened = r.open();
    REQUIRE(opened.ok());
    CHECK((*opened)->endSequence() == s);
    CHECK_FALSE((*opened)->tornTail());
    CHECK(readWholeFile(r.journalFile()) == shorter);
  }
}

TEST_CASE("journal tail: a write cut short inside the last batch is cut, and the bytes kept",
          "[journal]") {
  Regions r;
  for (std::uint64_t s = 201; s <= 210; ++s) {
    for (std::uint64_t into :
         {std::uint64_t{1}, std::uint64_t{11}, std::uint64_t{13}, r.ends[s] - r.ends[s - 1] - 1}) {
      INFO("inside record " << s << ", " << into << " bytes in");
      for (const auto& old : r.tornFiles()) fs::remove(old);
      const std::uint64_t end = r.ends[s - 1] + into;
      Bytes cutShort(r.file.begin(), r.file.begin() + static_cast<std::ptrdiff_t>(end));
      r.damage(cutShort);
      auto opened = r.open();
      REQUIRE(opened.ok());
      Journal& j = **opened;
      CHECK(j.endSequence() == s - 1);
      // The torn bytes end at the last one that is not zero (zeros after it read as the
      // writer's room); zeros only are the room, and nothing is cut.
      const Bytes kept =
          test::writtenPart(ByteView(cutShort).subspan(r.ends[s - 1]), r.ends[s - 1]);
      if (kept.empty()) {
        CHECK_FALSE(j.tornTail());
        CHECK(readWholeFile(r.journalFile()) == cutShort);
        continue;
      }
      REQUIRE(j.tornTail());
      CHECK(j.tornTail()->cut);
      CHECK(j.tornTail()->crashShaped);
      CHECK(j.tornTail()->offset == r.ends[s - 1]);
      CHECK(j.tornTail()->bytes == kept.size());
      // The journal keeps every whole frame; the cut bytes are in the evidence file.
      CHECK(readWholeFile(r.journalFile()) ==
            Bytes(r.file.begin(), r.file.begin() + static_cast<std::ptrdiff_t>(r.ends[s - 1])));
      auto files = r.tornFiles();
      REQUIRE(files.size() == 1);
      CHECK(files[0] == j.tornTail()->evidence);
      CHECK(readWholeFile(files[0]) == kept);
      // The next append continues the sequence after the last whole frame.
      auto next = runToCompletion(r.context, j.append(asBytes("after the cut")));
      REQUIRE(next.ok());
      CHECK(*next == s);
    }
  }
}

TEST_CASE("journal tail: blocks never written (zeros) in the last batch are cut from there",
          "[journal]") {
  Regions r;
  // A sector of the batch that never reached the disk: the frame holding it and everything
  // after it go; the frames before it stay.
  const std::uint64_t sector =
      (r.ends[205] + kCrashBlockBytes) / kCrashBlockBytes * kCrashBlockBytes;
  REQUIRE(sector + kCrashBlockBytes <= r.file.size());
  Bytes holed = r.file;
  std::fill(holed.begin() + static_cast<std::ptrdiff_t>(sector),
            holed.begin() + static_cast<std::ptrdiff_t>(sector + kCrashBlockBytes), 0);
  const std::uint64_t first = frameAt(r, sector);
  r.damage(holed);
  auto opened = r.open();
  REQUIRE(opened.ok());
  CHECK((*opened)->endSequence() == first - 1);
  REQUIRE((*opened)->tornTail());
  CHECK((*opened)->tornTail()->offset == r.ends[first - 1]);
  CHECK_THAT((*opened)->tornTail()->reason, Catch::Contains("never written"));
  REQUIRE(r.tornFiles().size() == 1);
  CHECK(readWholeFile(r.tornFiles()[0]) ==
        Bytes(holed.begin() + static_cast<std::ptrdiff_t>(r.ends[first - 1]), holed.end()));
  opened->reset();

  // The same hole reaching into the published prefix is refused.
  Regions early;
  Bytes bad = early.file;
  const std::uint64_t inside =
      early.published / kCrashBlockBytes * kCrashBlockBytes - kCrashBlockBytes;
  std::fill(bad.begin() + static_cast<std::ptrdiff_t>(inside),
            bad.begin() + static_cast<std::ptrdiff_t>(inside + kCrashBlockBytes), 0);
  early.damage(bad);
  auto refused = early.open();
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("proves acknowledged"));
  CHECK(readWholeFile(early.journalFile()) == bad);
}

TEST_CASE("journal tail: a read-only open reports a torn tail and leaves it to the next writer",
          "[journal]") {
  Regions r;
  const std::uint64_t end = r.ends[207] + 5;
  Bytes cutShort(r.file.begin(), r.file.begin() + static_cast<std::ptrdiff_t>(end));
  r.damage(cutShort);
  JournalOptions ro;
  ro.readOnly = true;
  auto opened = r.open(ro);
  REQUIRE(opened.ok());
  CHECK((*opened)->endSequence() == 207);
  REQUIRE((*opened)->tornTail());
  CHECK_FALSE((*opened)->tornTail()->cut);
  CHECK((*opened)->tornTail()->bytes == 5);
  CHECK_FALSE(runToCompletion(r.context, (*opened)->append(asBytes("no"))).ok());
  opened->reset();
  CHECK(readWholeFile(r.journalFile()) == cutShort);  // nothing written
  CHECK(r.tornFiles().empty());
  auto writer = r.open();
  REQUIRE(writer.ok());
  CHECK((*writer)->tornTail()->cut);
  CHECK(r.tornFiles().size() == 1);
}

TEST_CASE("journal tail: a journal shorter than the acknowledged prefix is refused", "[journal]") {
  Regions r;
  for (std::uint64_t end : {r.ends[99], r.ends[50] + 7, r.ends[0]}) {
    INFO("ends at " << end);
    Bytes shorter(r.file.begin(), r.file.begin() + static_cast<std::ptrdiff_t>(end));
    r.damage(shorter);
    auto opened = r.open();
    REQUIRE_FALSE(opened.ok());
    CHECK((opened.error().code == Errc::diverged || opened.error().code == Errc::format));
    CHECK_THAT(opened.error().message, Catch::Contains("acknowledged"));
    CHECK(readWholeFile(r.journalFile()) == shorter);
    CHECK(r.tornFiles().empty());
    // Zeros after it (what the writer's room looks like) do not make it whole.
    Bytes roomy = shorter;
    roomy.resize(shorter.size() + 8192, 0);
    r.damage(roomy);
    auto withRoom = r.open();
    REQUIRE_FALSE(withRoom.ok());
    CHECK_THAT(withRoom.error().message, Catch::Contains("acknowledged"));
    CHECK(readWholeFile(r.journalFile()) == roomy);
  }
  // Exactly the acknowledged prefix is a journal ending where it should.
  Bytes exact(r.file.begin(), r.file.begin() + static_cast<std::ptrdiff_t>(r.published));
  r.damage(exact);
  auto opened = r.open();
  REQUIRE(opened.ok());
  CHECK((*opened)->endSequence() == 100);
  // ... and a torn frame right after it may be cut.
  opened->reset();
  Bytes torn = exact;
  torn.insert(torn.end(), r.file.begin() + static_cast<std::ptrdiff_t>(r.published),
              r.file.begin() + static_cast<std::ptrdiff_t>(r.published + 9));
  r.damage(torn);
  auto cut = r.open();
  REQUIRE(cut.ok());
  CHECK((*cut)->endSequence() == 100);
  CHECK((*cut)->tornBytesCut() == 9);
}

TEST_CASE(
    "journal tail: a cut on request keeps the bytes and never reaches the acknowledged "
    "prefix",
    "[journal]") {
  Regions r;
  Bytes bad = r.file;
  bad[r.ends[150] + 20] ^= 1;
  r.damage(bad);
  JournalOptions cut;
  cut.cutDamagedTail = true;
  auto opened = r.open(cut);
  REQUIRE(opened.ok());
  CHECK((*opened)->endSequence() == 150);
  REQUIRE((*opened)->tornTail());
  CHECK_FALSE((*opened)->tornTail()->crashShaped);
  REQUIRE(r.tornFiles().size() == 1);
  CHECK(readWholeFile(r.tornFiles()[0]) ==
        Bytes(bad.begin() + static_cast<std::ptrdiff_t>(r.ends[150]), bad.end()));
  opened->reset();

  Regions again;
  Bytes inside = again.file;
  inside[again.ends[40] + 20] ^= 1;
  again.damage(inside);
  auto refused = again.open(cut);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("proves acknowledged"));
  CHECK(readWholeFile(again.journalFile()) == inside);
}

TEST_CASE("journal tail: without a publisher state the same crash rules hold", "[journal]") {
  Regions r(/*withState=*/false);
  Bytes bad = r.file;
  bad[r.ends[10] + 20] ^= 1;  // far from the end: more than a batch follows
  r.damage(bad);
  CHECK_FALSE(r.open().ok());
  bad = r.file;
  bad[r.ends[208] + 20] ^= 1;  // in the last batch, but a flip: no crash leaves it
  r.damage(bad);
  CHECK_FALSE(r.open().ok());
  CHECK(readWholeFile(r.journalFile()) == bad);
}

TEST_CASE("journal: a batch size over the torn-tail bound is refused", "[journal]") {
  Regions r;
  JournalOptions big;
  big.maxBatchBytes = kMaxBatchBytes + 1;
  auto opened = r.open(big);
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.error().code == Errc::usage);
  big.maxBatchBytes = 0;
  CHECK_FALSE(r.open(big).ok());
}

TEST_CASE("judgeTail: only what a crash can leave is torn", "[journal][format]") {
  const std::uint64_t at = 1000;  // not block aligned
  Bytes frame;
  appendFrame(frame, 7, Bytes(2000, 'p'));
  // A write cut short: any prefix of the frame.
  for (std::size_t n : {std::size_t{1}, std::size_t{4}, std::size_t{11}, std::size_t{12},
                        std::size_t{100}, frame.size() - 1}) {
    INFO("prefix of " << n);
    CHECK(judgeTail(ByteView(frame).first(n), at, 7).torn);
  }
  // Bytes that cannot begin a frame of sequence 7.
  Bytes wrongStart{0x02, 0, 0, 0, 0, 0};  // a length over the cap
  CHECK_FALSE(judgeTail(wrongStart, at, 7).torn);
  Bytes wrongSequence(frame.begin(), frame.begin() + 10);
  wrongSequence[11 - 2] ^= 1;  // inside the sequence
  CHECK_FALSE(judgeTail(wrongSequence, at, 7).torn);
  // A complete frame with one flipped bit: no crash leaves it, wherever the bit is.
  for (std::size_t i : {std::size_t{1}, std::size_t{5}, std::size_t{20}, frame.size() - 1}) {
    INFO("flip at " << i);
    Bytes flipped = frame;
    flipped[i] ^= 0x10;
    CHECK_FALSE(judgeTail(flipped, at, 7).torn);
  }
  // A sector of zeros inside it: a block never written.
  Bytes holed = frame;
  const std::size_t sector = kCrashBlockBytes - at % kCrashBlockBytes + kCrashBlockBytes;
  std::fill(holed.begin() + static_cast<std::ptrdiff_t>(sector),
            holed.begin() + static_cast<std::ptrdiff_t>(sector + kCrashBlockBytes), 0);
  CHECK(judgeTail(holed, at, 7).torn);
  // Zeros that do not fill an aligned block are not a hole.
  Bytes shortRun = frame;
  std::fill(shortRun.begin() + 100, shortRun.begin() + 300, 0);
  CHECK_FALSE(judgeTail(shortRun, at, 7).torn);
  // All zeros: the writer's room (or the file grew and nothing of the batch was written);
  // nothing to cut.
  CHECK(judgeTail(Bytes(3000, 0), at, 7).torn);
  CHECK(judgeTail(Bytes(3000, 0), at, 7).writtenBytes == 0);
  CHECK(judgeTail(Bytes(kMaxTailBytes, 0), at, 7).torn);
  // An incomplete frame followed by a valid later one: a damaged length, not a tear.
  Bytes two;
  appendFrame(two, 7, Bytes(50, 'a'));
  appendFrame(two, 8, Bytes(50, 'b'));
  storeBe32(two.data(), 5000);
  CHECK_FALSE(judgeTail(two, at, 7).torn);
  // A complete last frame whose length field alone is wrong.
  Bytes last = frame;
  storeBe32(last.data(), 4000);
  CHECK_FALSE(judgeTail(last, at, 7).torn);
  // More than a torn batch and its room can hold; bytes not zero over more than one batch.
  CHECK_FALSE(judgeTail(Bytes(kMaxTailBytes + 1, 0), at, 7).torn);
  CHECK_FALSE(judgeTail(Bytes(kMaxBatchBytes + 1, 'x'), at, 7).torn);
}

TEST_CASE("judgeTail: zeros after the written bytes are the room, judged as if absent",
          "[journal][format]") {
  const std::uint64_t at = 1000;
  Bytes frame;
  appendFrame(frame, 7, Bytes(2000, 'p'));
  const auto withRoom = [](ByteView bytes, std::size_t zeros) {
    Bytes out(bytes.begin(), bytes.end());
    out.resize(out.size() + zeros, 0);
    return out;
  };
  for (std::size_t zeros : {std::size_t{1}, std::size_t{4096}, std::size_t{1} << 20}) {
    INFO(zeros << " zeros after");
    // A write cut short at a block boundary (offset 1024), then room: torn, and only the
    // written bytes are cut and kept.
    const TailJudgement short_ = judgeTail(withRoom(ByteView(frame).first(24), zeros), at, 7);
    CHECK(short_.torn);
    CHECK(short_.writtenBytes == 24);
    // The same at the block boundary 2048, inside the payload.
    const TailJudgement head = judgeTail(withRoom(ByteView(frame).first(1048), zeros), at, 7);
    CHECK(head.torn);
    CHECK(head.writtenBytes == 1048);
    // Zeros inside the block that holds the last written byte were written as they are: the
    // written bytes reach that block's end (1536), still inside the frame: torn.
    const TailJudgement mid = judgeTail(withRoom(ByteView(frame).first(100), zeros), at, 7);
    CHECK(mid.torn);
    CHECK(mid.writtenBytes == std::min<std::size_t>(536, 100 + zeros));
    // A complete frame with a flipped bit stays damage, whatever zeros follow.
    Bytes flipped = frame;
    flipped[20] ^= 0x10;
    CHECK_FALSE(judgeTail(withRoom(flipped, zeros), at, 7).torn);
    // Bytes that cannot begin a frame of sequence 7 stay damage.
    CHECK_FALSE(judgeTail(withRoom(Bytes{0x02, 0, 0, 0, 0, 0}, zeros), at, 7).torn);
    // A whole frame whose last bytes are zeros inside a block that was written: its CRC
    // fails, and no block of it is unwritten: damage.
    Bytes zeroedEnd = frame;
    std::fill(zeroedEnd.end() - 3, zeroedEnd.end(), 0);
    REQUIRE(zeroedEnd != frame);
    CHECK_FALSE(judgeTail(withRoom(zeroedEnd, zeros), at, 7).torn);
  }
  // A header whose sequence field ends in zeros, then zeros to its block's end (1024): the
  // frame goes on past that block, so it is a tear, and the block is what was written.
  Bytes header;
  appendFrame(header, 256, Bytes(40, 'q'));  // sequence 0x100: its last byte is zero
  const TailJudgement h = judgeTail(withRoom(ByteView(header).first(12), 500), at, 256);
  CHECK(h.torn);
  CHECK(h.writtenBytes == 24);
  // The bound counts the room: a tail of room and written bytes over kMaxTailBytes is damage.
  CHECK_FALSE(judgeTail(withRoom(ByteView(frame).first(100), kMaxTailBytes), at, 7).torn);
}
