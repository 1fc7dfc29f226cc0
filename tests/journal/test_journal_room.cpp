// The journal's room (docs/journal.md, "Room";
// docs/decisions/0050-journal-writes-zeros-ahead-frames.md): the writer keeps zeros, written and
// durable, ahead of its frames, so a batch's O_DSYNC write overwrites written blocks. Zeros after
// the last frame are the journal's clean end; a batch torn inside the room is cut at its last whole
// frame as a torn tail is, keeping only the bytes that were written; damage stays damage.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/sha256.hpp"
#include "engine/format/journal_format.hpp"
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

struct Roomy {
  io::test::TempDir dir;
  asio::io_context context{1};
  io::Uring uring{context, 64};
  std::uint64_t end = 0;  // the end of the last frame
  Bytes file;             // the journal as written: frames, then the room

  fs::path db() const { return dir.path() / "db"; }
  fs::path journalFile() const { return db() / Journal::kFileName; }

  Roomy() {
    auto j = std::move(*runToCompletion(context, Journal::create(uring, db(), u"db")));
    for (int i = 1; i <= 20; ++i) {
      REQUIRE(runToCompletion(context, j->append(asBytes(payload(i)))).ok());
    }
    end = j->endOffset();
    j.reset();
    file = readWholeFile(journalFile());
  }
  static std::string payload(int i) {
    return "record " + std::to_string(i) + " " + std::string(300 + i * 7, 'a' + i % 26);
  }
  // Frames `first`.. of a batch that was being written into the room when the crash came.
  static Bytes batch(std::uint64_t first, int count) {
    Bytes out;
    for (int i = 0; i < count; ++i) {
      appendFrame(out, first + i, asBytes(payload(static_cast<int>(first) + i)));
    }
    return out;
  }
  // The file with `bytes` written over the room at the journal's end (the size unchanged).
  Bytes overwritten(ByteView bytes) const {
    Bytes out = file;
    REQUIRE(end + bytes.size() <= out.size());
    std::copy(bytes.begin(), bytes.end(), out.begin() + static_cast<std::ptrdiff_t>(end));
    return out;
  }
  Res<std::unique_ptr<Journal>> open(JournalOptions o = {}) {
    return runToCompletion(context, Journal::open(uring, db(), o));
  }
  std::vector<fs::path> tornFiles() const { return test::tornFilesIn(db()); }
};

bool zerosFrom(const Bytes& bytes, std::uint64_t from) {
  return std::all_of(bytes.begin() + static_cast<std::ptrdiff_t>(from), bytes.end(),
                     [](std::uint8_t b) { return b == 0; });
}

}  // namespace

TEST_CASE("journal room: frames overwrite zeros written ahead, a room at a time", "[journal]") {
  Roomy r;
  CHECK(r.file.size() == kJournalRoomBytes);  // 20 small records: the first room
  CHECK(zerosFrom(r.file, r.end));
  // The zeros are the clean end: nothing torn, nothing cut, the records and the prefix whole.
  auto opened = r.open();
  REQUIRE(opened.ok());
  Journal& j = **opened;
  CHECK(j.endSequence() == 20);
  CHECK(j.endOffset() == r.end);
  CHECK_FALSE(j.tornTail());
  CHECK(r.tornFiles().empty());
  CHECK(readWholeFile(r.journalFile()) == r.file);
  auto record = runToCompletion(r.context, j.record(20));
  REQUIRE(record.ok());
  const std::string last = Roomy::payload(20);
  CHECK(*record == Bytes(last.begin(), last.end()));
  auto prefix = runToCompletion(r.context, j.prefix(20, limits::kMaxPrefixBytes));
  REQUIRE(prefix.ok());
  CHECK(prefix->length == r.end);
  CHECK(prefix->sha256 == sha256(ByteView(r.file).first(r.end)));
  // Records past the room: the file grows to the next multiple, zeros after the frames again.
  const std::string big(3 << 20, 'z');
  for (int i = 0; i < 6; ++i) REQUIRE(runToCompletion(r.context, j.append(asBytes(big))).ok());
  const std::uint64_t end = j.endOffset();
  CHECK(end > kJournalRoomBytes);
  opened->reset();
  const Bytes grown = readWholeFile(r.journalFile());
  CHECK(grown.size() == (end / kJournalRoomBytes + 1) * kJournalRoomBytes);
  CHECK(zerosFrom(grown, end));
  // A read-only open sees the same journal and writes nothing.
  JournalOptions ro;
  ro.readOnly = true;
  auto reader = r.open(ro);
  REQUIRE(reader.ok());
  CHECK((*reader)->endSequence() == 26);
  CHECK_FALSE((*reader)->tornTail());
  reader->reset();
  CHECK(readWholeFile(r.journalFile()) == grown);
}

TEST_CASE("journal room: a batch torn inside the room is cut at its last whole frame",
          "[journal]") {
  Roomy base;
  const Bytes torn = Roomy::batch(21, 8);
  std::vector<std::uint64_t> ends{0};
  for (int i = 0; i < 8; ++i)
    ends.push_back(ends.back() + frameLength(Roomy::payload(21 + i).size()));
  REQUIRE(ends.back() == torn.size());
  struct Case {
    std::string what;
    Bytes landed;               // what reached the disk over the room
    std::uint64_t wholeFrames;  // frames of the batch that survive
  };
  std::vector<Case> cases;
  // A write cut short ends at a block boundary (a crash leaves each 512-byte block written
  // whole or not at all; a killed write stops at a page): every block boundary in the batch.
  for (std::uint64_t cut = (base.end / kCrashBlockBytes + 1) * kCrashBlockBytes;
       cut < base.end + torn.size(); cut += kCrashBlockBytes) {
    const std::uint64_t into = cut - base.end;
    std::uint64_t whole = 0;
    while (ends[whole + 1] <= into) ++whole;
    cases.push_back({"a write cut short at offset " + std::to_string(cut) + ", in frame " +
                         std::to_string(21 + whole),
                     Bytes(torn.begin(), torn.begin() + static_cast<std::ptrdiff_t>(into)), whole});
  }
  REQUIRE(cases.size() >= 6);
  {
    // A sector of the batch never written: the frame holding it and all after it go.
    Bytes holed = torn;
    const std::uint64_t sector =
        ((base.end + ends[4] + 10) / kCrashBlockBytes + 1) * kCrashBlockBytes;
    const std::uint64_t at = sector - base.end;
    REQUIRE(at + kCrashBlockBytes < holed.size());
    std::fill(holed.begin() + static_cast<std::ptrdiff_t>(at),
              holed.begin() + static_cast<std::ptrdiff_t>(at + kCrashBlockBytes), 0);
    std::uint64_t frame = 0;
    while (ends[frame + 1] <= at) ++frame;
    cases.push_back(
        {"a sector never written inside frame " + std::to_string(21 + frame), holed, frame});
  }
  for (const Case& c : cases) {
    INFO(c.what);
    Roomy r;
    const Bytes crashed = r.overwritten(c.landed);
    writeWholeFile(r.journalFile(), crashed);
    auto opened = r.open();
    REQUIRE(opened.ok());
    Journal& j = **opened;
    const std::uint64_t boundary = r.end + ends[c.wholeFrames];
    CHECK(j.endSequence() == 20 + c.wholeFrames);
    const Bytes evidence = test::writtenPart(ByteView(crashed).subspan(boundary), boundary);
    if (evidence.empty()) {
      // The bytes written after the last whole frame were zeros (a length's first bytes):
      // nothing tells them from the room, and nothing is cut.
      CHECK_FALSE(j.tornTail());
      CHECK(readWholeFile(r.journalFile()) == crashed);
      continue;
    }
    REQUIRE(j.tornTail());
    CHECK(j.tornTail()->cut);
    CHECK(j.tornTail()->offset == boundary);
    // Only the bytes that were written are kept as evidence; the room's zeros are not.
    CHECK(j.tornTail()->bytes == evidence.size());
    auto files = r.tornFiles();
    REQUIRE(files.size() == 1);
    CHECK(readWholeFile(files[0]) == evidence);
    // The journal ends at the boundary: no byte of the torn batch survives past it.
    CHECK(readWholeFile(r.journalFile()) ==
          Bytes(crashed.begin(), crashed.begin() + static_cast<std::ptrdiff_t>(boundary)));
    // The next append takes the next sequence and writes a room again.
    auto next = runToCompletion(r.context, j.append(asBytes("after the cut")));
    REQUIRE(next.ok());
    CHECK(*next == 21 + c.wholeFrames);
    const std::uint64_t end = j.endOffset();
    opened->reset();
    const Bytes after = readWholeFile(r.journalFile());
    CHECK(after.size() % kJournalRoomBytes == 0);
    CHECK(zerosFrom(after, end));
    auto again = r.open();
    REQUIRE(again.ok());
    CHECK((*again)->endSequence() == 21 + c.wholeFrames);
    CHECK_FALSE((*again)->tornTail());
  }
}

TEST_CASE("journal room: damage in the room is refused and a sound room is never cut",
          "[journal]") {
  SECTION("a flipped byte in a whole frame of the torn batch") {
    Roomy r;
    Bytes landed = Roomy::batch(21, 4);
    landed[30] ^= 0x08;
    const Bytes bad = r.overwritten(landed);
    writeWholeFile(r.journalFile(), bad);
    auto opened = r.open();
    REQUIRE_FALSE(opened.ok());
    CHECK(opened.error().code == Errc::format);
    CHECK_THAT(opened.error().message, Catch::Contains("nothing was cut"));
    CHECK(readWholeFile(r.journalFile()) == bad);
    CHECK(r.tornFiles().empty());
  }
  SECTION("bytes of a later frame far into the room") {
    Roomy r;
    const Bytes later = Roomy::batch(25, 1);
    Bytes bad = r.file;
    std::copy(later.begin(), later.end(), bad.begin() + (5 << 20));
    writeWholeFile(r.journalFile(), bad);
    auto opened = r.open();
    REQUIRE_FALSE(opened.ok());
    CHECK(readWholeFile(r.journalFile()) == bad);
    CHECK(r.tornFiles().empty());
  }
  SECTION("the last bytes of a whole frame zeroed inside a block that was written") {
    // A block holds the frame's end and bytes that are not zero before it: it was written
    // whole, so the zeros are the frame's own bytes and its CRC fails: damage, not a tear.
    Roomy r;
    Bytes landed = Roomy::batch(21, 3);
    const std::uint64_t block = (r.end + landed.size() - 1) / kCrashBlockBytes * kCrashBlockBytes;
    REQUIRE(block < r.end + landed.size() - 3);
    std::fill(landed.end() - 3, landed.end(), 0);
    const Bytes bad = r.overwritten(landed);
    writeWholeFile(r.journalFile(), bad);
    auto opened = r.open();
    REQUIRE_FALSE(opened.ok());
    CHECK_THAT(opened.error().message, Catch::Contains("no crash leaves that"));
    CHECK(readWholeFile(r.journalFile()) == bad);
    CHECK(r.tornFiles().empty());
  }
  SECTION("a cut on request keeps the room of a sound journal") {
    Roomy r;
    JournalOptions cut;
    cut.cutDamagedTail = true;
    auto opened = r.open(cut);
    REQUIRE(opened.ok());
    CHECK((*opened)->endSequence() == 20);
    CHECK_FALSE((*opened)->tornTail());
    CHECK(readWholeFile(r.journalFile()) == r.file);
    CHECK(r.tornFiles().empty());
  }
  SECTION("more zeros than a torn batch and its room") {
    Roomy r;
    fs::resize_file(r.journalFile(), r.end + kMaxTailBytes + 1);
    auto opened = r.open();
    REQUIRE_FALSE(opened.ok());
    CHECK_THAT(opened.error().message, Catch::Contains("more than a crash can leave"));
    CHECK(fs::file_size(r.journalFile()) == r.end + kMaxTailBytes + 1);
    fs::resize_file(r.journalFile(), r.end + kMaxTailBytes);
    auto whole = r.open();
    REQUIRE(whole.ok());
    CHECK((*whole)->endSequence() == 20);
  }
}

TEST_CASE("journal room: made from an unaligned end, directly or through the page cache",
          "[journal]") {
  // A journal written without a room ends mid-page; the next room starts there: the part of a
  // page through the cache, the rest with O_DIRECT
  // (docs/decisions/0052-room-zeros-written-o-direct.md), or all through the cache. Each batch
  // written into it runs to the end of its page with zeros; none of that shows in the file.
  const bool direct = GENERATE(true, false);
  CAPTURE(direct);
  io::test::TempDir dir;
  asio::io_context context{1};
  io::Uring uring{context, 64};
  const fs::path db = dir.path() / "db";
  JournalOptions plain;
  plain.preallocate = false;
  std::vector<std::string> records;
  auto record = [&](std::size_t i) {
    return "record " + std::to_string(i) + " " + std::string(1000 + i * 611 % 9000, 'a' + i % 26);
  };
  {
    auto j = std::move(*runToCompletion(context, Journal::create(uring, db, u"db", plain)));
    for (std::size_t i = 1; i <= 7; ++i) {
      records.push_back(record(i));
      REQUIRE(runToCompletion(context, j->append(asBytes(records.back()))).ok());
    }
  }
  const Bytes before = readWholeFile(db / Journal::kFileName);
  REQUIRE(before.size() % io::kDirectAlign != 0);
  JournalOptions roomy;
  roomy.directRoom = direct;
  auto opened = runToCompletion(context, Journal::open(uring, db, roomy));
  REQUIRE(opened.ok());
  Journal& j = **opened;
  // Records of 1-10 KB, then some of 3 MiB to pass the first room.
  for (std::size_t i = 8; i <= 60; ++i) {
    records.push_back(i <= 54 ? record(i) : std::string(3 << 20, char('0' + i % 10)));
    REQUIRE(runToCompletion(context, j.append(asBytes(records.back()))).ok());
  }
  const std::uint64_t end = j.endOffset();
  REQUIRE(end > kJournalRoomBytes);
  // Direct where the file system takes O_DIRECT: all but the first room's partial page.
  const bool fsTakesDirect = io::File::open(dir.path() / "probe", O_RDWR | O_CREAT | O_DIRECT).ok();
  if (direct && fsTakesDirect) {
    CHECK(j.stats().roomDirectBytes ==
          j.stats().roomBytes - (io::kDirectAlign - before.size() % io::kDirectAlign));
  } else {
    CHECK(j.stats().roomDirectBytes == 0);
  }
  CHECK(j.stats().roomBytes == (end / kJournalRoomBytes + 1) * kJournalRoomBytes - before.size());
  const Bytes file = readWholeFile(db / Journal::kFileName);
  CHECK(file.size() == (end / kJournalRoomBytes + 1) * kJournalRoomBytes);
  CHECK(zerosFrom(file, end));
  CHECK(std::equal(before.begin(), before.end(), file.begin()));
  for (std::size_t i = 1; i <= records.size(); ++i) {
    auto got = runToCompletion(context, j.record(i));
    REQUIRE(got.ok());
    CHECK(*got == Bytes(records[i - 1].begin(), records[i - 1].end()));
  }
  auto prefix = runToCompletion(context, j.prefix(records.size(), limits::kMaxPrefixBytes));
  REQUIRE(prefix.ok());
  CHECK(prefix->sha256 == sha256(ByteView(file).first(end)));
  opened->reset();
  auto again = runToCompletion(context, Journal::open(uring, db, roomy));
  REQUIRE(again.ok());
  CHECK((*again)->endSequence() == records.size());
  CHECK_FALSE((*again)->tornTail());
}

TEST_CASE("journal room: a batch runs to its page's end only inside the room", "[journal]") {
  // The room ends mid-page (zeros after the frames up to a length a page does not divide, as
  // left by a journal written without a room, then zeros appended): a batch inside it is not
  // padded past the file's end, so the file keeps its length and its zeros.
  Roomy r;
  const std::string payload = "a small record";
  const std::uint64_t next = r.end + frameLength(payload.size());
  REQUIRE(next % io::kDirectAlign != 0);
  REQUIRE(next % io::kDirectAlign != io::kDirectAlign - 1);
  const std::uint64_t length = next + 1;  // the file ends inside the page holding `next`
  fs::resize_file(r.journalFile(), length);
  auto opened = r.open();
  REQUIRE(opened.ok());
  REQUIRE(runToCompletion(r.context, (*opened)->append(asBytes(payload))).ok());
  CHECK((*opened)->endOffset() == next);
  CHECK((*opened)->stats().roomBytes == 0);  // it fitted: no room was made
  opened->reset();
  const Bytes file = readWholeFile(r.journalFile());
  CHECK(file.size() == length);
  CHECK(zerosFrom(file, next));
  auto again = r.open();
  REQUIRE(again.ok());
  CHECK((*again)->endSequence() == 21);
  CHECK_FALSE((*again)->tornTail());
}

namespace {

// Appends `records` to j, each checked.
void appendAll(asio::io_context& context, Journal& j, const std::vector<std::string>& records,
               std::size_t from) {
  for (std::size_t i = from; i < records.size(); ++i) {
    REQUIRE(runToCompletion(context, j.append(asBytes(records[i]))).ok());
  }
}

// Every record of j reads back as written, and the file holds zeros after the frames.
void checkRecordsAndZeros(asio::io_context& context, Journal& j, const fs::path& file,
                          const std::vector<std::string>& records) {
  for (std::size_t i = 1; i <= records.size(); ++i) {
    auto got = runToCompletion(context, j.record(i));
    REQUIRE(got.ok());
    CHECK(*got == Bytes(records[i - 1].begin(), records[i - 1].end()));
  }
  CHECK(zerosFrom(readWholeFile(file), j.endOffset()));
}

bool isDirect(int fd) { return (::fcntl(fd, F_GETFL) & O_DIRECT) != 0; }

}  // namespace

TEST_CASE("journal room: a direct write refused after open makes the room through the cache",
          "[journal]") {
  // A file system that takes O_DIRECT at open and refuses the write (EINVAL): the room is made
  // again through the page cache, and so are the rooms after it; nothing fails.
  io::test::TempDir dir;
  asio::io_context context{1};
  io::Uring uring{context, 64};
  const fs::path db = dir.path() / "db";
  int refused = 0;
  uring.setFaultForTests([&](const io::Uring::Operation& op) {
    if (op.kind != io::Uring::Operation::Kind::write || !isDirect(op.fd) || refused > 0) return 0;
    ++refused;
    return EINVAL;
  });
  auto j = std::move(*runToCompletion(context, Journal::create(uring, db, u"db")));
  std::vector<std::string> records;
  for (int i = 0; i < 20; ++i) records.push_back(Roomy::payload(i));
  for (int i = 0; i < 6; ++i) records.emplace_back(3 << 20, char('k' + i));  // past the room
  appendAll(context, *j, records, 0);
  const bool fsTakesDirect = io::File::open(dir.path() / "probe", O_RDWR | O_CREAT | O_DIRECT).ok();
  if (fsTakesDirect) CHECK(refused == 1);
  CHECK(j->stats().roomBytes > kJournalRoomBytes);  // two rooms
  CHECK(j->stats().roomDirectBytes == 0);
  const fs::path file = db / Journal::kFileName;
  CHECK(fs::file_size(file) == (j->endOffset() / kJournalRoomBytes + 1) * kJournalRoomBytes);
  checkRecordsAndZeros(context, *j, file, records);
}

TEST_CASE("journal room: no space for a room: its zeros are cut and batches extend the file",
          "[journal]") {
  // ENOSPC while the zeros are written: those written are cut off again, the batch extends
  // the file as without a room, and a room is tried again 16 MiB later.
  const int error = GENERATE(ENOSPC, EDQUOT);
  CAPTURE(error);
  io::test::TempDir dir;
  asio::io_context context{1};
  io::Uring uring{context, 64};
  const fs::path db = dir.path() / "db";
  auto j = std::move(*runToCompletion(context, Journal::create(uring, db, u"db")));
  const fs::path file = db / Journal::kFileName;
  const std::uint64_t headerEnd = j->endOffset();
  int chunks = 0, refused = 0;
  uring.setFaultForTests([&](const io::Uring::Operation& op) {
    // The room's third MiB of zeros: no space (two were written, and must be cut off again).
    if (op.kind != io::Uring::Operation::Kind::write || op.length != (1u << 20)) return 0;
    if (++chunks != 3) return 0;
    ++refused;
    return error;
  });
  std::vector<std::string> records;
  for (int i = 0; i < 20; ++i) records.push_back(Roomy::payload(i));
  appendAll(context, *j, records, 0);
  CHECK(refused == 1);
  CHECK(j->stats().roomBytes == 0);
  CHECK(j->endOffset() > headerEnd);
  CHECK(fs::file_size(file) == j->endOffset());  // frames only: the zeros were cut off
  // More than 16 MiB later a room is made again (the disk has space now).
  for (int i = 0; i < 6; ++i) records.emplace_back(3 << 20, char('k' + i));
  appendAll(context, *j, records, 20);
  CHECK(j->stats().roomBytes > 0);
  CHECK(fs::file_size(file) == (j->endOffset() / kJournalRoomBytes + 1) * kJournalRoomBytes);
  checkRecordsAndZeros(context, *j, file, records);
}

TEST_CASE("journal room: a failed sync of a room fails its batch, which is never acknowledged",
          "[journal]") {
  // The next room's zeros are written but their fdatasync fails: the batch waiting for that
  // room is neither written nor acknowledged, every later append fails, and a reopen holds
  // exactly the records acknowledged before, nothing torn.
  io::test::TempDir dir;
  asio::io_context context{1};
  io::Uring uring{context, 64};
  const fs::path db = dir.path() / "db";
  auto j = std::move(*runToCompletion(context, Journal::create(uring, db, u"db")));
  std::vector<std::string> records;
  for (int i = 0; i < 20; ++i) records.push_back(Roomy::payload(i));
  appendAll(context, *j, records, 0);  // the first room
  const std::uint64_t firstRoom = j->stats().roomBytes;
  REQUIRE(firstRoom > 0);
  int syncs = 0, durableWrites = 0;
  uring.setFaultForTests([&](const io::Uring::Operation& op) {
    if (op.kind == io::Uring::Operation::Kind::writeDsync) ++durableWrites;
    if (op.kind != io::Uring::Operation::Kind::fdatasync) return 0;
    ++syncs;
    return EIO;
  });
  // 3 MiB records, one at a time, until one needs the next room.
  std::size_t acknowledged = 0;
  std::optional<Error> failure;
  for (int i = 0; i < 8 && !failure; ++i) {
    auto r = runToCompletion(context, j->append(asBytes(std::string(3 << 20, char('k' + i)))));
    if (r.ok()) {
      ++acknowledged;
      records.emplace_back(3 << 20, char('k' + i));
    } else {
      failure = r.error();
    }
  }
  REQUIRE(failure);
  CHECK(failure->code == Errc::io);
  CHECK(acknowledged == 5);  // 20 small records and 5 × 3 MiB fit the first 16 MiB room
  CHECK(syncs == 1);
  CHECK(durableWrites == 5);  // the failed room's batch was not written
  CHECK(j->stats().roomBytes == firstRoom);
  CHECK(j->endSequence() == 20 + acknowledged);
  auto later = runToCompletion(context, j->append(asBytes(std::string_view("later"))));
  REQUIRE_FALSE(later.ok());
  CHECK(later.error().code == Errc::io);
  CHECK(syncs == 1);  // nothing retried
  j.reset();
  uring.setFaultForTests({});
  auto reopened = runToCompletion(context, Journal::open(uring, db));
  REQUIRE(reopened.ok());
  CHECK((*reopened)->endSequence() == 20 + acknowledged);
  CHECK_FALSE((*reopened)->tornTail());
  checkRecordsAndZeros(context, **reopened, db / Journal::kFileName, records);
}
