#!/usr/bin/env python3
"""strata-perf --bind: each forked rank runs pinned to the cpu the blocks
rule gives it (rank r of N on the (r*C/N)-th of the C cpus this process may
use), read from each rank's own topology log line; its allreduces still
check correct; and --bind without --ranks is refused with exit 2, naming
the flag."""
import os
import re
import subprocess
import sys

perf = sys.argv[1]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


cpus = sorted(os.sched_getaffinity(0))
ranks = 4
env = dict(os.environ, STRATA_DEBUG="INFO", STRATA_DEBUG_SUBSYS="TOPO")
r = subprocess.run([perf, "--ranks", str(ranks), "--bind", "-b", "8", "-e", "256K", "-f", "32", "-n", "3", "-w", "1",
                    "-c", "1"], capture_output=True, text=True, timeout=120, env=env)
check(r.returncode == 0, "strata-perf --bind exited %d: %s%s" % (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
rows = [line.split() for line in r.stdout.splitlines() if line.strip() and not line.startswith("#")]
check(len(rows) == 4, "expected 4 size rows (8 B to 256 KiB), got %d:\n%s" % (len(rows), r.stdout[-1500:]))
# size count type redop root, then time algbw busbw #wrong out of place and in place
check(all(len(row) >= 13 and row[8] == "0" and row[12] == "0" for row in rows),
      "rows with wrong results:\n" + r.stdout[-1500:])
# "host:pid:rank [TOPO] INFO host.cc:N host id ..., 1 cores in the affinity mask; ...; cpus 3 in package ..."
pinned = {}
for m in re.finditer(r":(\d+) \[TOPO\] INFO .*?(\d+) cores in the affinity mask;.*?; cpus ([\d,-]+) in package",
                     r.stdout + r.stderr):
    pinned[int(m.group(1))] = (int(m.group(2)), m.group(3))
check(sorted(pinned) == list(range(ranks)), "topology lines from ranks %s, expected 0-%d" % (sorted(pinned), ranks - 1))
for rank, (count, cpu) in sorted(pinned.items()):
    want = str(cpus[rank * len(cpus) // ranks])
    check(count == 1 and cpu == want, "rank %d: %d cores in its mask, cpus %s; --bind should pin it to cpu %s"
          % (rank, count, cpu, want))

r = subprocess.run([perf, "--bind", "-b", "8", "-e", "8"], capture_output=True, text=True, timeout=30)
check(r.returncode == 2 and "--bind" in r.stderr, "--bind without --ranks: exit %d, stderr %r" % (r.returncode, r.stderr))

if failures:
    sys.exit(1)
print("strata-perf --bind: %d ranks pinned over cpus %s as the blocks rule says, results checked" % (ranks, cpus))
