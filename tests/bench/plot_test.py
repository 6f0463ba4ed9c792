#!/usr/bin/env python3
"""bench/compare --plot end to end (strata-perf on 2 local ranks, tiny sizes:
Open MPI's side joins where it is built), then bench/plot_curves.py's bars,
and its answer where matplotlib is missing. A PNG is checked by its header:
the signature, and the width and height the figure size gives."""
import os
import struct
import subprocess
import sys
import tempfile

compare, build = sys.argv[1], sys.argv[2]
bench = os.path.dirname(os.path.abspath(compare))
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def png_size(path):
    """(width, height) from a PNG's IHDR, or None if it is not a PNG."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


with tempfile.TemporaryDirectory() as tmp:
    curves = os.path.join(tmp, "curves.png")
    r = subprocess.run([sys.executable, compare, "--build", build, "--ranks", "2", "-b", "8", "-e", "64K", "-f", "64",
                        "-n", "2", "-w", "1", "--small-iters", "20", "--plot", curves],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "bench/compare --plot exited %d: %s%s" % (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    check("# plot: " + curves in r.stdout, "bench/compare did not say where the plot went:\n" + r.stdout[-1000:])
    # figsize 12 x 4.5 inches at 110 dpi
    check(os.path.exists(curves) and png_size(curves) == (1320, 495),
          "curves: %r" % ((png_size(curves) if os.path.exists(curves) else "no file"),))

    sys.path.insert(0, bench)
    import plot_curves
    bars = os.path.join(tmp, "bars.png")
    why = plot_curves.bars(bars, "test", "Gbit/s", {"a": 1.5, "b": 3.0})
    check(why is None and png_size(bars) == (770, 440),
          "bars: %r, %r" % (why, png_size(bars) if os.path.exists(bars) else "no file"))

    # Without matplotlib: a reason, and --plot's report exits 1 naming the file.
    blocked = ("import sys; sys.modules['matplotlib'] = None; sys.path.insert(0, %r); import plot_curves; "
               "plot_curves.report('x.png', plot_curves.curves('x.png', 't', {}))" % bench)
    r = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and "no plot x.png" in r.stderr and "python3-matplotlib" in r.stderr,
          "without matplotlib: exit %d, %r" % (r.returncode, r.stderr))

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
