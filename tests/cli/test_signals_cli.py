#!/usr/bin/env python3
"""SIGINT and SIGTERM, and the status lines of the long commands (docs/operations.md,
"Progress and signals").

Usage: test_signals_cli.py /path/to/cairn
Runs on the directory store and on RGW (S3_* from ../shared/s3/start-rgw.sh; without them
this test fails unless CAIRN_ALLOW_NO_S3=1 outside CI).

- SIGTERM during a checkpoint, at every fault point of the publisher (CAIRN_TEST_FAULT with
  :TERM sends it there, handled as one from outside): exit 143, the JSON object and a summary
  say so, and the database is in one of the three states a stop may leave (the checkpoint
  finished; its intent is recorded; nothing was published), with nothing lost: the next
  checkpoint covers every acknowledged record and `verify --deep` passes.
- SIGINT to `cairn ingest` (and to `cairn append`) while its input is still open: the input
  ends at the last whole record (a half-written line is never a record), the job finishes
  (durable, a last checkpoint, the acknowledgement) and exits 130.
- Three SIGINTs to an ingest whose store never answers: it exits 130 at once.
- --progress=always (text and --json status lines), never, -q, auto on a pipe and on a
  terminal.
"""
import array
import fcntl
import json
import os
import pty
import select
import signal
import subprocess
import tempfile
import termios
import threading
import time
import uuid

from cli_support import FakeS3Server, cairn, check, finish, js, records, run, test_stores

POINTS = ["before-upload", "after-upload", "before-intent", "after-intent", "before-put",
          "after-put", "before-expected"]


def wait_or_kill(p, seconds):
    """Waits for `p` to exit; kills it after `seconds` (its exit code then says so)."""
    try:
        p.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def json_lines(data):
    out = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"unparsed": line})
    return out


def sigterm_during_checkpoint(tmp, store, label):
    db = os.path.join(tmp, f"db-{label}")
    ns = str(uuid.uuid4())
    r = run("init", db, "--db-id", label, "--store", store, "--namespace", ns)
    check(r.returncode == 0, f"{label}: init: {r.stderr!r}")
    sequence = 0
    states = {"finished": 0, "intent kept": 0, "nothing published": 0}
    for point in POINTS:
        what = f"{label}: SIGTERM at {point}"
        r = run("append", db, stdin=records(point, 300))
        check(r.returncode == 0, f"{what}: append")
        sequence += 300
        before = js(run("status", db, "--json"))
        r = run("checkpoint", db, "--segment-mib", "1", "--json",
                env={"CAIRN_TEST_FAULT": f"{point}:1:TERM"})
        out = js(r)
        check(r.returncode == 143, f"{what}: exit 143, got {r.returncode}: {r.stderr!r}")
        check(out.get("interrupted") == "SIGTERM", f"{what}: the JSON object says so: {out}")
        lines = json_lines(r.stderr)
        summary = [o for o in lines if o.get("message_type") == "summary"]
        check(len(summary) == 1 and summary[0].get("interrupted") == "SIGTERM"
              and summary[0].get("command") == "checkpoint",
              f"{what}: one summary line on stderr: {r.stderr!r}")
        notices = [o for o in lines if o.get("message_type") == "interrupt"]
        check(len(notices) == 1 and notices[0].get("signal") == "SIGTERM",
              f"{what}: one notice of the signal: {r.stderr!r}")
        st = js(run("status", db, "--json"))
        pending = st.get("pending") is not None
        moved = (st.get("expected") or {}).get("id") != (before.get("expected") or {}).get("id")
        if pending:
            states["intent kept"] += 1
            check(not moved, f"{what}: an intent is kept with the expected head unchanged")
            check(st.get("selected") in ("expected", "candidate"),
                  f"{what}: the store selects the expected head or the candidate: {st}")
        else:
            # No intent: the store selects exactly what the directory expects (nothing, before
            # the first checkpoint).
            settled = "expected" if st.get("expected") else "missing"
            check(st.get("selected") == settled, f"{what}: settled without an intent: {st}")
            if moved:
                states["finished"] += 1
                check(out.get("ok") is True and
                      st["expected"].get("prefix_sequence") == sequence,
                      f"{what}: a finished checkpoint covers every record: {out} {st}")
            else:
                states["nothing published"] += 1
                check(out.get("ok") is False, f"{what}: nothing published is a failure: {out}")
        # Which of the three it is depends on how soon the loop handles the signal (recording
        # the intent is no store request, so a stop just before it leaves the intent, refused
        # its PUT); each is a state the next checkpoint settles.
        check(st.get("journal_end_sequence") == sequence, f"{what}: no record lost")
        r = run("checkpoint", db, "--json")
        res = js(r)
        check(r.returncode == 0 and res.get("prefix_sequence") == sequence,
              f"{what}: the next checkpoint covers everything: {r.stdout!r} {r.stderr!r}")
        st = js(run("status", db, "--json"))
        check(st.get("pending") is None and st.get("selected") == "expected",
              f"{what}: settled after the next checkpoint: {st}")
    r = run("verify", db, "--deep", "--json")
    check(r.returncode == 0 and js(r).get("prefix_sequence") == sequence,
          f"{label}: verify --deep after every stop: {r.stdout!r} {r.stderr!r}")
    print(f"{label}: SIGTERM during checkpoint, by state: {states}")


def read_stderr(proc, into):
    for line in iter(proc.stderr.readline, b""):
        into.append(line)


def sigint_during_ingest(tmp, store, label):
    db = os.path.join(tmp, f"ingest-{label}")
    what = f"{label}: SIGINT to ingest"
    p = subprocess.Popen([cairn, "ingest", db, "--store", store, "--namespace", str(uuid.uuid4()),
                          "--json", "--progress=always"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = []
    reader = threading.Thread(target=read_stderr, args=(p, err), daemon=True)
    reader.start()
    whole = 1000
    p.stdin.write(records("ingest", whole) + b"half a record, never ended")
    p.stdin.flush()
    # The status lines (every 2 s with --json) say when every whole record was handed on.
    deadline = time.time() + 120
    seen = 0
    while time.time() < deadline and seen < whole:
        time.sleep(0.2)
        for o in json_lines(b"".join(err)):
            if o.get("message_type") == "status" and o.get("unit") == "records":
                seen = max(seen, o.get("done", 0))
    check(seen == whole, f"{what}: the status lines count the records read: {seen}")
    p.send_signal(signal.SIGINT)
    # The input stays open (closing it would end it, and then its last line would be a
    # record, as at the end of any input).
    wait_or_kill(p, 120)
    out = p.stdout.read()
    p.stdin.close()
    reader.join(timeout=10)
    res = js(subprocess.CompletedProcess([], 0, out, b""))
    check(p.returncode == 130, f"{what}: exit 130, got {p.returncode}: {b''.join(err)!r}")
    check(res.get("interrupted") == "SIGINT" and res.get("last_sequence") == whole,
          f"{what}: acknowledged through the last whole record: {res}")
    st = js(run("status", db, "--json"))
    check(st.get("journal_end_sequence") == whole, f"{what}: the half record is not in the "
                                                   f"journal: {st.get('journal_end_sequence')}")
    check(st.get("pending") is None and st.get("selected") == "expected" and
          (st.get("expected") or {}).get("prefix_sequence") == whole,
          f"{what}: its last checkpoint covers them: {st}")


def unread(pipe):
    """Bytes written into `pipe` that its reader has not read yet (FIONREAD)."""
    buf = array.array("i", [0])
    fcntl.ioctl(pipe.fileno(), termios.FIONREAD, buf)
    return buf[0]


def sigint_during_append(tmp):
    db = os.path.join(tmp, "append")
    what = "SIGINT to append"
    check(run("init", db, "--db-id", "append").returncode == 0, f"{what}: init")
    p = subprocess.Popen([cairn, "append", db, "--json"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(records("append", 50) + b"half a line")
    p.stdin.flush()
    deadline = time.time() + 60
    while time.time() < deadline and unread(p.stdin) > 0:
        time.sleep(0.1)
    time.sleep(1)  # read from the pipe; now split and appended (50 small records)
    p.send_signal(signal.SIGINT)
    wait_or_kill(p, 60)
    out, err = p.stdout.read(), p.stderr.read()
    p.stdin.close()
    res = js(subprocess.CompletedProcess([], 0, out, b""))
    check(p.returncode == 130 and res.get("sequence") == 50 and
          res.get("interrupted") == "SIGINT",
          f"{what}: exit 130, acknowledged through the last whole line: {p.returncode} {res} "
          f"{err!r}")
    check(js(run("journal", db, "--json")).get("end_sequence") == 50,
          f"{what}: the half line is not in the journal")


def three_sigints(tmp):
    # A store that reads requests and never answers: the first SIGINT ends the input (the
    # job's last checkpoint then waits on the store), the second refuses new requests and
    # ends retries, the third exits at once, whatever is in flight.
    server = FakeS3Server(lambda m, t: None)
    env = dict(os.environ, AWS_ACCESS_KEY_ID="AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY="x" * 20)
    db = os.path.join(tmp, "stuck")
    try:
        p = subprocess.Popen([cairn, "ingest", db, "--store",
                              server.url("&timeout_ms=600000"), "--namespace",
                              str(uuid.uuid4()), "--json"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env)
        p.stdin.write(records("stuck", 10))
        p.stdin.flush()
        time.sleep(3)
        started = time.time()
        for _ in range(3):
            p.send_signal(signal.SIGINT)
            time.sleep(0.5)
        # The input stays open until it exited: an input that ends lets the reader thread
        # finish, and ThreadSanitizer reports a finished thread nobody joined when the third
        # signal's _exit comes after that (exit 66), a report about the exit, not a race.
        wait_or_kill(p, 30)
        err = p.stderr.read()
        p.stdin.close()
        p.stdout.close()
        check(p.returncode == 130 and time.time() - started < 30,
              f"three SIGINTs: exit 130 at once, got {p.returncode} after "
              f"{time.time() - started:.1f} s: {err[-4000:]!r}")
    finally:
        server.close()


def status_lines(tmp, store, label):
    db = os.path.join(tmp, f"progress-{label}")
    r = run("init", db, "--db-id", label, "--store", store, "--namespace", str(uuid.uuid4()))
    check(r.returncode == 0, f"{label}: init")

    def checkpoint(*args):
        r = run("append", db, stdin=records("p", 500))
        check(r.returncode == 0, f"{label}: append")
        return run("checkpoint", db, *args)

    r = checkpoint("--progress=always", "--json")
    lines = json_lines(r.stderr)
    status = [o for o in lines if o.get("message_type") == "status"]
    check(r.returncode == 0 and js(r).get("ok") is True, f"{label}: checkpoint: {r.stderr!r}")
    check(len(status) >= 1 and status[-1].get("final") is True
          and status[-1].get("command") == "checkpoint",
          f"{label}: --progress=always --json ends with a final status line: {r.stderr!r}")
    last = status[-1].get("store", {}) if status else {}
    written = js(r).get("objects_written", -1)
    check(last.get("objects_written", -2) >= written >= 1 and last.get("bytes_written", 0) > 0,
          f"{label}: the status counts the objects written ({written}): {last}")
    check(all(line.startswith(b"{") for line in r.stderr.splitlines()),
          f"{label}: with --json every stderr line is a JSON object: {r.stderr!r}")
    r = checkpoint("--progress=always")
    text = r.stderr.decode()
    check(r.returncode == 0 and text.startswith("checkpoint") and "wrote " in text
          and "\r" not in text, f"{label}: --progress=always on a pipe: lines: {text!r}")
    for args in (["--progress=never"], ["-q"], ["--progress=always", "-q"], []):
        r = checkpoint(*args)
        check(r.returncode == 0 and r.stderr == b"",
              f"{label}: {args or 'auto on a pipe'}: no status: {r.stderr!r}")
    r = run("checkpoint", db, "--progress=sometimes")
    check(r.returncode == 2, f"{label}: --progress takes auto, always, never: {r.returncode}")
    # auto on a terminal: one line rewritten in place, ended by a newline.
    run("append", db, stdin=records("tty", 500))
    master, slave = pty.openpty()
    p = subprocess.Popen([cairn, "checkpoint", db], stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    out, data = b"", b""
    deadline = time.time() + 120
    while time.time() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        elif p.poll() is not None:
            break
    out = p.communicate()[0]
    os.close(master)
    check(p.returncode == 0 and data.startswith(b"\rcheckpoint") and b"\x1b[K" in data
          and data.endswith(b"\r\n"), f"{label}: auto on a terminal: {data!r} {out!r}")


def main():
    with tempfile.TemporaryDirectory(prefix="cairn-signals-") as tmp:
        for label, store in test_stores(tmp):
            status_lines(tmp, store, label)
            sigterm_during_checkpoint(tmp, store, label)
            sigint_during_ingest(tmp, store, label)
        sigint_during_append(tmp)
        three_sigints(tmp)
    finish()


main()
