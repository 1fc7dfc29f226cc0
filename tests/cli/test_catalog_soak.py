#!/usr/bin/env python3
"""A soak of the catalog under store faults and crashes (issue 27): two `cairn serve`
processes over one lake on RGW, with the fault proxy (tests/tools/fault_proxy_main.cpp)
between them and RGW dropping answers after the store applied the request, resetting
connections before forwarding, delaying requests past the store client's timeout (they land
late) and answering 500 and 503 in RGW's place; one server SIGKILLed and restarted now and
then. Meanwhile:

- committers set a property of their own on the tables (no requirement: never a conflict);
- racers add snapshots to one table, each requiring the main branch to still be the snapshot
  it read (proven conflicts: 409);
- readers load tables and check that each committer's property shows a commit at least as
  new as the last one acknowledged before the load began, or one that the store's history
  holds after it (a commit whose client gave up can still land later).

A client sends each logical commit with one Idempotency-Key and sends it again (to either
server) after 503, 504 or a lost connection, at most ATTEMPTS times. Afterwards, from the store
alone (each table log recovered into a journal, deep-verified, its records read with the
format of docs/formats.md): every commit a client saw succeed is in its table's history
exactly once; no commit answered 409 is in it; no key is in it twice; every commit in it was
answered 200 or 504, or lost its connection to a killed server (never only 409, 503 or another
refusal). The count of each outcome is printed.

CAIRN_SOAK_SECONDS sets the length (default 60: CI's short setting; hours locally), and
CAIRN_SOAK_FAULT_RATE the share of store requests that meet a fault (default 0.05; in storms
of 2 s every 10 s, 0.6: reads back fail too, and some outcomes stay unknown).

Usage: test_catalog_soak.py /path/to/cairn /path/to/cairn_fault_proxy
"""
import http.client
import json
import os
import random
import re
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_support import (CatalogServer, chain_ok, check, finish, js,  # noqa: E402
                         recovered_and_verified, run, s3_url, snapshot_race_commit)

SECONDS = float(os.environ.get("CAIRN_SOAK_SECONDS", "60"))
FAULT_RATE = float(os.environ.get("CAIRN_SOAK_FAULT_RATE", "0.05"))
TABLES = 3
COMMITTERS = 4
RACERS = 3
READERS = 2
ATTEMPTS = 6
KILL_EVERY = max(4.0, SECONDS / 5)
CLIENT_TIMEOUT = 1.0  # seconds, for half the commit attempts
STORE_TIMEOUT_MS = 1000  # the servers' store timeout; the proxy's delay goes past it
PROXY_DELAY_MS = 1500
STORM_EVERY = 10  # seconds; for the first STORM_SECONDS of each, STORM_RATE of requests
STORM_SECONDS = 3
STORM_RATE = 0.9  # meet a fault
SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "x", "type": "long",
                                        "required": False}]}
LAKE = "soak"
PREFIX = f"/v1/{LAKE}/namespaces/soak"


class Servers:
    """The two servers; `kill_one` SIGKILLs one and starts it again on a new port."""

    def __init__(self, config):
        self.config = config
        self.lock = threading.Lock()
        self.servers = [CatalogServer(config, f"s{i}") for i in range(2)]
        self.kills = 0
        self.stopped = []  # exit codes of the servers stopped with SIGTERM

    def ports(self):
        with self.lock:
            return [s.port for s in self.servers]

    def kill_one(self, i):
        with self.lock:
            victim = self.servers[i]
        victim.proc.kill()
        victim.proc.wait()
        victim.reader.join(5)
        self.kills += 1
        time.sleep(0.3)
        fresh = CatalogServer(self.config, f"s{i}")
        with self.lock:
            self.servers[i] = fresh

    def metrics(self):
        """Commits by outcome, summed over the servers now running (a killed one's are gone)."""
        total = {}
        for port in self.ports():
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request("GET", "/metrics")
                text = conn.getresponse().read().decode()
                conn.close()
            except OSError:
                continue
            for m in re.finditer(r'^cairn_catalog_commits_total\{outcome="(\w+)"\} (\S+)$', text,
                                 re.M):
                total[m.group(1)] = total.get(m.group(1), 0) + int(float(m.group(2)))
        return total

    def stop(self):
        with self.lock:
            for s in self.servers:
                self.stopped.append(s.stop())


def request(port, token, method, path, body=None, key=None, timeout=60):
    """(status, reply) or (None, reason) when the connection failed or went unanswered."""
    headers = {"Authorization": f"Bearer {token}"}
    if key:
        headers["Idempotency-Key"] = key
    data = None if body is None else json.dumps(body)
    if data is not None:
        headers["Content-Type"] = "application/json"
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request(method, path, body=data, headers=headers)
        r = conn.getresponse()
        raw = r.read()
        conn.close()
    except (OSError, http.client.HTTPException) as e:
        return None, type(e).__name__
    try:
        return r.status, (json.loads(raw) if raw else {})
    except ValueError:
        return r.status, {"unparsed": raw[:200].decode(errors="replace")}


class Ledger:
    """Every logical commit: its table, key and the answers each attempt got."""

    def __init__(self):
        self.lock = threading.Lock()
        self.commits = {}  # key -> {"table", "answers": [...], "kind"}
        self.acked = {}  # (table, committer) -> the newest index acknowledged
        self.acked_keys = {}  # (table, committer, index) -> its Idempotency-Key
        self.loads = {}
        self.stale = []
        self.started = time.monotonic()
        self.minutes = {}  # minute -> {answer: count}: how the run went over time
        self.reasons = {}  # the 5xx answers' messages (their first words), counted

    def answer(self, key, status, reply):
        with self.lock:
            self.commits[key]["answers"].append(status)
            minute = self.minutes.setdefault(int((time.monotonic() - self.started) // 60), {})
            minute[str(status)] = minute.get(str(status), 0) + 1
            if status is not None and status >= 500:
                words = " ".join(str(reply.get("error", {}).get("message", reply)).split()[:8])
                self.reasons[words] = self.reasons.get(words, 0) + 1

    def load(self, status):
        with self.lock:
            self.loads[status] = self.loads.get(status, 0) + 1


def send_commit(servers, token, ledger, table, key, body, kind):
    with ledger.lock:
        ledger.commits[key] = {"table": table, "answers": [], "kind": kind}
    reply = {}
    for attempt in range(ATTEMPTS):
        ports = servers.ports()
        port = ports[(attempt + random.randrange(2)) % len(ports)]
        # Half the attempts give up after CLIENT_TIMEOUT (the server goes on: the commit may land
        # unseen, and the attempt after it must find it by its key).
        timeout = random.choice([CLIENT_TIMEOUT, 60])
        status, reply = request(port, token, "POST", f"{PREFIX}/tables/{table}", body, key,
                                timeout)
        ledger.answer(key, status, reply)
        if status in (200, 409) or (status is not None and 400 <= status < 500):
            return status, reply
        time.sleep(0.05 * (attempt + 1))
    return status, reply


def committer(i, servers, token, ledger, deadline):
    n = 0
    while time.monotonic() < deadline:
        n += 1
        table = f"t{n % TABLES}"
        key = str(uuid.uuid4())
        body = {"requirements": [], "updates": [
            {"action": "set-properties", "updates": {f"c{i}": f"{n}:{key}"}}]}
        status, _ = send_commit(servers, token, ledger, table, key, body, "property")
        if status == 200:
            with ledger.lock:
                ledger.acked[(table, i)] = max(n, ledger.acked.get((table, i), 0))
                ledger.acked_keys[(table, i, n)] = key


def racer(i, servers, token, ledger, deadline):
    while time.monotonic() < deadline:
        ports = servers.ports()
        status, loaded = request(random.choice(ports), token, "GET", f"{PREFIX}/tables/t0")
        if status != 200:
            time.sleep(0.05)
            continue
        meta = loaded["metadata"]
        parent = meta.get("current-snapshot-id")
        if parent == -1:
            parent = None
        body = snapshot_race_commit(meta["location"], random.randrange(1, 2**62),
                                    meta["last-sequence-number"] + 1, parent)
        send_commit(servers, token, ledger, "t0", str(uuid.uuid4()), body, "snapshot")


def reader(servers, token, ledger, deadline):
    while time.monotonic() < deadline:
        table = f"t{random.randrange(TABLES)}"
        with ledger.lock:
            floor = {c: n for (t, c), n in ledger.acked.items() if t == table}
        status, loaded = request(random.choice(servers.ports()), token, "GET",
                                 f"{PREFIX}/tables/{table}")
        ledger.load(status)
        if status != 200:
            continue
        props = loaded.get("metadata", {}).get("properties", {})
        for c, n in floor.items():
            shown, _, shown_key = props.get(f"c{c}", "0:").partition(":")
            if int(shown) < n:
                with ledger.lock:
                    ledger.stale.append((table, c, n, int(shown), ledger.acked_keys[(table, c, n)],
                                         shown_key))


def killer(servers, deadline):
    i = 0
    while time.monotonic() + KILL_EVERY < deadline:
        time.sleep(KILL_EVERY * random.uniform(0.6, 1.0))
        servers.kill_one(i % 2)
        i += 1


def journal_records(directory):
    """The payloads of a recovered journal's frames (docs/formats.md §1): a header (magic,
    version, code-unit count, the id's UTF-16 units, CRC-32C), then per frame a 32-bit length,
    a 64-bit sequence, the payload and a CRC. Read up to the first frame that does not follow."""
    data = open(os.path.join(directory, "journal"), "rb").read()
    (units,) = struct.unpack(">I", data[12:16])
    pos, seq, out = 20 + 2 * units, 1, []
    while pos + 16 <= len(data):
        length, s = struct.unpack(">IQ", data[pos:pos + 12])
        if s != seq or pos + 16 + length > len(data):
            break
        out.append(data[pos + 12:pos + 12 + length])
        pos += 16 + length
        seq += 1
    return out


def history(label, store, table_uuid, tmp):
    """The idempotency keys of a table log's records, oldest first, read from the store."""
    entries = chain_ok(store, table_uuid, f"{label}: table log {table_uuid}")
    copy = os.path.join(tmp, f"history-{table_uuid}")
    recovered_and_verified(store, table_uuid, copy, f"{label}: table log {table_uuid}")
    records = [json.loads(p) for p in journal_records(copy)]
    check(entries and len(records) == entries[0]["revision"],
          f"{label}: {len(records)} records, head revision {entries and entries[0]['revision']}")
    check(all(rec.get("type") == "commit" for rec in records), f"{label}: commit records")
    return [rec.get("idempotency-key") for rec in records]


def start_proxy(proxy):
    endpoint = os.environ["S3_ENDPOINT"]
    m = re.match(r"https?://([^/:]+):(\d+)", endpoint)
    check(m is not None and endpoint.startswith("http://"), f"a plain-HTTP RGW: {endpoint}")
    p = subprocess.Popen([proxy, "--upstream", f"{m.group(1)}:{m.group(2)}", "--seed",
                          str(random.randrange(2**32)), "--rate", str(FAULT_RATE), "--delay-ms",
                          str(PROXY_DELAY_MS), "--storm-every", str(STORM_EVERY),
                          "--storm-seconds", str(STORM_SECONDS), "--storm-rate", str(STORM_RATE)],
                         stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    port = json.loads(p.stdout.readline())["port"]
    return p, f"http://127.0.0.1:{port}", endpoint


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    store = s3_url()
    if store is None:
        finish()
        return
    with tempfile.TemporaryDirectory() as tmp:
        soak(store, sys.argv[2], tmp)
    finish()


def setup(store, tmp):
    """The lake, a token, the namespace and the tables, made without faults."""
    config = os.path.join(tmp, "direct.json")
    r = run("lake", "create", "--config", config, "--store", store, "--lake", LAKE, "--json")
    check(r.returncode == 0, f"lake create: {r.stderr!r}")
    token = js(run("token", "create", "--config", config, "--lake", LAKE, "--role",
                   "read-write", "--json")).get("token", "")
    uuids, creations = {}, set()
    server = CatalogServer(config, "setup")
    try:
        status, _ = server.call(token, "POST", f"/v1/{LAKE}/namespaces",
                                {"namespace": ["soak"]})
        check(status == 200, f"create namespace: {status}")
        for t in range(TABLES):
            key = str(uuid.uuid4())
            creations.add(key)
            status, created = server.call(token, "POST", f"{PREFIX}/tables",
                                          {"name": f"t{t}", "schema": SCHEMA},
                                          {"Idempotency-Key": key})
            check(status == 200, f"create t{t}: {status} {created}")
            uuids[f"t{t}"] = created.get("metadata", {}).get("table-uuid", "")
    finally:
        check(server.stop() == 0, "the setup server exits 0")
    return config, token, uuids, creations


def soak(store, proxy_path, tmp):
    direct, token, uuids, creations = setup(store, tmp)
    proxy, proxy_endpoint, endpoint = start_proxy(proxy_path)
    faulty = os.path.join(tmp, "faulty.json")
    with open(direct) as f:
        config = json.load(f)
    config["lakes"][LAKE]["store"] = (store.replace(f"endpoint={endpoint}",
                                                    f"endpoint={proxy_endpoint}")
                                      + f"&timeout_ms={STORE_TIMEOUT_MS}")
    with open(os.open(faulty, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        json.dump(config, f)

    ledger = Ledger()
    servers = Servers(faulty)
    started = time.monotonic()
    deadline = started + SECONDS
    threads = [threading.Thread(target=committer, args=(i, servers, token, ledger, deadline))
               for i in range(COMMITTERS)]
    threads += [threading.Thread(target=racer, args=(i, servers, token, ledger, deadline))
                for i in range(RACERS)]
    threads += [threading.Thread(target=reader, args=(servers, token, ledger, deadline))
                for _ in range(READERS)]
    threads.append(threading.Thread(target=killer, args=(servers, deadline)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    by_outcome = servers.metrics()
    servers.stop()
    proxy.send_signal(signal.SIGTERM)
    faults = json.loads(proxy.stdout.readline() or "{}")
    proxy.wait(30)
    elapsed = time.monotonic() - started
    check(all(code == 0 for code in servers.stopped),
          f"the servers still running exit 0 on SIGTERM: {servers.stopped}")

    # The history, from the store alone (RGW directly, not through the proxy).
    keys, position = {}, {}
    for table, table_uuid in uuids.items():
        for i, k in enumerate(history("rgw", store, table_uuid, tmp)):
            keys.setdefault(k, []).append(table)
            position[(table, k)] = i
    judge(ledger, keys, creations)
    # A load that showed a committer's older value after its newer one was acknowledged is
    # right only when the older commit landed after the newer one in the history: a commit whose
    # client gave up (no final answer) can still wait for its log's turn in a server and land
    # later. Anything else is a stale load.
    late = [s for s in ledger.stale if (s[0], s[5]) in position and (s[0], s[4]) in position
            and position[(s[0], s[5])] > position[(s[0], s[4])]]
    stale = [s[:4] for s in ledger.stale if s not in late]
    print(f"soak: loads that showed a commit which landed after a later acknowledged one: "
          f"{len(late)}")

    counts, seen = {}, {}
    for c in ledger.commits.values():
        final = c["answers"][-1] if c["answers"] else "none"
        counts[str(final)] = counts.get(str(final), 0) + 1
        for a in c["answers"]:
            seen[str(a)] = seen.get(str(a), 0) + 1
    print(f"soak: {elapsed:.0f} s, {len(ledger.commits)} commits by final answer {counts}, "
          f"answers to all attempts {seen}, "
          f"loads {ledger.loads}, servers killed {servers.kills}, faults {faults}, "
          f"commit outcomes on the servers running at the end {by_outcome}")
    print(f"soak: answers by minute {ledger.minutes}")
    print("soak: the commonest 5xx messages: " + "; ".join(
        f"{n} x {m}" for m, n in sorted(ledger.reasons.items(), key=lambda x: -x[1])[:6]))
    check(counts.get("200", 0) > 0, "some commits were acknowledged")
    check(counts.get("409", 0) > 0, "some racers lost (proven conflicts)")
    check(servers.kills >= 1, f"a server was killed and restarted ({servers.kills})")
    for kind in ("drop", "reset", "delay", "500", "503"):
        check(faults.get(kind, 0) > 0, f"the proxy injected {kind} ({faults})")
    check(not stale, f"no load older than an acknowledged commit: {stale[:3]}")
    bad_loads = {s: n for s, n in ledger.loads.items() if s not in (200, 503, 504, None)}
    check(not bad_loads, f"loads answered 200, 503 or 504 (or lost with a server): {bad_loads}")


def judge(ledger, keys, creations):
    """The answers the clients got against the history the store holds."""
    for key, tables in keys.items():
        check(len(tables) == 1, f"key {key} is in the history once, found {len(tables)}")
    for key, c in ledger.commits.items():
        answers = c["answers"]
        landed = key in keys
        if 200 in answers:
            check(landed, f"{key}: acknowledged ({answers}) and in the history")
            check(not landed or keys[key] == [c["table"]], f"{key}: in its own table's history")
        if 409 in answers:
            check(not landed, f"{key}: answered 409 ({answers}) yet in the history")
        if landed:
            may = [a for a in answers if a in (200, 504, None)]
            check(may, f"{key}: in the history, but answered only {answers}")
        if answers and answers[-1] not in (200, 409, 503, 504, None):
            check(False, f"{key}: an answer a commit never gets here: {answers}")
    strangers = [k for k in keys if k not in ledger.commits and k not in creations]
    check(not strangers, f"every record in the history is a client's commit or a table's "
          f"creation: {strangers[:3]}")


if __name__ == "__main__":
    main()
