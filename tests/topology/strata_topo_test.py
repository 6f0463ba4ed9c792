#!/usr/bin/env python3
"""strata-topo alone (text and JSON), then as a 4-rank torchrun-style job on
127.0.0.1 whose ranks claim two hosts (STRATA_HOSTID A A B B) of a synthetic
two-package machine, bound to cpus 0 / 2 / 0 / 2: rank 0 must show 2 nodes x 2
sockets, shm within a node and tcp across; then a 4-rank job on an injected
GPU server, whose GPU groups and direct-or-staging choices rank 0 must show.
Every wait is bounded."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../common"))
from ports import free_port  # noqa: E402

TIMEOUT = 30
topo = sys.argv[1]
server = sys.argv[2]  # data/gpu_server.xml
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("STRATA_", "PMIX_", "OMPI_")) and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env.update(extra)
    return env


# Alone: this machine, one rank.
text = subprocess.run([topo], env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT)
check(text.returncode == 0, "strata-topo exited %d: %s" % (text.returncode, text.stderr))
check("machine: this machine" in text.stdout and "cluster: 1 node, 1 rank" in text.stdout,
      "text output lacks the machine or the tree:\n" + text.stdout)
alone = subprocess.run([topo, "--json"], env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT)
doc = json.loads(alone.stdout)
check(doc["machine"]["pus"] == os.cpu_count(), "machine pus %r, os.cpu_count() %r" % (doc["machine"]["pus"], os.cpu_count()))
check(doc["hierarchy"]["nranks"] == 1 and doc["transports"] == [], "one-rank JSON: %r" % doc["hierarchy"])
check(subprocess.run([topo, "--bogus"], env=clean_env(), capture_output=True, timeout=TIMEOUT).returncode == 2,
      "an unknown option must exit 2")

def run_job(rank_envs, what):
    """Runs strata-topo --json as a torchrun-style job, one rank per dict of
    extra variables; rank 0's document, or None (with the failures noted)."""
    port = free_port()
    ranks = []
    for rank, extra in enumerate(rank_envs):
        env = clean_env(RANK=str(rank), WORLD_SIZE=str(len(rank_envs)), MASTER_ADDR="127.0.0.1",
                        MASTER_PORT=str(port), STRATA_TIMEOUT="20", **extra)
        ranks.append(subprocess.Popen([topo, "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    outputs = []
    for p in ranks:
        try:
            outputs.append(p.communicate(timeout=TIMEOUT))
        except subprocess.TimeoutExpired:
            for q in ranks:
                q.kill()
            sys.exit("the %s did not finish within %d s" % (what, TIMEOUT))
    ok = True
    for rank, (p, (out, err)) in enumerate(zip(ranks, outputs)):
        ok &= p.returncode == 0 and (rank == 0 or out == "")
        check(p.returncode == 0, "%s: rank %d exited %d: %s" % (what, rank, p.returncode, err))
        if rank:
            check(out == "", "%s: rank %d printed %r (only rank 0 prints)" % (what, rank, out))
    return json.loads(outputs[0][0]) if ok else None


# The 4-rank job: two hosts of a synthetic two-package machine.
doc = run_job([dict(STRATA_HOSTID=host, STRATA_TOPO_SYNTHETIC="package:2 core:2 pu:1", STRATA_TOPO_CPUS=cpus)
               for host, cpus in [("A", "0"), ("A", "2"), ("B", "0"), ("B", "2")]], "4-rank job")
if doc:
    h = doc["hierarchy"]
    check(h["nranks"] == 4, "nranks %r" % h["nranks"])
    nodes = [(n["hostId"], n["ranks"], n["packages"], n["cores"], [(s["package"], s["ranks"]) for s in n["sockets"]])
             for n in h["nodes"]]
    check(nodes == [("A", [0, 1], 2, 4, [(0, [0]), (1, [1])]), ("B", [2, 3], 2, 4, [(0, [2]), (1, [3])])],
          "nodes: %r" % nodes)
    check([r["localRank"] for r in h["ranks"]] == [0, 1, 0, 1], "local ranks: %r" % h["ranks"])
    links = {tuple(t["ranks"]): t["transport"] for t in doc["transports"]}
    check(links == {(0, 1): "shm", (2, 3): "shm", (0, 2): "tcp", (0, 3): "tcp", (1, 2): "tcp", (1, 3): "tcp"},
          "transports: %r" % links)
    check(doc["machine"]["source"] == "synthetic 'package:2 core:2 pu:1'", "machine: %r" % doc["machine"])

# A GPU job on an injected GPU server (gpu_server.xml): ranks 0 and 1 share
# GPU 0, rank 2 uses GPU 4 on the other package, rank 3 has no GPU. The
# hierarchy groups them by GPU; the cost model copies directly within the
# shared GPU and stages across packages (SYS P2P at a quarter of PCIe's
# 22 GB/s loses to host memory's 6 GB/s).
doc = run_job([dict(STRATA_TOPO_FILE=server, STRATA_TOPO_CPUS=cpus, STRATA_TOPO_GPU=gpu)
               for cpus, gpu in [("0", "0"), ("1", "0000:03:00.0"), ("2", "4"), ("3", "")]], "GPU job")
if doc:
    check([g["pciBusId"] for g in doc["machine"]["gpus"]] ==
          ["0000:03:00.0", "0000:04:00.0", "0000:06:00.0", "0000:11:00.0", "0000:21:00.0", "0000:25:00.0",
           "0000:27:00.0"],
          "machine gpus: %r" % doc["machine"]["gpus"])
    check(doc["machine"]["gpuLinks"][0] == ["X", "PIX", "PHB", "NODE", "SYS", "SYS", "SYS"] and
          doc["machine"]["gpuLinks"][5][4:] == ["PHB", "X", "PXB"],
          "gpu 0's links: %r" % doc["machine"]["gpuLinks"])
    sockets = [[(g["busId"], g["ranks"]) for g in s["gpus"]] for s in doc["hierarchy"]["nodes"][0]["sockets"]]
    check(sockets == [[("0000:03:00.0", [0, 1])], [("0000:21:00.0", [2])]], "gpu groups: %r" % sockets)
    check([r["gpu"] for r in doc["hierarchy"]["ranks"]] == ["0000:03:00.0", "0000:03:00.0", "0000:21:00.0", ""],
          "ranks' gpus: %r" % doc["hierarchy"]["ranks"])
    paths = {tuple(p["ranks"]): (p["route"], p["link"]) for p in doc["gpuPaths"]}
    check(paths == {(0, 1): ("direct", "SAME"), (0, 2): ("staging", "SYS"), (1, 2): ("staging", "SYS")},
          "gpu paths: %r" % doc["gpuPaths"])

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
