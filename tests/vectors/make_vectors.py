#!/usr/bin/env python3
"""Independent test vectors for cairn's formats (docs/formats.md).

This is a second implementation of docs/formats.md that shares nothing with the C++ code:
Python 3.11 standard library only, CRC32C written here as a table CRC. It builds journals,
frames, segment objects, canonical manifests, 256-byte heads and publisher state files, checks
every vector with its own reference decoder and pure checks, and writes them as C++ literals.

Usage:
  make_vectors.py                 regenerate tests/vectors/vectors.inc (next to this script)
  make_vectors.py --stdout        print the generated vectors.inc
  make_vectors.py --check         regenerate in memory; exit 1 (with a diff) if the committed
                                  vectors.inc differs, 0 otherwise (CTest: vectors.regenerate)
  make_vectors.py --emit-dir DIR  write every head image as DIR/NAME.bin, plus NAME.json (the
                                  exact `cairn head decode --json` output) for valid images or
                                  NAME.err (the expected error code name) for invalid ones

Everything is deterministic: fixed UUIDs, fixed records, no randomness, no clock.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import difflib
import hashlib
import json
import os
import struct
import sys
import zlib

# ---------------------------------------------------------------------------------------------
# Limits (docs/formats.md, "Limits")

MAX_DATABASE_ID_UNITS = 32_768
MIN_JOURNAL_HEADER_BYTES = 22
MAX_JOURNAL_HEADER_BYTES = 65_556
FRAME_OVERHEAD = 16
CRASH_BLOCK = 512  # kCrashBlockBytes: a block of a batch either reached the disk or reads as zeros
MAX_PAYLOAD = 16 * 1024 * 1024
MAX_PREFIX_FRAMES = 268_435_456
MAX_PREFIX_BYTES = (1 << 53) - 1
MAX_MANIFEST_BYTES = 1 << 20
SEGMENT_HEADER_BYTES = 76
MAX_SEGMENT_BODY = 256 * 1024 * 1024
MAX_GENERATION = (1 << 53) - 1
INT64_MAX = (1 << 63) - 1
HEAD_BYTES = 256
HEAD_FOOTER_OFFSET = 224

JOURNAL_MAGIC = b"CAIRNJNL"
SEGMENT_MAGIC = b"CAIRNSEG"
HEAD_MAGIC = bytes.fromhex("4d52444e48454144")  # "MRDNHEAD"
ZERO32 = bytes(32)
NIL_UUID = bytes(16)

# ---------------------------------------------------------------------------------------------
# CRC32C (Castagnoli), reflected polynomial 0x82F63B78, init and final xor 0xFFFFFFFF, unmasked.


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    """crc32c(b, crc32c(a)) == crc32c(a + b)."""
    c = crc ^ 0xFFFFFFFF
    for b in data:
        c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def uuid_bytes(text: str) -> bytes:
    assert len(text) == 36 and text == text.lower()
    parts = text.split("-")
    assert [len(p) for p in parts] == [8, 4, 4, 4, 12]
    return bytes.fromhex("".join(parts))


def uuid_text(raw: bytes) -> str:
    h = raw.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


class VectorError(Exception):
    """A reference check failed: `code` is the cairn error code name, `step` the §4 step."""

    def __init__(self, code: str, why: str, step: int = 0):
        super().__init__(f"{code}: {why}")
        self.code = code
        self.why = why
        self.step = step


# ---------------------------------------------------------------------------------------------
# Journal (docs/formats.md §1)


def encode_journal_header(units: list[int]) -> bytes:
    if not 1 <= len(units) <= MAX_DATABASE_ID_UNITS:
        raise VectorError("usage", "database id must have 1..32768 code units")
    assert all(0 <= u <= 0xFFFF for u in units)
    body = JOURNAL_MAGIC + struct.pack(">II", 1, len(units))
    body += b"".join(struct.pack(">H", u) for u in units)
    return body + struct.pack(">I", crc32c(body))


def journal_header_length(first16: bytes) -> int:
    if len(first16) < 16:
        raise VectorError("format", "fewer than 16 bytes")
    if first16[0:8] != JOURNAL_MAGIC:
        raise VectorError("format", "magic")
    version, n = struct.unpack(">II", first16[8:16])
    if version != 1:
        raise VectorError("format", "version")
    if not 1 <= n <= MAX_DATABASE_ID_UNITS:
        raise VectorError("format", "unit count")
    return 20 + 2 * n


def decode_journal_header(data: bytes) -> tuple[list[int], bytes]:
    """Returns (code units, exact header bytes); `data` may continue with frames."""
    length = journal_header_length(data[:16])
    if len(data) < length:
        raise VectorError("format", "truncated header")
    n = (length - 20) // 2
    units = list(struct.unpack(f">{n}H", data[16 : 16 + 2 * n]))
    (crc,) = struct.unpack(">I", data[16 + 2 * n : length])
    if crc != crc32c(data[: 16 + 2 * n]):
        raise VectorError("format", "header CRC")
    return units, bytes(data[:length])


def lineage_id(header: bytes) -> bytes:
    _, exact = decode_journal_header(header)
    if exact != header:
        raise VectorError("format", "trailing bytes after the header")
    return sha256(header)


def encode_frame(sequence: int, payload: bytes) -> bytes:
    assert 0 <= len(payload) <= MAX_PAYLOAD and sequence >= 1
    head = struct.pack(">IQ", len(payload), sequence) + payload
    return head + struct.pack(">I", crc32c(head))


def scan_frames(body: bytes, first_sequence: int) -> int:
    """Checks that `body` is exactly whole frames first_sequence, +1, ...; returns the count."""
    pos, seq = 0, first_sequence
    while pos < len(body):
        if len(body) - pos < 12:
            raise VectorError("format", f"torn frame header at {pos}")
        p, s = struct.unpack(">IQ", body[pos : pos + 12])
        if p > MAX_PAYLOAD:
            raise VectorError("format", f"payload cap at {pos}")
        if s != seq:
            raise VectorError("format", f"sequence at {pos}")
        end = pos + 12 + p + 4
        if end > len(body):
            raise VectorError("format", f"torn frame at {pos}")
        (crc,) = struct.unpack(">I", body[end - 4 : end])
        if crc != crc32c(body[pos : end - 4]):
            raise VectorError("format", f"frame CRC at {pos}")
        pos, seq = end, seq + 1
    return seq - first_sequence


@dataclasses.dataclass
class Journal:
    units: list[int]
    records: list[bytes]
    header: bytes = b""
    data: bytes = b""
    ends: list[int] = dataclasses.field(default_factory=list)  # ends[s] = end of prefix s

    def __post_init__(self) -> None:
        self.header = encode_journal_header(self.units)
        self.data = self.header
        self.ends = [len(self.header)]
        for i, r in enumerate(self.records):
            self.data += encode_frame(i + 1, r)
            self.ends.append(len(self.data))

    @property
    def lineage(self) -> bytes:
        return sha256(self.header)

    def prefix(self, s: int) -> tuple[int, bytes]:
        """(length, SHA-256) of the prefix at sequence s."""
        return self.ends[s], sha256(self.data[: self.ends[s]])

    def frame_range(self, first: int, count: int) -> tuple[int, int]:
        return self.ends[first - 1], self.ends[first - 1 + count]


# ---------------------------------------------------------------------------------------------
# Segment object (docs/formats.md §2)


@dataclasses.dataclass(frozen=True)
class SegmentHeader:
    lineage: bytes
    first: int
    count: int
    start: int
    end: int


def segment_header_bytes(h: SegmentHeader, crc: int | None = None, magic: bytes = SEGMENT_MAGIC,
                         version: int = 1) -> bytes:
    body = magic + struct.pack(">I32sQIQQ", version, h.lineage, h.first, h.count, h.start, h.end)
    assert len(body) == 72
    return body + struct.pack(">I", crc32c(body) if crc is None else crc)


def validate_segment_header(h: SegmentHeader) -> None:
    if h.first < 1:
        raise VectorError("format", "first sequence 0")
    if h.count < 1:
        raise VectorError("format", "count 0")
    if h.first + h.count - 1 > MAX_PREFIX_FRAMES:
        raise VectorError("format", "last sequence above the frame cap")
    if not MIN_JOURNAL_HEADER_BYTES <= h.start < h.end <= MAX_PREFIX_BYTES:
        raise VectorError("format", "journal range")
    if h.end - h.start < FRAME_OVERHEAD * h.count:
        raise VectorError("format", "range shorter than count frames")
    if h.end - h.start > MAX_SEGMENT_BODY:
        raise VectorError("format", "body above 256 MiB")


def decode_segment_header(first76: bytes) -> SegmentHeader:
    if len(first76) < SEGMENT_HEADER_BYTES:
        raise VectorError("format", "short segment header")
    if first76[0:8] != SEGMENT_MAGIC:
        raise VectorError("format", "segment magic")
    version, lineage, first, count, start, end = struct.unpack(">I32sQIQQ", first76[8:72])
    if version != 1:
        raise VectorError("format", "segment version")
    (crc,) = struct.unpack(">I", first76[72:76])
    if crc != crc32c(first76[:72]):
        raise VectorError("format", "segment header CRC")
    h = SegmentHeader(lineage, first, count, start, end)
    validate_segment_header(h)
    return h


def encode_segment(h: SegmentHeader, body: bytes) -> bytes:
    validate_segment_header(h)
    assert len(body) == h.end - h.start and scan_frames(body, h.first) == h.count
    return segment_header_bytes(h) + body


def decode_segment(obj: bytes) -> SegmentHeader:
    h = decode_segment_header(obj[:SEGMENT_HEADER_BYTES])
    if len(obj) != SEGMENT_HEADER_BYTES + (h.end - h.start):
        raise VectorError("format", "object length differs from the header's range")
    if scan_frames(obj[SEGMENT_HEADER_BYTES:], h.first) != h.count:
        raise VectorError("format", "frame count")
    return h


def make_segment(j: Journal, first: int, count: int) -> tuple[SegmentHeader, bytes]:
    start, end = j.frame_range(first, count)
    h = SegmentHeader(j.lineage, first, count, start, end)
    return h, encode_segment(h, j.data[start:end])


# ---------------------------------------------------------------------------------------------
# Manifest (docs/formats.md §3): RFC 8785 canonical JSON restricted to this schema.


def jcs(value) -> str:
    """Canonical JSON for our schema: dicts with ASCII keys, lists, non-negative ints, and
    strings that need no escape."""
    if isinstance(value, bool):
        raise TypeError("no booleans in the manifest schema")
    if isinstance(value, int):
        assert value >= 0
        return str(value)
    if isinstance(value, str):
        assert all(0x20 <= ord(c) < 0x7F and c not in '"\\' for c in value)
        return '"' + value + '"'
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value)  # all keys ASCII: code point order == UTF-16 order
        return "{" + ",".join(jcs(k) + ":" + jcs(value[k]) for k in keys) + "}"
    raise TypeError(type(value))


@dataclasses.dataclass
class MSeg:
    first: int
    count: int
    start: int
    end: int
    object_length: int
    object_sha256: bytes


@dataclasses.dataclass
class MBase:
    """Format 2: the manifest this one extends (docs/formats.md §3.1)."""
    sha256: bytes
    length: int
    prefix_sequence: int
    prefix_length: int
    prefix_sha256: bytes


@dataclasses.dataclass
class Manifest:
    generation: int
    journal_header: bytes
    lineage: bytes
    prefix_sequence: int
    prefix_length: int
    prefix_sha256: bytes
    segments: list[MSeg]
    base: MBase | None = None

    def to_value(self) -> dict:
        v = self._value()
        if self.base is not None:
            b = self.base
            v["base"] = {
                "length": b.length,
                "prefix": {"length": b.prefix_length, "sequence": b.prefix_sequence,
                           "sha256": b.prefix_sha256.hex()},
                "sha256": b.sha256.hex(),
            }
        return v

    def _value(self) -> dict:
        return {
            "format": 1 if self.base is None else 2,
            "generation": self.generation,
            "journal_header": base64.b64encode(self.journal_header).decode("ascii"),
            "lineage": self.lineage.hex(),
            "prefix": {
                "length": self.prefix_length,
                "sequence": self.prefix_sequence,
                "sha256": self.prefix_sha256.hex(),
            },
            "segments": [
                {
                    "count": s.count,
                    "first_sequence": s.first,
                    "journal_end": s.end,
                    "journal_start": s.start,
                    "object_length": s.object_length,
                    "object_sha256": s.object_sha256.hex(),
                }
                for s in self.segments
            ],
        }


def validate_manifest(m: Manifest) -> None:
    if not 1 <= m.generation <= MAX_GENERATION:
        raise VectorError("format", "generation")
    header_len = len(m.journal_header)
    if lineage_id(m.journal_header) != m.lineage:
        raise VectorError("format", "lineage is not SHA-256 of journal_header")
    if not 0 <= m.prefix_sequence <= MAX_PREFIX_FRAMES:
        raise VectorError("format", "prefix sequence")
    if m.prefix_length > MAX_PREFIX_BYTES:
        raise VectorError("format", "prefix length")
    pos, seq = header_len, 1
    if m.base is not None:
        b = m.base
        if not 1 <= b.length <= MAX_MANIFEST_BYTES:
            raise VectorError("format", "base length")
        if b.prefix_sequence > MAX_PREFIX_FRAMES:
            raise VectorError("format", "base prefix sequence")
        if not header_len <= b.prefix_length <= MAX_PREFIX_BYTES:
            raise VectorError("format", "base prefix length")
        if b.prefix_sequence == 0 and (b.prefix_length != header_len
                                       or b.prefix_sha256 != m.lineage):
            raise VectorError("format", "empty base prefix is not the header")
        if not m.segments:
            raise VectorError("format", "chained manifest without segments")
        pos, seq = b.prefix_length, b.prefix_sequence + 1
    for s in m.segments:
        validate_segment_header(SegmentHeader(m.lineage, s.first, s.count, s.start, s.end))
        if s.start != pos or s.first != seq:
            raise VectorError("format", "segments do not tile")
        if s.object_length != SEGMENT_HEADER_BYTES + (s.end - s.start):
            raise VectorError("format", "object length")
        pos, seq = s.end, s.first + s.count
    if pos != m.prefix_length:
        raise VectorError("format", "segments do not end at the prefix length")
    if seq - 1 != m.prefix_sequence:
        raise VectorError("format", "prefix sequence is not the sum of counts")
    if not m.segments and m.prefix_sha256 != m.lineage:
        raise VectorError("format", "empty prefix hash is not the lineage")


def encode_manifest(m: Manifest) -> bytes:
    validate_manifest(m)
    out = jcs(m.to_value()).encode("ascii")
    assert len(out) <= MAX_MANIFEST_BYTES
    return out


def _hex32(v) -> bytes:
    if not isinstance(v, str) or len(v) != 64 or any(c not in "0123456789abcdef" for c in v):
        raise VectorError("format", "not 64 lowercase hex digits")
    return bytes.fromhex(v)


def _uint(v) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise VectorError("format", "not an unsigned integer")
    return v


def decode_manifest(data: bytes) -> Manifest:
    """Reference decoder: parse, rebuild the typed value, re-encode, require identical bytes."""
    if len(data) > MAX_MANIFEST_BYTES:
        raise VectorError("format", "manifest above 1 MiB")

    def no_dupes(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise VectorError("format", "duplicate key")
        return dict(pairs)

    try:
        text = data.decode("utf-8")
        v = json.loads(text, object_pairs_hook=no_dupes, parse_float=lambda s: float(s),
                       parse_constant=lambda s: float(s))
    except (UnicodeDecodeError, ValueError) as e:
        raise VectorError("format", f"not JSON: {e}") from None
    try:
        keys = {"format", "generation", "journal_header", "lineage", "prefix", "segments"}
        if not isinstance(v, dict) or set(v) - {"base"} != keys:
            raise VectorError("format", "keys")
        base = None
        if "base" in v:
            b = v["base"]
            if not isinstance(b, dict) or set(b) != {"length", "prefix", "sha256"}:
                raise VectorError("format", "base keys")
            bp = b["prefix"]
            if not isinstance(bp, dict) or set(bp) != {"length", "sequence", "sha256"}:
                raise VectorError("format", "base prefix keys")
            base = MBase(_hex32(b["sha256"]), _uint(b["length"]), _uint(bp["sequence"]),
                         _uint(bp["length"]), _hex32(bp["sha256"]))
        if _uint(v["format"]) != (1 if base is None else 2):
            raise VectorError("format", "format version")
        jh_text = v["journal_header"]
        if not isinstance(jh_text, str):
            raise VectorError("format", "journal_header")
        jh = base64.b64decode(jh_text, validate=True)
        if base64.b64encode(jh).decode("ascii") != jh_text:
            raise VectorError("format", "non-canonical base64")
        p = v["prefix"]
        if not isinstance(p, dict) or set(p) != {"length", "sequence", "sha256"}:
            raise VectorError("format", "prefix keys")
        segs = []
        if not isinstance(v["segments"], list):
            raise VectorError("format", "segments")
        for s in v["segments"]:
            if not isinstance(s, dict) or set(s) != {"count", "first_sequence", "journal_end",
                                                     "journal_start", "object_length",
                                                     "object_sha256"}:
                raise VectorError("format", "segment keys")
            segs.append(MSeg(_uint(s["first_sequence"]), _uint(s["count"]),
                             _uint(s["journal_start"]), _uint(s["journal_end"]),
                             _uint(s["object_length"]), _hex32(s["object_sha256"])))
        m = Manifest(_uint(v["generation"]), jh, _hex32(v["lineage"]), _uint(p["sequence"]),
                     _uint(p["length"]), _hex32(p["sha256"]), segs, base)
    except (ValueError, TypeError, KeyError) as e:  # binascii.Error is a ValueError
        raise VectorError("format", f"schema: {e}") from None
    if encode_manifest(m) != data:
        raise VectorError("format", "not canonical")
    return m


# ---------------------------------------------------------------------------------------------
# Head (docs/formats.md §4)


@dataclasses.dataclass(frozen=True)
class HeadFields:
    ns: bytes
    publisher: bytes
    publication: bytes
    lineage: bytes
    revision: int
    manifest_sha256: bytes
    manifest_length: int
    prefix_sequence: int
    prefix_length: int
    prefix_sha256: bytes
    predecessor: bytes | None  # id of the previous image (length 256), None when absent


@dataclasses.dataclass(frozen=True)
class RawHead:
    """Every stored field, including the ones a canonical encoder derives."""
    magic: bytes
    version: int
    flags: int
    ns: bytes
    publisher: bytes
    publication: bytes
    lineage: bytes
    revision: int
    manifest_sha256: bytes
    manifest_length: int
    prefix_sequence: int
    prefix_length: int
    prefix_sha256: bytes
    predecessor_sha256: bytes
    predecessor_length: int
    footer: bytes | None = None  # None: the correct SHA-256 of bytes [0, 224)


HEAD_LAYOUT = ">8sII16s16s16s32sQ32sIQQ32s32sI"
assert struct.calcsize(HEAD_LAYOUT) == HEAD_FOOTER_OFFSET


def raw_from_fields(f: HeadFields) -> RawHead:
    return RawHead(HEAD_MAGIC, 1, 0 if f.predecessor is None else 1, f.ns, f.publisher,
                   f.publication, f.lineage, f.revision, f.manifest_sha256, f.manifest_length,
                   f.prefix_sequence, f.prefix_length, f.prefix_sha256,
                   ZERO32 if f.predecessor is None else f.predecessor,
                   0 if f.predecessor is None else HEAD_BYTES)


def pack_head(r: RawHead) -> bytes:
    body = struct.pack(HEAD_LAYOUT, r.magic, r.version, r.flags, r.ns, r.publisher,
                       r.publication, r.lineage, r.revision, r.manifest_sha256,
                       r.manifest_length, r.prefix_sequence, r.prefix_length, r.prefix_sha256,
                       r.predecessor_sha256, r.predecessor_length)
    image = body + (sha256(body) if r.footer is None else r.footer)
    assert len(image) == HEAD_BYTES
    return image


@dataclasses.dataclass(frozen=True)
class Head:
    image: bytes
    fields: HeadFields

    @property
    def id(self) -> bytes:
        return sha256(self.image)

    @property
    def footer(self) -> bytes:
        return self.image[HEAD_FOOTER_OFFSET:]


def decode_head(image: bytes, expected: tuple[bytes, int] | None = None) -> Head:
    """Reference decoder: the checks of docs/formats.md §4 in their order."""

    def fail(step: int, why: str, code: str = "format"):
        raise VectorError(code, why, step)

    if len(image) != HEAD_BYTES:
        fail(1, f"length {len(image)} is not 256")
    (magic, version, flags, ns, publisher, publication, lineage, revision, msha, mlen, pseq,
     plen, psha, pred_sha, pred_len) = struct.unpack(HEAD_LAYOUT, image[:HEAD_FOOTER_OFFSET])
    if magic != HEAD_MAGIC:
        fail(2, "magic")
    if version != 1:
        fail(2, f"version {version}")
    if flags not in (0, 1):
        fail(2, f"flags {flags:#x}")
    if sha256(image[:HEAD_FOOTER_OFFSET]) != image[HEAD_FOOTER_OFFSET:]:
        fail(3, "footer is not SHA-256 of bytes [0, 224)")
    for name, u in (("namespace", ns), ("publisher", publisher), ("publication", publication)):
        if u == NIL_UUID:
            fail(4, f"nil {name} UUID")
    if not 1 <= revision <= INT64_MAX:
        fail(5, f"revision {revision}")
    if not 1 <= mlen <= MAX_MANIFEST_BYTES:
        fail(6, f"manifest length {mlen}")
    if not 0 <= pseq <= MAX_PREFIX_FRAMES:
        fail(7, f"prefix sequence {pseq}")
    # pseq <= 2^28 here, so 22 + 16 * pseq cannot overflow a u64.
    if plen < MIN_JOURNAL_HEADER_BYTES + FRAME_OVERHEAD * pseq or plen > MAX_PREFIX_BYTES:
        fail(8, f"prefix length {plen} for sequence {pseq}")
    if pseq == 0 and plen > MAX_JOURNAL_HEADER_BYTES:
        fail(8, "empty prefix longer than the largest header")
    if pseq == 0 and psha != lineage:
        fail(8, "empty prefix hash is not the lineage id")
    if flags == 0:
        if revision != 1:
            fail(9, "flags 0 at revision > 1")
        if pred_sha != ZERO32 or pred_len != 0:
            fail(9, "non-canonical absent predecessor")
    else:
        if revision < 2:
            fail(9, "flags 1 at revision 1")
        if pred_len != HEAD_BYTES:
            fail(9, f"predecessor length {pred_len}")
    head = Head(bytes(image), HeadFields(ns, publisher, publication, lineage, revision, msha,
                                         mlen, pseq, plen, psha,
                                         None if flags == 0 else pred_sha))
    if expected is not None and (expected[0] != head.id or expected[1] != HEAD_BYTES):
        fail(10, "not the expected reference", "reference")
    return head


def make_head(f: HeadFields) -> Head:
    """Canonical encoder: the image must pass the reference decoder."""
    image = pack_head(raw_from_fields(f))
    h = decode_head(image)
    assert h.fields == f
    return h


# Pure checks (docs/formats.md §4, "Pure checks")


def require_binding(h: Head, ns: bytes, publisher: bytes, lineage: bytes) -> None:
    f = h.fields
    if f.ns != ns or f.publisher != publisher or f.lineage != lineage:
        raise VectorError("binding", "binding differs")


def require_successor(prev: Head, nxt: Head) -> None:
    p, n = prev.fields, nxt.fields

    def fail(why: str):
        raise VectorError("transition", why)

    if p.revision >= INT64_MAX:
        fail("previous revision cannot advance")
    if n.revision != p.revision + 1:
        fail("revision is not previous + 1")
    if (n.ns, n.publisher, n.lineage) != (p.ns, p.publisher, p.lineage):
        fail("bindings differ")
    if n.publication == p.publication:
        fail("same publication")
    if n.predecessor != prev.id:
        fail("predecessor is not the previous image")
    if n.prefix_sequence < p.prefix_sequence:
        fail("prefix sequence went back")
    if n.prefix_sequence == p.prefix_sequence:
        if (n.prefix_length, n.prefix_sha256) != (p.prefix_length, p.prefix_sha256):
            fail("unchanged cutoff with a different length or hash")
    else:
        if n.prefix_length < p.prefix_length or (
                n.prefix_length - p.prefix_length
                < FRAME_OVERHEAD * (n.prefix_sequence - p.prefix_sequence)):
            fail("larger cutoff without room for the new frames")


def bind_manifest(h: Head, data: bytes) -> Manifest:
    f = h.fields
    if len(data) != f.manifest_length or sha256(data) != f.manifest_sha256:
        raise VectorError("manifest", "manifest length or hash differs")
    try:
        m = decode_manifest(data)
    except VectorError as e:
        raise VectorError("manifest", f"manifest does not decode: {e.why}") from None
    if m.lineage != f.lineage:
        raise VectorError("manifest", "lineage differs")
    if (m.prefix_sequence, m.prefix_length, m.prefix_sha256) != (
            f.prefix_sequence, f.prefix_length, f.prefix_sha256):
        raise VectorError("manifest", "prefix differs")
    return m


def outcome(fn, *args) -> str:
    """'' for success, else the error code name."""
    try:
        fn(*args)
        return ""
    except VectorError as e:
        return e.code


def head_json(h: Head) -> dict:
    """The exact `cairn head decode --json` object."""
    f = h.fields
    return {
        "namespace": uuid_text(f.ns),
        "publisher": uuid_text(f.publisher),
        "publication": uuid_text(f.publication),
        "lineage": f.lineage.hex(),
        "revision": f.revision,
        "manifest_sha256": f.manifest_sha256.hex(),
        "manifest_length": f.manifest_length,
        "prefix_sequence": f.prefix_sequence,
        "prefix_length": f.prefix_length,
        "prefix_sha256": f.prefix_sha256.hex(),
        "predecessor_sha256": (ZERO32 if f.predecessor is None else f.predecessor).hex(),
        "predecessor_length": 0 if f.predecessor is None else HEAD_BYTES,
        "id": h.id.hex(),
        "footer": h.footer.hex(),
    }


# ---------------------------------------------------------------------------------------------
# Publisher state (docs/formats.md §5): one small local file, CRC32C-sealed, with up to two heads.

PST_MAGIC = b"CAIRNPST"
PST_FIXED = 82  # magic, version, flags, namespace, publisher, lineage, URL length
MAX_STORE_URL = 4096
MAX_ETAG = 1024
MAX_PST_BYTES = PST_FIXED + MAX_STORE_URL + HEAD_BYTES + 2 + MAX_ETAG + HEAD_BYTES + 1 + 2 \
    + MAX_ETAG + 4
IF_NONE_MATCH = 1
IF_MATCH = 2
PST_HAS_EXPECTED = 1
PST_HAS_PENDING = 2


def is_strong_etag(tag: bytes) -> bool:
    """RFC 9110 entity-tag without W/: DQUOTE *etagc DQUOTE, etagc = 21 / 23-7E / 80-FF."""
    if len(tag) < 2 or len(tag) > MAX_ETAG or tag[:1] != b'"' or tag[-1:] != b'"':
        return False
    return all(c == 0x21 or 0x23 <= c <= 0x7E or c >= 0x80 for c in tag[1:-1])


@dataclasses.dataclass(frozen=True)
class Expected:
    image: bytes  # a 256-byte head image
    etag: bytes   # exactly as the store returned it


@dataclasses.dataclass(frozen=True)
class Intent:
    image: bytes       # the candidate head image
    precondition: int  # 1 If-None-Match, 2 If-Match (anything else is refused)
    etag: bytes        # If-Match only


@dataclasses.dataclass(frozen=True)
class PublisherState:
    store_url: bytes
    ns: bytes
    publisher: bytes
    lineage: bytes
    expected: Expected | None = None
    pending: Intent | None = None


def check_publisher_state(s: PublisherState) -> None:
    """Every rule on a typed state: all `format` rules, then bindings, then the transition."""

    def fail(why: str):
        raise VectorError("format", why)

    if not 1 <= len(s.store_url) <= MAX_STORE_URL:
        fail(f"store URL length {len(s.store_url)}")
    if any(c < 0x21 or c > 0x7E for c in s.store_url):
        fail("store URL byte outside 0x21..0x7e")
    if s.ns == NIL_UUID:
        fail("nil namespace")
    if s.publisher == NIL_UUID:
        fail("nil publisher")
    if s.expected is not None and not is_strong_etag(s.expected.etag):
        fail("expected ETag is not one strong entity tag")
    prev = cand = None
    if s.expected is not None:
        prev = decode_head(s.expected.image)
    if s.pending is not None:
        p = s.pending
        if p.precondition == IF_NONE_MATCH:
            if p.etag:
                fail("If-None-Match with an ETag")
        elif p.precondition == IF_MATCH:
            if not is_strong_etag(p.etag):
                fail("If-Match without one strong entity tag")
        else:
            fail(f"precondition {p.precondition}")
        cand = decode_head(p.image)
        if prev is None and (cand.fields.revision != 1 or p.precondition != IF_NONE_MATCH):
            fail("without an expected head only a revision 1 If-None-Match intent is valid")
        if prev is not None and p.precondition != IF_MATCH:
            fail("with an expected head the intent must be If-Match")
    for h in (prev, cand):
        if h is not None:
            require_binding(h, s.ns, s.publisher, s.lineage)
    if prev is not None and cand is not None:
        require_successor(prev, cand)


def pack_publisher_state(s: PublisherState, magic: bytes = PST_MAGIC, version: int = 1,
                         flags: int | None = None, url_length: int | None = None,
                         etag_length: int | None = None,
                         pending_etag_length: int | None = None) -> bytes:
    """The bytes of `s` without any check; the keyword arguments override stored fields."""
    if flags is None:
        flags = (PST_HAS_EXPECTED if s.expected else 0) | (PST_HAS_PENDING if s.pending else 0)
    u = len(s.store_url) if url_length is None else url_length
    body = magic + struct.pack(">II16s16s32sH", version, flags, s.ns, s.publisher, s.lineage, u)
    body += s.store_url
    if s.expected is not None:
        e = len(s.expected.etag) if etag_length is None else etag_length
        body += s.expected.image + struct.pack(">H", e) + s.expected.etag
    if s.pending is not None:
        p = len(s.pending.etag) if pending_etag_length is None else pending_etag_length
        body += s.pending.image + struct.pack(">BH", s.pending.precondition, p) + s.pending.etag
    return seal(body)


def seal(body: bytes) -> bytes:
    return body + struct.pack(">I", crc32c(body))


def encode_publisher_state(s: PublisherState) -> bytes:
    check_publisher_state(s)
    data = pack_publisher_state(s)
    assert len(data) <= MAX_PST_BYTES
    return data


def decode_publisher_state(data: bytes) -> PublisherState:
    """Reference decoder: walk the layout, then exact length, CRC, and the typed rules."""
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        if n > len(data) - pos:
            raise VectorError("format", f"needs {n} bytes at {pos}, {len(data) - pos} left")
        pos += n
        return data[pos - n : pos]

    if take(8) != PST_MAGIC:
        raise VectorError("format", "magic")
    version, flags = struct.unpack(">II", take(8))
    if version != 1:
        raise VectorError("format", f"version {version}")
    if flags & ~(PST_HAS_EXPECTED | PST_HAS_PENDING):
        raise VectorError("format", f"flags {flags:#x}")
    ns, publisher, lineage, u = struct.unpack(">16s16s32sH", take(66))
    if not 1 <= u <= MAX_STORE_URL:
        raise VectorError("format", f"store URL length {u}")
    url = take(u)
    expected = pending = None
    if flags & PST_HAS_EXPECTED:
        image = take(HEAD_BYTES)
        (e,) = struct.unpack(">H", take(2))
        if not 1 <= e <= MAX_ETAG:
            raise VectorError("format", f"ETag length {e}")
        expected = Expected(image, take(e))
    if flags & PST_HAS_PENDING:
        image = take(HEAD_BYTES)
        precondition, p = struct.unpack(">BH", take(3))
        if p > MAX_ETAG:
            raise VectorError("format", f"precondition ETag length {p}")
        pending = Intent(image, precondition, take(p))
    body = data[:pos]
    (crc,) = struct.unpack(">I", take(4))
    if pos != len(data):
        raise VectorError("format", f"{len(data) - pos} bytes after the CRC")
    if crc != crc32c(body):
        raise VectorError("format", "CRC32C")
    s = PublisherState(url, ns, publisher, lineage, expected, pending)
    check_publisher_state(s)
    return s


# ---------------------------------------------------------------------------------------------
# Vacuum lease (docs/formats.md §6): 64 bytes, CRC32C-sealed; one applying vacuum at a time.

VLS_MAGIC = b"CAIRNVLS"
VACUUM_LEASE_BYTES = 64
MAX_VACUUM_LEASE_SECONDS = 3600
MAX_UNIX_SECONDS = (1 << 63) - 1


@dataclasses.dataclass(frozen=True)
class VacuumLease:
    ns: bytes
    holder: bytes
    written: int  # Unix seconds: when it was acquired or last renewed
    expires: int


def check_vacuum_lease(v: VacuumLease) -> None:
    def fail(why: str):
        raise VectorError("format", why)

    if v.ns == bytes(16):
        fail("the nil namespace")
    if v.holder == bytes(16):
        fail("the nil holder")
    if v.written > MAX_UNIX_SECONDS or v.expires > MAX_UNIX_SECONDS:
        fail("a time beyond 2^63 - 1")
    if v.expires <= v.written:
        fail("expires at or before it was written")
    if v.expires - v.written > MAX_VACUUM_LEASE_SECONDS:
        fail("a term over 3600 s")


def pack_vacuum_lease(v: VacuumLease, magic: bytes = VLS_MAGIC, version: int = 1,
                      crc: int | None = None) -> bytes:
    body = (magic + struct.pack(">I", version) + v.ns + v.holder +
            struct.pack(">QQ", v.written, v.expires))
    assert len(body) == VACUUM_LEASE_BYTES - 4
    return body + struct.pack(">I", crc32c(body) if crc is None else crc)


def encode_vacuum_lease(v: VacuumLease) -> bytes:
    check_vacuum_lease(v)
    return pack_vacuum_lease(v)


def decode_vacuum_lease(data: bytes) -> VacuumLease:
    def fail(why: str):
        raise VectorError("format", why)

    if len(data) != VACUUM_LEASE_BYTES:
        fail(f"{len(data)} bytes, not 64")
    if data[:8] != VLS_MAGIC:
        fail("magic")
    if struct.unpack(">I", data[8:12])[0] != 1:
        fail("version")
    if struct.unpack(">I", data[60:64])[0] != crc32c(data[:60]):
        fail("CRC32C")
    written, expires = struct.unpack(">QQ", data[44:60])
    v = VacuumLease(data[12:28], data[28:44], written, expires)
    check_vacuum_lease(v)
    return v


# ---------------------------------------------------------------------------------------------
# The vectors


NS = uuid_bytes("0b1e7f5c-3a9d-4c2e-8f61-2d4b6a8c0e13")
NS_OTHER = uuid_bytes("0b1e7f5c-3a9d-4c2e-8f61-2d4b6a8c0e14")
PUBLISHER = uuid_bytes("5eed1e55-7c3b-4a1f-9d2e-6b8c0a4f2e71")
PUBLISHER_OTHER = uuid_bytes("5eed1e55-7c3b-4a1f-9d2e-6b8c0a4f2e72")


# ---------------------------------------------------------------------------------------------
# Catalog log records (docs/formats.md §9): canonical JSON, keys sorted, no whitespace.

NAME_MAX = 255
NS_MAX_DEPTH = 8
IDEM_MAX = 128
PROP_KEY_MAX = 1024
PROP_VALUE_MAX = 65536
LOCATION_MAX = 2048
METADATA_MAX = 64 << 20


def record_json(v: dict) -> bytes:
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _check_name(n) -> None:
    if not isinstance(n, str) or not 1 <= len(n.encode()) <= NAME_MAX or n in (".", ".."):
        raise VectorError("format", "name")
    for ch in n:
        o = ord(ch)
        if o < 0x20 or o == 0x7F or 0x80 <= o <= 0x9F or ch in "/\\":
            raise VectorError("format", "name character")


def _check_ns(ns) -> None:
    if not isinstance(ns, list) or not 1 <= len(ns) <= NS_MAX_DEPTH:
        raise VectorError("format", "namespace depth")
    for level in ns:
        _check_name(level)


def _check_table(t) -> None:
    if not isinstance(t, dict) or set(t) != {"name", "namespace"}:
        raise VectorError("format", "table keys")
    _check_ns(t["namespace"])
    _check_name(t["name"])


def _check_props(p) -> None:
    if not isinstance(p, dict) or len(p) > 10000:
        raise VectorError("format", "properties")
    for k, v in p.items():
        if not 1 <= len(k.encode()) <= PROP_KEY_MAX or not isinstance(v, str) \
                or len(v.encode()) > PROP_VALUE_MAX:
            raise VectorError("format", "property")


def _check_location(loc) -> None:
    if not isinstance(loc, str) or not 1 <= len(loc.encode()) <= LOCATION_MAX \
            or any(ord(c) < 0x21 or ord(c) == 0x7F for c in loc):
        raise VectorError("format", "location")


def _check_uuid(u) -> None:
    if not isinstance(u, str) or len(u) != 36 or u == "00000000-0000-0000-0000-000000000000":
        raise VectorError("format", "uuid")
    try:
        uuid_bytes(u)
    except Exception:
        raise VectorError("format", "uuid") from None
    if u != u.lower():
        raise VectorError("format", "uuid case")


def _check_common(v: dict) -> None:
    t = v.get("time-ms")
    if not isinstance(t, int) or isinstance(t, bool) or not 0 <= t < (1 << 63):
        raise VectorError("format", "time-ms")
    if "idempotency-key" in v:
        k = v["idempotency-key"]
        if not isinstance(k, str) or not 1 <= len(k) <= IDEM_MAX \
                or any(not 0x21 <= ord(c) <= 0x7E for c in k):
            raise VectorError("format", "idempotency-key")
    if "request-sha256" in v:
        # The digest of the request the key binds: only beside a key.
        if "idempotency-key" not in v:
            raise VectorError("format", "request-sha256 without an idempotency-key")
        _hex32(v["request-sha256"])


# Members every record may carry: the request's Idempotency-Key and its digest.
COMMON_OPTIONAL = {"idempotency-key", "request-sha256"}

LAKE_KEYS = {
    "lake-created": {"lake"},
    "namespace-created": {"namespace", "properties"},
    "namespace-updated": {"namespace", "updates", "removals", "missing"},
    "namespace-dropped": {"namespace"},
    "table-registered": {"table", "table-uuid", "location"},
    "table-dropped": {"table", "table-uuid"},
    "table-renamed": {"from", "to", "table-uuid"},
    "lease-taken": {"lease-id", "table-uuid", "expires-ms"},
    "lease-released": {"lease-id"},
    "snapshot-protected": {"table-uuid", "snapshot-id"},
    "snapshot-unprotected": {"table-uuid", "snapshot-id"},
    "branch-created": {"branch", "branch-id"},
    "branch-dropped": {"branch", "branch-id"},
    "branch-forked": {"branch", "table-uuid", "log-uuid", "from-log-uuid", "from-revision",
                      "from-metadata-location"},
}
LAKE_OPTIONAL = {"lease-taken": {"snapshot-id", "prefix"}, "table-dropped": {"purge-location"},
                 "branch-created": {"parent", "expires-ms", "max-snapshot-age-ms",
                                    "min-snapshots-to-keep"},
                 "branch-forked": {"from-branch"}}


def _check_branch_name(b) -> None:
    if not isinstance(b, str) or not 1 <= len(b) <= 64 or b[0] in "-_" or b == "main" \
            or any(c not in "abcdefghijklmnopqrstuvwxyz0123456789-_" for c in b):
        raise VectorError("format", "branch name")


def _positive(v, what) -> None:
    if not isinstance(v, int) or isinstance(v, bool) or not 0 < v < (1 << 63):
        raise VectorError("format", what)


def check_branch_record(v: dict) -> None:
    t = v["type"]
    for k in ("branch", "parent", "from-branch"):
        if k in v:
            _check_branch_name(v[k])
    for k in ("branch-id", "log-uuid", "from-log-uuid"):
        if k in v:
            _check_uuid(v[k])
    for k in ("expires-ms", "max-snapshot-age-ms", "min-snapshots-to-keep", "from-revision"):
        if k in v:
            _positive(v[k], k)
    if t == "branch-created" and v.get("parent") == v["branch"]:
        raise VectorError("format", "a branch is its own parent")
    if t == "branch-forked":
        if v["log-uuid"] in (v["table-uuid"], v["from-log-uuid"]):
            raise VectorError("format", "a fork's log is a new one")
        _check_location(v["from-metadata-location"])


def _int64(v) -> None:
    if not isinstance(v, int) or isinstance(v, bool) or not -(1 << 63) <= v < (1 << 63):
        raise VectorError("format", "not a 64-bit integer")


def check_lake_record(v: dict) -> None:
    if not isinstance(v, dict) or v.get("type") not in LAKE_KEYS:
        raise VectorError("format", "type")
    want = LAKE_KEYS[v["type"]] | {"type", "time-ms"}
    if set(v) - COMMON_OPTIONAL - LAKE_OPTIONAL.get(v["type"], set()) != want:
        raise VectorError("format", "keys")
    _check_common(v)
    t = v["type"]
    if t == "lake-created":
        lake = v["lake"]
        if not isinstance(lake, str) or not 1 <= len(lake) <= 64 or lake[0] in "-_" \
                or any(c not in "abcdefghijklmnopqrstuvwxyz0123456789-_" for c in lake):
            raise VectorError("format", "lake id")
    if "namespace" in v:
        _check_ns(v["namespace"])
    if t == "namespace-created":
        _check_props(v["properties"])
    if t == "namespace-updated":
        _check_props(v["updates"])
        r, m = v["removals"], v["missing"]
        for keys in (r, m):
            if not isinstance(keys, list) or keys != sorted(set(keys), key=lambda x: x.encode()) \
                    or any(not 1 <= len(x.encode()) <= PROP_KEY_MAX or x in v["updates"]
                           for x in keys):
                raise VectorError("format", "removals or missing")
        if set(r) & set(m):
            raise VectorError("format", "a key both removed and missing")
        if not v["updates"] and not r:
            raise VectorError("format", "an update that changes nothing")
    for k in ("table", "from", "to"):
        if k in v:
            _check_table(v[k])
    if t == "table-renamed" and v["from"] == v["to"]:
        raise VectorError("format", "rename to itself")
    if "table-uuid" in v:
        _check_uuid(v["table-uuid"])
    if "location" in v:
        _check_location(v["location"])
    if "purge-location" in v:
        _check_location(v["purge-location"])
    if "lease-id" in v:
        _check_uuid(v["lease-id"])
    if "snapshot-id" in v:
        _int64(v["snapshot-id"])
    if t.startswith("branch-"):
        check_branch_record(v)
    if t == "lease-taken":
        e = v["expires-ms"]
        if not isinstance(e, int) or isinstance(e, bool) or not 0 < e < (1 << 63):
            raise VectorError("format", "expires-ms")
        if "snapshot-id" not in v and "prefix" not in v:
            raise VectorError("format", "a lease protects nothing")
        if "prefix" in v:
            _check_location(v["prefix"])


def check_table_commit(v: dict) -> None:
    if not isinstance(v, dict) or v.get("type") != "commit":
        raise VectorError("format", "type")
    want = {"type", "time-ms", "metadata-location", "metadata-sha256", "metadata-length"}
    if set(v) - COMMON_OPTIONAL - {"previous-location"} != want:
        raise VectorError("format", "keys")
    _check_common(v)
    _check_location(v["metadata-location"])
    if "previous-location" in v:
        _check_location(v["previous-location"])
    _hex32(v["metadata-sha256"])
    n = v["metadata-length"]
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= METADATA_MAX:
        raise VectorError("format", "metadata-length")


def decode_record(kind: str, data: bytes) -> dict:
    """Reference decoder: strict JSON, the rules, and the canonical bytes again."""
    if len(data) > 1 << 20:
        raise VectorError("format", "over 1 MiB")

    def no_dupes(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise VectorError("format", "duplicate key")
        return dict(pairs)

    try:
        v = json.loads(data.decode("utf-8"), object_pairs_hook=no_dupes,
                       parse_float=lambda x: (_ for _ in ()).throw(ValueError("a float")),
                       parse_constant=lambda x: (_ for _ in ()).throw(ValueError(x)))
    except (UnicodeDecodeError, ValueError) as e:
        raise VectorError("format", f"not JSON: {e}") from None
    try:
        (check_lake_record if kind == "lake" else check_table_commit)(v)
    except (KeyError, TypeError, AttributeError) as e:
        raise VectorError("format", f"schema: {e}") from None
    if record_json(v) != data:
        raise VectorError("format", "not canonical")
    return v


def lake_log_namespace(lake: str) -> str:
    d = bytearray(hashlib.sha256(b"cairn lake log\x00" + lake.encode()).digest()[:16])
    d[6] = (d[6] & 0x0F) | 0x80
    d[8] = (d[8] & 0x3F) | 0x80
    return uuid_text(bytes(d))


def publication(n: int) -> bytes:
    return uuid_bytes(f"ab1c0de0-0000-4000-8000-{n:012x}")


def units_of(text: str) -> list[int]:
    raw = text.encode("utf-16-be")
    return list(struct.unpack(f">{len(raw) // 2}H", raw))


# The largest database id: 32,768 units, unit i = 'A' + i % 26 (the C++ test builds the same).
def largest_units() -> list[int]:
    return [0x41 + i % 26 for i in range(MAX_DATABASE_ID_UNITS)]


class Gen:
    """Builds every vector, checks each with the reference code, and renders the outputs."""

    def __init__(self) -> None:
        self.heads: dict[str, Head] = {}
        self.head_notes: dict[str, str] = {}
        self.bad_heads: list[tuple[str, bytes, str, int, str]] = []
        self.manifests: dict[str, tuple[Manifest, bytes]] = {}
        self.build()

    # -- helpers ---------------------------------------------------------------------------

    def add_head(self, name: str, f: HeadFields, note: str) -> Head:
        assert name not in self.heads
        h = make_head(f)
        self.heads[name] = h
        self.head_notes[name] = note
        return h

    def add_bad(self, name: str, image: bytes, step: int, why: str) -> None:
        try:
            decode_head(image)
        except VectorError as e:
            assert e.code == "format" and e.step == step, (name, e.code, e.step, e.why)
            self.bad_heads.append((name, image, "format", step, why))
            return
        raise AssertionError(f"{name} decodes but should not")

    def add_manifest(self, name: str, m: Manifest) -> bytes:
        data = encode_manifest(m)
        assert decode_manifest(data) == m
        self.manifests[name] = (m, data)
        return data

    def manifest_for(self, j: Journal, generation: int,
                     cuts: list[tuple[int, int]]) -> Manifest:
        segs = []
        for first, count in cuts:
            h, obj = make_segment(j, first, count)
            segs.append(MSeg(first, count, h.start, h.end, len(obj), sha256(obj)))
        s = sum(c for _, c in cuts)
        length, digest = j.prefix(s)
        return Manifest(generation, j.header, j.lineage, s, length, digest, segs)

    def fields_for(self, j: Journal, revision: int, pub: int, mdata: bytes, s: int,
                   predecessor: bytes | None) -> HeadFields:
        length, digest = j.prefix(s)
        return HeadFields(NS, PUBLISHER, publication(pub), j.lineage, revision, sha256(mdata),
                          len(mdata), s, length, digest, predecessor)

    # -- everything ------------------------------------------------------------------------

    def build(self) -> None:
        # CRC32C
        crc_inputs = [
            ("check", b"123456789"),
            ("empty", b""),
            ("a", b"a"),
            ("zeros32", bytes(32)),
            ("ones32", b"\xff" * 32),
            ("ascending32", bytes(range(32))),
            ("descending32", bytes(range(31, -1, -1))),
            ("journal_magic", JOURNAL_MAGIC),
        ]
        self.crcs = [(n, d, crc32c(d)) for n, d in crc_inputs]
        known = {"check": 0xE3069283, "empty": 0, "zeros32": 0x8A9136AA, "ones32": 0x62A8AB43,
                 "ascending32": 0x46DD794E, "descending32": 0x113FDB5C}  # RFC 3720 B.4
        for n, _, c in self.crcs:
            assert n not in known or known[n] == c, n
        assert crc32c(b"56789", crc32c(b"1234")) == 0xE3069283

        # Journal headers
        self.db = Journal(units_of("db"), [b"alpha", b"", b"gamma gamma", bytes([0, 1, 2, 0xFF])])
        self.header_vectors = []
        for name, units in [
            ("db", units_of("db")),
            ("one_unit", [0x78]),
            ("high_surrogate_alone", [0xD800]),
            ("low_surrogate_alone", [0xDC00]),
            ("reversed_pair", [0xDC00, 0xD800]),
            ("surrogate_pair", [0xD83D, 0xDE00]),
            ("nul_and_bmp", [0x0000, 0x00E9, 0x4E2D, 0xFFFF]),
        ]:
            hb = encode_journal_header(units)
            assert decode_journal_header(hb + b"\x00\x00") == (units, hb)
            self.header_vectors.append((name, units, hb, sha256(hb)))
        # The display name is not the lineage: SHA-256("db") differs from the lineage id.
        assert sha256(b"db") != self.db.lineage

        big = encode_journal_header(largest_units())
        assert len(big) == MAX_JOURNAL_HEADER_BYTES == 65_556
        self.largest_header = (len(big), sha256(big), big[:16], big[-4:])
        try:
            encode_journal_header(largest_units() + [0x41])
            raise AssertionError("32,769 units encoded")
        except VectorError as e:
            assert e.code == "usage"

        db_h = self.db.header
        bad_jh = []

        def bad_header(name: str, data: bytes, why: str) -> None:
            try:
                decode_journal_header(data)
            except VectorError as e:
                assert e.code == "format"
                bad_jh.append((name, data, why))
                return
            raise AssertionError(name)

        def with_crc(b: bytes) -> bytes:
            return b + struct.pack(">I", crc32c(b))

        bad_header("empty", b"", "fewer than 16 bytes")
        bad_header("fifteen_bytes", db_h[:15], "fewer than 16 bytes")
        bad_header("magic", with_crc(b"CAIRNJNX" + db_h[8:20]), "wrong magic (CRC valid)")
        bad_header("version_0", with_crc(db_h[:8] + struct.pack(">I", 0) + db_h[12:20]),
                   "version 0 (CRC valid)")
        bad_header("version_2", with_crc(db_h[:8] + struct.pack(">I", 2) + db_h[12:20]),
                   "version 2 (CRC valid)")
        bad_header("units_0", with_crc(db_h[:12] + struct.pack(">I", 0)), "n = 0 (CRC valid)")
        bad_header("units_32769", db_h[:12] + struct.pack(">I", 32_769) + bytes(8),
                   "n = 32,769: above the cap, refused before the body is read")
        bad_header("units_ffffffff", db_h[:12] + b"\xff\xff\xff\xff" + bytes(8),
                   "n = 2^32 - 1 (20 + 2n overflows 32 bits)")
        bad_header("truncated", db_h[:-1], "one byte short of 20 + 2n")
        bad_header("crc", db_h[:-1] + bytes([db_h[-1] ^ 1]), "CRC mismatch")
        bad_header("unit_flipped", db_h[:16] + bytes([db_h[16] ^ 0x20]) + db_h[17:],
                   "a code unit changed, CRC not updated")
        self.bad_journal_headers = bad_jh
        self.header_lengths = [
            ("db", db_h[:16], 24),
            ("largest", big[:16], 65_556),
            ("units_0", db_h[:12] + struct.pack(">I", 0), None),
            ("units_32769", db_h[:12] + struct.pack(">I", 32_769), None),
            ("version_2", db_h[:8] + struct.pack(">II", 2, 2), None),
            ("magic", b"CAIRNJNX" + db_h[8:16], None),
        ]
        for _, first16, want in self.header_lengths:
            got = outcome(journal_header_length, first16)
            assert (got == "") == (want is not None)
            if want is not None:
                assert journal_header_length(first16) == want

        # Frames
        self.frames = [(1, b""), (2, b"hello"), (7, bytes(range(256))[:40]),
                       (MAX_PREFIX_FRAMES, b"x")]

        # Journal tails (docs/journal.md, "Torn tails" and "Room"): the bytes after the last
        # valid frame, built as the crash or the damage they stand for, with the verdict that
        # shape must get. A torn tail's written bytes end at its last byte that is not zero;
        # the zeros after them are the writer's room.
        self.tails = []
        frame7 = encode_frame(7, b"p" * 2000)
        boundary = 1000  # not a multiple of the 512-byte crash block

        def written_part(data: bytes) -> int:
            # To the end of the 512-byte block holding the last byte that is not zero (a block
            # is written whole or not at all), or to the tail's end if sooner.
            nonzero = len(data.rstrip(b"\0"))
            if nonzero == 0:
                return 0
            block_end = -(-(boundary + nonzero) // CRASH_BLOCK) * CRASH_BLOCK
            return min(block_end - boundary, len(data))

        def tail(name: str, data: bytes, sequence: int, torn: bool, written: int) -> None:
            if torn:
                assert written == written_part(data), (name, written, written_part(data))
            self.tails.append((name, data, boundary, sequence, torn, written))

        # A write cut short ends at a block boundary: 1024 here, 24 bytes into frame 7.
        tail("room_zeros_only", bytes(4096), 7, True, 0)
        tail("cut_short_no_room", frame7[:100], 7, True, 100)
        tail("cut_short_at_a_block_then_room", frame7[:24] + bytes(4000), 7, True, 24)
        tail("cut_short_at_the_next_block_then_room", frame7[:536] + bytes(4000), 7, True, 536)
        frame256 = encode_frame(256, b"q" * 40)
        assert frame256[11] == 0  # sequence 0x100: the header's last byte is zero
        tail("header_then_zeros_to_its_block_end_then_room", frame256[:12] + bytes(500), 256,
             True, 24)
        first_block = (boundary // CRASH_BLOCK + 2) * CRASH_BLOCK - boundary
        holed = bytearray(frame7)
        holed[first_block:first_block + CRASH_BLOCK] = bytes(CRASH_BLOCK)
        # The frame ends at 3016; its block ends at 3072: 56 bytes of the room were written too.
        tail("sector_never_written_then_room", bytes(holed) + bytes(700), 7, True,
             len(frame7) + 56)
        # Zeros where a block that was written holds the end of a whole frame: its own bytes,
        # and its CRC fails: damage (a write cut short would end at a block boundary).
        zeroed_crc = bytearray(frame7)
        zeroed_crc[-3:] = bytes(3)
        assert frame7[-3:] != bytes(3)
        tail("last_bytes_zeroed_in_a_written_block_then_room", bytes(zeroed_crc) + bytes(700), 7,
             False, 0)
        flipped = bytearray(frame7)
        flipped[20] ^= 0x10
        tail("flipped_byte_then_room", bytes(flipped) + bytes(700), 7, False, 0)
        tail("wrong_sequence_then_room", encode_frame(8, b"p" * 50) + bytes(300), 7, False, 0)
        tail("length_over_cap_then_room", bytes([2, 0, 0, 0, 0, 0]) + bytes(64), 7, False, 0)

        # The small journal: records, prefixes, segments, manifests
        j = self.db
        assert scan_frames(j.data[len(j.header):], 1) == 4
        self.segments = {}
        for name, first, count in [("s12", 1, 2), ("s34", 3, 2), ("s1234", 1, 4)]:
            h, obj = make_segment(j, first, count)
            assert decode_segment(obj) == h
            self.segments[name] = (h, obj)
        # Header-only refusals (76 bytes each; the CRC is valid unless the case is the CRC).
        s12 = self.segments["s12"][0]
        bad_seg = []

        def bad_segment_header(name: str, data: bytes, why: str) -> None:
            assert len(data) == SEGMENT_HEADER_BYTES
            try:
                decode_segment_header(data)
            except VectorError as e:
                assert e.code == "format"
                bad_seg.append((name, data, why))
                return
            raise AssertionError(name)

        def rep(**kw) -> SegmentHeader:
            return dataclasses.replace(s12, **kw)

        good = segment_header_bytes(s12)
        bad_segment_header("magic", segment_header_bytes(s12, magic=b"CAIRNSEX"), "magic")
        bad_segment_header("version_2", segment_header_bytes(s12, version=2), "version 2")
        bad_segment_header("crc", good[:72] + bytes([good[72] ^ 0x80]) + good[73:], "CRC")
        bad_segment_header("first_0", segment_header_bytes(rep(first=0)), "first sequence 0")
        bad_segment_header("count_0", segment_header_bytes(rep(count=0)), "count 0")
        bad_segment_header("last_above_cap",
                           segment_header_bytes(rep(first=MAX_PREFIX_FRAMES, count=2)),
                           "f + c - 1 = 268,435,457")
        bad_segment_header("first_u64_max", segment_header_bytes(rep(first=(1 << 64) - 1)),
                           "f + c - 1 overflows 64 bits")
        bad_segment_header("start_21", segment_header_bytes(rep(start=21, end=21 + 37)),
                           "start below the smallest header")
        bad_segment_header("start_eq_end", segment_header_bytes(rep(end=s12.start)), "a = b")
        bad_segment_header("start_gt_end", segment_header_bytes(rep(end=s12.start - 1)),
                           "a > b (b - a underflows)")
        bad_segment_header("range_short", segment_header_bytes(rep(end=s12.start + 31)),
                           "b - a = 31 < 16 * 2")
        bad_segment_header("end_above_2_53",
                           segment_header_bytes(rep(start=MAX_PREFIX_BYTES - 100,
                                                    end=MAX_PREFIX_BYTES + 1)),
                           "b = 2^53")
        bad_segment_header("body_above_256mib",
                           segment_header_bytes(rep(end=s12.start + MAX_SEGMENT_BODY + 1)),
                           "b - a = 256 MiB + 1")
        bad_segment_header("end_u64_max", segment_header_bytes(rep(end=(1 << 64) - 1)),
                           "b = 2^64 - 1")
        self.bad_segment_headers = bad_seg
        # Whole-object refusals.
        s12_obj = self.segments["s12"][1]
        s34_obj = self.segments["s34"][1]
        bad_obj = []

        def bad_segment(name: str, data: bytes, why: str) -> None:
            assert outcome(decode_segment, data) == "format", name
            bad_obj.append((name, data, why))

        bad_segment("trailing_byte", s12_obj + b"\x00", "one byte more than 76 + (b - a)")
        bad_segment("missing_byte", s12_obj[:-1], "one byte less than 76 + (b - a)")
        body_flip = bytearray(s12_obj)
        body_flip[SEGMENT_HEADER_BYTES + 12] ^= 0x01  # first payload byte of frame 1
        bad_segment("frame_crc", bytes(body_flip), "a payload byte changed")
        bad_segment("wrong_sequence",
                    segment_header_bytes(dataclasses.replace(self.segments["s34"][0], first=1))
                    + s34_obj[SEGMENT_HEADER_BYTES:],
                    "header says frames 1..2, body holds frames 3..4")
        self.bad_segments = bad_obj

        # Manifests for the small journal
        m_gen = self.manifest_for(j, 1, [])
        m1 = self.manifest_for(j, 1, [(1, 2)])
        m2 = self.manifest_for(j, 2, [(1, 2), (3, 2)])
        m3 = self.manifest_for(j, 3, [(1, 4)])
        d_gen = self.add_manifest("genesis", m_gen)
        d1 = self.add_manifest("m1", m1)
        d2 = self.add_manifest("m2", m2)
        d3 = self.add_manifest("m3", m3)
        # Chained manifests (format 2): m1 then frames 3..4; the empty prefix then frames 1..2,
        # then frames 3..4 on that (a chain of two bases).
        def chained(generation: int, base: Manifest, data: bytes, cuts) -> Manifest:
            m = self.manifest_for(j, generation, cuts)
            m.segments = [s for s in m.segments if s.first > base.prefix_sequence]
            m.base = MBase(sha256(data), len(data), base.prefix_sequence, base.prefix_length,
                           base.prefix_sha256)
            return m

        c2 = chained(2, m1, d1, [(1, 2), (3, 2)])
        dc2 = self.add_manifest("c2_on_m1", c2)
        cg1 = chained(2, m_gen, d_gen, [(1, 2)])
        dcg1 = self.add_manifest("c1_on_genesis", cg1)
        self.add_manifest("c2_on_c1", chained(3, cg1, dcg1, [(1, 2), (3, 2)]))

        # Heads of the small journal
        h1 = self.add_head("r1", self.fields_for(j, 1, 1, d1, 2, None),
                           "revision 1: prefix s=2, manifest m1 (one segment)")
        h2 = self.add_head("r2", self.fields_for(j, 2, 2, d2, 4, h1.id),
                           "revision 2, successor of r1: prefix s=4, manifest m2 (two segments)")
        self.add_head("r3_replacement", self.fields_for(j, 3, 3, d3, 4, h2.id),
                      "revision 3, successor of r2 with an unchanged cutoff and a new manifest "
                      "(m3, compacted): valid")
        f2 = h2.fields
        self.add_head("r3_contradict_hash",
                      dataclasses.replace(self.fields_for(j, 3, 3, d3, 4, h2.id),
                                          prefix_sha256=j.prefix(3)[1]),
                      "revision 3 after r2: same sequence, different prefix hash")
        self.add_head("r3_contradict_length",
                      dataclasses.replace(self.fields_for(j, 3, 3, d3, 4, h2.id),
                                          prefix_length=f2.prefix_length + 1),
                      "revision 3 after r2: same sequence, different prefix length")
        self.add_head("genesis", self.fields_for(j, 1, 10, d_gen, 0, None),
                      "revision 1 with the empty prefix (s=0, L=24, hash = lineage)")

        base1 = h1.fields
        # Valid boundary heads (not bound to a real manifest).
        self.add_head("revision_max_minus_1",
                      dataclasses.replace(f2, revision=INT64_MAX - 1, publication=publication(20)),
                      "revision INT64_MAX - 1")
        hmax = self.add_head(
            "revision_max",
            dataclasses.replace(f2, revision=INT64_MAX, publication=publication(21),
                                predecessor=self.heads["revision_max_minus_1"].id),
            "revision INT64_MAX: decodes, cannot advance")
        self.add_head("after_revision_max",
                      dataclasses.replace(f2, revision=INT64_MAX, publication=publication(22),
                                          predecessor=hmax.id),
                      "claims to follow revision_max (revision INT64_MAX, predecessor its id)")
        self.add_head("manifest_length_1", dataclasses.replace(base1, manifest_length=1),
                      "manifest length 1 (smallest)")
        self.add_head("manifest_length_1mib",
                      dataclasses.replace(base1, manifest_length=MAX_MANIFEST_BYTES),
                      "manifest length 1,048,576 (largest)")
        self.add_head("sequence_max",
                      dataclasses.replace(base1, prefix_sequence=MAX_PREFIX_FRAMES,
                                          prefix_length=22 + 16 * MAX_PREFIX_FRAMES),
                      "prefix sequence 268,435,456 with L = 22 + 16 s = 4,294,967,318")
        self.add_head("length_min_s1",
                      dataclasses.replace(base1, prefix_sequence=1, prefix_length=38),
                      "s = 1, L = 38 = 22 + 16")
        self.add_head("length_max", dataclasses.replace(base1, prefix_length=MAX_PREFIX_BYTES),
                      "L = 2^53 - 1")
        self.add_head("empty_prefix_22",
                      dataclasses.replace(base1, prefix_sequence=0, prefix_length=22,
                                          prefix_sha256=base1.lineage),
                      "s = 0, L = 22 (smallest header), hash = lineage")
        self.add_head("empty_prefix_65556",
                      dataclasses.replace(base1, prefix_sequence=0, prefix_length=65_556,
                                          prefix_sha256=base1.lineage),
                      "s = 0, L = 65,556 (largest header), hash = lineage")

        # Successor relations that fail (each head decodes on its own).
        def succ(name, note, **kw):
            base = dict(revision=2, publication=publication(2), predecessor=h1.id)
            base.update(kw)
            return self.add_head(name, dataclasses.replace(f2, **base), note)

        succ("r2_skip_revision", "revision 3 naming r1", revision=3)
        succ("r2_same_publication", "reuses r1's publication id", publication=base1.publication)
        succ("r2_other_namespace", "another namespace", ns=NS_OTHER)
        succ("r2_other_publisher", "another publisher", publisher=PUBLISHER_OTHER)
        succ("r2_other_lineage", "another lineage (SHA-256 of the UTF-8 name)",
             lineage=sha256(b"db"))
        succ("r2_predecessor_footer", "predecessor = r1's footer instead of its id",
             predecessor=h1.footer)
        succ("r2_predecessor_other", "predecessor = the id of another head (genesis)",
             predecessor=self.heads["genesis"].id)
        pl1, ph1 = j.prefix(1)
        succ("r2_sequence_back", "prefix s = 1 < 2", prefix_sequence=1, prefix_length=pl1,
             prefix_sha256=ph1)
        succ("r2_sequence_up_length_short", "s = 3 > 2 but L' - L = 15 < 16",
             prefix_sequence=3, prefix_length=base1.prefix_length + 15)
        succ("r2_sequence_up_length_min", "s = 3 > 2 with L' - L = 16 exactly (valid)",
             prefix_sequence=3, prefix_length=base1.prefix_length + 16)
        # Arithmetic: L' < L with s' > s (L' - L wraps around in 64-bit arithmetic).
        big_prev = self.add_head(
            "big_r1", dataclasses.replace(base1, prefix_sequence=1, prefix_length=1000,
                                          publication=publication(30)),
            "revision 1, s = 1, L = 1000")
        self.add_head("big_r2_length_down",
                      dataclasses.replace(base1, revision=2, publication=publication(31),
                                          predecessor=big_prev.id, prefix_sequence=2,
                                          prefix_length=999),
                      "after big_r1: s = 2 > 1 but L' = 999 < 1000 (L' - L wraps)")
        self.add_head("big_r2_length_same",
                      dataclasses.replace(base1, revision=2, publication=publication(33),
                                          predecessor=big_prev.id, prefix_sequence=2,
                                          prefix_length=1000),
                      "after big_r1: s = 2 > 1 with L' = L = 1000")
        self.add_head("big_r2_ok",
                      dataclasses.replace(base1, revision=2, publication=publication(32),
                                          predecessor=big_prev.id, prefix_sequence=2,
                                          prefix_length=1016),
                      "after big_r1: s = 2, L' = 1016: valid")
        self.add_head("r1_other_lineage",
                      dataclasses.replace(base1, lineage=sha256(b"db")),
                      "r1 with SHA-256 of the UTF-8 name as lineage (display name, not lineage)")

        # Manifest binding: heads that name a manifest they do not match.
        self.add_head("r1_manifest_length_plus_1",
                      dataclasses.replace(base1, manifest_length=base1.manifest_length + 1),
                      "r1 but manifest length + 1")
        self.add_head("r2_prefix_of_r1", dataclasses.replace(base1, manifest_sha256=sha256(d2),
                                                             manifest_length=len(d2)),
                      "names m2 but declares r1's prefix (s = 2)")
        self.add_head("r2_prefix_length_off",
                      dataclasses.replace(f2, prefix_length=f2.prefix_length + 1),
                      "names m2, prefix length + 1")
        self.add_head("r2_prefix_hash_off",
                      dataclasses.replace(f2, prefix_sha256=ph1),
                      "names m2, prefix hash of another sequence")
        self.add_head("r2_lineage_off", dataclasses.replace(f2, lineage=sha256(b"db")),
                      "names m2 with everything equal but the lineage")
        noncanon = d1.replace(b'"format":1', b'"format": 1')
        self.add_head("r1_names_noncanonical",
                      dataclasses.replace(base1, manifest_sha256=sha256(noncanon),
                                          manifest_length=len(noncanon)),
                      "names a non-canonical spelling of m1 (hash and length match it)")

        # Two graphs of one lineage with different first commits (journal comparison only).
        ja = Journal(units_of("db"), [b"a1", b"a2"])
        jb = Journal(units_of("db"), [b"b1", b"b2", b"b3"])
        assert ja.lineage == jb.lineage == j.lineage
        self.journal_a, self.journal_b = ja, jb
        for name, jj, cuts1, cuts2, p in [("a", ja, [(1, 1)], [(1, 1), (2, 1)], 40),
                                          ("b", jb, [(1, 1)], [(1, 1), (2, 2)], 50)]:
            for g in (cuts1, cuts2):
                for first, count in g:
                    key = f"{name}_s{first}{first + count - 1}"
                    if key not in self.segments:
                        hh, obj = make_segment(jj, first, count)
                        self.segments[key] = (hh, obj)
            ma1 = self.add_manifest(f"{name}1", self.manifest_for(jj, 1, cuts1))
            ma2 = self.add_manifest(f"{name}2", self.manifest_for(jj, 2, cuts2))
            r1 = self.add_head(f"{name}_r1", self.fields_for(jj, 1, p, ma1, 1, None),
                               f"graph {name.upper()}, revision 1 (prefix s = 1)")
            self.add_head(f"{name}_r2",
                          self.fields_for(jj, 2, p + 1, ma2, sum(c for _, c in cuts2), r1.id),
                          f"graph {name.upper()}, revision 2")
        self.add_head("splice_b_after_a",
                      self.fields_for(jb, 2, 60, self.manifests["b2"][1], 3,
                                      self.heads["a_r1"].id),
                      "journal B's s = 3 checkpoint as successor of graph A's revision 1: "
                      "passes every pure check, B does not extend A")

        # Invalid images (footer correct unless the case is the footer).
        raw1 = raw_from_fields(base1)
        raw2 = raw_from_fields(f2)

        def bad(name, step, why, raw=raw1, **kw):
            self.add_bad(name, pack_head(dataclasses.replace(raw, **kw)), step, why)

        img1 = h1.image
        self.add_bad("length_0", b"", 1, "empty")
        self.add_bad("length_1", img1[:1], 1, "1 byte")
        self.add_bad("length_224", img1[:224], 1, "without the footer")
        self.add_bad("length_255", img1[:255], 1, "one byte short")
        self.add_bad("length_257", img1 + b"\x00", 1, "one byte more")
        self.add_bad("length_512", img1 + img1, 1, "two images")
        bad("magic", 2, "magic 4d52444e48454145", magic=bytes.fromhex("4d52444e48454145"))
        bad("magic_journal", 2, "a journal magic", magic=JOURNAL_MAGIC)
        bad("version_0", 2, "version 0", version=0)
        bad("version_2", 2, "version 2", version=2)
        bad("version_ffffffff", 2, "version 2^32 - 1", version=0xFFFFFFFF)
        # Every single reserved bit (bit 0 is the defined flag), and two combinations.
        for v in sorted({1 << k for k in range(1, 32)} | {3, 0xFFFFFFFF}):
            bad(f"flags_{v:x}", 2, f"reserved flags {v:#x}", flags=v)
            bad(f"flags_{v:x}_r2", 2, f"reserved flags {v:#x} on revision 2", raw=raw2, flags=v)
        flipped = bytearray(img1)
        flipped[HEAD_FOOTER_OFFSET] ^= 0x01
        self.add_bad("footer_bit", bytes(flipped), 3, "footer bit 0 of byte 224 flipped")
        flipped = bytearray(img1)
        flipped[100] ^= 0x80
        self.add_bad("body_bit", bytes(flipped), 3, "revision byte changed, footer not updated")
        bad("footer_zero", 3, "footer all zero", footer=ZERO32)
        bad("footer_is_id", 3, "footer = SHA-256 of a different image", footer=h1.id)
        bad("nil_namespace", 4, "nil namespace", ns=NIL_UUID)
        bad("nil_publisher", 4, "nil publisher", publisher=NIL_UUID)
        bad("nil_publication", 4, "nil publication", publication=NIL_UUID)
        bad("nil_publication_r2", 4, "nil publication on revision 2", raw=raw2,
            publication=NIL_UUID)
        bad("revision_0", 5, "revision 0 (flags 0)", revision=0)
        bad("revision_0_flag1", 5, "revision 0 with a predecessor", raw=raw2, revision=0)
        bad("revision_2_63", 5, "revision 2^63 = INT64_MAX + 1", raw=raw2, revision=1 << 63)
        bad("revision_u64_max", 5, "revision 2^64 - 1", raw=raw2, revision=(1 << 64) - 1)
        bad("manifest_length_0", 6, "manifest length 0", manifest_length=0)
        bad("manifest_length_1mib_plus_1", 6, "manifest length 1,048,577",
            manifest_length=MAX_MANIFEST_BYTES + 1)
        bad("manifest_length_u32_max", 6, "manifest length 2^32 - 1",
            manifest_length=0xFFFFFFFF)
        bad("sequence_above_max", 7, "prefix sequence 268,435,457",
            prefix_sequence=MAX_PREFIX_FRAMES + 1, prefix_length=22 + 16 * (MAX_PREFIX_FRAMES + 1))
        bad("sequence_2_60", 7, "prefix sequence 2^60 (16 s wraps to 0 in 64 bits)",
            prefix_sequence=1 << 60, prefix_length=100)
        bad("sequence_u64_max", 7, "prefix sequence 2^64 - 1", prefix_sequence=(1 << 64) - 1)
        bad("length_below_s2", 8, "s = 2, L = 53 < 22 + 32",
            prefix_length=22 + 16 * base1.prefix_sequence - 1)
        bad("length_below_s1", 8, "s = 1, L = 37 < 38", prefix_sequence=1, prefix_length=37)
        bad("length_below_max_sequence", 8, "s = 268,435,456, L = 4,294,967,317",
            prefix_sequence=MAX_PREFIX_FRAMES, prefix_length=22 + 16 * MAX_PREFIX_FRAMES - 1)
        bad("length_2_53", 8, "L = 2^53 > 2^53 - 1", prefix_length=1 << 53)
        bad("length_u64_max", 8, "L = 2^64 - 1", prefix_length=(1 << 64) - 1)
        bad("length_u64_max_sequence_max", 8, "s = 268,435,456, L = 2^64 - 1",
            prefix_sequence=MAX_PREFIX_FRAMES, prefix_length=(1 << 64) - 1)
        bad("prefix_length_0", 8, "L = 0", prefix_length=0)
        bad("empty_prefix_21", 8, "s = 0, L = 21", prefix_sequence=0, prefix_length=21,
            prefix_sha256=base1.lineage)
        bad("empty_prefix_65557", 8, "s = 0, L = 65,557", prefix_sequence=0,
            prefix_length=65_557, prefix_sha256=base1.lineage)
        bad("empty_prefix_hash", 8, "s = 0 and prefix hash != lineage", prefix_sequence=0,
            prefix_length=24, prefix_sha256=j.prefix(1)[1])
        bad("empty_prefix_zero_hash", 8, "s = 0 and prefix hash all zero", prefix_sequence=0,
            prefix_length=24, prefix_sha256=ZERO32)
        bad("absent_predecessor_hash", 9, "flags 0 with a non-zero predecessor hash",
            predecessor_sha256=h1.id)
        bad("absent_predecessor_length_256", 9, "flags 0 with predecessor length 256",
            predecessor_length=256)
        bad("absent_predecessor_both", 9, "flags 0 with predecessor hash and length 256",
            predecessor_sha256=h1.id, predecessor_length=256)
        bad("absent_predecessor_length_1", 9, "flags 0 with predecessor length 1",
            predecessor_length=1)
        bad("flag1_revision_1", 9, "flags 1 at revision 1", raw=raw2, revision=1)
        bad("flag0_revision_2", 9, "flags 0 at revision 2 (canonical zero predecessor)",
            revision=2)
        bad("predecessor_length_0", 9, "flags 1 with predecessor length 0", raw=raw2,
            predecessor_length=0)
        bad("predecessor_length_255", 9, "flags 1 with predecessor length 255", raw=raw2,
            predecessor_length=255)
        bad("predecessor_length_257", 9, "flags 1 with predecessor length 257", raw=raw2,
            predecessor_length=257)
        bad("predecessor_length_u32_max", 9, "flags 1 with predecessor length 2^32 - 1",
            raw=raw2, predecessor_length=0xFFFFFFFF)
        # Ordering: the first failing step decides (every step is `format`, but the order is
        # what a reader sees in messages; the C++ tests only check the code).
        bad("order_version_and_nil", 2, "version 2 and a nil namespace", version=2, ns=NIL_UUID)
        bad("order_footer_and_revision", 3, "revision 0 and a zero footer", revision=0,
            footer=ZERO32)

        # Reference (expected complete reference) cases: (name, image head, expected id, len,
        # code). Format faults come before the reference check.
        self.reference_cases = [
            ("r2_expected_itself", h2.image, h2.id, 256, ""),
            ("r2_expected_r1", h2.image, h1.id, 256, "reference"),
            ("r2_expected_footer", h2.image, h2.footer, 256, "reference"),
            ("r2_expected_length_0", h2.image, h2.id, 0, "reference"),
            ("bad_footer_expected_itself", self.bad_image("footer_bit"),
             sha256(self.bad_image("footer_bit")), 256, "format"),
            ("short_expected_itself", img1[:255], sha256(img1[:255]), 256, "format"),
        ]
        for name, image, eid, elen, code in self.reference_cases:
            got = outcome(decode_head, image, (eid, elen))
            assert got == code, (name, got)

        # Successor cases: (name, previous, next, code).
        H = self.heads
        cases = [
            ("r1_to_r2", "r1", "r2", ""),
            ("r2_to_r3_replacement", "r2", "r3_replacement", ""),
            ("r2_to_r3_contradict_hash", "r2", "r3_contradict_hash", "transition"),
            ("r2_to_r3_contradict_length", "r2", "r3_contradict_length", "transition"),
            ("r1_to_r3_replacement", "r1", "r3_replacement", "transition"),
            ("r2_to_r1", "r2", "r1", "transition"),
            ("r2_to_r2", "r2", "r2", "transition"),
            ("r1_to_r1", "r1", "r1", "transition"),
            ("skip_revision", "r1", "r2_skip_revision", "transition"),
            ("same_publication", "r1", "r2_same_publication", "transition"),
            ("other_namespace", "r1", "r2_other_namespace", "transition"),
            ("other_publisher", "r1", "r2_other_publisher", "transition"),
            ("other_lineage", "r1", "r2_other_lineage", "transition"),
            ("predecessor_footer", "r1", "r2_predecessor_footer", "transition"),
            ("predecessor_other", "r1", "r2_predecessor_other", "transition"),
            ("sequence_back", "r1", "r2_sequence_back", "transition"),
            ("sequence_up_length_short", "r1", "r2_sequence_up_length_short", "transition"),
            ("sequence_up_length_min", "r1", "r2_sequence_up_length_min", ""),
            ("sequence_up_length_same", "big_r1", "big_r2_length_same", "transition"),
            ("length_down_wraps", "big_r1", "big_r2_length_down", "transition"),
            ("length_up_ok", "big_r1", "big_r2_ok", ""),
            ("to_revision_max", "revision_max_minus_1", "revision_max", ""),
            ("after_revision_max", "revision_max", "after_revision_max", "transition"),
            ("a_r1_to_a_r2", "a_r1", "a_r2", ""),
            ("b_r1_to_b_r2", "b_r1", "b_r2", ""),
            ("a_r1_to_splice_b", "a_r1", "splice_b_after_a", ""),
            ("genesis_to_r2", "genesis", "r2", "transition"),
        ]
        for name, p, n, code in cases:
            got = outcome(require_successor, H[p], H[n])
            assert got == code, (name, got)
        self.successor_cases = cases

        # Binding cases: (name, head, ns, publisher, lineage, code).
        lin = j.lineage
        self.binding_cases = [
            ("r1_ok", "r1", NS, PUBLISHER, lin, ""),
            ("r2_ok", "r2", NS, PUBLISHER, lin, ""),
            ("r1_other_namespace", "r1", NS_OTHER, PUBLISHER, lin, "binding"),
            ("r1_other_publisher", "r1", NS, PUBLISHER_OTHER, lin, "binding"),
            ("r1_swapped", "r1", PUBLISHER, NS, lin, "binding"),
            ("r1_display_name_lineage", "r1", NS, PUBLISHER, sha256(b"db"), "binding"),
            ("r1_prefix_as_lineage", "r1", NS, PUBLISHER, j.prefix(2)[1], "binding"),
            ("r1_other_lineage_head", "r1_other_lineage", NS, PUBLISHER, lin, "binding"),
            ("a_r1_ok", "a_r1", NS, PUBLISHER, lin, ""),
            ("a_r2_ok", "a_r2", NS, PUBLISHER, lin, ""),
            ("b_r1_ok", "b_r1", NS, PUBLISHER, lin, ""),
            ("b_r2_ok", "b_r2", NS, PUBLISHER, lin, ""),
            ("splice_ok", "splice_b_after_a", NS, PUBLISHER, lin, ""),
        ]
        for name, hn, ns, pub, lg, code in self.binding_cases:
            got = outcome(require_binding, H[hn], ns, pub, lg)
            assert got == code, (name, got)

        # Manifest binding cases: (name, head, manifest bytes, code).
        M = {k: v[1] for k, v in self.manifests.items()}
        self.manifest_cases = [
            ("genesis_ok", "genesis", M["genesis"], ""),
            ("r1_ok", "r1", M["m1"], ""),
            ("r2_ok", "r2", M["m2"], ""),
            ("r3_replacement_ok", "r3_replacement", M["m3"], ""),
            ("r1_with_m2", "r1", M["m2"], "manifest"),
            ("r1_trailing_newline", "r1", M["m1"] + b"\n", "manifest"),
            ("r1_truncated", "r1", M["m1"][:-1], "manifest"),
            ("r1_empty", "r1", b"", "manifest"),
            ("length_plus_1", "r1_manifest_length_plus_1", M["m1"], "manifest"),
            ("prefix_sequence_differs", "r2_prefix_of_r1", M["m2"], "manifest"),
            ("prefix_length_differs", "r2_prefix_length_off", M["m2"], "manifest"),
            ("prefix_hash_differs", "r2_prefix_hash_off", M["m2"], "manifest"),
            ("lineage_differs", "r2_lineage_off", M["m2"], "manifest"),
            ("noncanonical_named", "r1_names_noncanonical", noncanon, "manifest"),
            ("a_r1_ok", "a_r1", M["a1"], ""),
            ("a_r2_ok", "a_r2", M["a2"], ""),
            ("b_r1_ok", "b_r1", M["b1"], ""),
            ("b_r2_ok", "b_r2", M["b2"], ""),
            ("splice_ok", "splice_b_after_a", M["b2"], ""),
            ("a_r1_with_b1", "a_r1", M["b1"], "manifest"),
        ]
        for name, hn, data, code in self.manifest_cases:
            got = outcome(bind_manifest, H[hn], data)
            assert got == code, (name, got)

        # The limit: graph B passes every pure check against graph A's bindings, but its
        # prefix hash at sequence 1 differs from the owned journal A's.
        assert ja.prefix(1)[1] != jb.prefix(1)[1]
        assert H["b_r1"].fields.prefix_sha256 == jb.prefix(1)[1]

        # Non-canonical and invalid manifests (all must be refused by the decoder).
        lin_hex = j.lineage.hex()
        first_char = lin_hex[0]
        nc = []

        def noncanonical(name: str, data: bytes, why: str) -> None:
            assert outcome(decode_manifest, data) == "format", name
            nc.append((name, data, why))

        noncanonical("space_after_colon", d1.replace(b'"format":1', b'"format": 1'),
                     "whitespace after a colon")
        noncanonical("space_after_comma", d1.replace(b'1,"generation"', b'1, "generation"'),
                     "whitespace after a comma")
        noncanonical("trailing_newline", d1 + b"\n", "a newline after the object")
        noncanonical("leading_space", b" " + d1, "a space before the object")
        noncanonical("pretty", json.dumps(json.loads(d1), indent=1, sort_keys=True).encode(),
                     "indented")
        noncanonical("key_order", d1.replace(b'{"format":1,"generation":1,',
                                             b'{"generation":1,"format":1,'),
                     "generation before format")
        noncanonical("key_order_prefix",
                     d1.replace(b'"prefix":{"length":%d,"sequence":2,' % m1.prefix_length,
                                b'"prefix":{"sequence":2,"length":%d,' % m1.prefix_length),
                     "prefix.sequence before prefix.length")
        noncanonical("leading_zero", d1.replace(b'"generation":1,', b'"generation":01,'),
                     "generation 01")
        noncanonical("duplicate_key", d1.replace(b'{"format":1,', b'{"format":1,"format":1,'),
                     "format twice")
        noncanonical("duplicate_key_last",
                     d1.replace(b'{"format":1,', b'{"format":1,"format":2,'),
                     "format twice with different values")
        noncanonical("escaped_string",
                     d1.replace(b'"lineage":"' + first_char.encode(),
                                b'"lineage":"\\u00' + f"{ord(first_char):02x}".encode()),
                     "the first lineage digit as a \\u escape")
        noncanonical("escaped_key", d1.replace(b'"format"', b'"form\\u0061t"'),
                     "a key with a \\u escape")
        noncanonical("float_1_0", d1.replace(b'"format":1,', b'"format":1.0,'), "format 1.0")
        noncanonical("exponent", d1.replace(b'"generation":1,', b'"generation":1e0,'),
                     "generation 1e0")
        noncanonical("negative_zero",
                     M["genesis"].replace(b'"sequence":0,', b'"sequence":-0,'),
                     "prefix.sequence -0")
        noncanonical("string_number", d1.replace(b'"generation":1,', b'"generation":"1",'),
                     "generation as a string")
        noncanonical("uppercase_hex", d1.replace(lin_hex.encode(), lin_hex.upper().encode()),
                     "lineage in upper case")
        noncanonical("unknown_key", d1[:-1] + b',"zzz":1}', "an unknown key (sorted last)")
        noncanonical("bom", b"\xef\xbb\xbf" + d1, "a UTF-8 byte order mark")
        noncanonical("array_top", b"[" + d1 + b"]", "an array around the object")
        noncanonical("nul_after", d1 + b"\x00", "a NUL byte after the object")
        # Canonical JSON, but a rule of docs/formats.md §3 is broken.
        v2 = json.loads(d2)

        def variant(name: str, why: str, mutate) -> None:
            v = json.loads(d2)
            mutate(v)
            noncanonical(name, jcs(v).encode(), why)

        variant("format_2", "format 2", lambda v: v.update(format=2))
        variant("generation_0", "generation 0", lambda v: v.update(generation=0))
        variant("generation_2_53", "generation 2^53", lambda v: v.update(generation=1 << 53))
        variant("lineage_differs", "lineage is not SHA-256 of journal_header",
                lambda v: v.update(lineage=sha256(b"db").hex()))
        variant("gap", "second segment starts one byte late",
                lambda v: v["segments"][1].update(journal_start=v2["segments"][1]
                                                  ["journal_start"] + 1))
        variant("sequence_gap", "second segment's first sequence skips one",
                lambda v: v["segments"][1].update(first_sequence=4))
        variant("count_sum", "prefix.sequence is not the sum of counts",
                lambda v: v["prefix"].update(sequence=5))
        variant("length_sum", "prefix.length is not where the last segment ends",
                lambda v: v["prefix"].update(length=v2["prefix"]["length"] + 1))
        variant("object_length", "object_length is not 76 + (b - a)",
                lambda v: v["segments"][0].update(object_length=v2["segments"][0]
                                                  ["object_length"] + 1))
        variant("segments_reversed", "segments out of order",
                lambda v: v.update(segments=v2["segments"][::-1]))
        variant("empty_segment", "a segment with count 0",
                lambda v: v["segments"][0].update(count=0))
        variant("header_base64_bad", "journal_header is not a valid header (CRC)",
                lambda v: v.update(journal_header=base64.b64encode(
                    db_h[:-1] + bytes([db_h[-1] ^ 1])).decode()))
        variant("journal_header_trailing_byte",
                "journal_header is a valid header plus one byte; lineage is SHA-256 of all of it",
                lambda v: v.update(journal_header=base64.b64encode(db_h + b"\x00").decode(),
                                   lineage=sha256(db_h + b"\x00").hex()))
        variant("no_segments_prefix_hash", "no segments but a prefix hash != lineage",
                lambda v: v.update(segments=[], prefix={"length": 24, "sequence": 0,
                                                         "sha256": j.prefix(1)[1].hex()}))
        # Base64 with a non-zero pad bit (one-unit database id: 22-byte header, "==" padding).
        one = encode_journal_header([0x78])
        one_b64 = base64.b64encode(one).decode()
        assert one_b64.endswith("==")
        last = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".index(
            one_b64[-3])
        assert last & 0xF == 0
        bad_b64 = one_b64[:-3] + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[
            last | 1] + "=="
        m_one = Manifest(1, one, sha256(one), 0, 22, sha256(one), [])
        d_one = self.add_manifest("one_unit_genesis", m_one)
        noncanonical("base64_pad_bits", d_one.replace(one_b64.encode(), bad_b64.encode()),
                     "journal_header base64 with a non-zero pad bit")
        noncanonical("base64_no_padding",
                     d_one.replace(one_b64.encode(), one_b64.rstrip("=").encode()),
                     "journal_header base64 without '=' padding")
        # Chained manifests (format 2) that break a rule of docs/formats.md §3.1.
        def chained_variant(name: str, why: str, mutate) -> None:
            v = json.loads(dc2)
            mutate(v)
            noncanonical(name, jcs(v).encode(), why)

        c2v = json.loads(dc2)
        chained_variant("chained_format_1", "a base with format 1",
                        lambda v: v.update(format=1))
        chained_variant("chained_format_3", "format 3", lambda v: v.update(format=3))
        chained_variant("chained_no_segments", "a base and no segments",
                        lambda v: v.update(segments=[]))
        chained_variant("chained_base_length_0", "base length 0",
                        lambda v: v["base"].update(length=0))
        chained_variant("chained_base_length_1mib_plus_1", "base length 1 MiB + 1",
                        lambda v: v["base"].update(length=MAX_MANIFEST_BYTES + 1))
        chained_variant("chained_gap", "the segment starts one byte after the base's prefix",
                        lambda v: v["base"]["prefix"].update(
                            length=c2v["base"]["prefix"]["length"] - 1))
        chained_variant("chained_sequence_gap", "the segment's first sequence skips one",
                        lambda v: v["base"]["prefix"].update(sequence=1))
        chained_variant("chained_base_below_header", "base prefix shorter than the header",
                        lambda v: v["base"]["prefix"].update(length=23, sequence=0))
        chained_variant("chained_empty_base_hash",
                        "an empty base prefix whose hash is not the lineage",
                        lambda v: v.update(segments=json.loads(dcg1)["segments"],
                                           prefix=json.loads(dcg1)["prefix"],
                                           base=dict(json.loads(dcg1)["base"],
                                                     prefix={"length": 24, "sequence": 0,
                                                             "sha256": sha256(b"x").hex()})))
        chained_variant("chained_base_key", "an unknown key in base",
                        lambda v: v["base"].update(zzz=1))
        chained_variant("chained_base_missing_sha", "base without sha256",
                        lambda v: v["base"].pop("sha256"))
        noncanonical("chained_base_last", dc2.replace(b'"base":', b'"zbase":'),
                     "base spelled so that it sorts last")
        self.noncanonical_manifests = nc

        self.build_publisher_states()
        self.build_vacuum_leases()
        self.build_log_records()
        self.build_avro_files()

    # -- publisher state -------------------------------------------------------------------

    def build_publisher_states(self) -> None:
        H = self.heads
        lin = self.db.lineage
        tag_a = b'"6f1ed002ab5595859014ebf0951522d9"'
        tag_b = b'"9b2cf535f27731c974343645a3985328-2"'
        s3_url = b"s3://cairn-test/db1?endpoint=http://127.0.0.1:7480&region=us-east-1"
        dir_url = b"file:///var/lib/cairn/store"
        # The largest URL cycles through every printable byte; the largest ETags through every
        # byte an etagc may be.
        printable = bytes(range(0x21, 0x7F))
        etagc = bytes([0x21] + list(range(0x23, 0x7F)) + list(range(0x80, 0x100)))
        max_url = bytes(printable[i % len(printable)] for i in range(MAX_STORE_URL))
        max_tag = b'"' + bytes(etagc[i % len(etagc)] for i in range(MAX_ETAG - 2)) + b'"'
        assert is_strong_etag(max_tag) and not is_strong_etag(max_tag[:-1] + b'a"')

        def state(url: bytes = s3_url, expected: tuple[str, bytes] | None = None,
                  pending: tuple[str, int, bytes] | None = None, ns: bytes = NS,
                  publisher: bytes = PUBLISHER, lineage: bytes = lin) -> PublisherState:
            return PublisherState(
                url, ns, publisher, lineage,
                None if expected is None else Expected(H[expected[0]].image, expected[1]),
                None if pending is None else Intent(H[pending[0]].image, pending[1],
                                                    pending[2]))

        # Valid states: (name, note, state, expected head name, candidate head name).
        self.states: list[tuple[str, str, PublisherState, bytes, str, str]] = []

        def valid(name: str, note: str, **kw) -> bytes:
            s = state(**kw)
            data = encode_publisher_state(s)
            assert decode_publisher_state(data) == s, name
            exp = kw.get("expected")
            pen = kw.get("pending")
            self.states.append((name, note, s, data, exp[0] if exp else "",
                                pen[0] if pen else ""))
            return data

        uninit = valid("uninitialized", "no expected head, nothing pending (S3 store)")
        expected_only = valid("expected_only", "expected r1 with its ETag (directory store)",
                              url=dir_url, expected=("r1", tag_a))
        valid("expected_r2_multipart_etag", "expected r2 with a multipart-style ETag",
              expected=("r2", tag_b))
        genesis = valid("genesis_pending", "no expected head; genesis candidate, If-None-Match",
                        pending=("genesis", IF_NONE_MATCH, b""))
        valid("genesis_pending_r1", "no expected head; r1 as the candidate, If-None-Match",
              url=dir_url, pending=("r1", IF_NONE_MATCH, b""))
        successor = valid("successor_pending",
                          "expected r1; candidate r2, If-Match with r1's ETag",
                          expected=("r1", tag_a), pending=("r2", IF_MATCH, tag_a))
        valid("successor_pending_r3", "expected r2; candidate r3_replacement (unchanged cutoff)",
              expected=("r2", tag_b), pending=("r3_replacement", IF_MATCH, tag_b))
        valid("min_lengths", 'one-byte URL, empty opaque ETags ("")', url=b"/",
              expected=("r1", b'""'), pending=("r2", IF_MATCH, b'""'))
        valid("etag_edge_bytes", "ETag bytes at every edge of etagc: 21 23 7e 80 ff",
              expected=("r1", b'"!#~\x80\xff"'), pending=("r2", IF_MATCH, b'"!#~\x80\xff"'))
        largest = valid("max_lengths", "4096-byte URL, two 1024-byte ETags: the largest file",
                        url=max_url, expected=("r1", max_tag), pending=("r2", IF_MATCH, max_tag))
        assert len(largest) == MAX_PST_BYTES == 6747
        assert len(uninit) == PST_FIXED + len(s3_url) + 4

        # Every proper prefix of every valid image is refused.
        for name, _, _, data, _, _ in self.states:
            for n in range(len(data)):
                assert outcome(decode_publisher_state, data[:n]) == "format", (name, n)
        self.truncated_states = [name for name, *_ in self.states]

        # Invalid images: (name, code, why, bytes). Every CRC is valid unless the case is the
        # CRC, so the decoder reaches the fault the name describes.
        bad: list[tuple[str, str, str, bytes]] = []

        def refuse(name: str, code: str, why: str, data: bytes) -> None:
            got = outcome(decode_publisher_state, data)
            assert got == code, (name, got, code)
            bad.append((name, code, why, data))

        def refuse_state(name: str, code: str, why: str, s: PublisherState, **kw) -> None:
            assert outcome(check_publisher_state, s) == code or kw, name
            refuse(name, code, why, pack_publisher_state(s, **kw))

        S = decode_publisher_state(successor)
        U = decode_publisher_state(uninit)
        E = decode_publisher_state(expected_only)
        G = decode_publisher_state(genesis)
        rep = dataclasses.replace

        refuse("trailing_byte", "format", "one byte after the CRC", successor + b"\x00")
        refuse("trailing_byte_resealed", "format",
               "one byte between the last field and a valid CRC", seal(successor[:-4] + b"\x00"))
        refuse("trailing_state", "format", "two images back to back", uninit + uninit)
        refuse("above_largest", "format", "the largest image plus one byte", largest + b"\x00")
        refuse_state("magic", "format", "magic CAIRNPSX", S, magic=b"CAIRNPSX")
        refuse_state("magic_journal", "format", "a journal magic", S, magic=JOURNAL_MAGIC)
        refuse_state("magic_head", "format", "a head magic", S, magic=HEAD_MAGIC)
        for v in (0, 2, 0xFFFFFFFF):
            refuse_state(f"version_{v:x}", "format", f"version {v:#x}", S, version=v)
        for f in (4, 7, 0x80000000, 0xFFFFFFFF):
            refuse_state(f"flags_{f:x}", "format", f"reserved flag bits {f:#x}", S, flags=f)
        refuse_state("flags_0_with_expected", "format",
                     "flags 0 but an expected head follows the URL", E, flags=0)
        refuse_state("flags_pending_for_expected", "format",
                     "flags say pending, the bytes hold an expected head", E, flags=2)
        refuse_state("flags_expected_for_pending", "format",
                     "flags say expected, the bytes hold a pending intent", G, flags=1)
        refuse_state("flags_both_expected_only", "format",
                     "flags 3 but only an expected head is stored", E, flags=3)
        flip = bytearray(successor)
        flip[-1] ^= 0x01
        refuse("crc_flip", "format", "bit 0 of the CRC's last byte flipped", bytes(flip))
        refuse("crc_zero", "format", "CRC all zero", successor[:-4] + bytes(4))
        flip = bytearray(successor)
        flip[PST_FIXED + 3] ^= 0x01
        refuse("url_byte_flip", "format", "a URL byte changed, CRC not updated", bytes(flip))
        refuse_state("url_length_0", "format", "URL length 0", rep(U, store_url=b""))
        refuse_state("url_length_4097", "format", "URL length 4097",
                     rep(U, store_url=max_url + b"x"))
        refuse_state("url_length_ffff", "format", "URL length 65535, 67 bytes follow", U,
                     url_length=0xFFFF)
        refuse_state("url_length_overruns", "format", "URL length one more than stored", U,
                     url_length=len(U.store_url) + 1)
        refuse_state("url_length_short", "format", "URL length one less than stored", U,
                     url_length=len(U.store_url) - 1)
        for label, b in (("space", 0x20), ("nul", 0x00), ("newline", 0x0A), ("del", 0x7F),
                         ("high", 0x80), ("ff", 0xFF)):
            refuse_state(f"url_{label}", "format", f"URL byte {b:#04x}",
                         rep(U, store_url=b"s3://cairn" + bytes([b]) + b"test"))
        refuse_state("url_only_space", "format", "URL is one space", rep(U, store_url=b" "))
        refuse_state("nil_namespace", "format", "nil namespace UUID", rep(U, ns=NIL_UUID))
        refuse_state("nil_publisher", "format", "nil publisher UUID", rep(U, publisher=NIL_UUID))
        refuse_state("nil_namespace_with_heads", "format",
                     "nil namespace (a format fault) before the heads' binding",
                     rep(S, ns=NIL_UUID))

        def etag(name: str, tag: bytes, why: str, base: PublisherState = E, **kw) -> None:
            refuse_state(name, "format", why,
                         rep(base, expected=rep(base.expected, etag=tag)), **kw)

        etag("etag_length_0", b"", "expected ETag length 0")
        etag("etag_length_1", b'"', "expected ETag is one double quote")
        etag("etag_length_1025", max_tag[:-1] + b'a"', "expected ETag of 1025 bytes")
        etag("etag_length_ffff", tag_a, "ETag length 65535", etag_length=0xFFFF)
        etag("etag_length_overruns", tag_a, "ETag length one more than stored",
             etag_length=len(tag_a) + 1)
        etag("etag_weak", b'W/"x"', 'weak ETag W/"x"')
        etag("etag_weak_empty", b'W/""', 'weak ETag W/""')
        etag("etag_unquoted", b"x", "unquoted ETag x")
        etag("etag_unquoted_hex", tag_a[1:-1], "ETag digits without quotes")
        etag("etag_inner_quote", b'"a"b"', 'a double quote inside: "a"b"')
        etag("etag_open_only", b'"abc', "no closing quote")
        etag("etag_close_only", b'abc"', "no opening quote")
        etag("etag_space", b'"a b"', "a space inside")
        etag("etag_control", b'"a\x01"', "a control byte inside")
        etag("etag_del", b'"\x7f"', "DEL inside")
        etag("etag_trailing_space", tag_a + b" ", "a space after the closing quote")
        etag("etag_two_tags", tag_a + b"," + tag_b, "two entity tags")
        etag("etag_star", b"*", "the wildcard *")

        def intent(name: str, why: str, base: PublisherState, code: str = "format",
                   **kw) -> None:
            refuse_state(name, code, why, rep(base, pending=rep(base.pending, **kw)))

        intent("precondition_0", "precondition byte 0", G, precondition=0)
        intent("precondition_3", "precondition byte 3", G, precondition=3)
        intent("precondition_ff", "precondition byte 255", S, precondition=0xFF)
        intent("if_none_match_with_etag", "If-None-Match carrying an ETag", G, etag=tag_a)
        intent("if_match_without_etag", "If-Match with ETag length 0", S, etag=b"")
        intent("if_match_weak_etag", 'If-Match with W/"x"', S, etag=b'W/"x"')
        intent("if_match_unquoted_etag", "If-Match with an unquoted ETag", S, etag=b"x")
        intent("if_match_inner_quote", 'If-Match with "a"b"', S, etag=b'"a"b"')
        intent("if_match_etag_1025", "If-Match with a 1025-byte ETag", S,
               etag=max_tag[:-1] + b'a"')
        refuse_state("if_match_etag_length_overruns", "format",
                     "precondition ETag length one more than stored", S,
                     pending_etag_length=len(tag_a) + 1)
        intent("if_match_without_expected", "If-Match on a genesis candidate, no expected head",
               G, precondition=IF_MATCH, etag=tag_a)
        intent("if_none_match_with_expected", "If-None-Match over an expected head", S,
               precondition=IF_NONE_MATCH, etag=b"")
        intent("genesis_revision_2", "no expected head; candidate r2 (revision 2), "
               "If-None-Match", G, image=H["r2"].image)
        intent("genesis_revision_2_if_match", "no expected head; candidate r2, If-Match", G,
               image=H["r2"].image, precondition=IF_MATCH, etag=tag_a)
        intent("not_successor_skip", "expected r1; candidate names r1 but is revision 3", S,
               "transition", image=H["r2_skip_revision"].image)
        intent("not_successor_same_head", "expected r1; candidate r1 itself", S, "transition",
               image=H["r1"].image)
        intent("not_successor_older", "expected r2; candidate r1",
               rep(S, expected=Expected(H["r2"].image, tag_b)), "transition",
               image=H["r1"].image, etag=tag_b)
        intent("not_successor_other_predecessor", "expected r1; candidate follows genesis", S,
               "transition", image=H["r2_predecessor_other"].image)
        intent("not_successor_sequence_back", "expected r1; candidate's prefix goes back", S,
               "transition", image=H["r2_sequence_back"].image)
        intent("not_successor_contradict", "expected r2; r3 with another hash for its cutoff",
               rep(S, expected=Expected(H["r2"].image, tag_b)), "transition",
               image=H["r3_contradict_hash"].image, etag=tag_b)
        refuse_state("expected_other_namespace", "binding", "expected head of another namespace",
                     rep(E, expected=Expected(H["r2_other_namespace"].image, tag_a)))
        refuse_state("expected_other_publisher", "binding", "expected head of another publisher",
                     rep(E, expected=Expected(H["r2_other_publisher"].image, tag_a)))
        refuse_state("expected_other_lineage", "binding", "expected head of another lineage",
                     rep(E, expected=Expected(H["r1_other_lineage"].image, tag_a)))
        intent("candidate_other_lineage", "genesis candidate of another lineage", G, "binding",
               image=H["r1_other_lineage"].image)
        intent("candidate_other_namespace", "expected r1; candidate r2 of another namespace "
               "(binding is checked before the transition)", S, "binding",
               image=H["r2_other_namespace"].image)
        refuse_state("state_other_namespace", "binding", "the state names another namespace",
                     rep(S, ns=NS_OTHER))
        refuse_state("state_other_publisher", "binding", "the state names another publisher",
                     rep(S, publisher=PUBLISHER_OTHER))
        refuse_state("state_other_lineage", "binding",
                     "the state's lineage is SHA-256 of the display name",
                     rep(S, lineage=sha256(b"db")))
        refuse_state("format_before_binding", "format",
                     "a weak ETag and a head of another namespace: format first",
                     rep(E, expected=Expected(H["r2_other_namespace"].image, b'W/"x"')))

        def damaged(image: bytes, offset: int) -> bytes:
            d = bytearray(image)
            d[offset] ^= 0x01
            return bytes(d)

        refuse_state("expected_head_damaged", "format", "a revision bit of the expected head",
                     rep(E, expected=rep(E.expected, image=damaged(E.expected.image, 100))))
        refuse_state("expected_head_footer", "format", "a footer bit of the expected head",
                     rep(S, expected=rep(S.expected, image=damaged(S.expected.image, 224))))
        intent("candidate_head_damaged", "a magic bit of the candidate", G,
               image=damaged(G.pending.image, 0))
        intent("candidate_head_footer", "a footer bit of the candidate", S,
               image=damaged(S.pending.image, 255))
        intent("candidate_head_zero", "an all-zero candidate image", S, image=bytes(HEAD_BYTES))
        self.bad_states = bad

    def build_vacuum_leases(self) -> None:
        rep = dataclasses.replace
        holder = uuid_bytes("7ac0ee5e-1ea5-4e00-8a11-0000000000a1")
        base = VacuumLease(NS, holder, 1_764_633_600, 1_764_633_720)
        self.leases: list[tuple[str, str, VacuumLease, bytes]] = []
        for name, note, v in [
            ("two_minutes", "the default term, from 2025-12-02T00:00:00Z", base),
            ("one_second", "the shortest term", rep(base, expires=base.written + 1)),
            ("one_hour", "the longest term", rep(base, expires=base.written + 3600)),
            ("epoch", "written at 0", VacuumLease(NS_OTHER, holder, 0, 60)),
            ("far_future", "the largest times", VacuumLease(
                NS, holder, MAX_UNIX_SECONDS - 3600, MAX_UNIX_SECONDS)),
        ]:
            data = encode_vacuum_lease(v)
            assert decode_vacuum_lease(data) == v, name
            self.leases.append((name, note, v, data))
        bad: list[tuple[str, str, bytes]] = []

        def refuse(name: str, why: str, data: bytes) -> None:
            assert outcome(decode_vacuum_lease, data) == "format", name
            bad.append((name, why, data))

        good = self.leases[0][3]
        refuse("empty", "no bytes", b"")
        refuse("short", "63 bytes", good[:63])
        refuse("long", "65 bytes", good + b"\x00")
        refuse("twice", "two leases back to back", good + good)
        refuse("magic", "magic CAIRNVLX", pack_vacuum_lease(base, magic=b"CAIRNVLX"))
        refuse("magic_state", "a publisher state magic", pack_vacuum_lease(base, magic=PST_MAGIC))
        for version in (0, 2, 0xFFFFFFFF):
            refuse(f"version_{version:x}", f"version {version:#x}",
                   pack_vacuum_lease(base, version=version))
        refuse("crc", "CRC32C off by one bit", pack_vacuum_lease(
            base, crc=crc32c(pack_vacuum_lease(base)[:60]) ^ 1))
        damaged = bytearray(good)
        damaged[50] ^= 0x10
        refuse("crc_field_damaged", "a written-time bit flipped, CRC unchanged", bytes(damaged))
        refuse("nil_namespace", "the nil namespace", pack_vacuum_lease(rep(base, ns=bytes(16))))
        refuse("nil_holder", "the nil holder", pack_vacuum_lease(rep(base, holder=bytes(16))))
        refuse("expires_at_written", "a term of 0 s",
               pack_vacuum_lease(rep(base, expires=base.written)))
        refuse("expires_before", "expires before it was written",
               pack_vacuum_lease(rep(base, expires=base.written - 1)))
        refuse("term_3601", "a term of 3601 s",
               pack_vacuum_lease(rep(base, expires=base.written + 3601)))
        refuse("time_2_63", "expires at 2^63",
               pack_vacuum_lease(VacuumLease(NS, holder, (1 << 63) - 60, 1 << 63)))
        refuse("time_all_ones", "both times 2^64 - 1", pack_vacuum_lease(
            VacuumLease(NS, holder, (1 << 64) - 1, (1 << 64) - 1)))
        self.bad_leases = bad

    # -- catalog log records ---------------------------------------------------------------

    def build_log_records(self) -> None:
        T = 1_764_633_600_123
        tu = "0e2b1d4c-6a8f-4c3e-9b1d-2f4a6c8e0a1b"
        loc = "s3://cairn-test/lakes/prod/tables/" + tu
        mloc = loc + "/metadata/00002-1a2b3c4d-0000-4000-8000-000000000002.metadata.json"
        prev = loc + "/metadata/00001-1a2b3c4d-0000-4000-8000-000000000001.metadata.json"
        digest = hashlib.sha256(b"metadata").hexdigest()
        good = [
            ("lake_created", "lake", {"type": "lake-created", "lake": "prod", "time-ms": T}),
            ("namespace_created", "lake", {
                "type": "namespace-created", "namespace": ["sales", "eu"], "time-ms": T + 1,
                "properties": {"owner": "ana", "comment": "line 1\nline 2\t\"quoted\" \u00e9\u4e2d",
                               "z\u00e9": "\u0001", "A": ""},
                "idempotency-key": "0191e5c2-7a3b-7cde-8f01-23456789abcd"}),
            ("namespace_updated", "lake", {
                "type": "namespace-updated", "namespace": ["sales"], "time-ms": T + 2,
                "updates": {"owner": "bo"}, "removals": ["a", "b", "comment"],
                "missing": ["nope"]}),
            ("namespace_dropped", "lake", {"type": "namespace-dropped", "namespace": ["tmp"],
                                           "time-ms": 0}),
            ("table_registered", "lake", {
                "type": "table-registered", "table": {"namespace": ["sales"], "name": "orders"},
                "table-uuid": tu, "location": loc, "time-ms": T + 3,
                "idempotency-key": "k-1"}),
            ("table_dropped", "lake", {
                "type": "table-dropped", "table": {"namespace": ["sales"], "name": "orders"},
                "table-uuid": tu, "time-ms": T + 4}),
            ("table_dropped_purge", "lake", {
                "type": "table-dropped", "table": {"namespace": ["sales"], "name": "orders"},
                "table-uuid": tu, "purge-location": loc, "time-ms": T + 4,
                "idempotency-key": "k-drop"}),
            ("table_renamed", "lake", {
                "type": "table-renamed", "from": {"namespace": ["sales"], "name": "orders"},
                "to": {"namespace": ["sales", "eu"], "name": "orders_v2"}, "table-uuid": tu,
                "time-ms": T + 5}),
            ("lease_taken", "lake", {
                "type": "lease-taken", "lease-id": "5ea5e000-0000-4000-8000-000000000001",
                "table-uuid": tu, "expires-ms": T + 3_600_000, "snapshot-id": -7,
                "prefix": loc + "/data/prepared", "time-ms": T + 8, "idempotency-key": "k-2"}),
            ("lease_taken_snapshot", "lake", {
                "type": "lease-taken", "lease-id": "5ea5e000-0000-4000-8000-000000000002",
                "table-uuid": tu, "expires-ms": 1, "snapshot-id": 9223372036854775807,
                "time-ms": T + 9}),
            ("lease_released", "lake", {
                "type": "lease-released", "lease-id": "5ea5e000-0000-4000-8000-000000000001",
                "time-ms": T + 10}),
            ("snapshot_protected", "lake", {
                "type": "snapshot-protected", "table-uuid": tu, "snapshot-id": 123,
                "time-ms": T + 11}),
            ("snapshot_unprotected", "lake", {
                "type": "snapshot-unprotected", "table-uuid": tu,
                "snapshot-id": -9223372036854775808, "time-ms": T + 12}),
            ("branch_created", "lake", {
                "type": "branch-created", "branch": "dev", "time-ms": T + 13,
                "branch-id": "b4a2c000-0000-4000-8000-000000000001"}),
            ("branch_created_all", "lake", {
                "type": "branch-created", "branch": "feature-2_x", "parent": "dev",
                "branch-id": "b4a2c000-0000-4000-8000-000000000002", "expires-ms": T + 86_400_000,
                "max-snapshot-age-ms": 604_800_000, "min-snapshots-to-keep": 10,
                "time-ms": T + 14, "idempotency-key": "k-branch"}),
            ("branch_dropped", "lake", {
                "type": "branch-dropped", "branch": "dev", "time-ms": T + 15,
                "branch-id": "b4a2c000-0000-4000-8000-000000000001"}),
            ("branch_forked", "lake", {
                "type": "branch-forked", "branch": "dev", "table-uuid": tu,
                "log-uuid": "f0c4e000-0000-4000-8000-000000000001", "from-log-uuid": tu,
                "from-revision": 9223372036854775807, "from-metadata-location": mloc,
                "time-ms": T + 16}),
            ("branch_forked_nested", "lake", {
                "type": "branch-forked", "branch": "feature-2_x", "from-branch": "dev",
                "table-uuid": tu, "log-uuid": "f0c4e000-0000-4000-8000-000000000002",
                "from-log-uuid": "f0c4e000-0000-4000-8000-000000000001", "from-revision": 1,
                "from-metadata-location": mloc, "time-ms": T + 17}),
            ("namespace_created_request", "lake", {
                "type": "namespace-created", "namespace": ["sales"], "time-ms": T + 18,
                "properties": {}, "idempotency-key": "k-ns",
                "request-sha256": hashlib.sha256(b"cairn request 1").hexdigest()}),
            ("commit_request", "table", {
                "type": "commit", "metadata-location": mloc, "metadata-sha256": digest,
                "metadata-length": 99, "previous-location": prev, "time-ms": T + 19,
                "idempotency-key": "k-commit",
                "request-sha256": hashlib.sha256(b"request").hexdigest()}),
            ("commit_first", "table", {
                "type": "commit", "metadata-location": prev, "metadata-sha256": digest,
                "metadata-length": 1234, "time-ms": T + 6}),
            ("commit_next", "table", {
                "type": "commit", "metadata-location": mloc, "metadata-sha256": digest,
                "metadata-length": 67108864, "previous-location": prev, "time-ms": T + 7,
                "idempotency-key": "0191e5c2-7a3b-7cde-8f01-23456789abce"}),
        ]
        self.records = []
        for name, kind, v in good:
            data = record_json(v)
            assert decode_record(kind, data) == v, name
            self.records.append((name, kind, data))
        bad = []

        def refuse(name: str, kind: str, data: bytes, why: str) -> None:
            assert outcome(decode_record, kind, data) == "format", name
            bad.append((name, kind, data, why))

        def variant(name: str, base: str, why: str, mutate) -> None:
            kind, v = next((k, json.loads(json.dumps(x))) for n, k, x in good if n == base)
            mutate(v)
            refuse(name, kind, record_json(v), why)

        nc = dict((n, d) for n, _, d in self.records)
        refuse("spaces", "lake", nc["lake_created"].replace(b'":', b'": '), "a space after a colon")
        refuse("key_order", "lake", b'{"type":"lake-created","lake":"prod","time-ms":%d}' % T,
               "keys not sorted")
        refuse("duplicate", "lake", nc["lake_created"].replace(b'{"lake":"prod",',
                                                               b'{"lake":"prod","lake":"prod",'),
               "a key twice")
        refuse("escaped_ascii", "lake", nc["lake_created"].replace(b'"prod"', b'"pro\\u0064"'),
               "an ASCII letter as a \\u escape")
        refuse("float_time", "lake",
               nc["lake_created"].replace(b'"time-ms":%d' % T, b'"time-ms":%d.0' % T),
               "time-ms 1764633600123.0")
        refuse("trailing_newline", "table", nc["commit_first"] + b"\n", "a newline after it")
        refuse("lake_record_as_table", "table", nc["lake_created"], "a lake record in a table log")
        refuse("table_record_as_lake", "lake", nc["commit_first"], "a commit in a lake log")
        variant("unknown_type", "lake_created", "type lake-deleted",
                lambda v: v.update(type="lake-deleted"))
        variant("unknown_member", "namespace_dropped", "an extra member",
                lambda v: v.update(extra=1))
        variant("missing_time", "namespace_dropped", "no time-ms", lambda v: v.pop("time-ms"))
        variant("negative_time", "namespace_dropped", "time-ms -1",
                lambda v: v.update({"time-ms": -1}))
        variant("empty_namespace", "namespace_dropped", "a namespace of no levels",
                lambda v: v.update(namespace=[]))
        variant("deep_namespace", "namespace_dropped", "9 levels",
                lambda v: v.update(namespace=["l"] * 9))
        variant("dotdot_level", "namespace_dropped", "a level \"..\"",
                lambda v: v.update(namespace=["a", ".."]))
        variant("slash_in_name", "table_dropped", "a table name with '/'",
                lambda v: v["table"].update(name="a/b"))
        variant("control_in_name", "table_dropped", "a table name with a tab",
                lambda v: v["table"].update(name="a\tb"))
        variant("long_name", "table_dropped", "a 256-byte table name",
                lambda v: v["table"].update(name="x" * 256))
        variant("uuid_upper", "table_dropped", "an upper-case UUID",
                lambda v: v.update({"table-uuid": tu.upper()}))
        variant("uuid_nil", "table_dropped", "the nil UUID",
                lambda v: v.update({"table-uuid": "00000000-0000-0000-0000-000000000000"}))
        variant("removals_unsorted", "namespace_updated", "removals out of order",
                lambda v: v.update(removals=["b", "a"]))
        variant("removal_updated", "namespace_updated", "a key both updated and removed",
                lambda v: v.update(removals=["owner"]))
        variant("update_nothing", "namespace_updated", "no update and no removal",
                lambda v: v.update(updates={}, removals=[]))
        variant("removed_and_missing", "namespace_updated", "a key both removed and missing",
                lambda v: v.update(missing=["a"]))
        variant("missing_absent", "namespace_updated", "no missing member",
                lambda v: v.pop("missing"))
        variant("purge_location_empty", "table_dropped_purge", "an empty purge-location",
                lambda v: v.update({"purge-location": ""}))
        variant("purge_location_number", "table_dropped_purge", "a purge-location that is a number",
                lambda v: v.update({"purge-location": 7}))
        variant("rename_to_itself", "table_renamed", "the same source and destination",
                lambda v: v.update(to=v["from"]))
        variant("location_space", "table_registered", "a space in the location",
                lambda v: v.update(location=loc + " x"))
        variant("key_space", "table_registered", "an Idempotency-Key with a space",
                lambda v: v.update({"idempotency-key": "a b"}))
        variant("key_long", "table_registered", "a 129-character Idempotency-Key",
                lambda v: v.update({"idempotency-key": "k" * 129}))
        variant("request_without_key", "commit_request", "request-sha256 without a key",
                lambda v: v.pop("idempotency-key"))
        variant("request_sha_upper", "namespace_created_request", "request-sha256 in upper case",
                lambda v: v.update({"request-sha256": v["request-sha256"].upper()}))
        variant("request_sha_short", "commit_request", "request-sha256 of 31 bytes",
                lambda v: v.update({"request-sha256": v["request-sha256"][:62]}))
        variant("lake_upper", "lake_created", "a lake id with upper case",
                lambda v: v.update(lake="Prod"))
        variant("sha_upper", "commit_first", "metadata-sha256 in upper case",
                lambda v: v.update({"metadata-sha256": digest.upper()}))
        variant("length_0", "commit_first", "metadata-length 0",
                lambda v: v.update({"metadata-length": 0}))
        variant("length_over", "commit_first", "metadata-length 64 MiB + 1",
                lambda v: v.update({"metadata-length": (64 << 20) + 1}))
        variant("previous_null", "commit_first", "previous-location null",
                lambda v: v.update({"previous-location": None}))
        variant("lease_protects_nothing", "lease_taken", "a lease without snapshot or prefix",
                lambda v: (v.pop("snapshot-id"), v.pop("prefix")))
        variant("lease_expires_0", "lease_taken", "expires-ms 0",
                lambda v: v.update({"expires-ms": 0}))
        variant("lease_snapshot_float", "lease_taken", "snapshot-id 1.5",
                lambda v: v.update({"snapshot-id": 1.5}))
        variant("lease_nil", "lease_released", "the nil lease id",
                lambda v: v.update({"lease-id": "00000000-0000-0000-0000-000000000000"}))
        variant("protected_no_snapshot", "snapshot_protected", "no snapshot-id",
                lambda v: v.pop("snapshot-id"))
        variant("protected_snapshot_2_63", "snapshot_protected", "snapshot-id 2^63",
                lambda v: v.update({"snapshot-id": 1 << 63}))
        variant("branch_main", "branch_created", "a branch named main",
                lambda v: v.update(branch="main"))
        variant("branch_tilde", "branch_created", "a branch name with '~'",
                lambda v: v.update(branch="a~b"))
        variant("branch_upper", "branch_created", "a branch name with upper case",
                lambda v: v.update(branch="Dev"))
        variant("branch_own_parent", "branch_created_all", "a branch that is its own parent",
                lambda v: v.update(parent="feature-2_x"))
        variant("branch_expires_0", "branch_created_all", "expires-ms 0",
                lambda v: v.update({"expires-ms": 0}))
        variant("branch_keep_0", "branch_created_all", "min-snapshots-to-keep 0",
                lambda v: v.update({"min-snapshots-to-keep": 0}))
        variant("branch_id_nil", "branch_dropped", "the nil branch id",
                lambda v: v.update({"branch-id": "00000000-0000-0000-0000-000000000000"}))
        variant("fork_revision_0", "branch_forked", "from-revision 0",
                lambda v: v.update({"from-revision": 0}))
        variant("fork_log_is_table", "branch_forked", "a fork's log that is the table's",
                lambda v: v.update({"log-uuid": tu}))
        variant("fork_no_location", "branch_forked", "no from-metadata-location",
                lambda v: v.pop("from-metadata-location"))
        variant("fork_from_branch_null", "branch_forked_nested", "from-branch null",
                lambda v: v.update({"from-branch": None}))
        self.bad_records = bad
        self.lake_namespaces = [(lake, lake_log_namespace(lake)) for lake in ("prod", "a", "x" * 64)]

    def build_avro_files(self) -> None:
        loc = "s3://cairn-test/lakes/prod/tables/0e2b1d4c-6a8f-4e3b-9c1d-2f4a6b8c0d1e"
        lists = [(f"{loc}/metadata/m0.avro", 4242, 0, 0), (f"{loc}/metadata/m1.avro", 1, 1, 3),
                 ("s3a://other/x\u00e9.avro", 64 << 20, 0, 0)]
        manifest = [(1, 0, f"{loc}/data/a.parquet", 100, 7), (0, 1, f"{loc}/data/del.parquet", 0,
                                                              None),
                    (2, 2, f"{loc}/data/eq.parquet", (1 << 62), 7)]
        v1 = [(1, None, f"{loc}/data/v1.parquet", 5, 7)]

        def list_text(entries):
            return "".join(f"{p} {n} {c}\n" for p, n, c, _ in entries)

        def manifest_text(entries):
            return "".join(f"{st} {c or 0} {p} {n}\n" for st, c, p, n, _ in entries)

        list_records = [avro_list_entry(p, n, c, parts) for p, n, c, parts in lists]
        man_records = [avro_manifest_entry(st, c, p, n, snap) for st, c, p, n, snap in manifest]
        self.avro_files = [
            ("list_null", "list", avro_container(AVRO_LIST_SCHEMA, list_records), list_text(lists)),
            ("list_deflate", "list", avro_container(AVRO_LIST_SCHEMA, list_records, "deflate"),
             list_text(lists)),
            ("list_empty", "list", avro_container(AVRO_LIST_SCHEMA, []), ""),
            ("manifest_v2", "manifest", avro_container(avro_manifest_schema(True), man_records,
                                                        "deflate"), manifest_text(manifest)),
            ("manifest_v1", "manifest",
             avro_container(avro_manifest_schema(False),
                            [avro_manifest_entry(st, c, p, n, s) for st, c, p, n, s in v1]),
             manifest_text(v1)),
        ]
        good_list = self.avro_files[0][2]
        good_manifest = avro_container(avro_manifest_schema(True), man_records)
        no_path = dict(AVRO_LIST_SCHEMA, fields=AVRO_LIST_SCHEMA["fields"][1:])
        block_at = len(good_list) - 16 - len(b"".join(list_records)) - \
            len(avro_long(len(b"".join(list_records)))) - len(avro_long(len(list_records)))
        self.bad_avro_files = [
            ("no_magic", "list", b"Obx\x01" + good_list[4:], "magic Obx\\x01"),
            ("truncated", "list", good_list[:-10], "the last 10 bytes cut"),
            ("sync_differs", "list", good_list[:-1] + b"\xff", "the block's sync marker differs"),
            ("block_past_end", "list",
             good_list[:block_at] + avro_long(len(list_records)) +
             avro_long(len(b"".join(list_records)) + 100) + b"".join(list_records) +
             good_list[-16:], "a block declaring 100 bytes more than there are"),
            ("negative_count", "list",
             good_list[:block_at] + avro_long(-1) + good_list[block_at + 1:],
             "a block count of -1"),
            ("codec_snappy", "list", avro_container(AVRO_LIST_SCHEMA, list_records, "snappy"),
             "codec snappy"),
            ("no_manifest_path", "list",
             avro_container(no_path, [r[len(avro_str(p)):] for r, (p, _, _, _) in
                                      zip(list_records, lists)]),
             "a manifest list without manifest_path"),
            ("length_0", "list", avro_container(AVRO_LIST_SCHEMA, [avro_list_entry("a", 0, 0)]),
             "manifest_length 0"),
            ("content_2_list", "list",
             avro_container(AVRO_LIST_SCHEMA, [avro_list_entry("a", 1, 2)]),
             "a manifest's content 2"),
            ("empty_path", "list", avro_container(AVRO_LIST_SCHEMA, [avro_list_entry("", 1, 0)]),
             "an empty manifest_path"),
            ("status_3", "manifest",
             avro_container(avro_manifest_schema(True), [avro_manifest_entry(3, 0, "a", 1)]),
             "entry status 3"),
            ("negative_size", "manifest",
             avro_container(avro_manifest_schema(True), [avro_manifest_entry(1, 0, "a", -1)]),
             "file_size_in_bytes -1"),
            ("list_as_manifest", "manifest", good_list, "a manifest list read as a manifest"),
            ("manifest_as_list", "list", good_manifest, "a manifest read as a manifest list"),
            ("schema_not_record", "list",
             avro_container("string", [avro_str("x")]), "records that are strings"),
            ("empty", "list", b"", "no bytes"),
            ("array_of_null", "list",
             avro_container({"type": "record", "name": "r", "fields": [
                 {"name": "manifest_path", "type": "string"},
                 {"name": "n", "type": {"type": "array", "items": "null"}}]},
                 [avro_str("a") + avro_long(1 << 60)]),
             "an array of nulls: 2^60 of them in 9 bytes"),
            ("string_past_block", "list",
             avro_container(AVRO_LIST_SCHEMA, [avro_long(1 << 40) + b"x"]),
             "a manifest_path declaring 2^40 bytes in a block of a few"),
            ("union_branch_5", "list",
             avro_container(AVRO_LIST_SCHEMA, [avro_str("a") + avro_long(1) + avro_long(0) +
                                               avro_long(0) + avro_long(7) + avro_long(5)]),
             "a union branch 5 of 2"),
            ("block_extra_bytes", "list",
             avro_container(AVRO_LIST_SCHEMA, [avro_list_entry("a", 1, 0) + b"\x00"]),
             "a block holding a byte more than its one record"),
            ("deflate_garbage", "list",
             good_list[:block_at].replace(b"\x08null", b"\x0edeflate") +
             good_list[block_at:], "codec deflate over bytes that do not inflate"),
        ]

    def bad_image(self, name: str) -> bytes:
        for n, image, *_ in self.bad_heads:
            if n == name:
                return image
        raise KeyError(name)

    # -- rendering -------------------------------------------------------------------------

    def render(self) -> str:
        out: list[str] = []
        w = out.append
        w("// GENERATED by tests/vectors/make_vectors.py from docs/formats.md. DO NOT EDIT.")
        w("// Regenerate: python3 tests/vectors/make_vectors.py   (rewrites this file)")
        w("// Check:      python3 tests/vectors/make_vectors.py --check   (CTest: "
          "vectors.regenerate)")
        w("// An independent implementation (Python standard library, its own CRC32C) produced")
        w("// every byte below; tests/format/test_vectors.cpp and test_publisher_state.cpp hold")
        w("// the C++ code to it.")
        w("// clang-format off")
        w("#pragma once")
        w("")
        w("#include <cstdint>")
        w("#include <span>")
        w("#include <string_view>")
        w("")
        w("namespace cairn::vectors {")
        w("")
        w(STRUCTS)
        w("// Fixed UUIDs")
        w(f'inline constexpr std::string_view kNamespace = "{uuid_text(NS)}";')
        w(f'inline constexpr std::string_view kNamespaceOther = "{uuid_text(NS_OTHER)}";')
        w(f'inline constexpr std::string_view kPublisher = "{uuid_text(PUBLISHER)}";')
        w(f'inline constexpr std::string_view kPublisherOther = "{uuid_text(PUBLISHER_OTHER)}";')
        w(f'inline constexpr std::string_view kNamespaceCompact = "{NS.hex()}";')
        w("")

        w("// CRC32C (Castagnoli, unmasked)")
        w("inline constexpr CrcVector kCrc[] = {")
        for name, data, crc in self.crcs:
            w(f'    {{"{name}", {hexlit(data)}, 0x{crc:08x}u}},')
        w("};")
        w("")

        w("// Journal headers: the database id as UTF-16 code units, the exact header bytes and")
        w("// the lineage id (SHA-256 of those bytes).")
        for name, units, _, _ in self.header_vectors:
            w(f"inline constexpr char16_t kUnits_{name}[] = "
              f"{{{', '.join(f'0x{u:04x}' for u in units)}}};")
        w("inline constexpr JournalHeaderVector kJournalHeaders[] = {")
        for name, units, hb, lin in self.header_vectors:
            w(f'    {{"{name}", std::u16string_view(kUnits_{name}, {len(units)}),')
            w(f"     {hexlit(hb)},")
            w(f'     "{lin.hex()}"}},')
        w("};")
        length, digest, first16, crc4 = self.largest_header
        w("// The largest header: 32,768 units, unit i = u'A' + i % 26.")
        w(f"inline constexpr std::uint32_t kLargestUnits = {MAX_DATABASE_ID_UNITS};")
        w(f"inline constexpr std::uint64_t kLargestHeaderLength = {length};")
        w(f'inline constexpr std::string_view kLargestHeaderSha256 = "{digest.hex()}";')
        w(f'inline constexpr std::string_view kLargestHeaderFirst16 = "{first16.hex()}";')
        w(f'inline constexpr std::string_view kLargestHeaderCrc = "{crc4.hex()}";')
        w("// SHA-256 of the UTF-8 display name \"db\": never the lineage.")
        w(f'inline constexpr std::string_view kDisplayNameSha256 = "{sha256(b"db").hex()}";')
        w("// Header images decodeJournalHeader must refuse (code format).")
        w("inline constexpr BadBytes kBadJournalHeaders[] = {")
        for name, data, why in self.bad_journal_headers:
            w(f'    {{"{name}", {hexlit(data)}, {len(data)}u, "{why}"}},')
        w("};")
        w("// journalHeaderLength(first 16 bytes): the total length, or 0 for a refusal.")
        w("inline constexpr HeaderLengthVector kHeaderLengths[] = {")
        for name, first16, want in self.header_lengths:
            w(f'    {{"{name}", "{first16.hex()}", {want or 0}u}},')
        w("};")
        w("")

        w("// Frames: u32 length, u64 sequence, payload, CRC32C of the preceding bytes.")
        w("inline constexpr FrameVector kFrames[] = {")
        for seq, payload in self.frames:
            fb = encode_frame(seq, payload)
            (crc,) = struct.unpack(">I", fb[-4:])
            w(f"    {{{seq}u, {hexlit(payload)},")
            w(f"     {hexlit(fb)}, 0x{crc:08x}u}},")
        w("};")
        w("")

        w("// Journal tails: the bytes after the last valid frame at `boundary`, what judgeTail must")
        w("// say (torn: a crash explains them) and the bytes a cut keeps (to the last one not zero).")
        w("inline constexpr TailVector kTails[] = {")
        for name, data, at, seq, torn, written in self.tails:
            w(f'    {{"{name}", {at}u, {seq}u, {str(torn).lower()}, {written}u,')
            w(f"     {hexlit(data)}}},")
        w("};")
        w("")

        def journal(prefix: str, jj: Journal, title: str) -> None:
            w(f"// {title}")
            w(f"inline constexpr std::string_view k{prefix}Records[] = {{"
              f"{', '.join(hexlit(r) for r in jj.records)}}};")
            w(f"inline constexpr std::string_view k{prefix}Bytes =")
            w(f"    {hexlit(jj.data)};")
            w(f"inline constexpr PrefixVector k{prefix}Prefixes[] = {{")
            for s in range(len(jj.records) + 1):
                length, digest = jj.prefix(s)
                w(f'    {{{s}u, {length}u, "{digest.hex()}"}},')
            w("};")

        journal("Journal", self.db,
                'The small journal: database id "db", four records (one empty), and the prefix '
                "at every sequence (s = 0 is the header; its hash is the lineage id).")
        journal("JournalA", self.journal_a, 'Divergent journal A: "db", records "a1", "a2".')
        journal("JournalB", self.journal_b,
                'Divergent journal B: "db", records "b1", "b2", "b3".')
        w("")

        w("// Segment objects (76-byte header + the journal bytes [start, end)).")
        w("inline constexpr SegmentVector kSegments[] = {")
        for name, (h, obj) in self.segments.items():
            w(f'    {{"{name}", "{h.lineage.hex()}", {h.first}u, {h.count}u, {h.start}u, '
              f"{h.end}u, {len(obj)}u,")
            w(f'     "{sha256(obj).hex()}",')
            w(f"     {hexlit(obj)}}},")
        w("};")
        w("// 76-byte segment headers decodeSegmentHeader must refuse (code format).")
        w("inline constexpr BadBytes kBadSegmentHeaders[] = {")
        for name, data, why in self.bad_segment_headers:
            w(f'    {{"{name}", {hexlit(data)}, {len(data)}u, "{why}"}},')
        w("};")
        w("// Complete segment objects decodeSegment must refuse (code format).")
        w("inline constexpr BadBytes kBadSegments[] = {")
        for name, data, why in self.bad_segments:
            w(f'    {{"{name}", {hexlit(data)}, {len(data)}u, "{why}"}},')
        w("};")
        w("")

        w("// Manifests: the typed value and its canonical bytes (RFC 8785 for our schema).")
        for name, (m, _) in self.manifests.items():
            w(f"inline constexpr ManifestSegmentVector kManifestSegments_{name}[] = {{")
            for s in m.segments:
                w(f"    {{{s.first}u, {s.count}u, {s.start}u, {s.end}u, {s.object_length}u, "
                  f'"{s.object_sha256.hex()}"}},')
            if not m.segments:
                w("    {0u, 0u, 0u, 0u, 0u, \"\"},  // placeholder: the span below is empty")
            w("};")
        w("inline constexpr ManifestVector kManifests[] = {")
        for name, (m, data) in self.manifests.items():
            n = len(m.segments)
            w(f'    {{"{name}", {m.generation}u, {hexlit(m.journal_header)},')
            w(f'     "{m.lineage.hex()}", {m.prefix_sequence}u, {m.prefix_length}u,')
            w(f'     "{m.prefix_sha256.hex()}",')
            w(f"     std::span<const ManifestSegmentVector>(kManifestSegments_{name}, {n}),")
            w(f"     {strlit(data)},")
            b = m.base
            if b is None:
                w(f'     "{sha256(data).hex()}", {len(data)}u, false, "", 0u, 0u, 0u, ""}},')
            else:
                w(f'     "{sha256(data).hex()}", {len(data)}u, true, "{b.sha256.hex()}",')
                w(f'     {b.length}u, {b.prefix_sequence}u, {b.prefix_length}u,')
                w(f'     "{b.prefix_sha256.hex()}"}},')
        w("};")
        w("// Manifests decodeManifest must refuse: non-canonical spellings of valid values,")
        w("// and canonical spellings of values that break a rule of docs/formats.md §3.")
        w("inline constexpr BadBytes kBadManifests[] = {")
        for name, data, why in self.noncanonical_manifests:
            w(f'    {{"{name}", {strlit(data)}, {len(data)}u, {strlit(why.encode())}}},')
        w("};")
        w("")

        w("// Valid heads: the complete image, id (SHA-256 of 256 bytes), footer (SHA-256 of")
        w("// [0, 224)) and every declared field. predecessorSha256 is 64 zero digits when")
        w("// absent.")
        w("inline constexpr HeadVector kHeads[] = {")
        for name, h in self.heads.items():
            f = h.fields
            pred = ZERO32 if f.predecessor is None else f.predecessor
            w(f"    // {self.head_notes[name]}")
            w(f'    {{"{name}",')
            w(f"     {hexlit(h.image)},")
            w(f'     "{h.id.hex()}",')
            w(f'     "{h.footer.hex()}",')
            w(f'     "{uuid_text(f.ns)}", "{uuid_text(f.publisher)}", '
              f'"{uuid_text(f.publication)}",')
            w(f'     "{f.lineage.hex()}", {f.revision}u,')
            w(f'     "{f.manifest_sha256.hex()}", {f.manifest_length}u,')
            w(f'     {f.prefix_sequence}u, {f.prefix_length}u, "{f.prefix_sha256.hex()}",')
            w(f'     {"true" if f.predecessor is not None else "false"}, "{pred.hex()}", '
              f"{0 if f.predecessor is None else 256}u}},")
        w("};")
        w("// Images decodeHead must refuse with code format; step is the first failing check")
        w("// of docs/formats.md §4 (1 length, 2 magic/version/flags, 3 footer, 4 nil UUID,")
        w("// 5 revision, 6 manifest length, 7 prefix sequence, 8 prefix length/hash,")
        w("// 9 predecessor). Footers are correct unless step is 3.")
        w("inline constexpr BadHeadVector kBadHeads[] = {")
        for name, image, code, step, why in self.bad_heads:
            w(f'    {{"{name}", {step}, "{code}", "{why}",')
            w(f"     {hexlit(image)}}},")
        w("};")
        w("// decodeHead(image, expected reference {id, length}): \"\" = decodes, else the code.")
        w("inline constexpr ReferenceCase kReferenceCases[] = {")
        for name, image, eid, elen, code in self.reference_cases:
            w(f'    {{"{name}", {hexlit(image)},')
            w(f'     "{eid.hex()}", {elen}u, "{code}"}},')
        w("};")
        w("// requireSuccessor(previous, next) by head name: \"\" = passes, else the code.")
        w("inline constexpr SuccessorCase kSuccessorCases[] = {")
        for name, p, n, code in self.successor_cases:
            w(f'    {{"{name}", "{p}", "{n}", "{code}"}},')
        w("};")
        w("// requireBinding(head, namespace, publisher, lineage).")
        w("inline constexpr BindingCase kBindingCases[] = {")
        for name, hn, ns, pub, lg, code in self.binding_cases:
            w(f'    {{"{name}", "{hn}", "{uuid_text(ns)}", "{uuid_text(pub)}",')
            w(f'     "{lg.hex()}", "{code}"}},')
        w("};")
        w("// bindManifest(head, manifest bytes).")
        w("inline constexpr ManifestBindingCase kManifestBindingCases[] = {")
        for name, hn, data, code in self.manifest_cases:
            w(f'    {{"{name}", "{hn}", {strlit(data)}, {len(data)}u, "{code}"}},')
        w("};")
        w("// Two graphs of one lineage with different first commits (journals A and B above),")
        w("// plus B's checkpoint spliced after A's revision 1: every pure check passes; only")
        w("// comparing prefix hashes with the owned journal tells them apart.")
        w('inline constexpr std::string_view kDivergentHeads[] = {"a_r1", "a_r2", "b_r1", '
          '"b_r2", "splice_b_after_a"};')
        w("")

        w("// Publisher state files (docs/formats.md §5). Heads are named by their kHeads entry")
        w("// (\"\" when absent); URLs and ETags are the exact stored bytes; precondition is 1")
        w("// (If-None-Match) or 2 (If-Match), 0 when no intent is pending.")
        w(f"inline constexpr std::uint64_t kPublisherStateMaxBytes = {MAX_PST_BYTES};")
        w("inline constexpr PublisherStateVector kPublisherStates[] = {")
        for name, note, st, data, exp, cand in self.states:
            w(f"    // {note}")
            w(f'    {{"{name}",')
            w(f"     {hexlit(data)},")
            w(f"     {strlit(st.store_url)},")
            w(f'     "{uuid_text(st.ns)}", "{uuid_text(st.publisher)}",')
            w(f'     "{st.lineage.hex()}",')
            w(f'     "{exp}", {strlit(st.expected.etag if st.expected else b"")},')
            w(f'     "{cand}", {st.pending.precondition if st.pending else 0}, '
              f'{strlit(st.pending.etag if st.pending else b"")}}},')
        w("};")
        w("// Every proper prefix (lengths 0..n-1) of these valid images is refused (code format).")
        w("inline constexpr std::string_view kPublisherStatesTruncated[] = {")
        for name in self.truncated_states:
            w(f'    "{name}",')
        w("};")
        w("// Images decodePublisherState must refuse, with the code it must give. The CRC is")
        w("// valid unless the case is about the CRC, so each reaches the fault its name says.")
        w("inline constexpr BadPublisherStateVector kBadPublisherStates[] = {")
        for name, code, why, data in self.bad_states:
            w(f'    {{"{name}", "{code}", {strlit(why.encode())},')
            w(f"     {hexlit(data)}}},")
        w("};")
        w("")
        w("// Vacuum leases (docs/formats.md §6): valid images and what they decode to.")
        w("inline constexpr VacuumLeaseVector kVacuumLeases[] = {")
        for name, note, v, data in self.leases:
            w(f"    // {note}")
            w(f'    {{"{name}", {hexlit(data)},')
            w(f'     "{uuid_text(v.ns)}", "{uuid_text(v.holder)}", {v.written}u, {v.expires}u}},')
        w("};")
        w("// Images decodeVacuumLease must refuse (code format); bytes are hex.")
        w("inline constexpr BadBytes kBadVacuumLeases[] = {")
        for name, why, data in self.bad_leases:
            w(f'    {{"{name}", {hexlit(data)}, {len(data)}, {strlit(why.encode())}}},')
        w("};")
        w("")
        w("// Catalog log records (docs/formats.md §9): the canonical bytes of each; the test")
        w("// holds the typed values. kind: \"lake\" or \"table\".")
        w("inline constexpr LogRecordVector kLogRecords[] = {")
        for name, kind, data in self.records:
            w(f'    {{"{name}", "{kind}", {strlit(data)}, {len(data)}u}},')
        w("};")
        w("// Records the decoders must refuse (code format).")
        w("inline constexpr BadLogRecordVector kBadLogRecords[] = {")
        for name, kind, data, why in self.bad_records:
            w(f'    {{"{name}", "{kind}", {strlit(data)}, {len(data)}u, {strlit(why.encode())}}},')
        w("};")
        w("// Iceberg manifest lists and manifests as Avro container files (catalog/iceberg/iceberg_files.hpp),")
        w("// written by this script's own encoder; hex.")
        w("inline constexpr AvroFileVector kAvroFiles[] = {")
        for name, kind, data, entries in self.avro_files:
            w(f'    {{"{name}", "{kind}", {hexlit(data)},')
            w(f'     {strlit(entries.encode())}}},')
        w("};")
        w("// Avro files the readers must refuse (code format).")
        w("inline constexpr BadAvroFileVector kBadAvroFiles[] = {")
        for name, kind, data, why in self.bad_avro_files:
            w(f'    {{"{name}", "{kind}", {hexlit(data)}, {strlit(why.encode())}}},')
        w("};")
        w("// Lake ids and their lake log namespaces.")
        w("inline constexpr LakeNamespaceVector kLakeNamespaces[] = {")
        for lake, ns in self.lake_namespaces:
            w(f'    {{"{lake}", "{ns}"}},')
        w("};")
        w("")
        w("}  // namespace cairn::vectors")
        w("")
        w("// clang-format on")
        return "\n".join(out) + "\n"

    def emit(self, directory: str) -> int:
        os.makedirs(directory, exist_ok=True)
        count = 0
        for name, h in self.heads.items():
            with open(os.path.join(directory, name + ".bin"), "wb") as fh:
                fh.write(h.image)
            with open(os.path.join(directory, name + ".json"), "w", encoding="ascii") as fh:
                fh.write(json.dumps(head_json(h), indent=2) + "\n")
            count += 1
        for name, image, code, _, _ in self.bad_heads:
            assert name not in self.heads
            with open(os.path.join(directory, name + ".bin"), "wb") as fh:
                fh.write(image)
            with open(os.path.join(directory, name + ".err"), "w", encoding="ascii") as fh:
                fh.write(code + "\n")
            count += 1
        return count


# -- Avro object container files (Iceberg manifest lists and manifests), written here with the
# standard library only: zig-zag varints, length-prefixed strings, one data block.

def avro_long(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def avro_str(b: bytes | str) -> bytes:
    if isinstance(b, str):
        b = b.encode()
    return avro_long(len(b)) + b


def avro_container(schema: dict, records: list[bytes], codec: str = "null",
                   sync: bytes = bytes(range(16))) -> bytes:
    meta = [(b"avro.schema", json.dumps(schema, separators=(",", ":")).encode()),
            (b"avro.codec", codec.encode())]
    out = b"Obj\x01" + avro_long(len(meta))
    for k, v in meta:
        out += avro_str(k) + avro_str(v)
    out += avro_long(0) + sync
    data = b"".join(records)
    if codec == "deflate":
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        data = c.compress(data) + c.flush()
    return out + avro_long(len(records)) + avro_long(len(data)) + data + sync


AVRO_LIST_SCHEMA = {"type": "record", "name": "manifest_file", "fields": [
    {"name": "manifest_path", "type": "string", "field-id": 500},
    {"name": "manifest_length", "type": "long", "field-id": 501},
    {"name": "partition_spec_id", "type": "int", "field-id": 502},
    {"name": "content", "type": "int", "field-id": 517},
    {"name": "added_snapshot_id", "type": "long", "field-id": 503},
    {"name": "partitions", "field-id": 507, "type": ["null", {"type": "array", "items": {
        "type": "record", "name": "r508", "fields": [
            {"name": "contains_null", "type": "boolean", "field-id": 509},
            {"name": "lower_bound", "type": ["null", "bytes"], "field-id": 510}]}}]}]}


def avro_list_entry(path: str, length: int, content: int, partitions: int = 0) -> bytes:
    out = avro_str(path) + avro_long(length) + avro_long(0) + avro_long(content) + avro_long(7)
    if not partitions:
        return out + avro_long(0)  # union branch 0: null
    out += avro_long(1) + avro_long(partitions)
    for i in range(partitions):
        out += b"\x01" + avro_long(1) + avro_str(bytes([i]))
    return out + avro_long(0)


def avro_manifest_schema(with_content: bool) -> dict:
    data_file = [{"name": "file_path", "type": "string", "field-id": 100},
                 {"name": "file_format", "type": "string", "field-id": 101},
                 {"name": "partition", "field-id": 102,
                  "type": {"type": "record", "name": "r102", "fields": []}},
                 {"name": "record_count", "type": "long", "field-id": 103},
                 {"name": "file_size_in_bytes", "type": "long", "field-id": 104}]
    if with_content:
        data_file.insert(0, {"name": "content", "type": "int", "field-id": 134})
    return {"type": "record", "name": "manifest_entry", "fields": [
        {"name": "status", "type": "int", "field-id": 0},
        {"name": "snapshot_id", "type": ["null", "long"], "field-id": 1},
        {"name": "data_file", "field-id": 2,
         "type": {"type": "record", "name": "r2", "fields": data_file}}]}


def avro_manifest_entry(status: int, content: int | None, path: str, size: int,
                        snapshot: int | None = 7) -> bytes:
    out = avro_long(status)
    out += avro_long(0) if snapshot is None else avro_long(1) + avro_long(snapshot)
    if content is not None:
        out += avro_long(content)
    return out + avro_str(path) + avro_str("PARQUET") + avro_long(10) + avro_long(size)


STRUCTS = """\
struct CrcVector {
  std::string_view name;
  std::string_view dataHex;
  std::uint32_t crc;
};

struct JournalHeaderVector {
  std::string_view name;
  std::u16string_view units;
  std::string_view headerHex;
  std::string_view lineageHex;
};

struct HeaderLengthVector {
  std::string_view name;
  std::string_view first16Hex;
  std::uint64_t length;  // 0: journalHeaderLength refuses (code format)
};

struct BadBytes {
  std::string_view name;
  std::string_view bytes;  // hex for journal headers and segments, raw bytes for manifests
  std::uint64_t length;    // the byte length (after decoding the hex)
  std::string_view why;
};

struct FrameVector {
  std::uint64_t sequence;
  std::string_view payloadHex;
  std::string_view frameHex;
  std::uint32_t crc;
};

struct TailVector {
  std::string_view name;
  std::uint64_t boundary;
  std::uint64_t nextSequence;
  bool torn;
  std::uint64_t writtenBytes;
  std::string_view tailHex;
};

struct PrefixVector {
  std::uint64_t sequence;
  std::uint64_t length;
  std::string_view sha256Hex;
};

struct SegmentVector {
  std::string_view name;
  std::string_view lineageHex;
  std::uint64_t firstSequence;
  std::uint32_t count;
  std::uint64_t journalStart;
  std::uint64_t journalEnd;
  std::uint64_t objectLength;
  std::string_view sha256Hex;
  std::string_view objectHex;
};

struct ManifestSegmentVector {
  std::uint64_t firstSequence;
  std::uint32_t count;
  std::uint64_t journalStart;
  std::uint64_t journalEnd;
  std::uint64_t objectLength;
  std::string_view objectSha256Hex;
};

struct ManifestVector {
  std::string_view name;
  std::uint64_t generation;
  std::string_view journalHeaderHex;
  std::string_view lineageHex;
  std::uint64_t prefixSequence;
  std::uint64_t prefixLength;
  std::string_view prefixSha256Hex;
  std::span<const ManifestSegmentVector> segments;
  std::string_view json;  // the canonical bytes
  std::string_view sha256Hex;
  std::uint64_t length;
  // Format 2: the base (hasBase false and the rest empty for format 1).
  bool hasBase;
  std::string_view baseSha256Hex;
  std::uint64_t baseLength;
  std::uint64_t basePrefixSequence;
  std::uint64_t basePrefixLength;
  std::string_view basePrefixSha256Hex;
};

struct HeadVector {
  std::string_view name;
  std::string_view imageHex;
  std::string_view idHex;
  std::string_view footerHex;
  std::string_view ns;
  std::string_view publisher;
  std::string_view publication;
  std::string_view lineageHex;
  std::uint64_t revision;
  std::string_view manifestSha256Hex;
  std::uint32_t manifestLength;
  std::uint64_t prefixSequence;
  std::uint64_t prefixLength;
  std::string_view prefixSha256Hex;
  bool hasPredecessor;
  std::string_view predecessorSha256Hex;
  std::uint32_t predecessorLength;
};

struct BadHeadVector {
  std::string_view name;
  int step;
  std::string_view code;
  std::string_view why;
  std::string_view imageHex;
};

struct ReferenceCase {
  std::string_view name;
  std::string_view imageHex;
  std::string_view expectedIdHex;
  std::uint32_t expectedLength;
  std::string_view code;
};

struct SuccessorCase {
  std::string_view name;
  std::string_view previous;
  std::string_view next;
  std::string_view code;
};

struct BindingCase {
  std::string_view name;
  std::string_view head;
  std::string_view ns;
  std::string_view publisher;
  std::string_view lineageHex;
  std::string_view code;
};

struct ManifestBindingCase {
  std::string_view name;
  std::string_view head;
  std::string_view manifest;
  std::uint64_t length;  // bytes of manifest
  std::string_view code;
};

struct PublisherStateVector {
  std::string_view name;
  std::string_view imageHex;
  std::string_view storeUrl;
  std::string_view ns;
  std::string_view publisher;
  std::string_view lineageHex;
  std::string_view expectedHead;  // kHeads name, "" when absent
  std::string_view expectedEtag;
  std::string_view candidateHead;  // kHeads name, "" when no intent is pending
  int precondition;                // 1 If-None-Match, 2 If-Match, 0 when none is pending
  std::string_view pendingEtag;
};

struct BadPublisherStateVector {
  std::string_view name;
  std::string_view code;
  std::string_view why;
  std::string_view imageHex;
};

struct LogRecordVector {
  std::string_view name;
  std::string_view kind;
  std::string_view bytes;  // raw
  std::uint64_t length;
};

struct BadLogRecordVector {
  std::string_view name;
  std::string_view kind;
  std::string_view bytes;  // raw
  std::uint64_t length;
  std::string_view why;
};

struct LakeNamespaceVector {
  std::string_view lake;
  std::string_view ns;
};

struct AvroFileVector {
  std::string_view name;
  std::string_view kind;  // "list" (readManifestList) or "manifest" (readManifest)
  std::string_view hex;
  // The entries, one per line: list "path length content", manifest "status content path size".
  std::string_view entries;
};

struct BadAvroFileVector {
  std::string_view name;
  std::string_view kind;
  std::string_view hex;
  std::string_view why;
};

struct VacuumLeaseVector {
  std::string_view name;
  std::string_view imageHex;
  std::string_view ns;
  std::string_view holder;
  std::uint64_t writtenUnixSeconds;
  std::uint64_t expiresUnixSeconds;
};
"""


def hexlit(data: bytes, width: int = 96) -> str:
    """A C++ string literal of lowercase hex, split into adjacent literals."""
    h = data.hex()
    if len(h) <= width:
        return f'"{h}"'
    parts = [h[i : i + width] for i in range(0, len(h), width)]
    return "\n     ".join(f'"{p}"' for p in parts)


def strlit(data: bytes, width: int = 90) -> str:
    """A C++ string literal with the exact bytes (octal escapes, never greedy hex escapes)."""
    chunks, cur = [], ""
    for b in data:
        c = chr(b)
        if c == '"':
            piece = '\\"'
        elif c == "\\":
            piece = "\\\\"
        elif c == "?":
            piece = "\\?"  # no trigraphs
        elif 0x20 <= b < 0x7F:
            piece = c
        else:
            piece = f"\\{b:03o}"
        if len(cur) + len(piece) > width:
            chunks.append(cur)
            cur = ""
        cur += piece
    chunks.append(cur)
    lit = "\n     ".join(f'"{c}"' for c in chunks)
    assert _unescape(lit) == data
    if b"\x00" in data:
        # A string_view built from a bare literal stops at the first NUL: give the length.
        return f"std::string_view({lit},\n     {len(data)})"
    return lit


def _unescape(lit: str) -> bytes:
    """Reads back what strlit wrote (adjacent literals, \\ooo, \\", \\\\, \\?)."""
    out = bytearray()
    i = 0
    while i < len(lit):
        if lit[i] != '"':
            i += 1
            continue
        i += 1
        while lit[i] != '"':
            if lit[i] == "\\":
                nxt = lit[i + 1]
                if nxt in "01234567":
                    out.append(int(lit[i + 1 : i + 4], 8))
                    i += 4
                    continue
                out.append(ord(nxt))
                i += 2
                continue
            out.append(ord(lit[i]))
            i += 1
        i += 1
    return bytes(out)


def main(argv: list[str]) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    target = os.path.join(here, "vectors.inc")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="compare with the committed vectors.inc; exit 1 on a difference")
    mode.add_argument("--stdout", action="store_true", help="print vectors.inc")
    mode.add_argument("--emit-dir", metavar="DIR",
                      help="write head images (NAME.bin) with NAME.json or NAME.err")
    args = ap.parse_args(argv)

    gen = Gen()
    if args.emit_dir:
        n = gen.emit(args.emit_dir)
        print(f"{n} head images written to {args.emit_dir}")
        return 0
    text = gen.render()
    if args.stdout:
        sys.stdout.write(text)
        return 0
    if args.check:
        try:
            with open(target, encoding="utf-8", newline="") as fh:
                committed = fh.read()
        except FileNotFoundError:
            print(f"{target} is missing; run {sys.argv[0]} to create it", file=sys.stderr)
            return 1
        if committed == text:
            print(f"{target} matches the generator")
            return 0
        diff = difflib.unified_diff(committed.splitlines(keepends=True),
                                    text.splitlines(keepends=True), "vectors.inc (committed)",
                                    "vectors.inc (regenerated)", n=1)
        sys.stderr.writelines(list(diff)[:200])
        print(f"\n{target} differs from the generator's output; regenerate with "
              f"python3 {os.path.abspath(__file__)}", file=sys.stderr)
        return 1
    with open(target, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
