"""A database directory beside other processes (docs/operations.md, "Recover", "Status" and
"Read-only directories"): recover holds the directory's lock from its check to its end, so an
init, append or ingest that runs meanwhile is refused and never replaced; a killed recovery is
said by `status` and removed by the next one; the reading commands work on a read-only mount.
Races are made deterministic with the test fault points (CAIRN_TEST_FAULT=POINT:1:STOP holds
the command there until it gets SIGCONT; docs/protocol.md)."""
import os
import signal
import subprocess
import tempfile
import time
import uuid

from cli_support import cairn, check, finish, js, records, run

RECORDS = 300


def published(tmp):
    """A database that published one checkpoint to a directory store: (db, store, ns)."""
    db, store, ns = os.path.join(tmp, "db"), os.path.join(tmp, "store"), str(uuid.uuid4())
    r = run("init", db, "--db-id", "races", "--store", store, "--namespace", ns)
    check(r.returncode == 0, f"init: {r.stderr!r}")
    r = run("append", db, stdin=records("r", RECORDS))
    check(r.returncode == 0, f"append: {r.stderr!r}")
    r = run("checkpoint", db, "--json")
    check(r.returncode == 0, f"checkpoint: {r.stderr!r}")
    return db, store, ns


def stopped(p, timeout=60):
    """Whether process `p` stops itself (state T) before it ends or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and p.poll() is None:
        with open(f"/proc/{p.pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return True
        time.sleep(0.02)
    return False


def recover_args(target, store, ns, *extra):
    return ["recover", target, "--store", store, "--namespace", ns, "--json", *extra]


def end_sequence(target):
    st = run("status", target, "--offline", "--json")
    return js(st).get("journal_end_sequence") if st.returncode == 0 else st.stderr


def racing_writers(tmp, store, ns):
    # recover stops right after it has locked and checked the directory; every writer that
    # runs then is refused "busy", and the recovery then ends with its own journal in place.
    target = os.path.join(tmp, "raced")
    env = dict(os.environ, CAIRN_TEST_FAULT="claimed:1:STOP")
    p = subprocess.Popen([cairn, *recover_args(target, store, ns)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        held = stopped(p)
        check(held, "recover stops where it holds the directory")
        if held:
            for args, stdin in ((("init", target, "--db-id", "intruder"), b""),
                                (("append", target), b"acknowledged?\n"),
                                (("ingest", target, "--db-id", "intruder"), b"acknowledged?\n")):
                r = run(*args, stdin=stdin)
                check(r.returncode != 0 and b"cairn: busy:" in r.stderr,
                      f"{args[0]} while recover holds the directory is refused busy: "
                      f"{r.returncode} {r.stdout!r} {r.stderr!r}")
    finally:
        p.send_signal(signal.SIGCONT)
    out, err = p.communicate(timeout=120)
    check(p.returncode == 0, f"the held recovery ends well: {err!r}")
    check(end_sequence(target) == RECORDS, "the directory holds the recovered journal")
    check(sorted(os.listdir(target)) == ["LOCK", "journal", "journal-only"],
          f"and nothing else: {sorted(os.listdir(target))}")


def killed_recoveries(tmp, store, ns):
    # A recovery killed at each step: status says what the directory is, and the next recovery
    # (a read copy, even after a writable one was killed) removes what it left and succeeds.
    for point, writable in (("claimed", False), ("written", False), ("marked", False),
                            ("marked", True)):
        label = f"killed at {point}" + (" (writable)" if writable else "")
        target = os.path.join(tmp, f"killed-{point}-{writable}")
        extra = ("--writable",) if writable else ()
        r = run(*recover_args(target, store, ns, *extra), env={"CAIRN_TEST_FAULT": point})
        check(r.returncode == -signal.SIGKILL, f"{label}: recover killed: {r.returncode}")
        st = run("status", target, "--offline", "--json")
        message = (st.stdout + st.stderr).decode(errors="replace")
        if point == "claimed":
            # Only the lock file: nothing to resume, nothing to remove.
            check(st.returncode != 0 and "no journal" in message, f"{label}: status: {message}")
        else:
            check(st.returncode != 0 and "interrupted recovery" in message and
                  "cairn recover again" in message, f"{label}: status says so: {message}")
            # A new journal never joins what the killed run left (its marker or state).
            for args in (("init", target, "--db-id", "intruder"),
                         ("ingest", target, "--db-id", "intruder")):
                r = run(*args, stdin=b"joined?\n")
                message = r.stderr.decode(errors="replace")
                check(r.returncode != 0 and "interrupted recovery" in message,
                      f"{label}: {args[0]} is refused: {r.returncode} {message}")
                check("journal" not in os.listdir(target),
                      f"{label}: {args[0]} made no journal: {sorted(os.listdir(target))}")
        r = run(*recover_args(target, store, ns))
        check(r.returncode == 0, f"{label}: the next recovery succeeds: {r.stderr!r}")
        check(end_sequence(target) == RECORDS, f"{label}: and its journal is whole")
        check(sorted(os.listdir(target)) == ["LOCK", "journal", "journal-only"],
              f"{label}: nothing of the killed run is left: {sorted(os.listdir(target))}")


def mount(*args):
    return subprocess.run(["mount", *args], capture_output=True)


def read_only_mount(tmp, db):
    # The reading commands on a read-only view of the directory: they need no write access
    # (a reader's shared lock is taken on the lock file opened read-only); a writer is refused.
    ro = os.path.join(tmp, "ro")
    os.mkdir(ro)
    r = mount("--bind", db, ro)
    check(r.returncode == 0, f"bind mount (the test runs as root): {r.stderr!r}")
    if r.returncode != 0:
        return
    try:
        r = mount("-o", "remount,ro,bind", ro)
        check(r.returncode == 0, f"remount read-only: {r.stderr!r}")
        probe = os.path.join(ro, "probe")
        try:
            open(probe, "w").close()
            check(False, "the view is read-only")
        except OSError:
            pass
        st = run("status", ro, "--offline", "--json")
        check(st.returncode == 0 and js(st).get("journal_end_sequence") == RECORDS,
              f"status --offline on a read-only mount: {st.stdout!r} {st.stderr!r}")
        st = run("status", ro, "--json")
        check(st.returncode == 0 and js(st).get("selected") == "expected",
              f"status on a read-only mount: {st.stdout!r} {st.stderr!r}")
        j = run("journal", ro, "--json")
        check(j.returncode == 0 and js(j).get("end_sequence") == RECORDS,
              f"journal on a read-only mount: {j.stdout!r} {j.stderr!r}")
        v = run("verify", ro, "--deep", "--json")
        check(v.returncode == 0 and js(v).get("ok") is True,
              f"verify --deep on a read-only mount: {v.stdout!r} {v.stderr!r}")
        a = run("append", ro, stdin=b"no\n")
        check(a.returncode != 0 and b"Read-only file system" in a.stderr,
              f"a writer is refused there: {a.stderr!r}")
    finally:
        mount_done = subprocess.run(["umount", ro], capture_output=True)
        check(mount_done.returncode == 0, f"umount: {mount_done.stderr!r}")
    check(end_sequence(db) == RECORDS, "the database is as it was")


with tempfile.TemporaryDirectory() as tmp:
    db, store, ns = published(tmp)
    racing_writers(tmp, store, ns)
    killed_recoveries(tmp, store, ns)
    read_only_mount(tmp, db)

finish()
