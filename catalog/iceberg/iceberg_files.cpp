#include "catalog/iceberg/iceberg_files.hpp"

#include "catalog/iceberg/table_metadata.hpp"

#include <avro.h>
#include <zlib.h>

#include <boost/json.hpp>
#include <deque>
#include <map>
#include <vector>

#include <array>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>

namespace cairn::catalog {

namespace {

Failure<Error> bad(const std::string& what) {
  return err(Errc::format, "not an Iceberg Avro file: " + what);
}

// ---- the container's framing, checked before Avro C sees the bytes -----------------------

class Cursor {
 public:
  explicit Cursor(ByteView b) : b_(b) {}
  std::size_t left() const { return b_.size() - at_; }
  bool bytes(std::size_t n, ByteView& out) {
    if (n > left()) return false;
    out = b_.subspan(at_, n);
    at_ += n;
    return true;
  }
  // A zig-zag varint long (at most 10 bytes).
  bool varlong(std::int64_t& out) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (at_ >= b_.size()) return false;
      const std::uint8_t byte = b_[at_++];
      if (shift == 63 && (byte & 0x7e) != 0) return false;
      v |= std::uint64_t(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        out = static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
        return true;
      }
    }
    return false;
  }
  // A non-negative length no larger than what is left.
  bool length(std::size_t& out) {
    std::int64_t n = 0;
    if (!varlong(n) || n < 0 || std::uint64_t(n) > left()) return false;
    out = static_cast<std::size_t>(n);
    return true;
  }

 private:
  ByteView b_;
  std::size_t at_ = 0;
};

// The writer's schema, compiled for checking the data against it (below).
struct Node {
  enum class Kind : std::uint8_t {
    null,
    boolean,
    int32,
    int64,
    float32,
    float64,
    bytes,
    string,
    record,
    enumeration,
    fixed,
    array,
    map,
    unions
  };
  Kind kind = Kind::null;
  std::vector<const Node*> children;  // fields, branches, or the one item type
  std::int64_t size = 0;              // fixed: bytes; enum: symbols
  bool zero = false;                  // a value can take no bytes at all
};

class Schema {
 public:
  Res<const Node*> compile(const boost::json::value& t) {
    namespace json = boost::json;
    if (++nodes_ > kMaxSchemaNodes) return bad("schema: more than 10,000 types");
    if (t.is_string()) return named(std::string(t.as_string()));
    if (t.is_array()) {  // a union: its branch index takes a byte
      Node& u = make(Node::Kind::unions);
      for (const auto& branch : t.as_array()) {
        auto b = compile(branch);
        if (!b) return b;
        u.children.push_back(*b);
      }
      if (u.children.empty()) return bad("schema: an empty union");
      return &u;
    }
    if (!t.is_object()) return bad("schema: a type is neither a name, a union nor an object");
    const json::object& o = t.as_object();
    const json::value* type = o.if_contains("type");
    if (!type) return bad("schema: a type without \"type\"");
    if (!type->is_string()) return compile(*type);
    const std::string kind(type->as_string());
    if (kind == "record" || kind == "error") {
      Node& r = make(Node::Kind::record);
      define(o, r);  // a record that refers to itself does so through a union or an array
      const json::value* fields = o.if_contains("fields");
      if (!fields || !fields->is_array()) return bad("schema: a record without fields");
      r.zero = true;
      for (const auto& f : fields->as_array()) {
        const json::value* ft = f.is_object() ? f.as_object().if_contains("type") : nullptr;
        if (!ft) return bad("schema: a field without a type");
        auto c = compile(*ft);
        if (!c) return c;
        r.children.push_back(*c);
        r.zero = r.zero && (*c)->zero;
      }
      return &r;
    }
    if (kind == "enum") {
      Node& e = make(Node::Kind::enumeration);
      const json::value* symbols = o.if_contains("symbols");
      if (!symbols || !symbols->is_array()) return bad("schema: an enum without symbols");
      e.size = std::int64_t(symbols->as_array().size());
      define(o, e);
      return &e;
    }
    if (kind == "fixed") {
      Node& f = make(Node::Kind::fixed);
      const json::value* size = o.if_contains("size");
      if (!size || !size->is_int64() || size->as_int64() < 0) return bad("schema: a fixed size");
      f.size = size->as_int64();
      f.zero = f.size == 0;
      define(o, f);
      return &f;
    }
    if (kind == "array" || kind == "map") {
      Node& a = make(kind == "array" ? Node::Kind::array : Node::Kind::map);
      const json::value* items = o.if_contains(kind == "array" ? "items" : "values");
      if (!items) return bad("schema: an " + kind + " without its item type");
      auto c = compile(*items);
      if (!c) return c;
      // Items that take no bytes would let a count bind no bytes: 2^60 nulls in 9 bytes.
      if (a.kind == Node::Kind::array && (*c)->zero) {
        return bad("schema: an array of items that take no bytes");
      }
      a.children.push_back(*c);
      return &a;
    }
    return named(kind);  // a primitive spelled as an object, or a name
  }

 private:
  static constexpr std::size_t kMaxSchemaNodes = 10'000;

  Node& make(Node::Kind kind) {
    arena_.emplace_back();
    arena_.back().kind = kind;
    return arena_.back();
  }
  void define(const boost::json::object& o, const Node& n) {
    if (const auto* name = o.if_contains("name"); name && name->is_string()) {
      const std::string short_(name->as_string());
      names_[short_] = &n;
      if (const auto* ns = o.if_contains("namespace"); ns && ns->is_string()) {
        names_[std::string(ns->as_string()) + "." + short_] = &n;
      }
    }
  }
  Res<const Node*> named(const std::string& name) {
    static const std::map<std::string, Node::Kind> primitives{
        {"null", Node::Kind::null},     {"boolean", Node::Kind::boolean},
        {"int", Node::Kind::int32},     {"long", Node::Kind::int64},
        {"float", Node::Kind::float32}, {"double", Node::Kind::float64},
        {"bytes", Node::Kind::bytes},   {"string", Node::Kind::string}};
    if (auto p = primitives.find(name); p != primitives.end()) {
      Node& n = make(p->second);
      n.zero = p->second == Node::Kind::null;
      return &n;
    }
    auto it = names_.find(name);
    if (it == names_.end()) return bad("schema: unknown type " + name.substr(0, 64));
    return it->second;
  }

  std::deque<Node> arena_;  // stable addresses
  std::map<std::string, const Node*> names_;
  std::size_t nodes_ = 0;
};

inline constexpr int kMaxAvroDepth = 64;  // nesting of values (a recursive schema's data)

// Steps over one value of type `n`: every length and count the data declares must fit the
// bytes left, every union branch and enum symbol must exist.
bool skipValue(const Node* n, Cursor& c, int depth) {
  if (depth > kMaxAvroDepth) return false;
  std::int64_t v = 0;
  ByteView b;
  std::size_t len = 0;
  switch (n->kind) {
    case Node::Kind::null:
      return true;
    case Node::Kind::boolean:
      return c.bytes(1, b) && b[0] <= 1;
    case Node::Kind::int32:
      return c.varlong(v) && v >= INT32_MIN && v <= INT32_MAX;
    case Node::Kind::int64:
      return c.varlong(v);
    case Node::Kind::float32:
      return c.bytes(4, b);
    case Node::Kind::float64:
      return c.bytes(8, b);
    case Node::Kind::bytes:
    case Node::Kind::string:
      return c.length(len) && c.bytes(len, b);
    case Node::Kind::fixed:
      return std::uint64_t(n->size) <= c.left() && c.bytes(std::size_t(n->size), b);
    case Node::Kind::enumeration:
      return c.varlong(v) && v >= 0 && v < n->size;
    case Node::Kind::unions:
      return c.varlong(v) && v >= 0 && std::uint64_t(v) < n->children.size() &&
             skipValue(n->children[std::size_t(v)], c, depth + 1);
    case Node::Kind::record:
      for (const Node* f : n->children) {
        if (!skipValue(f, c, depth + 1)) return false;
      }
      return true;
    case Node::Kind::array:
    case Node::Kind::map:
      for (;;) {
        std::int64_t count = 0;
        if (!c.varlong(count)) return false;
        if (count == 0) return true;
        if (count < 0) {
          std::int64_t blockBytes = 0;
          if (count == INT64_MIN || !c.varlong(blockBytes) || blockBytes < 0) return false;
          count = -count;
        }
        if (std::uint64_t(count) > c.left()) return false;  // every item takes a byte or more
        for (std::int64_t i = 0; i < count; ++i) {
          if (n->kind == Node::Kind::map && !(c.length(len) && c.bytes(len, b))) return false;
          if (!skipValue(n->children[0], c, depth + 1)) return false;
        }
      }
  }
  return false;
}

// A raw deflate block inflated, adding to `out`; a failure past `budget` bytes in all.
Res<void> inflateBounded(ByteView block, std::uint64_t& budget, Bytes& out) {
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK) return bad("deflate: no inflater");
  z.next_in = const_cast<Bytef*>(block.data());
  z.avail_in = static_cast<uInt>(block.size());
  std::array<Bytef, 64 * 1024> chunk;
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = chunk.data();
    z.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&z, Z_NO_FLUSH);
    const std::uint64_t produced = chunk.size() - z.avail_out;
    if (produced > budget) {
      inflateEnd(&z);
      return bad("more than 256 MiB once inflated");
    }
    budget -= produced;
    out.insert(out.end(), chunk.data(), chunk.data() + produced);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return bad("deflate: a block does not inflate");
  return {};
}

// Magic, metadata (avro.schema within its bound, avro.codec null or deflate), sync marker,
// then blocks whose declared sizes fit the file, each ended by the sync marker, deflate blocks
// inflating to at most kMaxAvroInflatedBytes in all, at most kMaxAvroEntries records in all,
// and each block's records exactly its bytes, every length in them within the block.
Res<void> checkFraming(ByteView avro) {
  if (avro.size() > kMaxAvroFileBytes) return bad("larger than 64 MiB");
  Cursor c(avro);
  ByteView magic;
  if (!c.bytes(4, magic) || std::memcmp(magic.data(), "Obj\x01", 4) != 0) return bad("no magic");
  std::string_view schemaText;
  bool deflate = false;
  for (;;) {
    std::int64_t count = 0;
    if (!c.varlong(count)) return bad("metadata truncated");
    if (count == 0) break;
    if (count < 0) {
      std::int64_t blockBytes = 0;
      if (!c.varlong(blockBytes) || blockBytes < 0) return bad("metadata block size");
      if (count == INT64_MIN) return bad("metadata count");
      count = -count;
    }
    if (std::uint64_t(count) > c.left()) return bad("metadata count past the end");
    for (std::int64_t i = 0; i < count; ++i) {
      std::size_t n = 0;
      ByteView key, value;
      if (!c.length(n) || !c.bytes(n, key)) return bad("metadata key");
      if (!c.length(n) || !c.bytes(n, value)) return bad("metadata value");
      const std::string_view k = asChars(key);
      if (k == "avro.schema") {
        if (value.size() > kMaxAvroSchemaBytes) return bad("schema larger than 256 KiB");
        schemaText = asChars(value);
      } else if (k == "avro.codec") {
        const std::string_view v = asChars(value);
        if (v != "null" && v != "deflate") {
          return bad("codec " + std::string(v.substr(0, 32)) + " (null and deflate are read)");
        }
        deflate = v == "deflate";
      }
    }
  }
  if (schemaText.empty()) return bad("no avro.schema");
  auto parsed = parseStrictJson(schemaText);
  if (!parsed) return bad("schema: " + parsed.error().message);
  Schema schema;
  auto root = schema.compile(*parsed);
  if (!root) return failureOf(root);
  ByteView sync;
  if (!c.bytes(16, sync)) return bad("no sync marker");
  std::uint64_t records = 0;
  std::uint64_t inflated = kMaxAvroInflatedBytes;
  Bytes plain;
  while (c.left() > 0) {
    std::int64_t count = 0;
    std::size_t size = 0;
    ByteView block, marker;
    if (!c.varlong(count) || count < 0) return bad("block count");
    records += std::uint64_t(count);
    if (records > kMaxAvroEntries) return bad("more than 1,000,000 records");
    if (!c.length(size) || !c.bytes(size, block)) return bad("block size past the end");
    if (!c.bytes(16, marker) || std::memcmp(marker.data(), sync.data(), 16) != 0) {
      return bad("block not ended by the sync marker");
    }
    if (deflate) {
      plain.clear();
      CAIRN_TRY(inflateBounded(block, inflated, plain));
      block = plain;
    }
    Cursor data(block);
    for (std::int64_t i = 0; i < count; ++i) {
      if (!skipValue(*root, data, 0)) {
        return bad("a record's data does not fit its block or its schema");
      }
    }
    if (data.left() != 0) return bad("a block holds more than its records");
  }
  return {};
}

// ---- reading the records with Avro C -------------------------------------------------------

// One file open in Avro C, its records read one at a time into a generic value of the writer's
// schema.
class AvroFile {
 public:
  AvroFile() = default;
  AvroFile(const AvroFile&) = delete;
  AvroFile& operator=(const AvroFile&) = delete;
  ~AvroFile() {
    if (hasValue_) avro_value_decref(&value_);
    if (iface_) avro_value_iface_decref(iface_);
    if (schema_) avro_schema_decref(schema_);
    if (reader_) avro_file_reader_close(reader_);  // closes the FILE too
  }

  Res<void> open(ByteView avro) {
    // fmemopen only reads through the pointer ("rb").
    FILE* fp = fmemopen(const_cast<std::uint8_t*>(avro.data()), avro.size(), "rb");
    if (!fp) return bad("cannot be opened in memory");
    if (avro_file_reader_fp(fp, "iceberg", 1, &reader_) != 0) {
      reader_ = nullptr;
      return bad(std::string("header: ") + avro_strerror());
    }
    // A new reference (avro_schema_incref in datafile.c): released with this object.
    schema_ = avro_file_reader_get_writer_schema(reader_);
    if (!schema_ || avro_typeof(schema_) != AVRO_RECORD) {
      return bad("records are not Avro records");
    }
    iface_ = avro_generic_class_from_schema(schema_);
    if (!iface_) return bad(std::string("schema: ") + avro_strerror());
    if (avro_generic_value_new(iface_, &value_) != 0) return bad("schema: no value");
    hasValue_ = true;
    return {};
  }

  // The next record, or nullptr after the last.
  Res<avro_value_t*> next() {
    avro_value_reset(&value_);
    const int rc = avro_file_reader_read_value(reader_, &value_);
    if (rc == EOF) return static_cast<avro_value_t*>(nullptr);
    if (rc != 0) return bad(std::string("record: ") + avro_strerror());
    return &value_;
  }

 private:
  avro_file_reader_t reader_ = nullptr;
  avro_schema_t schema_ = nullptr;
  avro_value_iface_t* iface_ = nullptr;
  avro_value_t value_{};
  bool hasValue_ = false;
};

// The field `name` of `record`, through a union's current branch; nullopt when it is absent or
// null.
std::optional<avro_value_t> field(avro_value_t& record, const char* name) {
  avro_value_t f;
  if (avro_value_get_by_name(&record, name, &f, nullptr) != 0) return std::nullopt;
  if (avro_value_get_type(&f) == AVRO_UNION) {
    avro_value_t branch;
    if (avro_value_get_current_branch(&f, &branch) != 0) return std::nullopt;
    f = branch;
  }
  if (avro_value_get_type(&f) == AVRO_NULL) return std::nullopt;
  return f;
}

Res<std::string> stringField(avro_value_t& record, const char* name) {
  auto f = field(record, name);
  if (!f || avro_value_get_type(&*f) != AVRO_STRING) return bad(std::string(name) + " missing");
  const char* s = nullptr;
  std::size_t size = 0;  // with the terminating NUL
  if (avro_value_get_string(&*f, &s, &size) != 0 || !s || size == 0) {
    return bad(std::string(name) + " unreadable");
  }
  std::string out(s, size - 1);
  if (out.empty() || out.size() > kMaxFilePathBytes || out.find('\0') != std::string::npos) {
    return bad(std::string(name) + " empty, longer than 4096 bytes or with a NUL");
  }
  return out;
}

// An int or long field; `fallback` when the field is absent (nullopt: then it is required).
Res<std::int64_t> numberField(avro_value_t& record, const char* name,
                              std::optional<std::int64_t> fallback = std::nullopt) {
  auto f = field(record, name);
  if (!f) {
    if (fallback) return *fallback;
    return bad(std::string(name) + " missing");
  }
  if (avro_value_get_type(&*f) == AVRO_INT32) {
    std::int32_t v = 0;
    if (avro_value_get_int(&*f, &v) != 0) return bad(std::string(name) + " unreadable");
    return std::int64_t{v};
  }
  if (avro_value_get_type(&*f) == AVRO_INT64) {
    std::int64_t v = 0;
    if (avro_value_get_long(&*f, &v) != 0) return bad(std::string(name) + " unreadable");
    return v;
  }
  return bad(std::string(name) + " is not a number");
}

template <class Entry, class Read>
Res<std::vector<Entry>> readAll(ByteView avro, Read read) {
  CAIRN_TRY(checkFraming(avro));
  AvroFile file;
  CAIRN_TRY(file.open(avro));
  std::vector<Entry> out;
  for (;;) {
    auto record = file.next();
    if (!record) return failureOf(record);
    if (!*record) break;
    if (out.size() == kMaxAvroEntries) return bad("more than 1,000,000 records");
    auto entry = read(**record);
    if (!entry) return failureOf(entry);
    out.push_back(std::move(*entry));
  }
  return out;
}

}  // namespace

Res<std::vector<ManifestFileEntry>> readManifestList(ByteView avro) {
  return readAll<ManifestFileEntry>(avro, [](avro_value_t& r) -> Res<ManifestFileEntry> {
    ManifestFileEntry e;
    CAIRN_ASSIGN(e.path, stringField(r, "manifest_path"));
    CAIRN_ASSIGN(e.length, numberField(r, "manifest_length"));
    std::int64_t content = 0;
    CAIRN_ASSIGN(content, numberField(r, "content", 0));
    if (e.length <= 0 || std::uint64_t(e.length) > kMaxAvroFileBytes) {
      return bad("manifest_length not in 1..64 MiB");
    }
    if (content != 0 && content != 1) return bad("manifest content not 0 or 1");
    e.content = static_cast<std::int32_t>(content);
    return e;
  });
}

Res<std::vector<ManifestEntry>> readManifest(ByteView avro) {
  return readAll<ManifestEntry>(avro, [](avro_value_t& r) -> Res<ManifestEntry> {
    ManifestEntry e;
    std::int64_t status = 0;
    CAIRN_ASSIGN(status, numberField(r, "status"));
    if (status < 0 || status > 2) return bad("entry status not 0, 1 or 2");
    e.status = static_cast<std::int32_t>(status);
    auto file = field(r, "data_file");
    if (!file || avro_value_get_type(&*file) != AVRO_RECORD) return bad("data_file missing");
    CAIRN_ASSIGN(e.path, stringField(*file, "file_path"));
    CAIRN_ASSIGN(e.sizeBytes, numberField(*file, "file_size_in_bytes"));
    std::int64_t content = 0;
    CAIRN_ASSIGN(content, numberField(*file, "content", 0));
    if (e.sizeBytes < 0) return bad("file_size_in_bytes negative");
    if (content < 0 || content > 2) return bad("data_file content not 0, 1 or 2");
    e.content = static_cast<std::int32_t>(content);
    return e;
  });
}

}  // namespace cairn::catalog
