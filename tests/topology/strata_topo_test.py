#!/usr/bin/env python3
"""strata-topo alone (text and JSON), then as a 4-rank torchrun-style job on
127.0.0.1 whose ranks claim two hosts (STRATA_HOSTID A A B B) of a synthetic
two-package machine, bound to cpus 0 / 2 / 0 / 2: rank 0 must show 2 nodes x 2
sockets, shm within a node and tcp across. Every wait is bounded."""
import json
import os
import socket
import subprocess
import sys

TIMEOUT = 30
topo = sys.argv[1]
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

# The 4-rank job.
with socket.socket() as s:  # a free port for rank 0's bootstrap listener
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
ranks = []
for rank, (host, cpus) in enumerate([("A", "0"), ("A", "2"), ("B", "0"), ("B", "2")]):
    env = clean_env(RANK=str(rank), WORLD_SIZE="4", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                    STRATA_HOSTID=host, STRATA_TOPO_SYNTHETIC="package:2 core:2 pu:1", STRATA_TOPO_CPUS=cpus,
                    STRATA_TIMEOUT="20")
    ranks.append(subprocess.Popen([topo, "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True))
outputs = []
for p in ranks:
    try:
        outputs.append(p.communicate(timeout=TIMEOUT))
    except subprocess.TimeoutExpired:
        for q in ranks:
            q.kill()
        sys.exit("the 4-rank job did not finish within %d s" % TIMEOUT)
for rank, (p, (out, err)) in enumerate(zip(ranks, outputs)):
    check(p.returncode == 0, "rank %d exited %d: %s" % (rank, p.returncode, err))
    if rank:
        check(out == "", "rank %d printed %r (only rank 0 prints)" % (rank, out))

if not failures:
    doc = json.loads(outputs[0][0])
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

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
