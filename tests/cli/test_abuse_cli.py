#!/usr/bin/env python3
"""The core promise under abuse (issue 22): what an attacker or a careless operator does to a
database directory, a directory store, the standard descriptors and the command line, and
what cairn must answer. Each function holds the checks of one defect of the issue; every one
of them failed on the code before its fix (docs/journal.md and docs/operations.md say what
each one promises).

Usage: test_abuse_cli.py /path/to/cairn
"""
import json
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import uuid

from cli_support import (FakeS3Server, cairn, check, finish, journal_end, js, one_json, records,
                         run)


def sh(script, timeout=60, env=None):
    """Runs a shell script with $CAIRN set to the binary (for descriptor tricks)."""
    e = dict(os.environ)
    e["CAIRN"] = cairn
    e.pop("CAIRN_TEST_FAULT", None)
    if env:
        e.update(env)
    return subprocess.run(["bash", "-c", script], capture_output=True, timeout=timeout, env=e)


def run_t(*args, timeout=20, **kw):
    """run() that reports a command still running after `timeout` as None (a hang)."""
    try:
        return run(*args, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        return None


def new_db(tmp, name, store=None, n=1000):
    db = os.path.join(tmp, name)
    args = ["ingest", db, "--json"] + (["--store", store] if store else [])
    r = run(*args, stdin=records(name, n))
    check(r.returncode == 0, f"{name}: ingest: {r.stderr!r}")
    return db


def canned_s3(status=403, code="AccessDenied"):
    """A server that answers every request with one S3 error."""
    body = (f"<?xml version=\"1.0\"?><Error><Code>{code}</Code>"
            f"<Message>canned</Message></Error>").encode()
    reply = (f"HTTP/1.1 {status} Canned\r\nContent-Type: application/xml\r\n"
             f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    return FakeS3Server(lambda method, target: reply)


S3_ENV = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "not-a-real-secret"}


# ---- defect 1: published records cut as a "torn tail" ---------------------------------------

def defect_1_torn_tail(tmp):
    store = os.path.join(tmp, "s1")
    db = os.path.join(tmp, "d1")
    check(run("init", db, "--db-id", "d1", "--store", store).returncode == 0, "defect 1: init")
    r = run("append", db, stdin="".join(f"{i}\n" for i in range(1, 1001)).encode())
    check(r.returncode == 0, f"defect 1: append: {r.stderr!r}")
    check(run("checkpoint", db).returncode == 0, "defect 1: checkpoint")
    journal = os.path.join(db, "journal")
    before = open(journal, "rb").read()
    with open(journal, "r+b") as f:  # printf X | dd of=d/journal bs=1 seek=9000 conv=notrunc
        f.seek(9000)
        f.write(b"X")
    damaged = open(journal, "rb").read()
    for args in (["status", db, "--offline"], ["status", db, "--offline", "--json"],
                 ["journal", db], ["append", db]):
        r = run(*args, stdin=b"next\n")
        err = r.stderr.decode(errors="replace")
        check(r.returncode != 0, f"defect 1: {args[0]} refuses a damaged published prefix: {err!r}")
        check("offset" in err and "acknowledged" in err and "nothing was cut" in err,
              f"defect 1: {args[0]} names the offset and the proof: {err!r}")
        check("never acknowledged" not in err, f"defect 1: {args[0]} claims nothing unproven")
        check(open(journal, "rb").read() == damaged, f"defect 1: {args[0]} cut nothing")
    # A tail a crash can leave is cut by a writer, never by status, and the bytes are kept.
    with open(journal, "wb") as f:
        f.write(before)
    check(run("append", db, stdin=b"x" * 1500 + b"\n").returncode == 0, "defect 1: append again")
    whole = open(journal, "rb").read()
    # The last frame's write cut short at a 512-byte block inside it (a crash leaves blocks
    # written whole or not at all), then the writer's room (zeros, docs/journal.md).
    start, end = journal_end(before), journal_end(whole)
    cut = (start + 100) // 512 * 512 + 512
    check(start + 100 < cut < end, f"defect 1: a block boundary inside the frame: {start} {cut} {end}")
    torn_bytes = whole[start:cut]
    with open(journal, "r+b") as f:
        f.seek(cut)
        f.write(bytes(end - cut))
    crashed = open(journal, "rb").read()
    r = run("status", db, "--offline", "--json")
    out = js(r)
    torn = out.get("torn_tail") or {}
    check(r.returncode == 0 and torn.get("bytes") == len(torn_bytes),
          f"defect 1: status reports the torn tail: {r.stdout!r} {r.stderr!r}")
    check(open(journal, "rb").read() == crashed, "defect 1: status cut nothing")
    r = run("append", db, stdin=b"after the cut\n")
    err = r.stderr.decode(errors="replace")
    check(r.returncode == 0 and "cut" in err and "kept in" in err,
          f"defect 1: the cut is said on stderr: {err!r}")
    check(r.stdout.strip() == b"1001", f"defect 1: the cut frame's sequence was never acknowledged: {r.stdout!r}")
    kept = [n for n in os.listdir(db) if n.startswith("journal.torn-")]
    check(len(kept) == 1 and open(os.path.join(db, kept[0]), "rb").read() == torn_bytes,
          f"defect 1: the cut bytes are kept: {kept}")
    out = js(run("status", db, "--offline", "--json"))
    check([f.get("file") for f in out.get("torn_tail_files", [])] == kept,
          f"defect 1: status lists the kept bytes: {out}")


# ---- defect 2: heap corruption when the directory store cannot create its temp file -------

def defect_2_failed_temp_file(tmp):
    store = os.path.join(tmp, "s2")
    db = new_db(tmp, "d2", store)
    run("append", db, stdin=records("more", 100))
    # No temp file can be made in .tmp: immutable where chattr works (as root on ext4), else
    # a file in its place. Either way the put fails at once, before it suspends.
    temps = os.path.join(store, ".tmp")
    immutable = subprocess.run(["chattr", "+i", temps], capture_output=True).returncode == 0
    if not immutable:
        shutil.rmtree(temps)
        open(temps, "w").close()
    try:
        r = run("checkpoint", db)
        ingest = run("ingest", db, "--json", stdin=records("again", 100))
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", temps])
    check(r.returncode == 1, f"defect 2: checkpoint fails cleanly, exit 1: {r.returncode}")
    err = r.stderr.decode(errors="replace")
    check("corrupted" not in err and "double free" not in err and "internal" not in err,
          f"defect 2: no heap corruption: {err!r}")
    r = ingest
    out = one_json(r)
    check(r.returncode == 1 and out is not None and out.get("ok") is False,
          f"defect 2: ingest --json prints one failure object: {r.returncode} {r.stdout!r}")


# ---- defect 3: a stale temp file of the same pid blocks every checkpoint -------------------

def defect_3_stale_temp_files(tmp):
    store = os.path.join(tmp, "s3")
    db = new_db(tmp, "d3", store)
    run("append", db, stdin=records("more", 100))
    temps = os.path.join(store, ".tmp")
    # The run's own pid (exec keeps it): the names a killed run of that pid left behind.
    r = sh(f'for n in $(seq 0 63); do echo x > {shlex.quote(temps)}/obj.$$.$n; done; '
           f'exec "$CAIRN" checkpoint {shlex.quote(db)} --json')
    check(r.returncode == 0, f"defect 3: a leftover with the same pid blocks nothing: {r.stderr!r}")
    ns = js(run("status", db, "--offline", "--json")).get("namespace")
    # Leftovers of dead writers (old, unlocked) are counted by du and reclaimed by vacuum.
    for name in os.listdir(temps):
        os.utime(os.path.join(temps, name), (1, 1))
    r = run("du", "--store", store, "--namespace", ns, "--json")
    left = js(r).get("leftovers", {})
    check(r.returncode == 0 and left.get("files") == 64 and left.get("bytes") == 128,
          f"defect 3: du counts the leftovers: {r.stdout!r}")
    r = run("vacuum", "--store", store, "--namespace", ns, "--json")
    check(js(r).get("leftovers", {}).get("deleted") == 0 and len(os.listdir(temps)) == 64,
          f"defect 3: a dry run deletes none: {r.stdout!r}")
    r = run("vacuum", "--store", store, "--namespace", ns, "--apply", "--json")
    check(r.returncode == 0 and js(r).get("leftovers", {}).get("deleted") == 64,
          f"defect 3: vacuum --apply reclaims them: {r.stdout!r} {r.stderr!r}")
    check(os.listdir(temps) == [], f"defect 3: none left: {os.listdir(temps)}")


# ---- defect 7: symbolic links and special files ---------------------------------------------

def defect_7_links_and_fifos(tmp):
    victim = os.path.join(tmp, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    db = new_db(tmp, "d7")
    lock = os.path.join(db, "LOCK")
    os.remove(lock)
    os.symlink(victim, lock)
    r = run("status", db, "--offline")
    check(r.returncode != 0, f"defect 7: a LOCK that is a link is refused: {r.returncode}")
    check(open(victim).read() == "precious\n", "defect 7: the link's target is untouched")
    os.remove(lock)
    os.symlink(os.path.join(tmp, "created-through-link"), lock)
    r = run("status", db, "--offline")
    check(r.returncode != 0 and not os.path.exists(os.path.join(tmp, "created-through-link")),
          "defect 7: a dangling LOCK link creates nothing")
    os.remove(lock)
    journal = os.path.join(db, "journal")
    os.rename(journal, journal + ".real")
    os.symlink(journal + ".real", journal)
    r = run("status", db, "--offline")
    check(r.returncode != 0 and b"symbolic link" in r.stderr,
          f"defect 7: a journal that is a link is refused: {r.stderr!r}")
    os.remove(journal)
    os.mkfifo(journal)
    r = run_t("status", db, "--offline")
    check(r is not None and r.returncode != 0 and b"not a regular file" in r.stderr,
          f"defect 7: a FIFO journal is refused, not waited on: {r and r.stderr!r}")
    os.remove(journal)
    os.rename(journal + ".real", journal)
    check(run("status", db, "--offline").returncode == 0, "defect 7: the database opens again")

    # Inside a directory store: objects and subdirectories that are links, and FIFOs.
    store = os.path.join(tmp, "s7")
    outside = os.path.join(tmp, "outside")
    os.makedirs(outside)
    with open(os.path.join(outside, "target.txt"), "w") as f:
        f.write("outside\n")
    check(run("store", "put", store, "a.bin", stdin=b"a").returncode == 0, "defect 7: put")
    os.symlink(os.path.join(outside, "target.txt"), os.path.join(store, "link.bin"))
    os.symlink(outside, os.path.join(store, "sub"))
    r = run("store", "get", store, "link.bin")
    check(r.returncode == 1 and b"outside" not in r.stdout, f"defect 7: get refuses a link: {r.stdout!r}")
    r = run("store", "get", store, "sub/target.txt")
    check(r.returncode == 1 and b"outside" not in r.stdout, "defect 7: get refuses a linked directory")
    r = run("store", "put", store, "sub/new.bin", stdin=b"x")
    check(r.returncode != 0 and not os.path.exists(os.path.join(outside, "new.bin")),
          "defect 7: put never writes through a linked directory")
    r = run("store", "rm", store, "sub/target.txt")
    check(r.returncode != 0 and os.path.exists(os.path.join(outside, "target.txt")),
          "defect 7: rm never deletes through a linked directory")
    r = run("store", "ls", store, "--json")
    check(r.returncode != 0 and b"../" not in r.stdout, f"defect 7: ls refuses links: {r.stdout!r}")
    os.remove(os.path.join(store, "link.bin"))
    os.remove(os.path.join(store, "sub"))
    os.mkfifo(os.path.join(store, "fifo.bin"))
    r = run_t("store", "get", store, "fifo.bin")
    check(r is not None and r.returncode == 1 and b"not a regular file" in r.stderr,
          f"defect 7: a FIFO object is refused at once: {r and r.stderr!r}")
    os.remove(os.path.join(store, "fifo.bin"))

    # Reading never creates a store; keys of up to 255 bytes a component.
    typo = os.path.join(tmp, "no-such-store")
    for args in (["store", "ls", typo], ["store", "get", typo, "k"],
                 ["log", "--store", typo, "--namespace", str(uuid.uuid4())]):
        r = run(*args)
        check(r.returncode != 0 and b"does not exist" in r.stderr,
              f"defect 7: {args[0]} {args[1]} on a missing store: {r.stderr!r}")
    check(not os.path.exists(typo), "defect 7: reading created no store")
    r = run("store", "put", store, "k" * 256, stdin=b"x")
    check(r.returncode != 0 and b"invalid object key" in r.stderr,
          f"defect 7: a 256-byte key component is refused: {r.stderr!r}")
    check(run("store", "put", store, "k" * 255, stdin=b"x").returncode == 0,
          "defect 7: a 255-byte key component is stored")


# ---- defect 8: vacuum's grace and the publishers' reuse age ---------------------------------

def defect_8_grace_and_reuse_age(tmp):
    store = os.path.join(tmp, "s8")
    db = new_db(tmp, "d8", store)
    ns = js(run("status", db, "--offline", "--json")).get("namespace")
    for grace in ("0", "9", "3599"):
        r = run("vacuum", "--store", store, "--namespace", ns, "--grace-seconds", grace,
                "--apply", "--json")
        out = one_json(r)
        check(r.returncode == 2 and out is not None and out.get("error") == "usage",
              f"defect 8: grace {grace} is refused: {r.returncode} {r.stdout!r}")
    r = run("vacuum", "--store", store, "--namespace", ns, "--grace-seconds", "3600", "--json")
    check(r.returncode == 0, f"defect 8: the default grace is accepted: {r.stderr!r}")
    for age in ("4", "1801"):
        r = run("checkpoint", db, "--reuse-max-age", age)
        check(r.returncode == 2, f"defect 8: a reuse age of {age} s is refused: {r.returncode}")
    r = run("checkpoint", db, "--reuse-max-age", "1800")
    check(r.returncode == 0, f"defect 8: the longest reuse age is accepted: {r.stderr!r}")
    # The documented override, for tests only.
    r = run("vacuum", "--store", store, "--namespace", ns, "--grace-seconds", "0", "--json",
            env={"CAIRN_TEST_UNSAFE_GRACE": "1"})
    check(r.returncode == 0, f"defect 8: CAIRN_TEST_UNSAFE_GRACE allows any grace: {r.stderr!r}")


# ---- defect 4: a checkpoint before anything is durable ----------------------------------------

def defect_4_size_trigger(tmp):
    store = os.path.join(tmp, "s4")
    db = os.path.join(tmp, "d4")
    path = os.path.join(tmp, "long-lines.txt")
    with open(path, "w") as f:  # 1 MiB chunks of long lines: the size trigger fires at once
        for i in range(2000):
            f.write(f"{i:06d}" + "x" * 2000 + "\n")
    with open(path, "rb") as f:
        r = subprocess.run([cairn, "ingest", db, "--store", store, "--checkpoint-mib", "1",
                            "--json"], stdin=f, capture_output=True, timeout=120)
    out = one_json(r) or {}
    check(r.returncode == 0 and out.get("records") == 2000 and out.get("last_sequence") == 2000,
          f"defect 4: every record is read and published: {r.stdout!r} {r.stderr!r}")
    check(out.get("prefix_sequence") == 2000, f"defect 4: the last checkpoint covers all: {out}")


# ---- defect 5: closed standard descriptors ----------------------------------------------------

def defect_5_closed_descriptors(tmp):
    db = new_db(tmp, "d5")
    end = js(run("status", db, "--offline", "--json")).get("journal_end_sequence")
    q = shlex.quote(db)
    r = sh(f'exec "$CAIRN" append {q} <&-')
    check(r.returncode != 0 and b"standard input" in r.stderr,
          f"defect 5: append with stdin closed fails: {r.returncode} {r.stderr!r}")
    try:
        r = sh(f'exec "$CAIRN" ingest {q} <&-', timeout=20)
        check(r.returncode != 0 and b"standard input" in r.stderr,
              f"defect 5: ingest with stdin closed fails: {r.stderr!r}")
    except subprocess.TimeoutExpired:
        check(False, "defect 5: ingest with stdin closed hangs")
    r = sh(f'exec "$CAIRN" append {q} < /')
    check(r.returncode != 0 and b"Is a directory" in r.stderr,
          f"defect 5: append < / fails: {r.returncode} {r.stderr!r}")
    after = js(run("status", db, "--offline", "--json")).get("journal_end_sequence")
    check(after == end, f"defect 5: nothing was appended: {end} -> {after}")
    for redirect in (">&-", ">/dev/full"):
        r = sh(f'echo hi | exec "$CAIRN" append {q} {redirect}')
        check(r.returncode == 1 and f"up to sequence {end + 1}".encode() in r.stderr,
              f"defect 5: append {redirect}: a lost acknowledgement fails and says how far: "
              f"{r.returncode} {r.stderr!r}")
        end += 1
        r = sh(f'echo hi | exec "$CAIRN" ingest {q} --json {redirect}')
        check(r.returncode == 1 and b"durable" in r.stderr,
              f"defect 5: ingest {redirect}: {r.returncode} {r.stderr!r}")
        end += 1
    after = js(run("status", db, "--offline", "--json")).get("journal_end_sequence")
    check(after == end, f"defect 5: the records were durable all the same: {after} != {end}")


# ---- defect 6: an oversized line read whole ---------------------------------------------------

def defect_6_oversized_line(tmp):
    db = new_db(tmp, "d6")
    probe = ("import resource, subprocess, sys\n"
             "r = subprocess.run(['bash', '-c', 'head -c 300000000 /dev/zero | tr \"\\\\0\" x | "
             "exec \"$0\" append \"$1\"', sys.argv[1], sys.argv[2]], capture_output=True)\n"
             "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
             "sys.stderr.write(r.stderr.decode(errors='replace'))\n")
    r = subprocess.run(["python3", "-c", probe, cairn, db], capture_output=True, timeout=300)
    code, rss_kib = (int(x) for x in r.stdout.split())
    check(code == 2 and b"record cap" in r.stderr,
          f"defect 6: a 300 MB line is refused: {code} {r.stderr!r}")
    # (Sanitizer builds keep freed memory in quarantine and shadow it: no bound to check.)
    libs = subprocess.run(["ldd", cairn], capture_output=True).stdout
    if b"libasan" not in libs and b"libtsan" not in libs:
        check(rss_kib < 120 * 1024, f"defect 6: refused while reading (max RSS {rss_kib} KiB)")


# ---- defect 9: CR/LF through store URL parameters ---------------------------------------------

def defect_9_url_injection(tmp):
    server = canned_s3()
    try:
        for extra in ("&region=us-east-1%0d%0aX-Injected:%201", "&region=a&region=b",
                      "&dialect=rgw%0a"):
            r = run("store", "ls", server.url(extra), env=S3_ENV, timeout=60)
            check(r.returncode == 2, f"defect 9: {extra} is refused: {r.returncode} {r.stderr!r}")
        check(not any(b"X-Injected" in h for h in server.heads),
              f"defect 9: no header was injected: {server.heads}")
        check(server.heads == [], "defect 9: nothing was sent for a refused URL")
        # The same host as a plain endpoint parameter works (and reaches the server).
        r = run("store", "ls", server.url(), env=S3_ENV, timeout=60)
        check(r.returncode == 1 and server.heads, f"defect 9: a good URL is sent: {r.stderr!r}")
    finally:
        server.close()


# ---- defect 10: "unknown" reported as "not enforced" ------------------------------------------

def defect_10_probe_undetermined(tmp):
    refused = socket.socket()
    refused.bind(("127.0.0.1", 0))
    port = refused.getsockname()[1]
    refused.close()  # nothing listens there
    server = canned_s3(403, "AccessDenied")
    try:
        urls = {"refused": f"s3://bkt?endpoint=http://127.0.0.1:{port}&timeout_ms=500",
                "403": server.url("&timeout_ms=500", dialect="auto")}
        for label, url in urls.items():
            r = run("store", "probe", url, env=S3_ENV, timeout=120)
            err = r.stderr.decode(errors="replace").strip()
            check(r.returncode == 5, f"defect 10: probe ({label}) exits 5: {r.returncode}")
            check("could not be determined" in err and "NOT" not in err and len(err.splitlines()) == 1,
                  f"defect 10: probe ({label}) says undetermined on one line: {err!r}")
            check(b"NOT" not in r.stdout, f"defect 10: probe ({label}) says no 'NOT': {r.stdout!r}")
            r = run("store", "probe", url, "--json", env=S3_ENV, timeout=120)
            check((one_json(r) or {}).get("verdict") == "undetermined",
                  f"defect 10: probe --json ({label}): {r.stdout!r}")
            db = os.path.join(tmp, f"d10-{label}")
            r = run("ingest", db, "--store", url, stdin=b"a\nb\n", env=S3_ENV, timeout=120)
            err = r.stderr.decode(errors="replace")
            check(r.returncode == 5 and "could not be determined" in err and "NOT" not in err,
                  f"defect 10: ingest ({label}): {r.returncode} {err!r}")
            r = run("checkpoint", db, env=S3_ENV, timeout=120)
            check(r.returncode == 5, f"defect 10: checkpoint ({label}): {r.returncode} {r.stderr!r}")
    finally:
        server.close()


# ---- defect 11: --json failures print one object ----------------------------------------------

def defect_11_json_always(tmp):
    missing = os.path.join(tmp, "no-such-thing")
    store = os.path.join(tmp, "s11")
    os.makedirs(store)
    bad_head = os.path.join(tmp, "bad.head")
    with open(bad_head, "wb") as f:
        f.write(b"\0" * 256)
    ns = str(uuid.uuid4())
    commands = [
        ["store", "put", store, "../k"], ["store", "get", store, "k"],
        ["store", "ls", missing], ["store", "rm", store, "../k"], ["store", "probe", missing],
        ["init", os.path.join(tmp, "d11"), "--db-id", ""], ["append", missing],
        ["journal", missing], ["head", "decode", bad_head], ["checkpoint", missing],
        ["compact", missing], ["status", missing], ["log", "--store", store, "--namespace", ns],
        ["recover", os.path.join(tmp, "r11"), "--store", store, "--namespace", ns],
        ["ingest", missing + "/a/b", "--store", missing + "\x01"],
        ["du", "--store", missing, "--namespace", ns],
        ["vacuum", "--store", store, "--namespace", "not-a-uuid"],
        ["backup", "--store", store, "--namespace", ns, "--to", os.path.join(tmp, "b11")],
        ["repair-head", "--store", store, "--namespace", ns, "--to", "00" * 32],
        ["verify", missing], ["checkpoint-objects", missing],
        ["vacuum", "--store", store],  # a usage error of the command line itself
    ]
    for args in commands:
        r = run(*args, "--json", stdin=b"x")
        out = one_json(r)
        check(r.returncode != 0 and out is not None and out.get("ok") is False and out.get("error"),
              f"defect 11: {' '.join(args[:2])} --json fails with one object: "
              f"{r.returncode} {r.stdout!r}")
    db = new_db(tmp, "d11ok", store)
    for args in (["store", "put", store, "k"], ["store", "get", store, "k"],
                 ["store", "ls", store], ["store", "rm", store, "k"], ["store", "probe", store],
                 ["journal", db], ["status", db, "--offline"]):
        r = run(*args, "--json", stdin=b"content")
        out = one_json(r)
        check(r.returncode == 0 and out is not None and out.get("ok") is True,
              f"defect 11: {' '.join(args[:2])} --json succeeds with one object: {r.stdout!r}")


# ---- also: a lost publisher state, a full disk ------------------------------------------------

def also_lost_state_and_full_disk(tmp):
    store = os.path.join(tmp, "sa")
    db = new_db(tmp, "da", store)
    os.remove(os.path.join(db, "publisher.state"))
    r = run("ingest", db, stdin=b"more\n")
    check(r.returncode != 0 and b"publisher state was lost" in r.stderr,
          f"also: a lost publisher.state is an error, not journal-only: {r.stderr!r}")
    plain = new_db(tmp, "db-plain")  # created without a store: journal-only, said so
    check(os.path.exists(os.path.join(plain, "journal-only")), "also: journal-only marker")
    check(run("ingest", plain, stdin=b"more\n").returncode == 0, "also: journal-only ingests")

    # A full disk: the read-only commands still work. (tmpfs needs root: CI runs as root.)
    full = os.path.join(tmp, "full")
    os.makedirs(full)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", full],
                      capture_output=True).returncode != 0:
        check(os.geteuid() != 0, "also: mounting a small tmpfs as root")
        print("WARNING: the full-disk check needs root (mount tmpfs); it did not run")
        return
    try:
        fdb = os.path.join(full, "db")
        check(run("init", fdb, "--db-id", "full").returncode == 0, "also: init on tmpfs")
        check(run("append", fdb, stdin=b"one\ntwo\n").returncode == 0, "also: append")
        # No space for the writer's 16 MiB room (docs/journal.md): the batch extends the file
        # instead, and the zeros that did fit are given back.
        size = os.path.getsize(os.path.join(fdb, "journal"))
        check(size < 64 * 1024, f"also: no room kept where there is no space for it: {size}")
        subprocess.run(["dd", "if=/dev/zero", f"of={full}/filler", "bs=64k"], capture_output=True)
        r = run("status", fdb, "--offline", "--json")
        check(r.returncode == 0 and js(r).get("journal_end_sequence") == 2,
              f"also: status --offline works on a full disk: {r.stderr!r}")
        r = run("journal", fdb, "--json")
        check(r.returncode == 0, f"also: journal works on a full disk: {r.stderr!r}")
    finally:
        subprocess.run(["umount", full], capture_output=True)


def main():
    tmp = tempfile.mkdtemp(prefix="cairn-abuse-")
    try:
        defect_1_torn_tail(tmp)
        defect_2_failed_temp_file(tmp)
        defect_3_stale_temp_files(tmp)
        defect_7_links_and_fifos(tmp)
        defect_8_grace_and_reuse_age(tmp)
        defect_4_size_trigger(tmp)
        defect_5_closed_descriptors(tmp)
        defect_6_oversized_line(tmp)
        defect_9_url_injection(tmp)
        defect_10_probe_undetermined(tmp)
        defect_11_json_always(tmp)
        also_lost_state_and_full_disk(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


main()
