#!/usr/bin/env python3
"""strata-info --explain as two ranks of a job (torchrun's variables): rank 0
prints one JSON object, which parses, names the call it was asked about, and
lists a transport per rank and every allreduce algorithm as a candidate.
Then six ranks with the ring forced: rank 0's plan talks to its two ring
neighbours only, of five connected peers.

    strata_info_explain_test.py STRATA_INFO
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "common"))
from ports import free_port  # noqa: E402


def explain(info, nranks, args, extra_env):
    """Rank 0's record of `strata-info --explain ARGS` run by nranks ranks."""
    port = free_port()
    procs = []
    for rank in range(nranks):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(nranks), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **extra_env)
        procs.append(subprocess.Popen([info, "--explain"] + args, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=60) for p in procs]
    for rank, (p, (out, err)) in enumerate(zip(procs, outs)):
        if p.returncode != 0:
            sys.exit("rank %d exited %d: %s" % (rank, p.returncode, err))
        if rank and out.strip():
            sys.exit("rank %d printed a record too: %r" % (rank, out))
    return json.loads(outs[0][0])


def main():
    info = sys.argv[1]
    record = explain(info, 2, ["allreduce", "65536", "bfloat16"], {})
    algos = [c["algorithm"] for c in record["candidates"]]
    algorithms = subprocess.run([info, "--algorithms"], capture_output=True, text=True, check=True).stdout
    failures = []
    if (record["collective"], record["datatype"], record["bytes"], record["count"]) != \
            ("allreduce", "bfloat16", 65536, 32768):
        failures.append("the record is about another call: %s" % record)
    if record["transports"] != ["self", "shm"]:
        failures.append("transports %s, expected ['self', 'shm']" % record["transports"])
    for line in algorithms.splitlines()[2:]:
        name = line.split("`")[1]
        if name not in algos:
            failures.append("candidate %s missing from %s" % (name, algos))
    chosen = [c for c in record["candidates"] if c["algorithm"] == record["algorithm"]]
    if not chosen or not chosen[0]["considered"]:
        failures.append("the chosen algorithm %s is not a considered candidate" % record["algorithm"])
    if (record["peers"], record["connected_peers"]) != ([1], 1):
        failures.append("2 ranks: peers %s of %s connected, expected [1] of 1" %
                        (record["peers"], record["connected_peers"]))
    ring = explain(info, 6, ["allreduce", "1048576", "float32"], {"STRATA_ALGO": "ring"})
    if (ring["algorithm"], ring["peers"], ring["connected_peers"]) != ("ring", [1, 5], 5):
        failures.append("6 ranks, ring forced: %s talks to %s of %s connected, expected ring to its neighbours "
                        "[1, 5] of 5" % (ring["algorithm"], ring["peers"], ring["connected_peers"]))
    for f in failures:
        print("FAIL", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
