#!/usr/bin/env python3
"""GET /metrics of `cairn serve` (docs/catalog.md, "Metrics"), scraped and parsed by
prometheus_client's own text parser (Debian's python3-prometheus-client), on the directory
store and on RGW: the request counts and latency histograms agree with the requests this test
made (and with the server's request log), commits are counted by outcome (success or rebased,
a proven conflict, a refusal), and each lake's readiness, cache and store operations are
there. Label values stay bounded: a method the catalog does not serve is "other".

Usage: test_catalog_metrics.py /path/to/cairn
"""
import http.client
import threading
import time

from prometheus_client.parser import text_string_to_metric_families

from cli_support import catalog_call as call, catalog_stories, check

TABLE_ROUTE = "/v1/{prefix}/namespaces/{namespace}/tables/{table}"


def scrape(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/metrics")
    r = conn.getresponse()
    body = r.read().decode()
    ctype = r.getheader("Content-Type")
    conn.close()
    samples, types = {}, {}
    for family in text_string_to_metric_families(body):
        types[family.name] = family.type
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return r.status, ctype, samples, types


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0)


def story(label, store, config, server, token):
    port = server.port
    status, ctype, samples, types = scrape(port)
    check(status == 200 and ctype.startswith("text/plain; version=0.0.4"),
          f"{label}: /metrics answers the text format: {status} {ctype}")
    check(value(samples, "cairn_catalog_lake_ready", lake="prod") == 1, f"{label}: lake ready")
    check(value(samples, "cairn_catalog_requests_in_flight") == 0, f"{label}: nothing in flight")
    check(types.get("cairn_catalog_request_seconds") == "histogram" and
          types.get("cairn_catalog_commits") == "counter",
          f"{label}: the families' types: {types}")

    base = "/v1/prod/namespaces/m"
    table = base + "/tables/t"
    check(call(port, token, "POST", "/v1/prod/namespaces", {"namespace": ["m"]})[0] == 200,
          f"{label}: namespace")
    schema = {"type": "struct", "fields": [{"id": 1, "name": "x", "type": "long",
                                            "required": False}]}
    check(call(port, token, "POST", base + "/tables", {"name": "t", "schema": schema})[0] == 200,
          f"{label}: table")

    def commit(prop, requirements=()):
        body = {"requirements": list(requirements),
                "updates": [{"action": "set-properties", "updates": {prop: "v"}}]}
        return call(port, token, "POST", table, body)[0]

    statuses = [commit(f"seq{i}") for i in range(5)]
    lock = threading.Lock()

    def concurrent(i):
        s = commit(f"par{i}")
        with lock:
            statuses.append(s)

    threads = [threading.Thread(target=concurrent, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    accepted = statuses.count(200)
    check(accepted == 13, f"{label}: 13 commits accepted: {statuses}")
    conflict = commit("never", [{"type": "assert-ref-snapshot-id", "ref": "main",
                                 "snapshot-id": 4242}])
    check(conflict == 409, f"{label}: a failed requirement is a conflict: {conflict}")
    bad = call(port, token, "POST", table, {"requirements": [],
                                            "updates": [{"action": "no-such-action"}]})[0]
    check(bad == 400, f"{label}: an unknown update is refused: {bad}")
    missing = call(port, token, "POST", base + "/tables/nope",
                   {"requirements": [], "updates": [{"action": "set-properties",
                                                     "updates": {"a": "b"}}]})[0]
    check(missing == 404, f"{label}: a commit to no table is refused: {missing}")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("FROB", "/v1/config", headers={"Authorization": f"Bearer {token}"})
    conn.getresponse().read()
    conn.close()

    status, _, samples, _ = scrape(port)
    commits = {o: value(samples, "cairn_catalog_commits_total", outcome=o)
               for o in ("success", "rebased", "conflict", "unknown", "refused", "failed")}
    check(commits["success"] + commits["rebased"] == accepted,
          f"{label}: success + rebased = the commits accepted ({accepted}): {commits}")
    # The 404 is a refused commit; the 400 is no commit at all (its request does not parse).
    check(commits["conflict"] == 1 and commits["refused"] == 1 and commits["unknown"] == 0 and
          commits["failed"] == 0, f"{label}: one conflict, one refusal: {commits}")
    posted = value(samples, "cairn_catalog_requests_total", method="POST", route=TABLE_ROUTE,
                   status="200")
    check(posted == accepted, f"{label}: POST {TABLE_ROUTE} 200 counted {posted}")
    check(value(samples, "cairn_catalog_requests_total", method="POST", route=TABLE_ROUTE,
                status="409") == 1, f"{label}: the 409 counted")
    check(value(samples, "cairn_catalog_requests_total", method="other", route="/v1/config",
                status="405") == 1, f"{label}: an unknown method is counted as other")
    count = value(samples, "cairn_catalog_request_seconds_count", route=TABLE_ROUTE)
    check(count == accepted + 3, f"{label}: the histogram counts every table POST: {count}")
    check(value(samples, "cairn_catalog_request_seconds_bucket", route=TABLE_ROUTE,
                le="+Inf") == count, f"{label}: +Inf bucket = count")
    buckets = sorted((float(dict(k[1])["le"]), v) for k, v in samples.items()
                     if k[0] == "cairn_catalog_request_seconds_bucket"
                     and dict(k[1]).get("route") == TABLE_ROUTE)
    check(all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])),
          f"{label}: cumulative buckets: {buckets}")
    check(value(samples, "cairn_catalog_request_seconds_sum", route=TABLE_ROUTE) > 0,
          f"{label}: latency summed")
    # The request log and the counter agree, route by route. The log is read from the server's
    # stderr by a thread of the test: its last lines may arrive after the scrape's answer.
    def logged_now():
        logged = {}
        for e in server.requests():
            if e.get("route") != "/metrics":
                key = (e.get("route"), e.get("status"))
                logged[key] = logged.get(key, 0) + 1
        return logged

    counted = {}
    for (name, labels), v in samples.items():
        if name == "cairn_catalog_requests_total":
            d = dict(labels)
            key = (d["route"], int(d["status"]))
            counted[key] = counted.get(key, 0) + v
    deadline = time.time() + 30
    logged = logged_now()
    while logged != counted and time.time() < deadline:
        time.sleep(0.1)
        logged = logged_now()
    check(logged == counted, f"{label}: the request log and the counters agree: "
                             f"{sorted(logged.items())} {sorted(counted.items())}")
    check(value(samples, "cairn_catalog_cache_tables", lake="prod") >= 1 and
          value(samples, "cairn_catalog_cache_bytes", lake="prod") > 0 and
          value(samples, "cairn_catalog_cache_bytes", lake="prod") <=
          value(samples, "cairn_catalog_cache_capacity_bytes", lake="prod"),
          f"{label}: the table cache holds the table, within its bound")
    lookups = value(samples, "cairn_catalog_cache_lookups_total", lake="prod", result="hit")
    check(lookups >= accepted, f"{label}: commits found the table in the cache: {lookups}")
    cas = value(samples, "cairn_store_operations_total", lake="prod", op="put_if_match",
                outcome="ok")
    check(cas >= accepted, f"{label}: a conditional PUT per accepted commit at least: {cas}")
    if label == "rgw":
        check(value(samples, "cairn_store_attempts_total", lake="prod") >= cas,
              f"{label}: HTTP attempts counted")
    check(value(samples, "cairn_catalog_requests_in_flight") == 0, f"{label}: none in flight")


catalog_stories("prod", story)
