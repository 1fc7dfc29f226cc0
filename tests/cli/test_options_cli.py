#!/usr/bin/env python3
"""Every option of every command is checked before anything runs (issue "The promise kept,
round three", defects 8-11; docs/decisions/0056-one-option-layer-checks-every.md). The walks take the commands and their options from the
binary's own --help, so a command or an option added later is covered without a change here:

  - every numeric option (UINT, INT, FLOAT) declares its range, and a value outside it, a
    negative one for an unsigned option, an overflowing one, NaN, an infinity or a text that
    is not a plain decimal number is a usage error (exit 2, one JSON object) that created
    nothing;
  - every text option refuses "" the same way;
  - a store given as a relative path is recorded absolute, file:/ forms are parsed, any other
    scheme is refused, and a store that overlaps the database directory is refused;
  - a low descriptor limit fails with the documented error and one JSON object;
  - --json gaps: an unknown command, checkpoint-objects' success, verify --manifest alone,
    ingest's failure object, and store rm of a key that never existed.

Usage: test_options_cli.py /path/to/cairn

CAIRN_TEST_OPTION_VALUES=edges (the sanitizer runs, scripts/test.sh): each numeric option is
given the numbers just outside its range and two malformed values ("nan", "1x") instead of
every malformed value; the release run gives every one. The walk itself (every option of every
command) and the other checks are the same in both.
"""
import json
import os
import re
import resource
import subprocess
import tempfile
import uuid

from cli_support import cairn, check, finish, one_json, records, run

USAGE = 2
FAILED = 1


def help_of(path):
    r = run(*path, "--help")
    check(r.returncode == 0, f"{path} --help: exit {r.returncode}")
    return r.stdout.decode()


def section(text, title):
    """The lines of one section of a CLI11 help text ("Options:", "Subcommands:")."""
    out, inside = [], False
    for line in text.splitlines():
        if line.strip() == title:
            inside = True
        elif inside and line and not line.startswith(" "):
            inside = False
        elif inside and line.strip():
            out.append(line)
    return out


def commands(path=()):
    """Every command path (("store", "put"), ("verify",), ...) with its help text."""
    text = help_of(list(path))
    subs = [line.split()[0] for line in section(text, "Subcommands:")]
    if path and not subs:
        return [(path, text)]
    found = []
    for sub in subs:
        found += commands(path + (sub,))
    return found


OPTION = re.compile(r"^\s+(?:-\w,)?(--[\w-]+)(?:\s+([A-Z]+)(\S*)(.*))?$")
RANGE = re.compile(r" in \[(-?[\d.e+]+) - (-?[\d.e+]+)\]")


def options(text):
    """(name, type, rest of the line) of each named option that takes a value."""
    out = []
    for line in section(text, "Options:"):
        m = OPTION.match(line)
        if m and m.group(2):
            out.append((m.group(1), m.group(2), m.group(3) + m.group(4)))
    return out


def positionals(text):
    usage = next(line for line in text.splitlines() if line.startswith("Usage:"))
    return [w for w in usage.split()[2:] if w.isupper() and w.isalpha()]


def skeleton(path, text, tmp):
    """A command line of `path` whose every required part is present and points into `tmp`
    (so that only the option under test can be wrong)."""
    args = list(path) + [os.path.join(tmp, f"p-{p}") for p in positionals(text)]
    for name, _, rest in options(text):
        if "REQUIRED" not in rest:
            continue
        if name == "--namespace":
            args += [name, str(uuid.uuid4())]
        elif name == "--to" and path == ("repair-head",):
            args += [name, "00" * 32]
        else:
            args += [name, os.path.join(tmp, f"o{name}")]
    return args


def bad_values(kind, rest):
    """Values a numeric option must refuse: malformed ones of its kind, and the numbers just
    outside the range its help declares."""
    common = ["", "nan", "NaN", "inf", "-inf", "abc", "1x", " 5", "0x10"]
    if os.environ.get("CAIRN_TEST_OPTION_VALUES") == "edges":
        common = ["nan", "1x"]
    values = {
        "UINT": common + ["-1", "-18446744073709551615", "18446744073709551616", "1e3", "1.5"],
        "INT": common + ["9223372036854775808", "-9223372036854775809", "1e3", "1.5"],
        "FLOAT": common + ["1e999", "-1e999", "infinity", "0x1p3"],
    }[kind]
    if os.environ.get("CAIRN_TEST_OPTION_VALUES") == "edges":
        values = list(common)
    m = RANGE.search(rest)
    if m:
        low, high = float(m.group(1)), float(m.group(2))
        integer = kind != "FLOAT"
        step = 1 if integer else max(abs(high) * 1e-6, 1e-9)
        for v in (low - step, high + step):
            if integer and abs(v) < 2**63:
                values.append(str(int(v)))
            elif not integer:
                values.append(repr(v))
        if not integer:
            values.append("1e308")
    return values


def with_value(args, option, value):
    """`args` with --json and then `option` given `value` (glued with '=' so that a value that
    starts with '-' is not read as an option; an empty one apart, as '=' would take the next
    word)."""
    return args + ["--json"] + ([option, ""] if value == "" else [f"{option}={value}"])


def refused_before_anything(args, option, tmp, what):
    before = sorted(os.listdir(tmp))
    r = run(*args, stdin=b"a\nb\n", timeout=60)
    out = one_json(r)
    reason = (out or {}).get("reason", "")
    ok = (r.returncode == USAGE and out is not None and out.get("ok") is False and
          out.get("error") == "usage" and option in reason and "required" not in reason)
    check(ok, f"{what}: exit {r.returncode}, {r.stdout[:300]!r} {r.stderr[:300]!r}")
    check(sorted(os.listdir(tmp)) == before, f"{what}: created {sorted(os.listdir(tmp))}")
    return ok


def defect_10_numeric_options(tmp):
    walked = 0
    for path, text in commands():
        for name, kind, rest in options(text):
            if kind not in ("UINT", "INT", "FLOAT"):
                continue
            walked += 1
            what = f"{' '.join(path)} {name}"
            check(RANGE.search(rest) is not None, f"{what}: its help declares no range: {rest!r}")
            for value in bad_values(kind, rest):
                work = tempfile.mkdtemp(dir=tmp)
                args = with_value(skeleton(path, text, work), name, value)
                refused_before_anything(args, name, work, f"{what}={value!r}")
    check(walked >= 20, f"the walk found only {walked} numeric options")


def defect_10_text_options(tmp):
    walked = 0
    for path, text in commands():
        for name, kind, rest in options(text):
            if kind != "TEXT":
                continue
            walked += 1
            work = tempfile.mkdtemp(dir=tmp)
            args = with_value(skeleton(path, text, work), name, "")
            refused_before_anything(args, name, work, f"{' '.join(path)} {name}=''")
    check(walked >= 30, f"the walk found only {walked} text options")


def defect_10_named(tmp):
    """The instances of the issue, by name (the walks cover them too)."""
    db = os.path.join(tmp, "d10")
    r = run("init", db, "--db-id", "d10")
    check(r.returncode == 0, f"init: {r.stderr!r}")
    r = run("append", db, stdin=b"one\n")
    check(r.returncode == 0, f"append: {r.stderr!r}")
    r = run("journal", db, "--at=-18446744073709551615", "--json")
    check(r.returncode == USAGE and (one_json(r) or {}).get("error") == "usage",
          f"journal --at -(2^64-1): {r.returncode} {r.stdout!r}")
    for args in (["ingest", os.path.join(tmp, "i10"), "--store", os.path.join(tmp, "s10"),
                  "--checkpoint-seconds", "1e308"],
                 ["checkpoint", db, "--budget-requests=-5"], ["status", db, "--timeout", "nan"]):
        r = run(*args, "--json", stdin=b"x\n")
        check(r.returncode == USAGE, f"{args}: exit {r.returncode} {r.stderr!r}")
    check(not os.path.exists(os.path.join(tmp, "i10")) and
          not os.path.exists(os.path.join(tmp, "s10")),
          "ingest --checkpoint-seconds 1e308 created the database or the store")


def defect_8_store_paths(tmp):
    here, elsewhere = os.path.join(tmp, "here"), os.path.join(tmp, "elsewhere")
    os.makedirs(here)
    os.makedirs(elsewhere)

    def run_in(cwd, *args, stdin=b""):
        return subprocess.run([os.path.abspath(cairn), *args], cwd=cwd, input=stdin,
                              capture_output=True, timeout=120)

    # A relative --store is recorded absolute: a checkpoint from another directory publishes
    # to it.
    r = run_in(here, "init", "d", "--db-id", "d", "--store", "s", "--json")
    check(r.returncode == 0, f"init --store s: {r.stderr!r}")
    r = run_in(here, "append", "d", stdin=records("rel", 10))
    check(r.returncode == 0, f"append: {r.stderr!r}")
    r = run_in(elsewhere, "checkpoint", os.path.join(here, "d"), "--json")
    check(r.returncode == 0 and (one_json(r) or {}).get("ok") is True,
          f"checkpoint from elsewhere: {r.returncode} {r.stdout!r} {r.stderr!r}")
    check(os.listdir(elsewhere) == [], f"a store was made where the command ran: "
          f"{os.listdir(elsewhere)}")
    r = run_in(elsewhere, "status", os.path.join(here, "d"), "--offline", "--json")
    check(os.path.join(here, "s") in r.stdout.decode(),
          f"status does not show the absolute store: {r.stdout!r}")
    # lake create records a relative directory store absolute too: cairn serve may run anywhere.
    r = run_in(here, "lake", "create", "--config", "lakes.json", "--store", "lakestore",
               "--lake", "l1", "--json")
    check(r.returncode == 0, f"lake create --store lakestore: {r.returncode} {r.stderr!r}")
    with open(os.path.join(here, "lakes.json"), encoding="utf-8") as f:
        lakes = json.load(f)
    stores = [lake.get("store") for lake in lakes.get("lakes", {}).values()]
    check(stores == [os.path.join(here, "lakestore")],
          f"lake create recorded {stores}, not the absolute path")
    # file: forms.
    for i, url in enumerate([f"file:{here}/f1", f"file://{here}/f2/", f"file:{here}/x/../f3"]):
        r = run_in(elsewhere, "init", os.path.join(here, f"fd{i}"), "--db-id", "x", "--store", url)
        check(r.returncode == 0 and os.path.isdir(os.path.join(here, f"f{i + 1}")),
              f"init --store {url}: {r.returncode} {r.stderr!r}")
        check(os.listdir(elsewhere) == [], f"--store {url} made {os.listdir(elsewhere)}")
    # Refused forms: nothing created.
    for url in ["file:relative", "file://host/x", "file://", "ftp://h/x", "c:x", "S3://b",
                "s3:bucket"]:
        r = run_in(elsewhere, "init", "bad", "--db-id", "x", "--store", url, "--json")
        check(r.returncode == USAGE and (one_json(r) or {}).get("error") == "usage",
              f"--store {url}: {r.returncode} {r.stdout!r}")
        check(os.listdir(elsewhere) == [], f"--store {url} made {os.listdir(elsewhere)}")
    # A store inside the database directory, or the database inside the store: refused.
    for db, store in [("o1", "o1/store"), ("o2/db", "o2"), ("o3", "o3"), ("o4/./a", "o4/a/../")]:
        r = run_in(elsewhere, "init", db, "--db-id", "x", "--store", store, "--json")
        check(r.returncode == USAGE and "overlap" in (one_json(r) or {}).get("reason", ""),
              f"init {db} --store {store}: {r.returncode} {r.stdout!r}")
        check(os.listdir(elsewhere) == [], f"init {db} --store {store} made {os.listdir(elsewhere)}")
    ns = json.loads(run("status", os.path.join(here, "d"), "--offline", "--json").stdout or
                    b"{}").get("namespace", str(uuid.uuid4()))
    store = os.path.join(here, "s")
    r = run("recover", os.path.join(store, "copy"), "--store", store, "--namespace", ns, "--json")
    check(r.returncode == USAGE and "overlap" in (one_json(r) or {}).get("reason", ""),
          f"recover into the store: {r.returncode} {r.stdout!r}")
    check(not os.path.exists(os.path.join(store, "copy")), "recover into the store made it")


def defect_9_descriptors(tmp):
    db = os.path.join(tmp, "d9")
    store = os.path.join(tmp, "s9")
    r = run("ingest", db, "--store", store, stdin=records("fd", 20))
    check(r.returncode == 0, f"ingest: {r.stderr!r}")
    commands = [["journal", db], ["status", db], ["checkpoint", db], ["verify", db],
                ["store", "ls", store], ["append", db], ["log", "--store", store, "--namespace",
                                                         str(uuid.uuid4())]]
    # UBSan's vptr check opens a pipe (two descriptors) on each miss in its type cache, and
    # calls a valid object invalid when it cannot (docs/decisions/0063-command-starts-only-32-descriptors.md). With the three standard streams open,
    # `ulimit -n` 4 leaves one: a UBSan build misreports in its static initialisers, before
    # cairn's code runs. Such a build starts at 5; the others at 4.
    ubsan = b"libubsan" in subprocess.run(["ldd", cairn], capture_output=True).stdout
    for limit in (*range(5 if ubsan else 4, 10), 12, 16):
        for args in commands:
            def low(limit=limit):
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
            p = subprocess.run([cairn, *args, "--json"], input=b"x\n", capture_output=True,
                               timeout=60, preexec_fn=low)
            out = one_json(p)
            what = f"ulimit -n {limit}: {args[0]}: exit {p.returncode}, {p.stdout[:300]!r}, " \
                   f"{p.stderr[:300]!r}"
            check(b"runtime error:" not in p.stderr and b"Sanitizer" not in p.stderr, what)
            if p.returncode == 0:
                check(out is not None and out.get("ok") is True, what)
                continue
            check(p.returncode == FAILED and out is not None and out.get("ok") is False and
                  out.get("error") == "io" and "ulimit -n" in out.get("reason", ""), what)
            check(p.stderr.decode().startswith("cairn: "), what)


def defect_11_json(tmp):
    for args in (["frobnicate", "--json"], ["--json"], ["store", "nope", "--json"]):
        r = run(*args)
        out = one_json(r)
        check(r.returncode == USAGE and out is not None and out.get("ok") is False and
              out.get("error") == "usage", f"{args}: {r.returncode} {r.stdout!r}")
    db, store = os.path.join(tmp, "d11"), os.path.join(tmp, "s11")
    r = run("ingest", db, "--store", store, stdin=records("j", 50))
    check(r.returncode == 0, f"ingest: {r.stderr!r}")
    r = run("checkpoint-objects", db, "--json")
    out = one_json(r)
    check(r.returncode == 0 and out is not None and out.get("ok") is True,
          f"checkpoint-objects --json: {r.stdout!r} {r.stderr!r}")
    sha = (out or {}).get("manifest_sha256", "00" * 32)
    for args in (["--manifest", sha], ["--manifest-length", "100"]):
        r = run("verify", db, *args, "--json")
        check(r.returncode == USAGE and (one_json(r) or {}).get("error") == "usage",
              f"verify {args} alone: {r.returncode} {r.stdout!r}")
    # A failure after records became durable says how far they are.
    big = b"first\nsecond\n" + b"x" * (16 * 1024 * 1024 + 1) + b"\n"
    r = run("ingest", db, "--json", stdin=big)
    out = one_json(r) or {}
    check(r.returncode != 0 and out.get("ok") is False and out.get("durable_sequence") == 52
          and out.get("records") == 2,
          f"ingest failure object: {r.returncode} {out}")
    # store rm of a key that never existed claims no deletion.
    r = run("store", "rm", store, "never/was/here", "--json")
    out = one_json(r) or {}
    check(r.returncode == 0 and out.get("ok") is True and "deleted" not in out and
          out.get("absent") is True, f"store rm of an absent key: {r.stdout!r}")


def decided_verify_deep_head_copy(tmp):
    """verify --deep reads the current head's immutable copy too (docs/operations.md)."""
    db, store = os.path.join(tmp, "dv"), os.path.join(tmp, "sv")
    r = run("ingest", db, "--store", store, stdin=records("v", 30))
    check(r.returncode == 0, f"ingest: {r.stderr!r}")
    r = run("verify", db, "--deep", "--json")
    check(r.returncode == 0 and (one_json(r) or {}).get("ok") is True, f"verify: {r.stdout!r}")
    copies = [os.path.join(d, f) for d, _, fs in os.walk(store) for f in fs
              if re.search(r"-head-[0-9a-f]{64}\.bin$", f)]
    check(len(copies) == 1, f"one head copy: {copies}")
    for path in copies:
        with open(path, "r+b") as f:
            f.seek(100)
            byte = f.read(1)
            f.seek(100)
            f.write(bytes([byte[0] ^ 0xFF]))
    r = run("verify", db, "--json")
    check(r.returncode == 0, f"verify (not deep) reads no copy: {r.returncode} {r.stdout!r}")
    r = run("verify", db, "--deep", "--json")
    out = one_json(r) or {}
    check(r.returncode == FAILED and out.get("ok") is False and "-head-" in out.get("key", ""),
          f"verify --deep with a damaged head copy: {r.returncode} {r.stdout!r}")
    for path in copies:
        os.remove(path)
    r = run("verify", db, "--deep", "--json")
    out = one_json(r) or {}
    check(r.returncode == FAILED and out.get("error") == "missing",
          f"verify --deep without the head copy: {r.returncode} {r.stdout!r}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for test in (defect_8_store_paths, defect_9_descriptors, defect_10_named,
                     defect_10_numeric_options, defect_10_text_options, defect_11_json,
                     decided_verify_deep_head_copy):
            os.makedirs(os.path.join(tmp, test.__name__))
            test(os.path.join(tmp, test.__name__))
    finish()


if __name__ == "__main__":
    main()
