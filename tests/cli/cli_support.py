"""Helpers shared by the command-line tests: run `cairn`, count checks, find RGW."""
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

cairn = sys.argv[1]
counts = {"passed": 0, "failed": 0}


def check(cond, what):
    if cond:
        counts["passed"] += 1
    else:
        counts["failed"] += 1
        print("FAIL:", what, flush=True)


def journal_end(data):
    """Where a journal file's frames end (docs/formats.md §1): after the header (magic, version,
    code-unit count, the id's UTF-16 units, CRC-32C), each frame is a 32-bit length, a 64-bit
    sequence (1, 2, ...), the payload and a CRC. The writer keeps zeros after the frames (its
    room, docs/journal.md): callers check that only zeros follow."""
    import struct
    (units,) = struct.unpack(">I", data[12:16])
    pos, seq = 20 + 2 * units, 1
    while pos + 16 <= len(data):
        length, s = struct.unpack(">IQ", data[pos:pos + 12])
        if s != seq or pos + 16 + length > len(data):
            break
        pos += 16 + length
        seq += 1
    return pos


def journal_frames(data, what):
    """The journal's bytes up to the end of its frames, checking that only zeros follow."""
    end = journal_end(data)
    check(data[end:].count(0) == len(data) - end, f"{what}: only zeros after the frames")
    return data[:end]


def finish():
    print(f"{counts['passed']} checks passed, {counts['failed']} failed")
    sys.exit(1 if counts["failed"] else 0)


# The AWS shared files and profile of whoever runs the tests never reach `cairn` (they would
# change the region, addressing or keys of the RGW stores): no files, no profile.
AWS_ISOLATION = {"AWS_CONFIG_FILE": "/nonexistent/cairn-tests/aws-config",
                 "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/cairn-tests/aws-credentials"}


def run(*args, stdin=b"", env=None, timeout=300, isolate_aws=True):
    e = dict(os.environ)
    e.pop("CAIRN_TEST_FAULT", None)
    if isolate_aws:
        for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL",
                     "AWS_ENDPOINT_URL_S3", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"):
            e.pop(name, None)
        e.update(AWS_ISOLATION)
    if env:
        e.update(env)
    return subprocess.run([cairn, *args], input=stdin, capture_output=True, timeout=timeout,
                          env=e)


def js(r):
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {}


def one_json(r):
    """The single JSON object a --json command printed on stdout, or None (none, several, or
    not an object)."""
    lines = [line for line in r.stdout.decode(errors="replace").splitlines() if line.strip()]
    if len(lines) != 1:
        return None
    try:
        value = json.loads(lines[0])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def records(tag, n):
    return "".join(f"{tag} record {i} {'x' * (i % 200)}\n" for i in range(n)).encode()


def s3_url():
    """A fresh root under the RGW bucket of ../shared/s3 (S3_* variables), or None when this
    run may skip RGW (never in CI)."""
    need = ["S3_ENDPOINT", "S3_BUCKET", "S3_ACCESS_KEY", "S3_SECRET_KEY"]
    if not all(os.environ.get(k) for k in need):
        required = os.environ.get("CI") == "true" or os.environ.get("CAIRN_REQUIRE_S3") == "1"
        if required or os.environ.get("CAIRN_ALLOW_NO_S3") != "1":
            print("FAIL: S3_* must be set (eval \"$(bash ../shared/s3/start-rgw.sh)\")")
            sys.exit(1)
        print("WARNING: the RGW half of this test did NOT run (CAIRN_ALLOW_NO_S3=1)")
        return None
    os.environ["AWS_ACCESS_KEY_ID"] = os.environ["S3_ACCESS_KEY"]
    os.environ["AWS_SECRET_ACCESS_KEY"] = os.environ["S3_SECRET_KEY"]
    root = f"cairn-cli-{random.randrange(10**12)}"
    region = os.environ.get("S3_REGION") or "us-east-1"
    return (f"s3://{os.environ['S3_BUCKET']}/{root}?endpoint={os.environ['S3_ENDPOINT']}"
            f"&region={region}")


def chain_ok(store, ns, what):
    r = run("log", "--store", store, "--namespace", ns, "--json")
    check(r.returncode == 0, f"{what}: log: {r.stderr!r}")
    entries = js(r).get("entries", [])
    revs = [e["revision"] for e in entries]
    check(revs == list(range(len(revs), 0, -1)), f"{what}: unbroken chain, got {revs}")
    return entries


def recovered_and_verified(store, ns, copy, what):
    """`cairn recover` of namespace `ns` into `copy`, then `cairn verify --deep` of it."""
    r = run("recover", copy, "--store", store, "--namespace", ns, "--json")
    check(r.returncode == 0, f"{what}: the log rebuilds into a journal: {r.stderr!r}")
    r = run("verify", copy, "--store", store, "--namespace", ns, "--deep", "--json")
    check(r.returncode == 0 and js(r).get("ok") is True,
          f"{what}: the log deep-verifies: {r.stdout[-400:]!r} {r.stderr[-400:]!r}")


def test_stores(tmp):
    """[(label, store URL)]: a directory store under tmp, and RGW when configured."""
    stores = [("directory", os.path.join(tmp, "store"))]
    url = s3_url()
    if url:
        stores.append(("rgw", url))
    return stores


class FakeS3Server:
    """HTTP/1.1 on loopback for the S3 client's tests: `handle(method, target)` returns the raw
    response bytes, or None to read the request and never answer. Keeps each request's raw
    head (`heads`)."""

    def __init__(self, handle):
        self.handle = handle
        self.requests = 0
        self.heads = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(32)
        self.port = self.sock.getsockname()[1]
        self.open = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.open.append(conn)
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        data = b""
        try:
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, data = data.split(b"\r\n\r\n", 1)
                self.heads.append(head)
                lines = head.decode(errors="replace").split("\r\n")
                method, target = lines[0].split(" ")[:2]
                length = 0
                for line in lines[1:]:
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                while len(data) < length:
                    data += conn.recv(65536)
                data = data[length:]
                self.requests += 1
                reply = self.handle(method, target)
                if reply is None:
                    time.sleep(3600)
                    return
                conn.sendall(reply)
        except OSError:
            return

    def url(self, extra="", dialect="aws"):
        return f"s3://bkt?endpoint=http://127.0.0.1:{self.port}&dialect={dialect}{extra}"

    def close(self):
        self.sock.close()
        for c in self.open:
            try:
                c.close()
            except OSError:
                pass


SERVING = re.compile(r"cairn: serving \d+ lake\(s\) on 127\.0\.0\.1:(\d+)")


class CatalogServer:
    """`cairn serve --config CONFIG` on a free loopback port; its stderr (the JSON request log,
    one line per request) kept line by line in `lines`."""

    def __init__(self, config, label="", start_timeout=60, stop_timeout=30):
        self.label = label
        self.stop_timeout = stop_timeout
        env = dict(os.environ)
        env.pop("CAIRN_TEST_FAULT", None)
        self.proc = subprocess.Popen([cairn, "serve", "--config", config, "--listen",
                                      "127.0.0.1:0"], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        self.lines = []
        self.port = None
        ready = threading.Event()

        def drain():
            for raw in self.proc.stderr:
                line = raw.decode(errors="replace").rstrip("\n")
                self.lines.append(line)
                m = SERVING.search(line)
                if m and self.port is None:
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()

        self.reader = threading.Thread(target=drain, daemon=True)
        self.reader.start()
        if not ready.wait(start_timeout) or self.port is None:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"cairn serve {label} did not print its port: {self.stderr()}")

    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def stderr(self):
        return "\n".join(self.lines[-20:])

    def requests(self):
        """The request log: the JSON lines of stderr."""
        out = []
        for line in list(self.lines):
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def call(self, token, method, path, body=None, headers=None, lenient=False):
        return catalog_call(self.port, token, method, path, body, headers, lenient)

    def stop(self):
        """SIGTERM; the exit code (None if it had to be killed)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            code = None
        self.reader.join(5)
        return code


def catalog_call(port, token, method, path, body=None, headers=None, lenient=False):
    """One request to the catalog on `port`: (status, the JSON reply or {} when empty). A reply
    that is not JSON raises, or with `lenient` is {}."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    h = {"Authorization": f"Bearer {token}"}
    h.update(headers or {})
    data = None if body is None else json.dumps(body)
    if data is not None:
        h["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=h)
    r = conn.getresponse()
    raw = r.read()
    conn.close()
    try:
        return r.status, (json.loads(raw) if raw else {})
    except ValueError:
        if lenient:
            return r.status, {}
        raise


def catalog_metrics(port):
    """GET /metrics of the catalog on `port` (no token): the text."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/metrics")
    r = conn.getresponse()
    text = r.read().decode()
    conn.close()
    if r.status != 200:
        raise RuntimeError(f"/metrics answered {r.status}")
    return text


def snapshot_race_commit(location, sid, sequence, parent):
    """A commit that adds snapshot `sid` (sequence number `sequence`) to a table at `location`
    and makes it main's, requiring main to still be `parent` (None: no snapshot yet)."""
    snapshot = {"snapshot-id": sid, "sequence-number": sequence,
                "timestamp-ms": int(time.time() * 1000), "schema-id": 0,
                "manifest-list": f"{location}/metadata/snap-{sid}.avro",
                "summary": {"operation": "append"}}
    if parent is not None:
        snapshot["parent-snapshot-id"] = parent
    return {"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main",
                              "snapshot-id": parent}],
            "updates": [{"action": "add-snapshot", "snapshot": snapshot},
                        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                         "snapshot-id": sid}]}


def catalog_stories(lake, story):
    """Runs story(label, store, config, server, token) on each test store: a lake `lake` created
    there, a read-write token, one `cairn serve` (stopped after, exit 0 checked); then finish()."""
    with tempfile.TemporaryDirectory() as tmp:
        for label, store in test_stores(tmp):
            started = time.monotonic()
            config = os.path.join(tmp, f"{label}.json")
            check(run("lake", "create", "--config", config, "--store", store, "--lake", lake,
                      "--json").returncode == 0, f"{label}: lake create")
            tok = js(run("token", "create", "--config", config, "--lake", lake, "--role",
                         "read-write", "--json")).get("token", "")
            server = CatalogServer(config)
            try:
                story(label, store, config, server, tok)
            finally:
                check(server.stop() == 0, f"{label}: serve exits 0")
            print(f"{label}: {time.monotonic() - started:.1f} s")
    finish()
