#!/usr/bin/env python3
"""The S3 client against a hostile server, from the command line (issue 31): what `cairn`
prints when a server sends bytes that would break a terminal or a JSON parser, echoes the
session token, lists forever, or never answers; and that a command waiting on such a server
holds no database lock. Each check failed on the code before its fix.

Usage: test_hostile_s3_cli.py /path/to/cairn
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

from cli_support import FakeS3Server as Server, cairn, check, finish, run

TOKEN = "".join(f"SessionTokenPart{1000 + i}x" for i in range(45))  # ~900 bytes, like STS's
ENV = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "not-a-real-secret-key-x",
       "AWS_SESSION_TOKEN": TOKEN}


def response(status, body=b"", headers=()):
    head = f"HTTP/1.1 {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def listing(entries, truncated=False, token=""):
    xml = "<?xml version=\"1.0\"?><ListBucketResult><EncodingType>url</EncodingType>"
    for key, etag in entries:
        xml += (f"<Contents><Key>{key}</Key><Size>1</Size><ETag>{etag}</ETag>"
                "<LastModified>2026-11-29T18:13:21.000Z</LastModified></Contents>")
    xml += f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>"
    if truncated:
        xml += f"<NextContinuationToken>{token}</NextContinuationToken>"
    return response(200, (xml + "</ListBucketResult>").encode("latin-1"))


def printable_line(data):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(c >= " " and c != "\x7f" for c in text.rstrip("\n"))


def no_token(data):
    text = data.decode("utf-8", errors="replace")
    return all(TOKEN[i:i + 12] not in text for i in range(0, len(TOKEN) - 12, 6))


def defect_3_and_4_output(tmp):
    # An error message with terminal escapes, newlines, invalid UTF-8 and the echoed token.
    nasty = (b"<?xml version=\"1.0\"?><Error><Code>Bad\x1b[2J</Code><Message>line one\nline two"
             b"\r\x1b[31m red \xff\xfe token " + TOKEN.encode() + b"</Message></Error>")
    server = Server(lambda m, t: response(500, nasty))
    try:
        for args in (["store", "get"], ["store", "get", "--json"]):
            r = run(args[0], args[1], server.url("&timeout_ms=1000"), "k", *args[2:], env=ENV)
            check(r.returncode != 0, f"{args}: fails")
            lines = r.stderr.splitlines()
            check(len(lines) == 1 and printable_line(r.stderr),
                  f"{args}: one printable line on stderr: {r.stderr[:300]!r}")
            check(no_token(r.stderr) and no_token(r.stdout), f"{args}: no part of the token")
            if "--json" in args:
                try:
                    out = json.loads(r.stdout)
                except ValueError:
                    out = {}
                check(out.get("ok") is False and no_token(r.stdout), f"--json: {r.stdout[:200]!r}")
    finally:
        server.close()
    # A listing whose ETags echo the token or hold bytes 0x80-0xFF, and keys that forge lines.
    etag_token = '"' + TOKEN + '"'
    server = Server(lambda m, t: listing([("a", etag_token), ("b", '"\xe9\xff\x80"')]))
    try:
        r = run("store", "ls", server.url(), "--json", env=ENV)
        check(r.returncode == 0, f"ls --json: {r.stderr!r}")
        try:
            out = json.loads(r.stdout.decode("utf-8"))
            check(out.get("count") == 2, f"ls --json counts: {out}")
        except (UnicodeDecodeError, ValueError) as e:
            check(False, f"ls --json is valid UTF-8 JSON: {e}: {r.stdout[:200]!r}")
        check(no_token(r.stdout), "ls --json: the token echoed in an ETag is not printed")
    finally:
        server.close()
    for key in ("a%0Aforged%09line", "a%1B%5B31m", "a%00b", "a%FFb"):
        server = Server(lambda m, t, key=key: listing([(key, '"e"')]))
        try:
            r = run("store", "ls", server.url(), env=ENV)
            check(r.returncode == 1 and printable_line(r.stderr) and r.stdout == b"",
                  f"ls refuses key {key}: {r.returncode} {r.stdout!r} {r.stderr!r}")
            r = run("store", "ls", server.url(), "--json", env=ENV)
            lines = r.stdout.splitlines()
            try:
                refused = len(lines) == 1 and json.loads(lines[0]).get("ok") is False
            except ValueError:
                refused = False
            check(r.returncode == 1 and refused and printable_line(r.stdout),
                  f"ls --json refuses key {key} in one object: {r.stdout!r}")
        finally:
            server.close()


def non_ascii_messages(tmp):
    # A server's message in other scripts, longer than the bound a message is cut to (512
    # bytes): the JSON object and the stderr line keep the characters as they are (not escaped
    # as bytes) and cut between characters, never inside one (no U+FFFD, no lone byte).
    for char in ("\u00e9", "\u65e5", "\U0001f600"):
        body = ("<?xml version=\"1.0\"?><Error><Code>InternalError</Code><Message>"
                + "z" + char * 400 + "</Message></Error>").encode("utf-8")
        server = Server(lambda m, t, body=body: response(500, body))
        try:
            r = run("store", "get", server.url("&timeout_ms=1000"), "k", "--json", env=ENV)
            what = f"a message of U+{ord(char):04X}"
            check(r.returncode != 0, f"{what}: fails")
            try:
                out = json.loads(r.stdout.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                out = {}
                check(False, f"{what}: --json is valid UTF-8 JSON: {e}: {r.stdout[:200]!r}")
            reason = out.get("reason", "")
            kept = reason.count(char)
            check(kept >= 100 and "\ufffd" not in reason and "\\x" not in reason,
                  f"{what}: the reason keeps the characters ({kept}): {reason[:120]!r}")
            try:
                line = r.stderr.decode("utf-8")
                check(line.count(char) >= 100 and "\ufffd" not in line,
                      f"{what}: the stderr line keeps them: {line[:120]!r}")
            except UnicodeDecodeError as e:
                check(False, f"{what}: the stderr line is valid UTF-8: {e}")
            check(len(reason.encode("utf-8")) < 400 * len(char.encode("utf-8")),
                  f"{what}: the message is bounded ({len(reason.encode('utf-8'))} bytes)")
        finally:
            server.close()


def defect_5_endless_listing(tmp):
    server = Server(lambda m, t: listing([("a", '"e"')], truncated=True, token="same"))
    try:
        started = time.monotonic()
        r = run("store", "ls", server.url(), "--json", env=ENV, timeout=60)
        check(r.returncode == 1 and b"does not advance" in r.stderr,
              f"an endless listing is an error: {r.returncode} {r.stderr!r}")
        check(time.monotonic() - started < 10 and server.requests <= 3,
              f"and ends at once ({server.requests} requests)")
    finally:
        server.close()


def defect_6_time_bounds_and_lock(tmp):
    server = Server(lambda m, t: None)  # accepts, reads, never answers
    try:
        started = time.monotonic()
        r = run("store", "ls", server.url(), "--timeout", "2", env=ENV, timeout=60)
        took = time.monotonic() - started
        check(r.returncode == 1 and took < 6, f"ls --timeout 2 ends by then: {took:.1f} s")
        started = time.monotonic()
        r = run("store", "probe", server.url(), "--timeout", "3", env=ENV, timeout=120)
        took = time.monotonic() - started
        check(r.returncode == 5 and took < 8, f"probe --timeout 3: exit {r.returncode} in {took:.1f} s")

        # status waits on the store without holding the database: an append meanwhile works.
        db = os.path.join(tmp, "db")
        r = run("init", db, "--db-id", "db", "--store", server.url(), env=ENV)
        check(r.returncode == 0, f"init: {r.stderr!r}")
        status = subprocess.Popen([cairn, "status", db, "--timeout", "8"], env={**os.environ, **ENV},
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(1.5)
        r = run("append", db, stdin=b"while status waits\n")
        check(r.returncode == 0, f"append while status waits on the store: {r.stderr!r}")
        out, err = status.communicate(timeout=60)
        check(status.returncode == 0 and b"unknown" in out,
              f"status says the store's head is unknown: {status.returncode} {out!r} {err!r}")
    finally:
        server.close()


def main():
    tmp = tempfile.mkdtemp(prefix="cairn-hostile-")
    try:
        defect_3_and_4_output(tmp)
        non_ascii_messages(tmp)
        defect_5_endless_listing(tmp)
        defect_6_time_bounds_and_lock(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


main()
