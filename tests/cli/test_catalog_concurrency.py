#!/usr/bin/env python3
"""Two `cairn serve` processes over one lake, 16 concurrent committers on one table (issue 24):

- commits that do not conflict (each sets its own property, no requirement) all land, each
  exactly once: visible in the properties and in the metadata log, and the table head's
  revision grows by exactly the number of successes; a client retries a 503 (contention) with
  the same Idempotency-Key, as the spec allows;
- commits that require the same parent snapshot (assert-ref-snapshot-id on main) race: in each
  round exactly one wins and the others get 409 CommitFailedException;
- afterwards the table's log rebuilds into a journal (`cairn recover`) that `cairn verify
  --deep` proves equal to the graph, and `cairn log` shows an unbroken chain.
On the directory store and on RGW (required in CI). And a store that ignores conditional
writes is refused: no lake is created in it, and a server over it is not ready.

Usage: test_catalog_concurrency.py /path/to/cairn
"""
import hashlib
import http.client
import http.server
import json
import os
import re
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_support import (CatalogServer, catalog_call, chain_ok, check, finish, js,  # noqa: E402
                         recovered_and_verified, run, snapshot_race_commit, test_stores)

COMMITTERS = 16
COMMITS_EACH = 4
RACE_ROUNDS = 3
def call(port, token, method, path, body=None, key=None):
    headers = {"Idempotency-Key": key} if key else None
    return catalog_call(port, token, method, path, body, headers, lenient=True)


retried = {"503": 0}


def commit_until_answered(port, token, table, body, key):
    """One logical commit: sent again with the same key while the catalog answers 503."""
    for _ in range(50):
        status, reply = call(port, token, "POST", table, body, key)
        if status != 503:
            return status, reply
        retried["503"] += 1
        time.sleep(0.05)
    return status, reply


def scenario(label, store, tmp):
    config = os.path.join(tmp, f"{label}.json")
    r = run("lake", "create", "--config", config, "--store", store, "--lake", "prod", "--json")
    check(r.returncode == 0, f"{label}: lake create: {r.stderr!r}")
    token = js(run("token", "create", "--config", config, "--lake", "prod", "--role",
                   "read-write", "--json")).get("token", "")
    servers = [CatalogServer(config), CatalogServer(config)]
    ports = [s.port for s in servers]
    try:
        run_scenario(label, store, tmp, token, ports)
    finally:
        for s in servers:
            check(s.stop() == 0, f"{label}: serve exits 0 on SIGTERM")
        errors = [l for s in servers for l in s.lines if '"status":5' in l and '"status":503' not in l]
        check(not errors, f"{label}: no 5xx but 503 in the request logs: {errors[:3]}")


def rebased(port):
    """The server's count of commits applied again after losing a race (GET /metrics)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    m = re.search(r'^cairn_catalog_commits_total\{outcome="rebased"\} (\S+)$', text, re.M)
    return float(m.group(1)) if m else -1


def run_scenario(label, store, tmp, token, ports):
    base = "/v1/prod/namespaces/load"
    table = base + "/tables/t"
    status, _ = call(ports[0], token, "POST", "/v1/prod/namespaces", {"namespace": ["load"]})
    check(status == 200, f"{label}: create namespace: {status}")
    schema = {"type": "struct", "fields": [{"id": 1, "name": "x", "type": "long",
                                            "required": False}]}
    status, created = call(ports[1], token, "POST", base + "/tables",
                           {"name": "t", "schema": schema})
    check(status == 200, f"{label}: create table: {status} {created}")
    table_uuid = created.get("metadata", {}).get("table-uuid", "")

    # 1. Non-conflicting commits, 16 at once over both servers.
    outcomes = {}
    lock = threading.Lock()

    def committer(i):
        for n in range(COMMITS_EACH):
            key = str(uuid.uuid4())
            prop = f"c{i:02d}-{n}"
            body = {"requirements": [], "updates": [
                {"action": "set-properties", "updates": {prop: key}}]}
            status, reply = commit_until_answered(ports[(i + n) % 2], token, table, body, key)
            with lock:
                outcomes[prop] = (status, key, reply.get("metadata-location"))

    threads = [threading.Thread(target=committer, args=(i,)) for i in range(COMMITTERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    statuses = sorted({s for s, _, _ in outcomes.values()})
    accepted = [p for p, (s, _, _) in outcomes.items() if s == 200]
    check(statuses == [200], f"{label}: every non-conflicting commit answered 200, got {statuses}")
    check(len(accepted) == COMMITTERS * COMMITS_EACH,
          f"{label}: {len(accepted)} of {COMMITTERS * COMMITS_EACH} commits accepted")
    status, loaded = call(ports[0], token, "GET", table)
    props = loaded.get("metadata", {}).get("properties", {})
    for prop in accepted:
        check(props.get(prop) == outcomes[prop][1], f"{label}: {prop} visible once committed")
    locations = {outcomes[p][2] for p in accepted}
    check(len(locations) == len(accepted), f"{label}: each commit has its own metadata file")
    logged = {e["metadata-file"] for e in loaded.get("metadata", {}).get("metadata-log", [])}
    logged.add(loaded.get("metadata-location"))
    missing = [p for p in accepted if outcomes[p][2] not in logged]
    check(not missing, f"{label}: every accepted commit is in the metadata log: {missing[:3]}")
    commits = len(accepted)

    # 1b. The same through one process: its commits to one table take turns, so none loses a
    # race to another of its own (no rebase, no 503) and each is sent to the store once.
    rebased_before = rebased(ports[0])
    answers = []

    def one_process(i):
        for n in range(COMMITS_EACH):
            body = {"requirements": [], "updates": [
                {"action": "set-properties", "updates": {f"turn{i:02d}": str(n)}}]}
            status, _ = call(ports[0], token, "POST", table, body, str(uuid.uuid4()))
            with lock:
                answers.append(status)

    threads = [threading.Thread(target=one_process, args=(i,)) for i in range(COMMITTERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(answers == [200] * (COMMITTERS * COMMITS_EACH),
          f"{label}: one process, 16 committers: every commit 200 at once, got "
          f"{sorted(set(answers))}")
    check(rebased(ports[0]) == rebased_before,
          f"{label}: one process's commits to one table never rebase on each other "
          f"({rebased(ports[0]) - rebased_before} did)")
    commits += answers.count(200)

    # 2. Commits that require the same parent snapshot: exactly one wins each round.
    parent = None
    sequence = 0
    for rnd in range(RACE_ROUNDS):
        answers = []

        def racer(i, parent=parent, sequence=sequence, rnd=rnd):
            sid = 1000 * (rnd + 1) + i
            body = snapshot_race_commit(loaded["metadata"]["location"], sid, sequence + 1, parent)
            status, reply = commit_until_answered(ports[i % 2], token, table, body,
                                                  str(uuid.uuid4()))
            with lock:
                answers.append((status, reply.get("error", {}).get("type"), sid))

        threads = [threading.Thread(target=racer, args=(i,)) for i in range(COMMITTERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wins = [sid for s, _, sid in answers if s == 200]
        refused = [t for s, t, _ in answers if s == 409]
        check(len(wins) == 1, f"{label}: round {rnd}: exactly one winner, got {len(wins)}")
        check(len(refused) == COMMITTERS - 1 and set(refused) == {"CommitFailedException"},
              f"{label}: round {rnd}: the others get 409 CommitFailedException: {answers}")
        status, now = call(ports[rnd % 2], token, "GET", table)
        current = now.get("metadata", {}).get("current-snapshot-id")
        check(wins and current == wins[0], f"{label}: round {rnd}: the winner is current")
        parent = current
        sequence += 1
        commits += len(wins)

    # 3. The store: the head's revision, an unbroken chain, and a deep verification.
    entries = chain_ok(store, table_uuid, f"{label}: table log")
    head = entries[0]["revision"] if entries else 0
    check(head == 1 + commits, f"{label}: head revision {head} == 1 + {commits} commits")
    recovered_and_verified(store, table_uuid, os.path.join(tmp, f"{label}-table"),
                           f"{label}: table log")


class IgnoringS3(http.server.BaseHTTPRequestHandler):
    """An S3 endpoint that stores objects and ignores If-Match and If-None-Match."""
    objects = {}

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", etag=None):
        self.send_response(status)
        if etag:
            self.send_header("ETag", f'"{etag}"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_PUT(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.objects[self.path.split("?")[0]] = body
        self.reply(200, etag=hashlib.md5(body).hexdigest())

    def do_GET(self):
        body = self.objects.get(self.path.split("?")[0])
        if body is None:
            self.reply(404, b"<Error><Code>NoSuchKey</Code></Error>")
        else:
            self.reply(200, body, hashlib.md5(body).hexdigest())

    do_HEAD = do_GET

    def do_DELETE(self):
        self.objects.pop(self.path.split("?")[0], None)
        self.reply(204)


def ignoring_store(tmp):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), IgnoringS3)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"s3://bkt/lake?endpoint=http://127.0.0.1:{server.server_address[1]}&region=us-east-1"
    env = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    config = os.path.join(tmp, "ignoring.json")
    r = run("lake", "create", "--config", config, "--store", url, "--lake", "prod", "--json",
            env=env)
    check(r.returncode == 1 and js(r).get("ok") is False,
          f"ignoring store: lake create refused: {r.returncode} {r.stdout!r}")
    check(b"conditional writes" in r.stderr, f"ignoring store: says why: {r.stderr!r}")
    check(not [k for k in IgnoringS3.objects if "ns-" in k],
          f"ignoring store: no lake log written: {sorted(IgnoringS3.objects)}")
    # A configuration that names it anyway: the server runs, the lake is not ready.
    with open(config, "w") as f:
        json.dump({"format": 1, "publisher": str(uuid.uuid4()),
                   "lakes": {"prod": {"store": url}}, "tokens": []}, f)
    os.environ.update(env)
    server_proc = CatalogServer(config)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server_proc.port, timeout=30)
        conn.request("GET", "/readyz")
        ready = conn.getresponse()
        body = json.loads(ready.read() or b"{}")
        check(ready.status == 503 and "prod" in body.get("error", {}).get("message", ""),
              f"ignoring store: /readyz is 503 naming the lake: {ready.status} {body}")
    finally:
        check(server_proc.stop() == 0, "ignoring store: serve exits 0")
        server.shutdown()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        ignoring_store(tmp)
        for label, store in test_stores(tmp):
            started = time.monotonic()
            scenario(label, store, tmp)
            print(f"{label}: {time.monotonic() - started:.1f} s, {retried['503']} commits "
                  "retried after a 503 (contention) so far")
    finish()


if __name__ == "__main__":
    main()
