#!/usr/bin/env python3
"""strata-info --explain as two ranks of a job (torchrun's variables): rank 0
prints one JSON object, which parses, names the call it was asked about, and
lists a transport per rank and every allreduce algorithm as a candidate.

    strata_info_explain_test.py STRATA_INFO
"""
import json
import os
import socket
import subprocess
import sys


def main():
    info = sys.argv[1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))
        procs.append(subprocess.Popen([info, "--explain", "allreduce", "65536", "bfloat16"], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=60) for p in procs]
    for rank, (p, (out, err)) in enumerate(zip(procs, outs)):
        if p.returncode != 0:
            sys.exit("rank %d exited %d: %s" % (rank, p.returncode, err))
    if outs[1][0].strip():
        sys.exit("rank 1 printed a record too: %r" % outs[1][0])
    record = json.loads(outs[0][0])
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
    for f in failures:
        print("FAIL", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
