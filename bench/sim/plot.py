"""Draws strata-sim's CSV: busbw against size per algorithm at each rank
count of the sweep, and time against rank count at each size of the
scaling run. Marks the cost model's pick at each size with a ring."""
import argparse
import csv
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


# One colour per algorithm in every plot, whichever algorithms it shows.
COLOURS = {a: "C%d" % i for i, a in enumerate(["oneshot", "rd", "hd", "ring", "hier", "tree", "ordered"])}


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def size_label(b):
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << k:
            return "%d%s" % (b >> k, unit)
    return "%dB" % b


def busbw_plots(data, out):
    by_ranks = defaultdict(list)
    for r in data:
        by_ranks[int(r["ranks"])].append(r)
    for ranks, rs in sorted(by_ranks.items()):
        fig, ax = plt.subplots(figsize=(8, 5))
        curves = defaultdict(list)
        picks = {}
        for r in rs:
            curves[r["algo"]].append((int(r["bytes"]), float(r["busbw_GBps"])))
            if r["algo"] == r["pick"]:
                picks[int(r["bytes"])] = float(r["busbw_GBps"])
        draw_curves(ax, curves)
        ax.scatter(list(picks), list(picks.values()), s=90, facecolors="none", edgecolors="black",
                   label="cost model's pick", zorder=5)
        r0 = rs[0]
        ax.set_title("allreduce busbw, %d ranks (%s nodes x %s), simulated" % (ranks, r0["nodes"], r0["ranks_per_node"]))
        log_axes(ax, "size (bytes)", "busbw (GB/s)")
        fig.tight_layout()
        fig.savefig(os.path.join(out, "busbw_%d.png" % ranks), dpi=110)
        plt.close(fig)


def draw_curves(ax, curves):
    """One line per algorithm, its points in x order."""
    for algo, pts in curves.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=algo, color=COLOURS.get(algo))


def log_axes(ax, xlabel, ylabel):
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def scaling_plot(data, out):
    sizes = sorted({int(r["bytes"]) for r in data})
    fig, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 5))
    for ax, size in zip(axes if len(sizes) > 1 else [axes], sizes):
        curves = defaultdict(list)
        for r in data:
            if int(r["bytes"]) == size:
                curves[r["algo"]].append((int(r["ranks"]), float(r["time_us"])))
        draw_curves(ax, curves)
        ax.set_title("allreduce of %s, simulated" % size_label(size))
        log_axes(ax, "ranks (8 per node)", "time (us)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "time_vs_ranks.png"), dpi=110)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--sweep", required=True)
    p.add_argument("--scaling", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    busbw_plots(rows(a.sweep), a.out)
    scaling_plot(rows(a.scaling), a.out)


if __name__ == "__main__":
    main()
