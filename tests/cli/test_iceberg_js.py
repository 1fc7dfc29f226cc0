#!/usr/bin/env python3
"""`cairn serve` used by a client no one here wrote: the npm package iceberg-js (pinned in
tests/catalog/js/package-lock.json) runs tests/catalog/js/catalog_test.mjs against two
`cairn serve` processes over one lake, on the directory store and on RGW. Afterwards the
store itself must show what the client was told: each table's head revision is 1 + the
commits the script saw accepted, and the lake log's is 1 + the directory changes it made.

Usage: test_iceberg_js.py /path/to/cairn
Needs node (20 or later) and npm: `npm ci` runs when tests/catalog/js/node_modules is missing
or was not installed from the current lock file. RGW needs the S3_* variables of ../shared/s3/start-rgw.sh
(required in CI).
"""
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_support import CatalogServer, cairn, chain_ok, check, finish, js, run, test_stores  # noqa: E402

JS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "catalog", "js")
LOCK = os.path.join(JS_DIR, "package-lock.json")
STAMP = os.path.join(JS_DIR, "node_modules", ".cairn-lock-sha256")  # the lock npm ci installed
INSTALLED = os.path.join(JS_DIR, "node_modules", "iceberg-js", "package.json")
MIN_NODE_MAJOR = 20
NPM_TIMEOUT = 300
START_TIMEOUT = 30  # seconds for a server to print its port
SCRIPT_TIMEOUT = 300
STOP_TIMEOUT = 30
MIN_REQUESTS_EACH = 50  # each server takes its share of the script's requests
def fail_now(why):
    check(False, why)
    finish()


def tool(name):
    path = shutil.which(name)
    if not path:
        fail_now(f"{name} is not on PATH: this test needs Node.js {MIN_NODE_MAJOR}+ and npm "
                 "(Debian: apt-get install nodejs npm); it is never skipped")
    return path


def lock_digest():
    with open(LOCK, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def ensure_node_modules(node, npm):
    """`npm ci` unless node_modules holds exactly what package-lock.json pins. Runs of this
    test from several build trees share tests/catalog/js: they take turns (a lock on the
    lock file)."""
    r = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    version = re.match(r"v(\d+)\.", r.stdout.strip())
    major = int(version.group(1)) if r.returncode == 0 and version else 0
    if major < MIN_NODE_MAJOR:
        fail_now(f"node {r.stdout.strip()!r} is older than {MIN_NODE_MAJOR}")
    with open(LOCK) as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)
        install_if_stale(npm)


def install_if_stale(npm):
    digest = lock_digest()
    try:
        with open(STAMP) as f, open(INSTALLED) as installed:
            if f.read().strip() == digest and json.load(installed).get("version"):
                return
    except (OSError, ValueError):
        pass
    started = time.monotonic()
    r = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=JS_DIR, capture_output=True,
                       text=True, timeout=NPM_TIMEOUT)
    if r.returncode != 0:
        fail_now(f"npm ci in {JS_DIR} failed:\n{r.stdout}{r.stderr}")
    with open(STAMP, "w") as f:
        f.write(digest + "\n")
    print(f"npm ci: {time.monotonic() - started:.1f} s")


def head_revision(store, ns, what):
    entries = chain_ok(store, ns, what)
    return entries[0]["revision"] if entries else None


def one_store(tmp, label, store, node):
    started = time.monotonic()
    config = os.path.join(tmp, f"catalog-{label}.json")
    lake = f"js-{label}"
    r = run("lake", "create", "--config", config, "--store", store, "--lake", lake, "--json")
    check(r.returncode == 0 and js(r).get("created") is True,
          f"{label}: lake create: {r.stdout!r} {r.stderr!r}")
    lake_log = js(r).get("lake_log_namespace")
    r = run("token", "create", "--config", config, "--lake", lake, "--role", "read-write",
            "--json")
    token = js(r).get("token")
    check(r.returncode == 0 and token, f"{label}: token create: {r.stderr!r}")
    if not lake_log or not token:
        return

    servers = []
    result = {}
    try:
        try:
            servers.append(CatalogServer(config, "A", START_TIMEOUT, STOP_TIMEOUT))
            servers.append(CatalogServer(config, "B", START_TIMEOUT, STOP_TIMEOUT))
        except RuntimeError as e:
            check(False, f"{label}: {e}")
            return
        check(servers[0].port != servers[1].port, f"{label}: two servers, two ports")
        env = dict(os.environ, CAIRN_A_URL=servers[0].url(), CAIRN_B_URL=servers[1].url(),
                   CAIRN_LAKE=lake, CAIRN_TOKEN=token, NODE_NO_WARNINGS="1")
        t = time.monotonic()
        try:
            p = subprocess.run([node, "catalog_test.mjs"], cwd=JS_DIR, env=env,
                               capture_output=True, text=True, timeout=SCRIPT_TIMEOUT)
        except subprocess.TimeoutExpired as e:
            p = subprocess.CompletedProcess(e.cmd, "timeout", e.stdout or "", e.stderr or "")
            if isinstance(p.stdout, bytes):
                p.stdout, p.stderr = p.stdout.decode(), (p.stderr or b"").decode()
        script_seconds = time.monotonic() - t
        lines = p.stdout.splitlines()
        for line in lines[:-1] if p.returncode == 0 else lines:
            print(f"  {label}: {line}")
        if p.stderr.strip():
            print(f"  {label}: node stderr: {p.stderr.strip()}")
        check(p.returncode == 0, f"{label}: catalog_test.mjs exited {p.returncode}")
        if p.returncode == 0 and lines:
            try:
                result = json.loads(lines[-1])
            except ValueError:
                pass
        check(result.get("ok") is True, f"{label}: the script's last line is its result")
    finally:
        codes = [s.stop() for s in servers]
    failed = []
    for s, code in zip(servers, codes):
        check(code == 0, f"{label}: server {s.label} stopped by SIGTERM exits 0, got {code}: "
                         f"{s.stderr()}")
        answered = [q for q in s.requests() if isinstance(q.get("status"), int)]
        print(f"  {label}: server {s.label} answered {len(answered)} requests")
        check(len(answered) >= MIN_REQUESTS_EACH,
              f"{label}: server {s.label} logged {len(answered)} requests")
        failed += [q for q in answered if q["status"] >= 500]
    if not result:
        return
    # The only 5xx allowed: a commit refused for contention, which the script counted.
    check(all(q["status"] == 503 for q in failed) and
          len(failed) == result.get("contention_503"),
          f"{label}: 5xx answers are the script's {result.get('contention_503')} contention "
          f"refusals: {failed}")

    # What the store holds, read without either server.
    for table in result.get("tables", []):
        revision = head_revision(store, table["uuid"], f"{label}: table {table['name']}")
        expected = 1 + table["accepted"]
        print(f"  {label}: table {table['name']} {table['uuid']}: head revision {revision} in "
              f"the store, 1 + {table['accepted']} accepted commits = {expected}")
        check(revision == expected, f"{label}: table {table['name']}: head revision {revision} "
                                    f"!= 1 + {table['accepted']} accepted commits")
    revision = head_revision(store, lake_log, f"{label}: lake log")
    expected = 1 + result.get("lake_changes", -1)
    print(f"  {label}: lake log {lake_log}: head revision {revision} in the store, 1 + "
          f"{result.get('lake_changes')} directory changes = {expected}")
    check(revision == expected, f"{label}: lake log: head revision {revision} != {expected}")
    print(f"{label}: {result.get('steps')} steps, script {script_seconds:.1f} s, "
          f"store {time.monotonic() - started:.1f} s")


def main():
    node, npm = tool("node"), tool("npm")
    ensure_node_modules(node, npm)
    tmp = tempfile.mkdtemp(prefix="cairn-iceberg-js-")
    try:
        for label, store in test_stores(tmp):
            one_store(tmp, label, store, node)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
