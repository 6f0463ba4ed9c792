#!/usr/bin/env python3
"""Runs bitwise_job as one job whose ranks are the programs given, in order
(the same program for a plain job; an x86-64 and an aarch64 build of it for
a job of mixed machines, the aarch64 ranks run by qemu-user through
binfmt_misc): over shared memory and over tcp with the algorithms strata
picks, then over shared memory with recursive doubling forced, under which
every rank of a power-of-two job folds every element with its own kernels.
Passes when every rank exits 0, having found every result right and the same
bits on every rank.

    mixed_job.py PROGRAM [PROGRAM ...]
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from ports import free_port  # noqa: E402


def run(programs, transport, algorithm=""):
    port = free_port()
    ranks = []
    for rank, program in enumerate(programs):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(len(programs)), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), STRATA_SECRET="6d697865642d6a6f622d736563726574",
                   STRATA_TRANSPORT=transport, STRATA_TIMEOUT="120", STRATA_ALGO=algorithm)
        ranks.append(subprocess.Popen([program], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    ok = True
    for rank, p in enumerate(ranks):
        try:
            out = p.communicate(timeout=600)[0]
        except subprocess.TimeoutExpired:
            for q in ranks:
                q.kill()
            out = p.communicate()[0] + "\n(killed after 600 s)"
        print(f"[{transport}{' ' + algorithm if algorithm else ''}] rank {rank} ({programs[rank]}), "
              f"exit {p.returncode}:\n  " + "\n  ".join(out.strip().splitlines()[-8:]))
        ok = ok and p.returncode == 0
    return ok


def main(programs):
    results = [run(programs, "shm"), run(programs, "tcp"), run(programs, "shm", "rd")]
    return 0 if all(results) else 1


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
