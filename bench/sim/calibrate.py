#!/usr/bin/env python3
"""strata-sim's model of this machine against strata-perf on it.

The model's rates come from measurements that are not strata's: memcpy and
c=a+b from strata-membw (per thread) at three working sets, one that each
core's L2 holds, one that the L3 holds and one from DRAM (the caches' sizes
from sysfs; strata-sim takes the rates of the smallest cache that holds a
rank's buffers), iperf3's rate each way with a stream each way at once (as
two ranks' allreduce sends) and the round trip of a TCP echo
between two network namespaces. strata-sim then predicts each
configuration's allreduce with the algorithm strata-perf ran (its -A
column), and this prints predicted against the median of the measured runs
and against the fastest, with their spread (slowest / fastest run of the
same configuration):
  shm: 2 and 4 ranks on one host (4 ranks share the 2 cores);
  tcp: 2 namespaces x 1 rank.
It records the load average and where the VM's two cores sit (near or far,
from strata-latency-floor) before and after. Needs root (namespaces). Keep
the machine otherwise idle while it runs.
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from netns import Hosts  # noqa: E402

SIZES = [64 << 10, 1 << 20, 16 << 20]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def perf_rows(text):
    """size -> (out-of-place time us, algorithm) from strata-perf -A."""
    rows = {}
    for line in text.splitlines():
        f = line.split()
        if line.startswith("#") or len(f) < 14:
            continue
        rows[int(f[0])] = (float(f[5]), f[13].split("/")[0])
    return rows


def perf_flags(args):
    return ["-b", str(SIZES[0]), "-e", str(SIZES[-1]), "-f", "16", "-n", str(args.iters), "-w", "3", "-A", "-c", "0"]


# Other jobs share this machine's 2 cores: every run of a configuration is
# kept, and the table gives their median and their spread.
def runs_by_size(runs):
    return {s: (sorted(r[s][0] for r in runs), runs[0][s][1]) for s in SIZES}


def shm_run(args, ranks):
    return perf_rows(run([args.perf, "--ranks", str(ranks)] + perf_flags(args)))


def tcp_run(args, hosts, i):
    procs = [hosts.popen(h, [args.perf] + perf_flags(args),
                         {"RANK": str(h), "WORLD_SIZE": "2", "MASTER_ADDR": hosts.addr[0],
                          "MASTER_PORT": str(29600 + i), "STRATA_TRANSPORT": "tcp", "STRATA_TIMEOUT": "120"})
             for h in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        if p.returncode:
            raise RuntimeError("strata-perf over tcp failed: " + out[-800:] + err[-800:])
    return perf_rows(outs[0][0])


# The configurations take turns, one run each per repeat, so that a busy
# minute falls on all of them alike rather than on one configuration's runs.
def measure(args, hosts):
    runs = {"tcp": [], 2: [], 4: []}
    for i in range(args.repeat):
        print("repeat %d: %s" % (i + 1, machine_state(args)), flush=True)
        runs["tcp"].append(tcp_run(args, hosts, i))
        for ranks in (2, 4):
            runs[ranks].append(shm_run(args, ranks))
    return {k: runs_by_size(v) for k, v in runs.items()}


ECHO_SERVER = """
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((%r, 29599)); s.listen(1); c, _ = s.accept()
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
while True:
    b = c.recv(64)
    if not b: break
    c.sendall(b)
"""

ECHO_CLIENT = """
import socket, time
for _ in range(100):
    try:
        s = socket.create_connection((%r, 29599)); break
    except OSError: time.sleep(0.1)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
rtts = []
for _ in range(2000):
    t = time.perf_counter(); s.sendall(b"x" * 8); s.recv(64); rtts.append(time.perf_counter() - t)
print(sorted(rtts)[len(rtts) // 2] * 1e6)
"""


def net_rates(hosts):
    # One way: half the median round trip of 8 bytes over TCP (a Python echo,
    # so it holds some interpreter time too).
    server = hosts.popen(0, ["python3", "-c", ECHO_SERVER % hosts.addr[0]], {})
    try:
        rtt = float(run(["ip", "netns", "exec", hosts.ns[1], "python3", "-c", ECHO_CLIENT % hosts.addr[0]]))
    finally:
        server.kill()
        server.communicate()
    server = hosts.popen(0, ["iperf3", "-s", "-1", "-B", hosts.addr[0]], {})
    try:
        time.sleep(0.5)
        # Both ways at once, as two ranks' allreduce sends: each way's rate
        # while the other runs on the same two cores.
        out = run(["ip", "netns", "exec", hosts.ns[1], "iperf3", "-c", hosts.addr[0], "-t", "3", "-f", "g", "--bidir"])
    finally:
        server.kill()
        server.communicate()
    ways = [float(g) for g in re.findall(r"([\d.]+) Gbits/sec.*receiver", out)]
    return statistics.mean(ways) / 8, rtt / 2


def cache_bytes(level):
    """Size of cpu0's cache at `level` (2, 3), from sysfs."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    for index in sorted(os.listdir(base)):
        if not index.startswith("index"):
            continue
        read = lambda f: open(os.path.join(base, index, f)).read().strip()  # noqa: E731
        if int(read("level")) == level and read("type") in ("Unified", "Data"):
            size = read("size")
            return int(size[:-1]) << {"K": 10, "M": 20}[size[-1]] if size[-1] in "KM" else int(size)
    raise RuntimeError("no level %d cache in %s" % (level, base))


def membw(args, per_thread_bytes=None):
    """(copy, fold) GB/s of one thread: strata-membw's 2-thread rates halved."""
    cmd = [os.path.join(args.build, "bench/kernels/strata-membw")]
    if per_thread_bytes:
        cmd += ["--bytes", str(per_thread_bytes)]
    out = run(cmd)
    return (float(re.search(r"memcpy.*?([\d.]+) GB/s", out).group(1)) / 2,
            float(re.search(r"c=a\+b.*?([\d.]+) GB/s", out).group(1)) / 2)


def cache_tiers(args):
    """[(cache bytes on the machine, copy, fold)] for the L2s and the L3.

    Each strata-membw thread has 3 buffers (a, b, c): an eighth of a cache
    per buffer keeps them resident with room to spare (an L2 per core; the
    L3 shared by the 2 threads)."""
    cores = os.cpu_count()
    l2, l3 = cache_bytes(2), cache_bytes(3)
    return [(l2 * cores,) + membw(args, l2 // 8), (l3,) + membw(args, l3 // cores // 8)]


def machine_state(args):
    """Load average and where the two cores sit (strata-latency-floor)."""
    floor = float(re.search(r"latency_floor_us ([\d.]+)",
                            run([os.path.join(args.build, "bench/kernels/strata-latency-floor")])).group(1))
    # bench/README.md: about 0.07 us near, 0.35-0.40 us far; beyond that the
    # probe's two spinning processes were descheduled by other work.
    where = "near" if floor < 0.2 else "far" if floor < 0.5 else "unknown (cores busy)"
    return "load average %.2f %.2f %.2f, latency floor %.3f us: cores %s" % (os.getloadavg() + (floor, where))


def predict(args, kind, ranks, algo, size, flags):
    with tempfile.NamedTemporaryFile(suffix=".csv") as f:
        run([args.sim, "--calibrate", kind, "--ranks", str(ranks), "--algos", algo, "--sizes", str(size),
             "--csv", f.name] + flags)
        return float(next(csv.DictReader(open(f.name)))["time_us"])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build", help="where strata-perf and strata-membw are")
    p.add_argument("--sim", default="build-sim/bench/sim/strata-sim")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--repeat", type=int, default=5, help="strata-perf runs per configuration (the median counts)")
    args = p.parse_args()
    args.perf = os.path.join(args.build, "bench/strata-perf")

    copy, fold = membw(args)
    tiers = cache_tiers(args)
    hosts = Hosts(2, tag="strsim")
    try:
        net_gbps, net_lat = net_rates(hosts)
        measured = measure(args, hosts)
    finally:
        hosts.close()
    print("after: " + machine_state(args))
    print("model: shm copy %.2f GB/s per thread, fold %.2f GB/s per thread from DRAM (strata-membw); "
          "tcp %.2f GB/s each way with both ways at once (iperf3 --bidir), %.1f us one way (TCP echo)"
          % (copy, fold, net_gbps, net_lat))
    for size, c, f in tiers:
        print("model: while a %d MiB cache holds the buffers, copy %.2f GB/s, fold %.2f GB/s per thread"
              % (size >> 20, c, f))
    cache_flags = sum((["--cache", "%d,%.3f,%.3f" % t] for t in tiers), [])
    shm_flags = ["--shm", "1,%.3f" % copy, "--reduce", "%.3f" % fold]
    tcp_flags = ["--nic", "%.2f,%.3f" % (net_lat, net_gbps), "--msg-overhead", "0", "--reduce", "%.3f" % fold]
    # The last column is the model without its cache levels (DRAM rates for
    # every size), to show what they change.
    # Predicted over the median, and over the fastest run (the one other
    # jobs disturbed least), with and without the cache levels.
    print("| transport | ranks | size | algorithm | measured median (us) | fastest (us) | runs' spread "
          "| predicted (us) | / median | / fastest | DRAM only: / median | / fastest |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    cases = [("shm", 2, measured[2], shm_flags), ("shm", 4, measured[4], shm_flags),
             ("tcp", 2, measured["tcp"], tcp_flags)]
    for kind, ranks, by_size, flags in cases:
        for size in SIZES:
            runs, algo = by_size[size]
            us = statistics.median(runs)
            pred = predict(args, kind, ranks, algo, size, flags + cache_flags)
            dram = predict(args, kind, ranks, algo, size, flags)
            print("| %s | %d | %d KiB | %s | %.1f | %.1f | %.2f | %.1f | %.2f | %.2f | %.2f | %.2f |"
                  % (kind, ranks, size >> 10, algo, us, runs[0], runs[-1] / runs[0], pred, pred / us,
                     pred / runs[0], dram / us, dram / runs[0]))


if __name__ == "__main__":
    main()
