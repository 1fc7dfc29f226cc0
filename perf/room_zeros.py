#!/usr/bin/env python3
"""How the journal's room is best written on a disk (docs/decisions/0050-journal-writes-zeros-ahead-frames.md, docs/decisions/0052-room-zeros-written-o-direct.md).

Two measurements, each alternating its variants so all see the same disk:

  zeros    16 MiB of zeros and one fdatasync, 48 times into a new file: through the page
           cache, or with O_DIRECT. Prints MB/s per round.
  batches  rooms of 16 MiB (buffered or direct), each filled with RWF_DSYNC writes of
           --batch bytes (69,308 by default, a batch of 256 frames of 256 B, not a multiple of
           a page; 69,632 is one, as a batch the journal runs on to its page's end). Prints
           microseconds per batch: its durable write + its share of the room's zeros.

  python3 perf/room_zeros.py --dir /var/tmp/jb zeros
  python3 perf/room_zeros.py --dir /var/tmp/jb batches [--batch 69632]

The directory must be on the disk under test (never tmpfs); the file is removed afterwards.
"""
import argparse
import mmap
import os
import sys
import time

ROOM = 16 << 20
CHUNK = 1 << 20


def zero_buffer():
    buf = mmap.mmap(-1, CHUNK)  # page-aligned, as O_DIRECT needs
    buf.write(b"\0" * CHUNK)  # touched: no zero-page faults while copying from it
    return buf


def write_all(fd, view, at, flags=0):
    """Writes every byte of `view` at `at` (a short write continues; 0 bytes is an error)."""
    done = 0
    while done < len(view):
        n = os.pwritev(fd, [view[done:]], at + done, flags)
        if n <= 0:
            raise OSError("pwritev wrote nothing at offset %d" % (at + done))
        done += n


def write_room(fd, at, zeros):
    view = memoryview(zeros)
    for k in range(ROOM // CHUNK):
        write_all(fd, view, at + k * CHUNK)


def zeros_rate(path, direct, rooms=48):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (os.O_DIRECT if direct else 0))
    try:
        zeros = zero_buffer()
        started = time.perf_counter()
        for i in range(rooms):
            write_room(fd, i * ROOM, zeros)
            os.fdatasync(fd)
        seconds = time.perf_counter() - started
    finally:
        os.close(fd)
        os.unlink(path)
    return rooms * ROOM / seconds / 1e6


def batch_cost(path, direct, batch, rooms=6):
    buffered = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    room_fd = buffered
    try:
        if direct:
            room_fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
        zeros = zero_buffer()
        data = memoryview(os.urandom(batch))
        at = end = batches = 0
        room_s = batch_s = 0.0
        for _ in range(rooms):
            started = time.perf_counter()
            write_room(room_fd, end, zeros)
            os.fdatasync(buffered)
            room_s += time.perf_counter() - started
            end += ROOM
            started = time.perf_counter()
            while at + batch <= end:
                write_all(buffered, data, at, os.RWF_DSYNC)
                at += batch
                batches += 1
            batch_s += time.perf_counter() - started
    finally:
        if room_fd != buffered:
            os.close(room_fd)
        os.close(buffered)
        os.unlink(path)
    return batch_s / batches * 1e6, room_s / batches * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True, help="a directory on the disk under test")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--batch", type=int, default=69308, help="bytes per durable write")
    parser.add_argument("what", choices=["zeros", "batches"])
    args = parser.parse_args()
    if args.rounds < 1 or args.batch < 1 or args.batch > ROOM:
        sys.exit("room_zeros.py: --rounds >= 1 and 1 <= --batch <= 16 MiB")
    path = os.path.join(args.dir, "room-zeros-%d" % os.getpid())
    for r in range(args.rounds):
        # Alternating, and which variant goes first alternates too.
        order = (False, True) if r % 2 == 0 else (True, False)
        cells = {}
        for direct in order:
            name = "direct" if direct else "buffered"
            if args.what == "zeros":
                cells[name] = "%s %5.0f MB/s" % (name, zeros_rate(path, direct))
            else:
                write_us, room_us = batch_cost(path, direct, args.batch)
                cells[name] = "%s room: batch %4.0f + room %4.0f us" % (name, write_us, room_us)
        print("round %d: %s   %s" % (r + 1, cells["buffered"], cells["direct"]))


if __name__ == "__main__":
    main()
