#include "engine/format/manifest.hpp"

#include <simdjson.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "engine/format/journal_format.hpp"
#include "engine/format/limits.hpp"
#include "engine/format/segment.hpp"

namespace cairn {
namespace {

Failure<Error> bad(std::string what) { return err(Errc::format, "manifest: " + std::move(what)); }

std::string segmentWhere(std::size_t i) { return "segment " + std::to_string(i) + ": "; }

// ---- encoding: RFC 8785 for this schema (sorted keys, no whitespace, plain integers) ----

void appendKey(std::string& out, std::string_view key) {
  out += '"';
  out += key;
  out += "\":";
}
void appendNumber(std::string& out, std::string_view key, std::uint64_t v) {
  appendKey(out, key);
  out += std::to_string(v);
}
void appendString(std::string& out, std::string_view key, std::string_view v) {
  appendKey(out, key);
  out += '"';
  out += v;
  out += '"';
}

void appendPrefix(std::string& out, const Prefix& p) {
  appendKey(out, "prefix");
  out += '{';
  appendNumber(out, "length", p.length);
  out += ',';
  appendNumber(out, "sequence", p.sequence);
  out += ',';
  appendString(out, "sha256", toHex(p.sha256));
  out += '}';
}

std::string encodeUnchecked(const Manifest& m) {
  std::string out;
  out.reserve(384 + m.journalHeader.size() * 4 / 3 + m.segments.size() * 220);
  out += '{';
  if (m.base) {
    appendKey(out, "base");
    out += '{';
    appendNumber(out, "length", m.base->length);
    out += ',';
    appendPrefix(out, m.base->prefix);
    out += ',';
    appendString(out, "sha256", toHex(m.base->sha256));
    out += "},";
  }
  appendNumber(out, "format", m.format());
  out += ',';
  appendNumber(out, "generation", m.generation);
  out += ',';
  appendString(out, "journal_header", toBase64(m.journalHeader));
  out += ',';
  appendString(out, "lineage", toHex(m.lineage));
  out += ',';
  appendPrefix(out, m.prefix);
  out += ',';
  appendKey(out, "segments");
  out += '[';
  for (std::size_t i = 0; i < m.segments.size(); ++i) {
    const ManifestSegment& s = m.segments[i];
    if (i > 0) out += ',';
    out += '{';
    appendNumber(out, "count", s.count);
    out += ',';
    appendNumber(out, "first_sequence", s.firstSequence);
    out += ',';
    appendNumber(out, "journal_end", s.journalEnd);
    out += ',';
    appendNumber(out, "journal_start", s.journalStart);
    out += ',';
    appendNumber(out, "object_length", s.objectLength);
    out += ',';
    appendString(out, "object_sha256", toHex(s.objectSha256));
    out += '}';
  }
  out += "]}";
  return out;
}

// ---- decoding: walk the members in canonical order; anything else is refused ----

class Reader {
 public:
  explicit Reader(simdjson::dom::object obj) : it_(obj.begin()), end_(obj.end()) {}

  Res<simdjson::dom::element> member(std::string_view key) {
    if (it_ == end_) return bad("missing key \"" + std::string(key) + "\"");
    auto field = *it_;
    if (field.key != key) {
      return bad("expected key \"" + std::string(key) + "\", found \"" + std::string(field.key) +
                 "\"");
    }
    ++it_;
    return field.value;
  }
  Res<std::uint64_t> number(std::string_view key) {
    auto v = member(key);
    if (!v) return failureOf(v);
    std::uint64_t n = 0;
    if (v->get_uint64().get(n) != simdjson::SUCCESS) {
      return bad("\"" + std::string(key) + "\" is not a non-negative integer");
    }
    return n;
  }
  Res<std::string_view> string(std::string_view key) {
    auto v = member(key);
    if (!v) return failureOf(v);
    std::string_view s;
    if (v->get_string().get(s) != simdjson::SUCCESS) {
      return bad("\"" + std::string(key) + "\" is not a string");
    }
    return s;
  }
  Res<Digest> digest(std::string_view key) {
    auto s = string(key);
    if (!s) return failureOf(s);
    auto raw = fromHex(*s);
    if (!raw || raw->size() != 32) {
      return bad("\"" + std::string(key) + "\" is not 64 lowercase hex digits");
    }
    Digest d{};
    std::copy(raw->begin(), raw->end(), d.begin());
    return d;
  }
  // The next member's key ("" at the end), without taking it.
  std::string_view nextKey() const { return it_ == end_ ? std::string_view{} : (*it_).key; }
  Res<void> end() {
    if (it_ != end_) return bad("unexpected key \"" + std::string((*it_).key) + "\"");
    return {};
  }

 private:
  simdjson::dom::object::iterator it_;
  simdjson::dom::object::iterator end_;
};

#define CAIRN_TRY_ASSIGN(lhs, expr)                        \
  do {                                                     \
    auto _r = (expr);                                      \
    if (!_r) return Failure<Error>{std::move(_r).error()}; \
    lhs = std::move(*_r);                                  \
  } while (false)

Res<simdjson::dom::object> asObject(simdjson::dom::element e, std::string_view what) {
  simdjson::dom::object o;
  if (e.get_object().get(o) != simdjson::SUCCESS)
    return bad(std::string(what) + " is not an object");
  return o;
}

Res<ManifestSegment> readSegment(simdjson::dom::element e, std::size_t i) {
  auto obj = asObject(e, segmentWhere(i) + "entry");
  if (!obj) return failureOf(obj);
  Reader r(*obj);
  ManifestSegment s;
  std::uint64_t count = 0;
  CAIRN_TRY_ASSIGN(count, r.number("count"));
  if (count > limits::kMaxPrefixFrames) return bad(segmentWhere(i) + "count too large");
  s.count = static_cast<std::uint32_t>(count);
  CAIRN_TRY_ASSIGN(s.firstSequence, r.number("first_sequence"));
  CAIRN_TRY_ASSIGN(s.journalEnd, r.number("journal_end"));
  CAIRN_TRY_ASSIGN(s.journalStart, r.number("journal_start"));
  CAIRN_TRY_ASSIGN(s.objectLength, r.number("object_length"));
  CAIRN_TRY_ASSIGN(s.objectSha256, r.digest("object_sha256"));
  if (auto ok = r.end(); !ok) return failureOf(ok);
  return s;
}

Res<Prefix> readPrefix(Reader& r, std::string_view where) {
  simdjson::dom::element element;
  CAIRN_TRY_ASSIGN(element, r.member("prefix"));
  auto obj = asObject(element, where);
  if (!obj) return failureOf(obj);
  Reader p(*obj);
  Prefix out;
  CAIRN_TRY_ASSIGN(out.length, p.number("length"));
  CAIRN_TRY_ASSIGN(out.sequence, p.number("sequence"));
  CAIRN_TRY_ASSIGN(out.sha256, p.digest("sha256"));
  if (auto ok = p.end(); !ok) return failureOf(ok);
  return out;
}

Res<ManifestBase> readBase(simdjson::dom::element e) {
  auto obj = asObject(e, "base");
  if (!obj) return failureOf(obj);
  Reader r(*obj);
  ManifestBase b;
  CAIRN_TRY_ASSIGN(b.length, r.number("length"));
  CAIRN_TRY_ASSIGN(b.prefix, readPrefix(r, "base.prefix"));
  CAIRN_TRY_ASSIGN(b.sha256, r.digest("sha256"));
  if (auto ok = r.end(); !ok) return failureOf(ok);
  return b;
}

Res<Manifest> readManifest(simdjson::dom::element root) {
  auto obj = asObject(root, "the document");
  if (!obj) return failureOf(obj);
  Reader r(*obj);
  Manifest m;
  if (r.nextKey() == "base") {
    simdjson::dom::element baseElement;
    CAIRN_TRY_ASSIGN(baseElement, r.member("base"));
    auto base = readBase(baseElement);
    if (!base) return failureOf(base);
    m.base = *base;
  }
  std::uint64_t format = 0;
  CAIRN_TRY_ASSIGN(format, r.number("format"));
  if (format != m.format()) {
    return bad("format " + std::to_string(format) + (m.base ? " with" : " without") +
               " a base (a base is format 2, none format 1)");
  }
  CAIRN_TRY_ASSIGN(m.generation, r.number("generation"));
  std::string_view header;
  CAIRN_TRY_ASSIGN(header, r.string("journal_header"));
  auto headerBytes = fromBase64(header);
  if (!headerBytes) return bad("journal_header is not canonical base64");
  m.journalHeader = std::move(*headerBytes);
  CAIRN_TRY_ASSIGN(m.lineage, r.digest("lineage"));

  CAIRN_TRY_ASSIGN(m.prefix, readPrefix(r, "prefix"));

  simdjson::dom::element segmentsElement;
  CAIRN_TRY_ASSIGN(segmentsElement, r.member("segments"));
  simdjson::dom::array segments;
  if (segmentsElement.get_array().get(segments) != simdjson::SUCCESS) {
    return bad("segments is not an array");
  }
  std::size_t i = 0;
  for (simdjson::dom::element e : segments) {
    auto s = readSegment(e, i++);
    if (!s) return failureOf(s);
    m.segments.push_back(*s);
  }
  if (auto ok = r.end(); !ok) return failureOf(ok);
  return m;
}

#undef CAIRN_TRY_ASSIGN

// A base's own declarations (its bytes are checked where it is fetched: graph/heads.hpp).
Res<void> validateBase(const ManifestBase& b, const Manifest& m) {
  if (b.length < 1 || b.length > limits::kMaxManifestBytes) {
    return bad("base length " + std::to_string(b.length) + " is outside 1..1 MiB");
  }
  if (b.prefix.sequence > limits::kMaxPrefixFrames) return bad("base prefix sequence too large");
  if (b.prefix.length < m.journalHeader.size() || b.prefix.length > limits::kMaxPrefixBytes) {
    return bad("base prefix length " + std::to_string(b.prefix.length) +
               " is outside the header's length..2^53-1");
  }
  if (b.prefix.sequence == 0 &&
      (b.prefix.length != m.journalHeader.size() || b.prefix.sha256 != m.lineage)) {
    return bad("a base with the empty prefix must be the header alone, hashing to the lineage");
  }
  if (m.segments.empty()) return bad("a chained manifest lists at least one segment");
  return {};
}

}  // namespace

Res<void> validateManifest(const Manifest& m) {
  if (m.generation < 1 || m.generation > limits::kMaxGeneration) {
    return bad("generation " + std::to_string(m.generation) + " is outside 1..2^53-1");
  }
  auto header = decodeJournalHeader(m.journalHeader);
  if (!header) return bad("journal_header: " + header.error().message);
  if (header->bytes.size() != m.journalHeader.size()) {
    return bad("journal_header has bytes after the header");
  }
  if (sha256(m.journalHeader) != m.lineage) return bad("lineage is not SHA-256 of journal_header");
  if (m.prefix.sequence > limits::kMaxPrefixFrames) return bad("prefix sequence exceeds the limit");
  if (m.prefix.length > limits::kMaxPrefixBytes) return bad("prefix length exceeds 2^53-1");

  std::uint64_t position = m.journalHeader.size();
  std::uint64_t sequence = 1;
  if (m.base) {
    auto ok = validateBase(*m.base, m);
    if (!ok) return ok;
    position = m.base->prefix.length;
    sequence = m.base->prefix.sequence + 1;
  }
  for (std::size_t i = 0; i < m.segments.size(); ++i) {
    const ManifestSegment& s = m.segments[i];
    if (s.firstSequence != sequence || s.journalStart != position) {
      return bad(segmentWhere(i) + "does not start at sequence " + std::to_string(sequence) +
                 ", offset " + std::to_string(position) + " (gap or overlap)");
    }
    SegmentHeader h{m.lineage, s.firstSequence, s.count, s.journalStart, s.journalEnd};
    if (auto ok = validateSegmentHeader(h); !ok) return bad(segmentWhere(i) + ok.error().message);
    if (s.objectLength != h.objectLength()) {
      return bad(segmentWhere(i) + "object_length " + std::to_string(s.objectLength) +
                 " is not 76 + the journal range");
    }
    position = s.journalEnd;
    sequence = s.firstSequence + s.count;
  }
  if (position != m.prefix.length || sequence - 1 != m.prefix.sequence) {
    return bad("segments end at sequence " + std::to_string(sequence - 1) + ", offset " +
               std::to_string(position) + "; the prefix declares " +
               std::to_string(m.prefix.sequence) + ", " + std::to_string(m.prefix.length));
  }
  if (m.segments.empty() && m.prefix.sha256 != m.lineage) {
    return bad("an empty prefix must hash to the lineage id");
  }
  return {};
}

Res<Bytes> encodeManifest(const Manifest& m) {
  if (auto ok = validateManifest(m); !ok) return err(Errc::usage, ok.error().message);
  std::string text = encodeUnchecked(m);
  if (text.size() > limits::kMaxManifestBytes) {
    return err(Errc::usage, "manifest of " + std::to_string(text.size()) + " bytes exceeds 1 MiB");
  }
  ByteView b = asBytes(text);
  return Bytes(b.begin(), b.end());
}

Res<Manifest> decodeManifest(ByteView bytes) {
  if (bytes.size() > limits::kMaxManifestBytes) {
    return bad(std::to_string(bytes.size()) + " bytes exceeds the 1 MiB cap");
  }
  simdjson::dom::parser parser;
  simdjson::padded_string padded(asChars(bytes));
  simdjson::dom::element root;
  if (auto e = parser.parse(padded).get(root); e != simdjson::SUCCESS) {
    return bad(std::string("not JSON: ") + simdjson::error_message(e));
  }
  auto m = readManifest(root);
  if (!m) return m;
  if (auto ok = validateManifest(*m); !ok) return failureOf(ok);
  if (encodeUnchecked(*m) != asChars(bytes)) return bad("not in canonical form");
  return m;
}

}  // namespace cairn
