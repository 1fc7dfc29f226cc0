#!/usr/bin/env python3
"""perf/cpu_share.py COMMAND...: runs COMMAND once and prints its wall time, the machine's busy
CPU time over it (/proc/stat), the CPU time of the local Ceph server's processes (radosgw,
ceph-osd, ceph-mon, ceph-mgr; /proc/PID/stat) and the command's own (its children's rusage).

On a machine where the S3 server and the client share the cores, a transfer that keeps the
cores busy gets a rate set by the CPU that it and the server spend per byte; these figures
show whether the cores were busy and who spent them (docs/performance.md).
"""
import os
import resource
import subprocess
import sys
import time

SERVER = ("radosgw", "ceph-osd", "ceph-mon", "ceph-mgr")
TICK = os.sysconf("SC_CLK_TCK")


def machine():
    """(busy, total) jiffies of all CPUs since boot."""
    with open("/proc/stat") as f:
        v = list(map(int, f.readline().split()[1:]))
    idle = v[3] + v[4]  # idle and iowait
    return sum(v) - idle, sum(v)


def server_pids():
    """The local server's processes (SERVER), as /proc names them."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() in SERVER:
                    pids.append(pid)
        except OSError:
            pass  # gone meanwhile
    return pids


def place_server(cpus):
    """Pins every thread of the local server's processes to cpus (a taskset list); False when
    no such process runs."""
    pids = server_pids()
    for pid in pids:
        subprocess.run(["taskset", "-a", "-p", "-c", cpus, pid], check=True, capture_output=True)
    return bool(pids)


def server():
    """Jiffies of user and system time of the server's processes."""
    total = 0
    for pid in server_pids():
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except OSError:
            pass  # gone meanwhile
    return total


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: cpu_share.py COMMAND [ARG...]")
    busy0, all0 = machine()
    server0 = server()
    own0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - start
    busy1, all1 = machine()
    server1 = server()
    own1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = (own1.ru_utime - own0.ru_utime) + (own1.ru_stime - own0.ru_stime)
    print(f"wall {wall:.2f} s, machine busy {(busy1 - busy0) / TICK:.2f} of "
          f"{(all1 - all0) / TICK:.2f} CPU s, server {(server1 - server0) / TICK:.2f} CPU s, "
          f"command {own:.2f} CPU s")


if __name__ == "__main__":
    main()
