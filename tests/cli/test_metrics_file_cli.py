"""--metrics-file: `cairn ingest`, `checkpoint` and `compact` write the database's statistics
in the Prometheus text format, and `backup`, `recover`, `verify` and `vacuum` their store
statistics and their state; read back here with prometheus_client's own parser (Debian's
python3-prometheus-client), and the figures agree with what the command reported."""
import json
import os
import tempfile

from prometheus_client.parser import text_string_to_metric_families

from cli_support import check, finish, records, run, s3_url


def parse(path):
    """{(name, labels...): value} of every sample, by prometheus_client's parser."""
    with open(path) as f:
        text = f.read()
    samples = {}
    types = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples, types


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        db, store, prom = f"{tmp}/db", f"{tmp}/store", f"{tmp}/ingest.prom"
        n = 3000
        r = run("ingest", db, "--store", store, "--checkpoint-mib", "1", "--metrics-file", prom,
                "--json", stdin=records("m", n))
        check(r.returncode == 0, f"ingest: {r.stderr!r}")
        report = json.loads(r.stdout)
        samples, types = parse(prom)
        check(value(samples, "cairn_journal_appends_total") == n,
              f"appends = the records ingested: {value(samples, 'cairn_journal_appends_total')}")
        syncs = value(samples, "cairn_journal_syncs_total")
        check(syncs is not None and 1 <= syncs <= n, f"syncs: {syncs}")
        check(types.get("cairn_journal_batch_records") == "histogram", f"histogram: {types}")
        check(value(samples, "cairn_journal_batch_records_count") == syncs, "histogram count = syncs")
        check(value(samples, "cairn_journal_batch_records_bucket", le="+Inf") == syncs,
              "+Inf bucket = syncs")
        check(value(samples, "cairn_journal_batch_records_sum") == n, "histogram sum = appends")
        published = value(samples, "cairn_checkpoints_total", outcome="published")
        check(published == report["checkpoints"] and published >= 1,
              f"checkpoints published {published}, ingest said {report['checkpoints']}")
        check(value(samples, "cairn_checkpoints_total", outcome="uncertain") == 0, "none uncertain")
        check(value(samples, "cairn_store_operations_total", op="put_if_absent", outcome="ok") >= 2,
              "segments and manifests created")
        check(value(samples, "cairn_store_attempts_total") is None,
              "a directory store has no transport counters")
        check(sorted(os.listdir(tmp)) == ["db", "ingest.prom", "store"],
              f"nothing left beside the file: {sorted(os.listdir(tmp))}")

        # checkpoint and compact write theirs too (a new process: its own counters).
        for command in ("checkpoint", "compact"):
            path = f"{tmp}/{command}.prom"
            r = run(command, db, "--metrics-file", path)
            check(r.returncode == 0, f"{command}: {r.stderr!r}")
            samples, _ = parse(path)
            key = "cairn_checkpoints_total" if command == "checkpoint" else "cairn_compactions_total"
            check(value(samples, key, outcome="published") == 1, f"{command}: one published")
            check(value(samples, "cairn_journal_appends_total") == 0, f"{command}: no appends")

        # The commands without a database: their store's figures and their exit code.
        ns = report["namespace"]
        path = f"{tmp}/backup.prom"
        r = run("backup", "--store", store, "--namespace", ns, "--to", f"{tmp}/copy",
                "--metrics-file", path, "--json")
        check(r.returncode == 0, f"backup: {r.stderr!r}")
        copied = json.loads(r.stdout).get("objects_copied", -1) if r.returncode == 0 else -1
        samples, types = parse(path)
        check(value(samples, "cairn_command_exit_code", command="backup") == 0 and
              value(samples, "cairn_command_running", command="backup") == 0,
              "backup: ended, exit 0")
        check(types.get("cairn_command_exit_code") == "gauge", f"a gauge: {types}")
        created = value(samples, "cairn_store_operations_total", op="put_if_absent", outcome="ok")
        check(copied >= 2 and created is not None and created >= copied,
              f"backup: {copied} copied, {created} created")
        check((value(samples, "cairn_store_bytes_total", direction="written") or 0) > 0 and
              (value(samples, "cairn_store_bytes_total", direction="read") or 0) > 0,
              "backup: bytes read and written")
        for name, args in (("verify", [db, "--deep"]),
                           ("vacuum", ["--store", store, "--namespace", ns]),
                           ("recover", [f"{tmp}/recovered", "--store", store, "--namespace", ns])):
            path = f"{tmp}/{name}.prom"
            r = run(name, *args, "--metrics-file", path)
            check(r.returncode == 0, f"{name}: {r.stderr!r}")
            samples, _ = parse(path)
            check(value(samples, "cairn_command_exit_code", command=name) == 0, f"{name}: exit 0")
            ops = sum(v for (n, labels), v in samples.items()
                      if n == "cairn_store_operations_total" and ("outcome", "ok") in labels)
            check(ops >= 1, f"{name}: its store operations counted: {ops}")
        # A failure: the exit code in the file is the command's.
        path = f"{tmp}/failed.prom"
        r = run("backup", "--store", store, "--namespace", "00000000-0000-4000-8000-000000000001",
                "--to", f"{tmp}/copy2", "--metrics-file", path)
        samples, _ = parse(path)
        check(r.returncode != 0 and
              value(samples, "cairn_command_exit_code", command="backup") == r.returncode,
              f"a failed backup's exit code: {r.returncode}")
        check(value(samples, "cairn_store_operations_total", op="get", outcome="missing") >= 1,
              "the missing head is counted as missing")

        # A metrics file that cannot be written is said, and the command's outcome stands.
        r = run("checkpoint", db, "--metrics-file", f"{tmp}/no/such/dir.prom")
        check(r.returncode == 0 and b"--metrics-file" in r.stderr,
              f"unwritable metrics file: warned, exit 0: {r.returncode} {r.stderr!r}")

        # Against RGW: the transport's counters are there.
        url = s3_url()
        if url is not None:
            s3db, path = f"{tmp}/s3db", f"{tmp}/s3.prom"
            r = run("ingest", s3db, "--store", url, "--metrics-file", path, "--json",
                    stdin=records("s", 500))
            check(r.returncode == 0, f"ingest to RGW: {r.stderr!r}")
            samples, _ = parse(path)
            attempts = value(samples, "cairn_store_attempts_total")
            check(attempts is not None and attempts >= 3, f"HTTP attempts counted: {attempts}")
            check(value(samples, "cairn_store_timeouts_total") == 0, "no timeouts")
            ops = sum(v for (name, _), v in samples.items() if name == "cairn_store_operations_total")
            check(attempts >= ops, f"at least one attempt per operation: {attempts} >= {ops}")
    finish()


main()
