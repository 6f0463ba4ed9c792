#!/usr/bin/env python3
"""strata-sim's model of this machine against strata-perf on it.

The model's rates come from measurements that are not strata's: memcpy and
c=a+b from strata-membw (per thread), one TCP stream from iperf3 and the
round trip of a TCP echo between two network namespaces. strata-sim then
predicts each configuration's allreduce with the algorithm strata-perf ran
(its -A column), and this prints predicted against measured:
  shm: 2 and 4 ranks on one host (4 ranks share the 2 cores);
  tcp: 2 namespaces x 1 rank.
Needs root (namespaces). Keep the machine otherwise idle while it runs.
"""
import argparse
import csv
import os
import re
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


# Other jobs share this machine's 2 cores: the least of several runs is the
# one they disturbed least.
def least(xs):
    return min(xs)


def measure_shm(args, ranks):
    runs = [perf_rows(run([args.perf, "--ranks", str(ranks)] + perf_flags(args))) for _ in range(args.repeat)]
    return {s: (least([r[s][0] for r in runs]), runs[0][s][1]) for s in SIZES}


def measure_tcp(args, hosts):
    runs = []
    for i in range(args.repeat):
        procs = [hosts.popen(h, [args.perf] + perf_flags(args),
                             {"RANK": str(h), "WORLD_SIZE": "2", "MASTER_ADDR": hosts.addr[0],
                              "MASTER_PORT": str(29600 + i), "STRATA_TRANSPORT": "tcp", "STRATA_TIMEOUT": "120"})
                 for h in range(2)]
        outs = [p.communicate(timeout=600) for p in procs]
        for p, (out, err) in zip(procs, outs):
            if p.returncode:
                raise RuntimeError("strata-perf over tcp failed: " + out[-800:] + err[-800:])
        runs.append(perf_rows(outs[0][0]))
    return {s: (least([r[s][0] for r in runs]), runs[0][s][1]) for s in SIZES}


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
        out = run(["ip", "netns", "exec", hosts.ns[1], "iperf3", "-c", hosts.addr[0], "-t", "3", "-f", "g"])
    finally:
        server.kill()
        server.communicate()
    gbits = float(re.findall(r"([\d.]+) Gbits/sec.*receiver", out)[-1])
    return gbits / 8, rtt / 2


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
    p.add_argument("--repeat", type=int, default=3, help="strata-perf runs per configuration (the least counts)")
    args = p.parse_args()
    args.perf = os.path.join(args.build, "bench/strata-perf")

    membw = run([os.path.join(args.build, "bench/kernels/strata-membw")])
    copy = float(re.search(r"memcpy.*?([\d.]+) GB/s", membw).group(1)) / 2
    fold = float(re.search(r"c=a\+b.*?([\d.]+) GB/s", membw).group(1)) / 2
    hosts = Hosts(2, tag="strsim")
    try:
        net_gbps, net_lat = net_rates(hosts)
        tcp = measure_tcp(args, hosts)
    finally:
        hosts.close()
    shm = {r: measure_shm(args, r) for r in (2, 4)}
    print("model: shm copy %.2f GB/s per thread, fold %.2f GB/s per thread (strata-membw); "
          "tcp %.2f GB/s one stream (iperf3), %.1f us one way (TCP echo)" % (copy, fold, net_gbps, net_lat))
    shm_flags = ["--shm", "1,%.3f" % copy, "--reduce", "%.3f" % fold]
    # iperf3's one stream keeps both cores busy (sender and receiver); an
    # allreduce sends both ways at once on the same 2 cores: half each way.
    tcp_flags = ["--nic", "%.2f,%.3f" % (net_lat, net_gbps / 2), "--msg-overhead", "0", "--reduce", "%.3f" % fold]
    print("| transport | ranks | size | algorithm | measured (us) | predicted (us) | predicted / measured |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    cases = [("shm", 2, shm[2], shm_flags), ("shm", 4, shm[4], shm_flags), ("tcp", 2, tcp, tcp_flags)]
    for kind, ranks, measured, flags in cases:
        for size in SIZES:
            us, algo = measured[size]
            pred = predict(args, kind, ranks, algo, size, flags)
            print("| %s | %d | %d KiB | %s | %.1f | %.1f | %.2f |" % (kind, ranks, size >> 10, algo, us, pred, pred / us))


if __name__ == "__main__":
    main()
