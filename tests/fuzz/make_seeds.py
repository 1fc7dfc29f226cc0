#!/usr/bin/env python3
"""Writes the fuzz seed corpora (tests/fuzz/seeds/TARGET/) from the independent vectors.

Run once after the vectors change; the seeds are committed. Valid inputs give the fuzzers a
start deep inside each decoder; the fuzzers mutate from there.
"""
import hashlib
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "vectors"))
import make_vectors as mv  # noqa: E402


def write(target: str, name: str, data: bytes) -> None:
    d = os.path.join(here, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as fh:
        fh.write(data)


def main() -> int:
    g = mv.Gen()
    for name, h in g.heads.items():
        write("head", name, h.image)
    for name, (_, data) in g.manifests.items():
        write("manifest", name, data)
    for name, (_, obj) in g.segments.items():
        write("segment", name, obj)
        write("frames", name, b"\x05" + obj[76:])  # first byte: the chunk size the target uses
        write("sha256_lane", name, b"\x25\x5b" + obj)  # first two bytes: where the lanes cut
    for j in (g.db, g.journal_a, g.journal_b):
        tag = hashlib.sha256(j.data).hexdigest()[:12]
        write("journal_header", tag, j.data)
        write("frames", tag, b"\x03" + j.data[len(j.header):])
    for name, _, _, data, _, _ in g.states:
        write("publisher_state", name, data)
    for name, _, _, data in g.leases:
        write("vacuum_lease", name, data)
    for name, kind, data in g.records:
        # First byte: which decoder (even: the lake log's, odd: a table log's).
        write("log_record", name, (b"\x00" if kind == "lake" else b"\x01") + data)
    for name, kind, data, _ in g.avro_files + g.bad_avro_files:
        # First byte: which reader (even: the manifest list's, odd: the manifest's).
        write("iceberg_files", name, (b"\x00" if kind == "list" else b"\x01") + data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
