"""PNG plots for the bench/compare* scripts' --plot: a comparison's curves
(bus bandwidth and time against size, one line per implementation), or its
bars where it measures one size. Needs matplotlib (Debian's
python3-matplotlib, which scripts/install-deps.sh installs); each function
returns None once the file is written, else why not, so a script still
prints its tables without it."""
import math
import sys


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")  # files only: no display here
        import matplotlib.pyplot as plt
        return plt, None
    except ImportError as e:
        return None, "no matplotlib (apt-get install python3-matplotlib): %s" % e


def _size_label(size, _pos=None):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= div and size % div == 0:
            return "%d%s" % (size // div, unit)
    return "%d" % size


def curves(path, title, series):
    """series: {label: {size_bytes: (time_us, busbw_GBps)}}, in legend order.
    Two panels over size (log 2): bus bandwidth (GB/s) and time (us, log)."""
    plt, why = _pyplot()
    if not plt:
        return why
    from matplotlib.ticker import FuncFormatter
    fig, (bw, t) = plt.subplots(1, 2, figsize=(12, 4.5))
    for label, rows in series.items():
        sizes = sorted(s for s, (us, gb) in rows.items() if not (math.isnan(us) or math.isnan(gb)))
        if not sizes:
            continue
        bw.plot(sizes, [rows[s][1] for s in sizes], marker="o", markersize=3, label=label)
        t.plot(sizes, [rows[s][0] for s in sizes], marker="o", markersize=3, label=label)
    for ax, name in ((bw, "bus bandwidth (GB/s)"), (t, "time (us)")):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(_size_label))
        ax.set_xlabel("size (bytes)")
        ax.set_ylabel(name)
        ax.grid(True, which="major", alpha=0.3)
    t.set_yscale("log")
    bw.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def bars(path, title, unit, values):
    """values: {label: value}, in order: one bar each, labelled with its value."""
    plt, why = _pyplot()
    if not plt:
        return why
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = list(values)
    drawn = ax.bar(labels, [values[k] for k in labels])
    ax.bar_label(drawn, fmt="%.3g")
    ax.set_ylabel(unit)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def grouped_bars(path, title, unit, groups):
    """groups: {group: {series: value}}, both in order: per group, one bar per
    series side by side (the same series in the same colour everywhere)."""
    plt, why = _pyplot()
    if not plt:
        return why
    names = list(groups)
    series = list(dict.fromkeys(s for g in groups.values() for s in g))
    width = 0.8 / max(1, len(series))
    fig, ax = plt.subplots(figsize=(max(7, 1.6 * len(names)), 4.5))
    for i, label in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(names))]
        ys = [groups[n].get(label, float("nan")) for n in names]
        ax.bar_label(ax.bar(xs, ys, width, label=label), fmt="%.3g", fontsize=7)
    ax.set_xticks(range(len(names)), names, rotation=15, fontsize=8)
    ax.set_ylabel(unit)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def report(path, why):
    """Says where the plot went, or why there is none (then exits 1: it was
    asked for)."""
    if why:
        sys.exit("no plot %s: %s" % (path, why))
    print("# plot: %s" % path)
