// Iceberg's Avro files as garbage collection reads them (catalog/iceberg/iceberg_files.hpp),
// against the independent vectors (tests/vectors/make_vectors.py writes the containers with its own
// encoder): each valid file reads to exactly the entries the vector lists; each invalid one is
// refused with code format.
#include <catch2/catch.hpp>

#include <zlib.h>

#include <string>

#include "catalog/iceberg/iceberg_files.hpp"
#include "tests/format/vector_support.hpp"
#include "tests/vectors/vectors.inc"

using namespace cairn;
using namespace cairn::catalog;
namespace v = cairn::vectors;

namespace {

// The entries as the vectors spell them, one per line.
Res<std::string> textOf(std::string_view kind, ByteView bytes) {
  std::string out;
  if (kind == "list") {
    auto entries = readManifestList(bytes);
    if (!entries) return failureOf(entries);
    for (const auto& e : *entries) {
      out += e.path + " " + std::to_string(e.length) + " " + std::to_string(e.content) + "\n";
    }
    return out;
  }
  auto entries = readManifest(bytes);
  if (!entries) return failureOf(entries);
  for (const auto& e : *entries) {
    out += std::to_string(e.status) + " " + std::to_string(e.content) + " " + e.path + " " +
           std::to_string(e.sizeBytes) + "\n";
  }
  return out;
}

void varlong(Bytes& out, std::int64_t n) {
  std::uint64_t z = (std::uint64_t(n) << 1) ^ std::uint64_t(n >> 63);
  do {
    std::uint8_t b = z & 0x7f;
    z >>= 7;
    out.push_back(z ? (b | 0x80) : b);
  } while (z);
}

void bytesOf(Bytes& out, std::string_view s) {
  varlong(out, std::int64_t(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}

// A container of one deflate block holding `records` (a test's own encoder; the vectors'
// files come from make_vectors.py).
Bytes deflateContainer(std::string_view schema, ByteView records, std::int64_t count) {
  Bytes out{'O', 'b', 'j', 1};
  varlong(out, 2);
  bytesOf(out, "avro.schema");
  bytesOf(out, schema);
  bytesOf(out, "avro.codec");
  bytesOf(out, "deflate");
  varlong(out, 0);
  const Bytes sync(16, 0x5a);
  out.insert(out.end(), sync.begin(), sync.end());
  Bytes packed(compressBound(uLong(records.size())) + 64);
  z_stream z{};
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) == Z_OK);
  z.next_in = const_cast<Bytef*>(records.data());
  z.avail_in = uInt(records.size());
  z.next_out = packed.data();
  z.avail_out = uInt(packed.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  // (A copy, not resize(): GCC 12 at -O1 warns about the size it cannot bound.)
  const Bytes deflated(packed.begin(), packed.end() - std::ptrdiff_t(z.avail_out));
  deflateEnd(&z);
  varlong(out, count);
  varlong(out, std::int64_t(deflated.size()));
  out.insert(out.end(), deflated.begin(), deflated.end());
  out.insert(out.end(), sync.begin(), sync.end());
  return out;
}

}  // namespace

TEST_CASE("Iceberg Avro files: deflate blocks are bounded before Avro C inflates them",
          "[catalog]") {
  const std::string schema =
      R"({"type":"record","name":"manifest_file","fields":[)"
      R"({"name":"manifest_path","type":"string"},{"name":"manifest_length","type":"long"},)"
      R"({"name":"pad","type":"bytes"}]})";
  // One record whose padding fits the bound, then one whose padding is past it (about 257 MiB
  // of zeros, a few hundred KiB once deflated: a small file that would expand in memory).
  for (const std::uint64_t pad : {std::uint64_t{1} << 20, kMaxAvroInflatedBytes + 4096}) {
    INFO(pad);
    Bytes record;
    bytesOf(record, "s3://b/m.avro");
    varlong(record, 7);
    varlong(record, std::int64_t(pad));
    record.insert(record.end(), pad, std::uint8_t{0});
    auto read = readManifestList(deflateContainer(schema, record, 1));
    if (pad < kMaxAvroInflatedBytes) {
      REQUIRE(read);
      REQUIRE(read->size() == 1);
      CHECK((*read)[0].path == "s3://b/m.avro");
      CHECK((*read)[0].length == 7);
    } else {
      REQUIRE_FALSE(read);
      CHECK(read.error().code == Errc::format);
      CHECK(read.error().message.find("256 MiB") != std::string::npos);
    }
  }
}

TEST_CASE("Iceberg Avro files: the vectors read to exactly their entries", "[catalog]") {
  for (const auto& f : v::kAvroFiles) {
    INFO(f.name);
    const Bytes bytes = vector_test::hex(f.hex);
    auto text = textOf(f.kind, bytes);
    REQUIRE(text);
    CHECK(*text == f.entries);
  }
}

TEST_CASE("Iceberg Avro files: damaged and foreign files are refused", "[catalog]") {
  for (const auto& f : v::kBadAvroFiles) {
    INFO(f.name << ": " << f.why);
    const Bytes bytes = vector_test::hex(f.hex);
    auto text = textOf(f.kind, bytes);
    REQUIRE_FALSE(text);
    INFO(text.error().message);
    CHECK(text.error().code == Errc::format);
  }
  // A prefix of a valid file is refused, or (cut right after the header) a file of no
  // entries: never read as some of the entries.
  const Bytes whole = vector_test::hex(v::kAvroFiles[0].hex);
  for (std::size_t n = 0; n < whole.size(); ++n) {
    INFO(n);
    auto cut = readManifestList(ByteView(whole.data(), n));
    CHECK((!cut || cut->empty()));
  }
}
