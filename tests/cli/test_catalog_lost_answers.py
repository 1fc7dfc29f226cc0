#!/usr/bin/env python3
"""Commits to one table while the store loses answers (issue 18): two `cairn serve` processes
over one lake on RGW, the fault proxy (tests/tools/fault_proxy_main.cpp) between them and RGW
meeting a share of the heads' requests (reads and compare-and-swaps of *-current.head) with
a withheld answer (forwarded, applied, the connection left open and silent: only a timeout
tells), a dropped answer (applied, the connection closed) or a reset before forwarding. The
store URL keeps the default per-attempt timeout_ms (60 s): what bounds a lost answer is the
deadline the store client draws from the latency it observed (docs/stores.md, "Timeouts").

Clients commit properties of their own (no requirement: never a conflict) with an
Idempotency-Key, alternating servers, and send a commit again with the same key after 503 or
504, at most ATTEMPTS times. Checked:
- every attempt is answered within ANSWER_BOUND seconds, with 200, 503 or 504;
- from the store alone (the table log recovered and deep-verified): every acknowledged commit
  is in the history exactly once, no key is in it twice, and the head's revision grew by
  exactly the number of commits in it (no commit applied twice).
The answers' latency (p50, p99, max) is printed.

CAIRN_LOST_ANSWERS_SECONDS sets how long commits are started (default 20).

Usage: test_catalog_lost_answers.py /path/to/cairn /path/to/cairn_fault_proxy
"""
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_support import CatalogServer, check, finish, js, run, s3_url  # noqa: E402
from test_catalog_soak import history, request  # noqa: E402

SECONDS = float(os.environ.get("CAIRN_LOST_ANSWERS_SECONDS", "20"))
CLIENTS = 4
ATTEMPTS = 3
ANSWER_BOUND = 10.0  # seconds: the goal for every answer
CLIENT_TIMEOUT = 15  # seconds: an answer later than this is recorded as none
FAULT_RATE = 0.05  # of the heads' requests
FAULTS = "withhold,drop,reset"
LAKE = "lost"
PREFIX = f"/v1/{LAKE}/namespaces/ns"
SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "x", "type": "long",
                                        "required": False}]}


def setup(store, tmp):
    """The lake, a token, the namespace and table t, made without faults: (config, token,
    the table's UUID, the creation's key)."""
    config = os.path.join(tmp, "direct.json")
    r = run("lake", "create", "--config", config, "--store", store, "--lake", LAKE, "--json")
    check(r.returncode == 0, f"lake create: {r.stderr!r}")
    token = js(run("token", "create", "--config", config, "--lake", LAKE, "--role",
                   "read-write", "--json")).get("token", "")
    server = CatalogServer(config, "setup")
    key = str(uuid.uuid4())
    try:
        status, _ = server.call(token, "POST", f"/v1/{LAKE}/namespaces", {"namespace": ["ns"]})
        check(status == 200, f"create namespace: {status}")
        status, created = server.call(token, "POST", f"{PREFIX}/tables",
                                      {"name": "t", "schema": SCHEMA}, {"Idempotency-Key": key})
        check(status == 200, f"create t: {status} {created}")
    finally:
        check(server.stop() == 0, "the setup server exits 0")
    return config, token, created.get("metadata", {}).get("table-uuid", ""), key


def start_proxy(proxy):
    endpoint = os.environ["S3_ENDPOINT"]
    m = re.match(r"http://([^/:]+):(\d+)", endpoint)
    check(m is not None, f"a plain-HTTP RGW: {endpoint}")
    p = subprocess.Popen([proxy, "--upstream", f"{m.group(1)}:{m.group(2)}", "--seed",
                          str(random.randrange(2**32)), "--rate", str(FAULT_RATE), "--faults",
                          FAULTS, "--target-contains", "current.head"],
                         stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    port = json.loads(p.stdout.readline())["port"]
    return p, f"http://127.0.0.1:{port}", endpoint


class Ledger:
    def __init__(self):
        self.lock = threading.Lock()
        self.commits = {}  # key -> [(status, seconds), ...]

    def add(self, key, status, seconds):
        with self.lock:
            self.commits.setdefault(key, []).append((status, seconds))


def client(i, ports, token, ledger, deadline):
    n = 0
    while time.monotonic() < deadline:
        n += 1
        key = str(uuid.uuid4())
        body = {"requirements": [], "updates": [
            {"action": "set-properties", "updates": {f"c{i}": f"{n}:{key}"}}]}
        for attempt in range(ATTEMPTS):
            port = ports[(i + n + attempt) % len(ports)]
            started = time.monotonic()
            status, _ = request(port, token, "POST", f"{PREFIX}/tables/t", body, key,
                                CLIENT_TIMEOUT)
            ledger.add(key, status, time.monotonic() - started)
            if status not in (503, 504):
                break


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0


def lost_answers(store, proxy_path, tmp):
    direct, token, table_uuid, creation = setup(store, tmp)
    proxy, proxy_endpoint, endpoint = start_proxy(proxy_path)
    faulty = os.path.join(tmp, "faulty.json")
    with open(direct) as f:
        config = json.load(f)
    config["lakes"][LAKE]["store"] = store.replace(f"endpoint={endpoint}",
                                                   f"endpoint={proxy_endpoint}")
    with open(os.open(faulty, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        json.dump(config, f)
    servers = [CatalogServer(faulty, f"s{i}") for i in range(2)]
    ledger = Ledger()
    started = time.monotonic()
    try:
        threads = [threading.Thread(target=client,
                                    args=(i, [s.port for s in servers], token, ledger,
                                          started + SECONDS)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        stopped = [s.stop() for s in servers]
        proxy.send_signal(signal.SIGTERM)
        faults = json.loads(proxy.stdout.readline() or "{}")
        proxy.wait(30)
    check(stopped == [0, 0], f"the servers exit 0 on SIGTERM: {stopped}")

    answers = [a for attempts in ledger.commits.values() for a in attempts]
    seconds = [s for _, s in answers]
    by_status = {}
    for status, _ in answers:
        by_status[str(status)] = by_status.get(str(status), 0) + 1
    print(f"lost answers: {time.monotonic() - started:.0f} s, {len(ledger.commits)} commits, "
          f"{len(answers)} attempts by answer {by_status}, faults {faults}; answered in "
          f"p50 {quantile(seconds, 0.5):.2f} s, p99 {quantile(seconds, 0.99):.2f} s, "
          f"max {max(seconds, default=0):.2f} s")
    check(faults.get("withhold", 0) > 0 and faults.get("reset", 0) > 0,
          f"the proxy withheld answers and reset connections: {faults}")
    slow = [(k, a) for k, attempts in ledger.commits.items() for a in attempts
            if a[0] is None or a[1] > ANSWER_BOUND]
    check(not slow, f"every attempt answered within {ANSWER_BOUND} s: {len(slow)} not, "
          f"e.g. {slow[:3]}")
    odd = [(k, a) for k, attempts in ledger.commits.items() for a in attempts
           if a[0] not in (200, 503, 504, None)]
    check(not odd, f"every answer is 200, 503 or 504: {odd[:3]}")
    check(by_status.get("200", 0) > 0, "some commits were acknowledged")

    # The history, from RGW directly (not through the proxy).
    keys = history("rgw", store, table_uuid, tmp)
    twice = sorted({k for k in keys if keys.count(k) > 1})
    check(not twice, f"no commit is in the history twice: {len(keys)} records, "
          f"{len(set(keys))} keys, twice: {twice[:3]}")
    acked = [k for k, attempts in ledger.commits.items() if any(s == 200 for s, _ in attempts)]
    missing = [k for k in acked if k not in keys]
    check(not missing, f"every acknowledged commit is in the history: {missing[:3]}")
    strangers = [k for k in keys if k != creation and k not in ledger.commits]
    check(not strangers, f"every record is a client's commit or the creation: {strangers[:3]}")
    present = len(set(keys) & set(ledger.commits))
    check(len(keys) == present + 1,
          f"the head's revision grew by exactly the commits present: revision {len(keys)}, "
          f"1 + {present} commits")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    store = s3_url()
    if store is None:
        finish()
        return
    with tempfile.TemporaryDirectory() as tmp:
        lost_answers(store, sys.argv[2], tmp)
    finish()


if __name__ == "__main__":
    main()
