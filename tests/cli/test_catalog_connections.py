#!/usr/bin/env python3
"""`cairn serve` under hostile connections (docs/http-server.md, docs/catalog.md "Configuration"):
idle sockets that fill every slot give way, oldest first, so /healthz is answered; the idle
timeout and the connection bounds are the configuration's `server` settings; a request without a
valid token gets its 401 before `100 Continue` or a byte of its body; a Transfer-Encoding other
than chunked is refused and its "body" never served as a request; `BEARER` is a bearer token.

Usage: test_catalog_connections.py /path/to/cairn
"""
import json
import os
import socket
import tempfile
import time

from cli_support import CatalogServer, check, finish, js, run

MAX_CONNECTIONS = 4
IDLE_SECONDS = 2


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.settimeout(5)
    return s


def receive(s, within):
    """What the server sends within `within` seconds, until it closes: (bytes, closed)."""
    out = b""
    end = time.monotonic() + within
    while time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            return out, False
        except ConnectionResetError:
            return out, True
        if not chunk:
            return out, True
        out += chunk
    return out, False


def request(s, data, within=3):
    """Sends `data`, returns the first response's head and body (by Content-Length)."""
    s.sendall(data)
    got = b""
    end = time.monotonic() + within
    while b"\r\n\r\n" not in got and time.monotonic() < end:
        chunk, closed = receive(s, 0.2)
        got += chunk
        if closed:
            break
    head, _, body = got.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length and time.monotonic() < end:
        chunk, closed = receive(s, 0.2)
        body += chunk
        if closed:
            break
    return head.decode(errors="replace"), body


def status_of(head):
    return int(head[9:12]) if head.startswith("HTTP/1.1 ") else 0


def get(path, token=None):
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return f"GET {path} HTTP/1.1\r\nHost: t\r\n{auth}\r\n".encode()


def exhaustion(port):
    # Every slot taken by a connection that served one request and went idle.
    idle = [connect(port) for _ in range(MAX_CONNECTIONS)]
    for s in idle:
        head, _ = request(s, get("/healthz"))
        check(status_of(head) == 200, f"an idle connection's first request: {head!r}")
    started = time.monotonic()
    probe = connect(port)
    head, _ = request(probe, get("/healthz"))
    took = time.monotonic() - started
    check(status_of(head) == 200 and took < 1, f"/healthz with every slot idle: {head!r} {took:.2f} s")
    data, closed = receive(idle[0], 1)
    check(closed and data == b"", f"the oldest idle connection gave its place: {closed} {data!r}")
    head, _ = request(idle[1], get("/readyz"))
    check(status_of(head) == 200, f"a younger idle connection still serves: {head!r}")
    # The idle timeout is the configuration's, not 60 s.
    started = time.monotonic()
    data, closed = receive(idle[2], IDLE_SECONDS + 3)
    took = time.monotonic() - started
    check(closed and data == b"" and took < IDLE_SECONDS + 2,
          f"an idle connection closed after idle-timeout-seconds: {closed} {took:.1f} s")
    for s in idle + [probe]:
        s.close()


def early_refusal(port):
    for auth in ("", "Authorization: Bearer not-a-token\r\n"):
        s = connect(port)
        s.sendall(b"POST /v1/alpha/namespaces HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n"
                  b"Content-Type: application/json\r\nExpect: 100-continue\r\n" +
                  auth.encode() + b"\r\n")
        data, _ = receive(s, 3)
        text = data.decode(errors="replace")
        check(text.startswith("HTTP/1.1 401 ") and "100 Continue" not in text and
              "Connection: close" in text,
              f"no token ({auth.strip() or 'none'}): a 401 before 100 Continue: {text[:80]!r}")
        s.close()


def smuggling(server, token):
    port = server.port
    before = len(server.requests())
    smuggled = b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"
    for te in (b"gzip", b"identity", b"chunked, identity"):
        s = connect(port)
        head, _ = request(s, b"POST /v1/alpha/namespaces HTTP/1.1\r\nHost: t\r\n"
                             b"Authorization: Bearer " + token.encode() +
                          b"\r\nTransfer-Encoding: " + te + b"\r\n\r\n" + smuggled)
        _, closed = receive(s, 2)
        check(status_of(head) == 400 and "Connection: close" in head and closed,
              f"Transfer-Encoding: {te.decode()}: 400 and closed: {head!r} {closed}")
        s.close()
    time.sleep(0.2)
    served = [r for r in server.requests()[before:] if r.get("route") == "/healthz"]
    check(not served, f"a smuggled request was never served: {served}")


def bearer_scheme(port, token):
    for scheme in ("BEARER", "bearer", "Bearer"):
        s = connect(port)
        head, _ = request(s, f"GET /v1/config HTTP/1.1\r\nHost: t\r\n"
                             f"Authorization: {scheme} {token}\r\n\r\n".encode())
        check(status_of(head) == 200, f"Authorization: {scheme}: {head!r}")
        s.close()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "catalog.json")
        check(run("lake", "create", "--config", config, "--store", os.path.join(tmp, "store"),
                  "--lake", "alpha", "--json").returncode == 0, "lake create")
        token = js(run("token", "create", "--config", config, "--lake", "alpha", "--role",
                       "read-write", "--json")).get("token", "")
        with open(config) as f:
            settings = json.load(f)
        settings["server"] = {"max-connections": MAX_CONNECTIONS,
                              "max-connections-per-address": MAX_CONNECTIONS,
                              "idle-timeout-seconds": IDLE_SECONDS}
        with open(config, "w") as f:
            json.dump(settings, f)
        server = CatalogServer(config)
        try:
            exhaustion(server.port)
            early_refusal(server.port)
            smuggling(server, token)
            bearer_scheme(server.port, token)
        finally:
            check(server.stop() == 0, "serve exits 0")
    finish()


main()
