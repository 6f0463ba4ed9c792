#!/usr/bin/env python3
"""bench/compare against both MPI libraries end to end: strata-perf, Open
MPI's and MPICH's mpi-perf on 2 local ranks, each checking its own results.
With one round the median table must repeat each program's raw table (times
as printed there, time x their quotient), name both libraries in its header,
and say at 8 B what each takes over the latency floor. --mpi mpich leaves
Open MPI out; an MPICH run that fails drops MPICH alone, and fails the whole
comparison under --require-mpi. Exits 77 (skip) where either mpi-perf is not
built: it then has nothing to compare with."""
import os
import re
import subprocess
import sys

compare, build = sys.argv[1], sys.argv[2]
for name in ("mpi-perf", "mpi-perf-mpich"):
    if not os.access(os.path.join(build, "bench/mpi", name), os.X_OK):
        print("SKIP: %s not built (scripts/install-deps.sh installs Open MPI and MPICH; re-run meson setup)" % name)
        sys.exit(77)
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def compare_run(*extra):
    cmd = [sys.executable, compare, "--build", build, "--ranks", "2", "-b", "8", "-e", "128K", "-f", "128",
           "-n", "3", "-w", "1", "--small-iters", "50"] + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    return r, " ".join(cmd[1:])


def raw_tables(text):
    """[[program and library lines, {size: time_us}]] for each raw table, in
    order: a table starts at its '# strata-perf:' or '# mpi-perf:' line."""
    tables = []
    for line in text.splitlines():
        if line.startswith("# strata-perf:") or line.startswith("# mpi-perf:"):
            tables.append([line, {}])
        elif line.startswith("# library:") and tables:
            tables[-1][0] += line
        elif tables and not line.startswith("#") and len(line.split()) >= 13 and line.split()[0].isdigit():
            fields = line.split()
            tables[-1][1][int(fields[0])] = fields[5]
    return tables


def median_table(text):
    """(header fields, [row fields]) of the table after '# strata vs'."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("# strata vs")), None)
    if start is None:
        return None, []
    header = lines[start + 1].lstrip("#").replace("time x", "time_x").split()
    rows = []
    for line in lines[start + 2:]:
        if line.startswith("#"):
            break
        rows.append(line.split())
    return header, rows


r, cmd = compare_run("--require-mpi", "--repeat", "1")
check(r.returncode == 0, "%s exited %d: %s%s" % (cmd, r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
out = r.stdout
check("library: Open MPI v" in out and "library: MPICH Version:" in out,
      "raw tables do not name both libraries:\n" + out[-3000:])
check(out.count("# Out of bounds values : 0 OK") == 6,  # 3 programs x 2 sweeps (small, large)
      "not every program checked its results clean:\n" + out[-3000:])
tables = raw_tables(out)
strata = {k: v for line, t in tables if "strata-perf" in line for k, v in t.items()}
ompi = {k: v for line, t in tables if "library: Open MPI" in line for k, v in t.items()}
mpich = {k: v for line, t in tables if "library: MPICH" in line for k, v in t.items()}
header, rows = median_table(out)
columns = ["size(B)", "strata(us)", "ompi(us)", "time_x", "mpich(us)", "time_x", "strata", "busbw",
           "ompi", "busbw", "mpich", "busbw"]
check(header is not None and header[:len(columns)] == columns and header[len(columns):] in ([], ["%limit"]),
      "median table header: %r" % (header,))
check([int(row[0]) for row in rows] == [8, 1024, 131072] and sorted(strata) == [8, 1024, 131072],
      "sizes: table %r, strata-perf %r" % ([row[0] for row in rows], sorted(strata)))
for row in rows:
    size = int(row[0])
    st, ot, ox, mt, mx = row[1], row[2], float(row[3]), row[4], float(row[5])
    check(strata.get(size) == st and ompi.get(size) == ot and mpich.get(size) == mt,
          "%d B: table %s %s %s, raw %s %s %s" % (size, st, ot, mt, strata.get(size), ompi.get(size), mpich.get(size)))
    # time x from the printed times: their rounding (3 significant
    # digits) moves the quotient by well under 1%.
    for x, t, who in ((ox, ot, "Open MPI"), (mx, mt, "MPICH")):
        want = float(st) / float(t)
        check(abs(x - want) <= 0.01 * want + 0.006, "%d B: time x for %s %.2f, times give %.4f" % (size, who, x, want))
floor = re.search(r"at 8 B strata takes ([\d.]+) x the floor, Open MPI ([\d.]+) x, MPICH ([\d.]+) x", out)
check(floor is not None or "latency floor" not in out, "floor line does not name both libraries:\n" + out[-800:])

r, cmd = compare_run("--mpi", "mpich", "--require-mpi")
header, rows = median_table(r.stdout)
check(r.returncode == 0 and header and "mpich(us)" in header and "ompi(us)" not in header
      and "library: Open MPI" not in r.stdout,
      "%s: exit %d, header %r" % (cmd, r.returncode, header))

# A failing MPICH launch: dropped with the reason, Open MPI still compared.
r, cmd = compare_run("--mpich-args=--no-such-hydra-flag")
header, rows = median_table(r.stdout)
check(r.returncode == 0 and "# bench/compare: MPICH comparison dropped: mpiexec.mpich failed" in r.stdout
      and header and "ompi(us)" in header and "mpich(us)" not in header and len(rows) == 3,
      "%s: exit %d, header %r:\n%s" % (cmd, r.returncode, header, r.stdout[-1500:]))
r, cmd = compare_run("--mpich-args=--no-such-hydra-flag", "--require-mpi")
check(r.returncode != 0 and "bench/compare: MPICH: mpiexec.mpich failed" in r.stderr,
      "%s: exit %d, stderr %r" % (cmd, r.returncode, r.stderr[-800:]))

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
