#!/usr/bin/env python3
"""Storage credentials the catalog hands out (issue 26), used by a client no one else wrote: a
stdlib SigV4 client here, against RGW with STS. Each class allows exactly what it should and
is refused (403) elsewhere: another table's location in the same lake (one whose location is a
prefix of this one's as a string too), another lake's root, the catalog's `ns-*` objects and a
table's metadata files, DELETE, and ListBucket outside its prefix. A table name with `*`, `?` or
`%` cannot widen a policy. Credentials expire and the refresh route issues new ones. A lake
without STS (or on a directory store) gets no credentials and the documented reason.

Usage: test_catalog_credentials.py /path/to/cairn
Needs RGW with STS (S3_*, S3_STS_ENDPOINT, S3_ROLE_ARN from ../shared/s3/start-rgw.sh), started
with CAIRN_RGW_STS_MIN_DURATION=1 for the expiry check (scripts/test.sh does); in CI both are
required.
"""
import datetime
import hashlib
import hmac
import http.client
import json
import os
import random
import re
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_support import CatalogServer, cairn, check, finish, js, run  # noqa: E402

REQUIRED = os.environ.get("CI") == "true" or os.environ.get("CAIRN_REQUIRE_S3") == "1"


def env_or_fail():
    need = ["S3_ENDPOINT", "S3_BUCKET", "S3_ACCESS_KEY", "S3_SECRET_KEY", "S3_STS_ENDPOINT",
            "S3_ROLE_ARN"]
    missing = [k for k in need if not os.environ.get(k)]
    if missing:
        if REQUIRED or os.environ.get("CAIRN_ALLOW_NO_S3") != "1":
            print(f"FAIL: {' '.join(missing)} must be set (../shared/s3/start-rgw.sh)")
            sys.exit(1)
        print("WARNING: the credentials test did NOT run (CAIRN_ALLOW_NO_S3=1)")
        sys.exit(0)
    os.environ["AWS_ACCESS_KEY_ID"] = os.environ["S3_ACCESS_KEY"]
    os.environ["AWS_SECRET_ACCESS_KEY"] = os.environ["S3_SECRET_KEY"]


# ---- an S3 client written here, apart from cairn's: SigV4 over http.client ----------------

def s3(creds, method, key, query=None, body=b""):
    """A SigV4-signed request to S3_ENDPOINT for BUCKET/key; returns the HTTP status."""
    return s3_full(creds, method, key, query, body)[0]


def s3_full(creds, method, key, query=None, body=b""):
    """The same; returns (status, response body)."""
    endpoint = urllib.parse.urlsplit(os.environ["S3_ENDPOINT"])
    region = os.environ.get("S3_REGION") or "us-east-1"
    host = f"{endpoint.hostname}:{endpoint.port or 80}"
    now = datetime.datetime.now(datetime.timezone.utc)
    amz, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload = hashlib.sha256(body).hexdigest()
    headers = {"host": host, "x-amz-content-sha256": payload, "x-amz-date": amz}
    if creds.get("token"):
        headers["x-amz-security-token"] = creds["token"]
    path = "/" + os.environ["S3_BUCKET"] + ("/" + key if key else "")
    qpath = urllib.parse.quote(path, safe="/-_.~")
    q = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                 for k, v in sorted((query or {}).items()))
    signed = ";".join(sorted(headers))
    canonical = "\n".join([method, qpath, q, "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)),
                           signed, payload])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    k = ("AWS4" + creds["secret"]).encode()
    for part in (day, region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    headers["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={creds['key']}/{scope}, "
                                f"SignedHeaders={signed}, "
                                f"Signature={hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()}")
    conn = http.client.HTTPConnection(endpoint.hostname, endpoint.port or 80, timeout=30)
    conn.request(method, qpath + ("?" + q if q else ""), body=body or None, headers=headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


ADMIN = None  # the base key pair, set in main()


def creds_of(storage_credential):
    c = storage_credential["config"]
    return {"key": c["s3.access-key-id"], "secret": c["s3.secret-access-key"],
            "token": c["s3.session-token"]}


# ---- the catalog ------------------------------------------------------------------------------

VENDED = {"X-Iceberg-Access-Delegation": "vended-credentials"}
SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "a", "type": "int", "required": False}]}


def token(config, lake, role):
    return js(run("token", "create", "--config", config, "--lake", lake, "--role", role,
                  "--json")).get("token", "")


def key_of(location):
    """s3://BUCKET/KEY -> KEY"""
    prefix = f"s3://{os.environ['S3_BUCKET']}/"
    check(location.startswith(prefix), f"a location in the bucket: {location}")
    return location[len(prefix):]


def main():
    global ADMIN
    env_or_fail()
    ADMIN = {"key": os.environ["S3_ACCESS_KEY"], "secret": os.environ["S3_SECRET_KEY"]}
    run_id = f"cairn-cred-{random.randrange(10**12)}"
    endpoint, region = os.environ["S3_ENDPOINT"], os.environ.get("S3_REGION") or "us-east-1"

    def url(root):
        return f"s3://{os.environ['S3_BUCKET']}/{run_id}/{root}?endpoint={endpoint}&region={region}"

    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "catalog.json")
        sts = ["--sts-role", os.environ["S3_ROLE_ARN"], "--sts-endpoint",
               os.environ["S3_STS_ENDPOINT"]]
        for lake in ("a", "b"):
            r = run("lake", "create", "--config", config, "--store", url(f"lakes/{lake}"), "--lake",
                    lake, *sts, "--json")
            check(r.returncode == 0, f"lake create {lake} with STS: {r.stderr!r}")
        r = run("lake", "create", "--config", config, "--store", url("lakes/plain"), "--lake",
                "plain", "--json")
        check(r.returncode == 0, f"lake create without STS: {r.stderr!r}")
        r = run("lake", "create", "--config", config, "--store", os.path.join(tmp, "dir"), "--lake",
                "local", *sts, "--json")
        check(r.returncode != 0 and b"directory" in r.stderr,
              f"STS on a directory store is refused: {r.returncode} {r.stderr!r}")
        r = run("lake", "create", "--config", config, "--store", os.path.join(tmp, "dir"), "--lake",
                "local", "--json")
        check(r.returncode == 0, f"a directory lake: {r.stderr!r}")
        r = run("lake", "set", "--config", config, "--lake", "a", "--credential-seconds",
                "table-read=2", "--json")
        check(r.returncode == 0, f"lake set --credential-seconds: {r.stderr!r}")
        rw = {lake: token(config, lake, "read-write") for lake in ("a", "b", "plain", "local")}
        ro = token(config, "a", "read")
        server = CatalogServer(config)
        try:
            scenario(server, config, rw, ro, run_id)
        finally:
            check(server.stop() == 0, "serve exits 0")
            leaked = [l for l in server.lines if "SessionToken" in l or "s3.session-token" in l
                      or any(t and t in l for t in [*rw.values(), ro])]
            check(not leaked, f"no credential or token in the server's log: {leaked[:2]}")
    finish()


def scenario(server, config, rw, ro, run_id):  # noqa: C901 (one story, step by step)
    bucket_root = f"{run_id}/lakes/a"
    for lake in ("a", "b", "plain", "local"):
        st, _ = server.call(rw[lake], "POST", f"/v1/{lake}/namespaces", {"namespace": ["ns"]})
        check(st == 200, f"{lake}: create namespace {st}")

    def create(lake, name, location=None, tok=None):
        body = {"name": name, "schema": SCHEMA}
        if location:
            body["location"] = location
        st, res = server.call(tok or rw[lake], "POST", f"/v1/{lake}/namespaces/ns/tables", body,
                              VENDED)
        check(st == 200, f"{lake}: create {name}: {st} {res}")
        return res

    orders = create("a", "orders")
    base = f"s3://{os.environ['S3_BUCKET']}/{bucket_root}/custom"
    p = create("a", "p", base + "/p")
    p2 = create("a", "p2", base + "/p2")
    wild = create("a", "w*?%x")
    other = create("b", "orders")
    # Nested locations are refused: credentials of one table would reach the other's files.
    st, res = server.call(rw["a"], "POST", "/v1/a/namespaces/ns/tables",
                          {"name": "inside", "schema": SCHEMA, "location": base + "/p/inner"})
    check(st == 409 and res.get("error", {}).get("reason") == "location-overlaps",
          f"a location inside another table's is refused: {st} {res}")

    # What a create returned with vended credentials: the LoadTableResult's storage-credentials.
    sc = orders.get("storage-credentials", [])
    check(len(sc) == 1, f"one storage credential on create: {sc}")
    if sc:
        c = sc[0]["config"]
        check(sc[0]["prefix"] == orders["metadata"]["location"], "its prefix is the location")
        for k in ("s3.access-key-id", "s3.secret-access-key", "s3.session-token",
                  "s3.session-token-expires-at-ms", "client.region", "s3.endpoint",
                  "s3.path-style-access", "client.refresh-credentials-endpoint"):
            check(k in c, f"config has {k}")
        check(c.get("client.refresh-credentials-endpoint") ==
              "v1/a/namespaces/ns/tables/orders/credentials", f"refresh endpoint: {c}")
        check(int(c.get("s3.session-token-expires-at-ms", 0)) > time.time() * 1000,
              "expires in the future")

    def creds(lake, table, cls=None, tok=None):
        path = f"/v1/{lake}/namespaces/ns/tables/{urllib.parse.quote(table, safe='')}/credentials"
        if cls:
            path += f"?class={cls}"
        st, res = server.call(tok or rw[lake], "GET", path)
        return st, res

    ok_keys = {}
    okey = key_of(orders["metadata"]["location"])
    pkey, p2key = key_of(p["metadata"]["location"]), key_of(p2["metadata"]["location"])
    wkey, bkey = key_of(wild["metadata"]["location"]), key_of(other["metadata"]["location"])
    lake_head = None
    # The admin writes files the classes will try to read.
    for k in (f"{okey}/data/f0", f"{pkey}/data/f0", f"{p2key}/data/f0", f"{wkey}/data/f0",
              f"{bkey}/data/f0", f"{bucket_root}/results/r0", f"{bucket_root}/archive/x0"):
        check(s3(ADMIN, "PUT", k, body=b"x") == 200, f"admin put {k}")
    keys = [l for l in (s3_list_admin(bucket_root) or []) if "/ns-" in "/" + l.split("/")[-1]]
    lake_head = next((k for k in keys if k.endswith("-current.head")), None)
    check(lake_head is not None, "the lake log's head is there to attack")

    def expect(cred, method, key, want, what, query=None, body=b"y"):
        got = s3(cred, method, key, query=query, body=body if method == "PUT" else b"")
        check(got == want, f"{what}: {method} {key}: got {got}, want {want}")
        ok_keys.setdefault(what, []).append((method, key, got))

    # table-write (the read-write token's default)
    st, res = creds("a", "orders")
    check(st == 200, f"credentials route: {st} {res}")
    w = creds_of(res["storage-credentials"][0]) if st == 200 else ADMIN
    expect(w, "GET", f"{okey}/data/f0", 200, "table-write reads its table")
    expect(w, "PUT", f"{okey}/data/f1", 200, "table-write writes data")
    expect(w, "PUT", f"{okey}/metadata/snap-1-1-x.avro", 200, "table-write writes a manifest list")
    expect(w, "GET", "", 200, "table-write lists its location", query={"list-type": "2", "prefix": okey + "/"})
    expect(w, "PUT", f"{okey}/metadata/00009-x.metadata.json", 403, "no metadata file")
    expect(w, "DELETE", f"{okey}/data/f0", 403, "no delete")
    expect(w, "GET", f"{pkey}/data/f0", 403, "not another table")
    expect(w, "GET", f"{bkey}/data/f0", 403, "not another lake")
    expect(w, "GET", lake_head, 403, "not the lake log")
    expect(w, "PUT", lake_head, 403, "never the lake log's head")
    expect(w, "GET", "", 403, "no listing of the lake", query={"list-type": "2", "prefix": bucket_root + "/"})
    expect(w, "GET", "", 403, "no listing of another table", query={"list-type": "2", "prefix": pkey + "/"})
    # p and p2: one location is a prefix of the other's as a string, not as a directory.
    st, res = creds("a", "p")
    pw = creds_of(res["storage-credentials"][0]) if st == 200 else ADMIN
    expect(pw, "GET", f"{pkey}/data/f0", 200, "p reads p")
    expect(pw, "GET", f"{p2key}/data/f0", 403, "p never reads p2")
    expect(pw, "PUT", f"{p2key}/data/f1", 403, "p never writes p2")
    expect(pw, "GET", "", 403, "p never lists p2", query={"list-type": "2", "prefix": p2key + "/"})
    # A table named with wildcards: its policy names its UUID location, nothing wider.
    st, res = creds("a", "w*?%x")
    ww = creds_of(res["storage-credentials"][0]) if st == 200 else ADMIN
    expect(ww, "GET", f"{wkey}/data/f0", 200, "the wildcard-named table reads itself")
    expect(ww, "GET", f"{okey}/data/f0", 403, "the wildcard-named table reads nothing else")
    # table-read: the read token's default; asking for more is refused.
    st, res = creds("a", "orders", tok=ro)
    r = creds_of(res["storage-credentials"][0]) if st == 200 else ADMIN
    expect(r, "GET", f"{okey}/data/f0", 200, "table-read reads")
    expect(r, "PUT", f"{okey}/data/f2", 403, "table-read never writes")
    for cls in ("table-write", "archive"):
        st, res = creds("a", "orders", cls=cls, tok=ro)
        check(st == 403 and res.get("error", {}).get("reason") == "class-not-allowed",
              f"a read token gets no {cls}: {st} {res}")
    # result-read
    st, res = creds("a", "orders", cls="result-read", tok=ro)
    check(st == 200, f"result-read: {st} {res}")
    rr = creds_of(res["storage-credentials"][0]) if st == 200 else ADMIN
    expect(rr, "GET", f"{bucket_root}/results/r0", 200, "result-read reads results")
    expect(rr, "GET", f"{okey}/data/f0", 403, "result-read reads no table")
    expect(rr, "PUT", f"{bucket_root}/results/r1", 403, "result-read writes nothing")
    # archive
    st, res = creds("a", "orders", cls="archive")
    check(st == 200, f"archive: {st} {res}")
    ar = creds_of(res["storage-credentials"][0]) if st == 200 else ADMIN
    expect(ar, "PUT", f"{bucket_root}/archive/x1", 200, "archive writes the archive")
    expect(ar, "GET", f"{okey}/data/f0", 200, "archive reads its table")
    expect(ar, "PUT", f"{okey}/data/f3", 403, "archive writes no table")
    expect(ar, "DELETE", f"{bucket_root}/archive/x0", 403, "archive deletes nothing")
    st, res = creds("a", "orders", cls="anything")
    check(st == 400, f"an unknown class: {st}")

    # Expiry (table-read lasts 2 s in lake a) and the refresh route.
    st, res = creds("a", "p2", tok=ro)
    short = creds_of(res["storage-credentials"][0]) if st == 200 else ADMIN
    expect(short, "GET", f"{p2key}/data/f0", 200, "short credentials work at first")
    time.sleep(3.5)
    expect(short, "GET", f"{p2key}/data/f0", 403, "and not after they expired")
    st, res = creds("a", "p2", tok=ro)
    fresh = creds_of(res["storage-credentials"][0]) if st == 200 else ADMIN
    check(fresh.get("token") != short.get("token"), "the refresh issued new credentials")
    expect(fresh, "GET", f"{p2key}/data/f0", 200, "refreshed credentials work")

    # No STS: no credentials, the reason said.
    for lake in ("plain", "local"):
        made = create(lake, "t")
        check("storage-credentials" not in made, f"{lake}: no credentials on create")
        reason = made.get("config", {}).get("cairn.storage-credentials")
        check(bool(reason), f"{lake}: the load says why there are none: {made.get('config')}")
        st, res = creds(lake, "t")
        check(st == 406 and res.get("error", {}).get("reason") == "no-credentials",
              f"{lake}: the credentials route refuses with the reason: {st} {res}")
    # The policies, as `cairn lake policy` prints them (what the server asks STS for).
    for cls in ("table-read", "table-write", "result-read", "archive"):
        r = run("lake", "policy", "--config", config, "--lake", "a", "--table-location",
                orders["metadata"]["location"], "--class", cls)
        check(r.returncode == 0, f"lake policy {cls}: {r.stderr!r}")
        try:
            doc = json.loads(r.stdout)
        except ValueError:
            doc = {}
        effects = [st.get("Effect") for st in doc.get("Statement", [])]
        check("Deny" in effects and len(r.stdout.strip()) <= 2048,
              f"the {cls} policy denies something and fits 2048 characters: {r.stdout!r}")
        print(f"  {cls} policy: {r.stdout.decode().strip()}")
    # Without the delegation header: no credentials are made.
    st, res = server.call(rw["a"], "GET", "/v1/a/namespaces/ns/tables/orders")
    check(st == 200 and "storage-credentials" not in res, "no header, no credentials")
    for what, tries in ok_keys.items():
        print(f"  {what}: " + ", ".join(f"{m} {k.split('/')[-1] or '(list)'} {g}" for m, k, g in tries))


def s3_list_admin(prefix):
    """Keys under prefix/ (the admin's listing, one page)."""
    status, data = s3_full(ADMIN, "GET", "", query={"list-type": "2", "prefix": prefix + "/"})
    check(status == 200, f"the admin lists {prefix}/: {status}")
    return re.findall(r"<Key>([^<]*)</Key>", data.decode(errors="replace"))


if __name__ == "__main__":
    main()
