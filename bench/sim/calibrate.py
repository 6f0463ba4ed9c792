#!/usr/bin/env python3
"""strata-sim's model of this machine against strata-perf on it.

The model's memory rates come from measurements that are not strata's, at
three working sets (one that each core's L2 holds, one that the L3 holds,
one from DRAM; the caches' sizes from sysfs):
  - strata-membw: a thread's memcpy and c=a+b on its own data, its
    writes of an output from a piece in cache (strata's copy kernel, with
    its non-temporal stores from DRAM sizes on), and its reads of an input
    into such a piece (a slot filled from the input);
  - strata-membw --handoff: the same across the two cores, as shared
    memory moves a hop's bytes: filling a buffer the other core read last,
    copying and folding one the other core just wrote (threads pinned);
  - strata-membw's fold of sets from half the L3 to 9/8 of it: how much
    of each the L3 holds for the VM's cores (l3_sweep, l3_shares);
  - strata-membw --handoff --nt: the hand-off of a connector's slots
    written with non-temporal stores, as strata's connectors write them
    where they timed those faster (from STRATA_SHM_NT_BYTES a call);
  - strata-latency-floor: a cache line's trip between the cores, the hop's
    latency; with more ranks than cores, --ring N: a hop that waits for the
    scheduler, as strata's ranks then wait (sched_yield);
  - strata-perf sendrecv between two network namespaces, the one input
    that is strata's own (net_sample says why): each way's rate while the
    other runs (as two ranks' allreduce sends) at each size predicted, and
    its time at 16-256 bytes, the hop's latency.
strata-sim then predicts each configuration's allreduce with the algorithm
strata-perf ran (its -A column):
  shm: 2, 4 and 8 ranks on one host (4 and 8 ranks share the 2 cores);
  tcp: 2 namespaces x 1 rank;
the shared-memory ranks pinned to the cores, and the probes' processes
likewise (BIND).
The VM's two cores move between a near and a far placement, within seconds
to minutes, and every rate moves with them (bench/README.md). So every
measurement, rates and strata-perf runs alike, is bracketed by the
placement probe, kept under the placement it ran in, and dropped where the
probe before and after disagree; each placement's prediction takes the
medians of its own rates and meets the median of its own runs. Needs root
(namespaces). Keep the machine otherwise idle while it runs.
--replay LOG measures nothing: it reads the rates and strata-perf times of
a run this script printed and predicts those with the sim given, to try a
model on old runs. --sizes and --transports measure other rows than
bench/README.md's (sizes the model was not tuned on, one transport alone),
and a replay predicts whichever rows its log holds.
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from netns import Hosts  # noqa: E402
from placement import placement  # noqa: E402

SIZES = [64 << 10, 1 << 20, 16 << 20]  # --sizes' default: the rows bench/README.md reports
# strata-perf's ranks and the probes' processes are pinned to the cores in
# blocks (bench/pin/pin.h), as mpirun --bind-to core pins ranks. Left to
# the scheduler, 4 ranks at 1 MiB ran in about 190 us in some launches and
# 260-380 in others, so a run's median fell wherever its mix of the two
# did (run medians of 197-296 us in runs U-AC, predicted / median
# 0.89-1.46 in W-AC); pinned, 178-220 us in 19 of 20 near runs
# (2026-11-29, runs AD-AF).
BIND = ["--bind"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def perf_rows(text):
    """size -> (out-of-place time us, algorithm) from strata-perf -A."""
    rows = {}
    for line in text.splitlines():
        f = line.split()
        if line.startswith("#") or len(f) < 14:
            continue
        rows[int(f[0])] = (float(f[5]), f[13].split("/")[0])
    return rows


def parse_size(text):
    """Bytes from 65536, 64K or 1M (sysfs writes a cache's size so too)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def perf_flags(args, size):
    return ["-b", str(size), "-e", str(size), "-n", str(args.iters), "-w", str(max(3, args.iters // 10)), "-A",
            "-c", "0"]


def shm_run(args, ranks, size):
    return perf_rows(run([args.perf, "--ranks", str(ranks)] + BIND + perf_flags(args, size)))[size]


def tcp_perf(args, hosts, port, flags):
    """Rank 0's rows of a strata-perf run with `flags`, one rank in each of
    the two namespaces, left to the scheduler as a torchrun-style launch
    leaves them. Pinned one a core (runs AG-AI, 2026-11-29) their 1 MiB
    allreduce ran faster (a median 445 us against 541 in alternating
    runs) while sendrecv, the rates' source, did not (544 against 567 us
    at 1 MiB), and tcp at 1 MiB came out 1.30-1.50 times its median."""
    procs = [hosts.popen(h, [args.perf] + flags,
                         {"RANK": str(h), "WORLD_SIZE": "2", "MASTER_ADDR": hosts.addr[0],
                          "MASTER_PORT": str(port), "STRATA_TRANSPORT": "tcp", "STRATA_TIMEOUT": "120",
                          "STRATA_TCP_CONGESTION": args.congestion})
             for h in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        if p.returncode:
            raise RuntimeError("strata-perf over tcp failed: " + out[-800:] + err[-800:])
    return perf_rows(outs[0][0])


def tcp_run(args, hosts, i, size):
    return tcp_perf(args, hosts, 29600 + i % 300, perf_flags(args, size))[size]


# The network hop's latency: the median of strata-perf sendrecv's three
# smallest sizes (its first size now and then runs 3-10 times slow).
NET_SMALL = [16, 64, 256]


def net_sample(args, hosts, i):
    """{net_lat: one way's latency in us, net_gbps: {size: GB/s each way
    with both ways at once}} between the two namespaces, for each size of
    SIZES: strata's own point-to-point, as SimGrid's SMPI calibrates its
    network model with the MPI's own ping-pong at each message size, so the
    sim answers how a plan's hops add up, not what one hop costs. strata-perf
    sendrecv sends to the peer while it receives from it, as two ranks'
    allreduce steps do; past the latency, a size's time gives its rate. A
    rate per size because a 64 KiB exchange goes at 2.5-3.3 GB/s where 16
    MiB streams at 2.0 (2026-11-29: with 16 MiB's rate for all, 2 ranks at
    64 KiB came out 1.05-1.37 times their median). Raw sockets read low
    beside it: in the same minutes (2026-11-29) iperf3's two pairs (one
    each way) moved 1.40-1.68 GB/s each way, and a one-thread polling
    exchange written for this 1.02-1.82, against sendrecv's 0.96-1.95 at
    16 MiB, and strata's 16 MiB allreduce ran faster than either rate
    allows; the difference was not found. Its runs and probes take reno
    as their congestion control (--congestion): this kernel's default, bbr,
    paces each burst, which the sim does not model, and under it 2 ranks'
    1 MiB allreduce took 306-715 us in 10 launches (reno: 215-358), and
    the tcp rows missed in 5 of 7 runs (BG-BM); under reno, run BO's fit
    (bench/README.md, "Congestion control over tcp")."""
    timing = ["-n", str(args.iters), "-w", str(max(3, args.iters // 10)), "-A", "-c", "0"]
    rows = tcp_perf(args, hosts, 29900 + i % 50, ["sendrecv", "-b", str(NET_SMALL[0]), "-e", str(max(args.sizes)),
                                                  "-f", "4"] + timing)
    for s in args.sizes:  # a size between the sweep's powers of 4, on its own
        if s not in rows:
            rows.update(tcp_perf(args, hosts, 29900 + i % 50, ["sendrecv", "-b", str(s), "-e", str(s)] + timing))
    lat = statistics.median(rows[s][0] for s in NET_SMALL)
    return {"net_lat": lat, "net_gbps": {s: s / (max(rows[s][0] - lat, rows[s][0] / 10) * 1e3) for s in args.sizes}}


def cache_bytes(level):
    """Size of cpu0's cache at `level` (2, 3), from sysfs."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    for index in sorted(os.listdir(base)):
        if not index.startswith("index"):
            continue
        read = lambda f: open(os.path.join(base, index, f)).read().strip()  # noqa: E731
        if int(read("level")) == level and read("type") in ("Unified", "Data"):
            return parse_size(read("size"))
    raise RuntimeError("no level %d cache in %s" % (level, base))


def membw_run(args, flags, names):
    """The GB/s strata-membw with `flags` prints on the lines `names` (regular
    expressions) name, in their order."""
    out = run([os.path.join(args.build, "bench/kernels/strata-membw")] + flags)
    return tuple(float(re.search(name + r".*?([\d.]+) GB/s", out).group(1)) for name in names)


def membw(args, per_thread_bytes=None):
    """(copy, fold, output write from cache, input read into cache) GB/s of
    one thread: strata-membw's 2-thread rates halved."""
    flags = ["--bytes", str(per_thread_bytes)] if per_thread_bytes else []
    return tuple(r / 2 for r in membw_run(args, flags, ("memcpy", r"c=a\+b", "write from cache", "read into cache")))


def handoff(args, per_thread_bytes, between, nt=False):
    """(write, copy, fold) GB/s per thread of data crossing between the two
    cores (strata-membw --handoff): writing an outbox the other core read
    last, copying and folding one the other core just wrote; each thread
    reading `between` bytes of its own before it writes again; with `nt`,
    the outboxes written with non-temporal stores."""
    return membw_run(args, ["--handoff", "--bytes", str(per_thread_bytes), "--between", str(between)] +
                     (["--nt"] if nt else []), ("handoff write", "handoff memcpy", r"handoff c=a\+b"))


# Past the caches: strata-membw's default 256 MiB per buffer; the hand-off's
# four 32 MiB buffers per thread are 8 times the L3 too.
DRAM_HANDOFF_BYTES = 32 << 20
# A connector's slots (STRATA_NSLOTS x STRATA_SLOT_BYTES), written
# non-temporally with nothing else streaming from DRAM: strata-sim
# --handoff-nt. 2026-11-29, cores far apart: 26-28 GB/s a write, where the
# DRAM hand-off, whose 32 MiB outboxes stream as the ranks' buffers do
# past the caches, writes at 6-7.
SLOT_RING_BYTES = 8 * (256 << 10)


def memory_rates(args):
    """A rank's rates (GB/s per thread) while the L2s hold its buffers, the
    L3 does, and from DRAM (cache None): its own copy and fold, its output
    written from cache, its input read into cache, and the hand-off's write
    into a slot, copy out of one and fold of one. Each thread's buffers take
    an eighth of a cache each (an L2 per core; the L3 shared by the 2
    threads), so they stay resident. The sim takes the L3's hand-off rates
    where a slot's reuse distance is past the L2s (sweep.cc, atWorkingSet):
    the slot has left the other core's L2 when it is refilled, so there the
    probe reads an L2's bytes between rounds (the slot write went from
    24.4-25.0 GB/s to 36.5-38.5 with them, 2026-11-29); from DRAM its four
    32 MiB buffers a thread are past the L3 already."""
    cores = os.cpu_count()
    l2, l3 = cache_bytes(2), cache_bytes(3)
    tiers = []
    for cache, per_buffer, between in ((l2 * cores, l2 // 8, 0), (l3, l3 // cores // 8, l2), (None, None, 0)):
        t = dict(zip(("copy", "fold", "output", "input"), membw(args, per_buffer)))
        t.update(zip(("write", "copy_out", "slot_fold"), handoff(args, per_buffer or DRAM_HANDOFF_BYTES, between)))
        t["cache"] = cache
        tiers.append(t)
    tiers[1]["sweep"] = l3_sweep(args, tiers[1])
    return tiers


def l3_sweep(args, l3):
    """[(set bytes, fold GB/s per thread)]: strata-membw's fold of sets from
    half the L3 to 9/8 of it (three buffers a thread), from which
    median_rates reads how much of each the L3 holds."""
    sizes = [l3["cache"] * eighths // 8 // 6 for eighths in range(4, 10)]
    return [(6 * per_buffer, membw(args, per_buffer)[1]) for per_buffer in sizes]


def l3_shares(sweep, l3_fold, dram_fold):
    """[(set bytes, share)]: how much of each set the L3 holds for this VM's
    cores. A share h of a set's bytes hits, at the L3's fold rate, and the
    rest goes at DRAM's, so 1/rate = h/l3 + (1-h)/dram (network.h).
    2026-11-29: all of 16 MiB, four fifths of 24 and three fifths of 32 of
    the 32 MiB that sysfs gives (the host's L3, whose other cores other
    guests run on), less of a set past 16 MiB than one fixed capacity would
    hold."""
    shares, held = [], 1.0
    for size, fold in sweep:
        hit = (1 / fold - 1 / dram_fold) / (1 / l3_fold - 1 / dram_fold)
        held = min(held, max(0.0, hit))  # a larger set's share is no larger
        shares.append((size, held))
    return shares


def procs_fold(args, procs):
    """The fold rate of `procs` processes that take turns on the cores,
    each yielding after every slot of its own data as oversubscribed ranks
    yield between steps (strata-membw --procs), at the L3 tier's set (3/8
    of the L3 in all). Over the rate of as many as the cores, the share
    that shared cores keep: 2026-11-29, pinned as strata-perf's ranks
    (BIND), runs AD-AF's 24 samples: 0.86 for 4 processes on this
    machine's 2 cores (0.82-0.88), 0.84 for 8 (0.72-0.91); left to the
    scheduler 0.72 and 0.74 (0.68-0.95, runs W and X), which the sim's
    share of a core for each (the rate over the ranks per core) leaves
    out."""
    per_buffer = cache_bytes(3) * 3 // 8 // 3 // procs
    return membw_run(args, ["--procs", str(procs), "--bytes", str(per_buffer)] + BIND, (r"interleaved c=a\+b",))[0]


def latency_floor(args, ring=None):
    """One cache line's trip between the two cores, or with `ring`
    processes, more than the cores, a hop that waits for the scheduler
    (strata-latency-floor --ring: waiting as strata's ranks then do)."""
    cmd = [os.path.join(args.build, "bench/kernels/strata-latency-floor")]
    cmd += (["--ring", str(ring)] + BIND) if ring else []
    return float(re.search(r"(?:latency_floor|ring_hop)_us ([\d.]+)", run(cmd)).group(1))


def predict(args, kind, ranks, algo, size, flags):
    with tempfile.NamedTemporaryFile(suffix=".csv") as f:
        run([args.sim, "--calibrate", kind, "--ranks", str(ranks), "--algos", algo, "--sizes", str(size),
             "--shm-nt", str(args.shm_nt), "--csv", f.name] + flags)
        return float(next(csv.DictReader(open(f.name)))["time_us"])


CONFIGS = [("shm", 2), ("shm", 4), ("shm", 8), ("tcp", 2)]


def model_flags(kind, ranks, size, r, handoffs=True):
    """strata-sim's flags for a placement's rates r (median_rates), for an
    allreduce of `size` bytes."""
    *caches, dram = r["tiers"]
    handoffs = handoffs and kind == "shm"
    # Without hand-offs a same-node hop's bytes go at the thread's own rates
    # alone (copy, fold, input and output).
    rates = (lambda t: (t["copy"], t["fold"], t["write"], t["copy_out"], t["slot_fold"])) if handoffs else \
        (lambda t: (t["copy"], t["fold"], 0, 0, 0))
    if kind == "tcp":
        flags = ["--nic", "%.2f,%.3f" % (r["net_lat"], r["net_gbps"][size]), "--msg-overhead", "0"]
    else:
        # A hop's latency is a cache line's between the cores
        # (strata-latency-floor), or with more ranks than cores a hop that
        # waits for the scheduler.
        hop = r["floor"] if ranks <= os.cpu_count() else r["ring"][ranks]
        flags = ["--shm", "%.3f,%.3f" % (hop, dram["copy"])]
    flags += ["--reduce", "%.3f" % dram["fold"], "--output", "%.3f" % dram["output"], "--input", "%.3f" % dram["input"]]
    if handoffs:
        flags += ["--handoff", "%.3f,%.3f,%.3f" % rates(dram)[2:]]
        if r.get("nt"):
            flags += ["--handoff-nt", ",".join("%.3f" % r["nt"][k] for k in HANDOFF_FIELDS)]
    # Ranks beyond the cores share them (the sim divides a rank's rates by
    # the ranks per core), and from the caches they fold slower still:
    # procs_fold.
    shared = r["shared"].get(ranks, 1.0) if kind == "shm" and ranks > os.cpu_count() else 1.0
    for t in caches:
        flags += ["--cache", ",".join(["%d" % t["cache"]] +
                                      ["%.3f" % (x * shared) for x in rates(t) + (t["output"], t["input"])])]
        if t.get("shares"):
            flags += ["--cache-shares", ",".join("%d,%.3f" % p for p in t["shares"])]
    return flags


def add_floors(floors, fs):
    """Files placement probe readings under the placement each says."""
    for f in fs:
        floors.setdefault(placement(f), []).append(f)


def bracketed(args, measure):
    """measure()'s result and the cores' placement while it ran: "near" or
    "far" where strata-latency-floor said the same before and after, None
    where the two disagree (the VM's cores moved) or the cores were busy."""
    before = placement(latency_floor(args))
    result = measure()
    after = placement(latency_floor(args))
    return result, before if before == after and before in ("near", "far") else None


def memory_sample(args):
    more = [ranks for _, ranks in args.configs if ranks > os.cpu_count()]
    base = procs_fold(args, os.cpu_count()) if more else None
    nt = dict(zip(HANDOFF_FIELDS, handoff(args, SLOT_RING_BYTES, 0, nt=True)))
    return {"tiers": memory_rates(args), "nt": nt, "ring": {ranks: latency_floor(args, ranks) for ranks in more},
            "shared": {ranks: procs_fold(args, ranks) / base for ranks in more}}


def repeat(args, hosts, i, samples, runs):
    """One repeat: the rates, then each configuration and size's strata-perf
    run, each bracketed by the placement probe. The VM's two cores move
    between near and far placements within seconds to minutes, and every
    rate moves with them, so each measurement is kept under the placement
    it ran in, and the model's rates for a placement are the medians of the
    samples taken in it (None: discarded)."""
    print("repeat %d: load average %.2f %.2f %.2f" % ((i + 1,) + os.getloadavg()))
    measures = [("memory", lambda: memory_sample(args))]
    if hosts:
        measures.append(("net", lambda: net_sample(args, hosts, i)))
    for name, measure in measures:
        sample, where = bracketed(args, measure)
        samples[name].setdefault(where, []).append(sample)
        if name == "memory":
            for t in sample["tiers"]:
                print("  %s, cores %s: copy %.2f, fold %.2f, output from cache %.2f, input into cache %.2f; "
                      "hand-off: slot write %.2f, copy-out %.2f, fold %.2f GB/s per thread"
                      % ("DRAM" if t["cache"] is None else "%d MiB cache" % (t["cache"] >> 20), where, t["copy"],
                         t["fold"], t["output"], t["input"], t["write"], t["copy_out"], t["slot_fold"]))
            print("  past the %d MiB cache's eighth: fold %s GB/s per thread"
                  % (sample["tiers"][1]["cache"] >> 20,
                     ", ".join("%.1f MiB %.2f" % (w / (1 << 20), r) for w, r in sample["tiers"][1]["sweep"])))
            print("  non-temporal slots, cores %s: slot write %.2f, copy-out %.2f, fold %.2f GB/s per thread "
                  "(strata-membw --handoff --nt)" % ((where,) + tuple(sample["nt"][k] for k in HANDOFF_FIELDS)))
            for ranks, hop in sample["ring"].items():
                print("  %d processes on %d cores: %.2f us a hop (strata-latency-floor --ring), fold at %.2f of %d's "
                      "(strata-membw --procs)" % (ranks, os.cpu_count(), hop, sample["shared"][ranks], os.cpu_count()))
        else:
            print("  tcp, cores %s: %.1f us one way; each way with both at once: %s GB/s (strata-perf sendrecv)"
                  % (where, sample["net_lat"],
                     ", ".join("%d KiB %.2f" % (size >> 10, g) for size, g in sample["net_gbps"].items())))
    for kind, ranks in args.configs:
        for size in args.sizes:
            measure = (lambda: tcp_run(args, hosts, i * 10 + len(runs), size)) if kind == "tcp" else \
                (lambda: shm_run(args, ranks, size))
            (us, algo), where = bracketed(args, measure)
            runs.setdefault(where, {}).setdefault((kind, ranks, size), []).append((us, algo))
            print("  %s %d ranks %5d KiB %-4s %9.1f us, cores %s" % (kind, ranks, size >> 10, algo, us, where))
    sys.stdout.flush()


# The hand-off probe's rates, which take the median of a placement's fast
# samples (median_rates).
HANDOFF_FIELDS = ("write", "copy_out", "slot_fold")


def median_rates(memory, net, floors):
    """The field-by-field median of a placement's samples; for the hand-off
    rates, of those at least half that median. The probe falls now and then
    to a slow mode (an L3-tier slot write at 4.0-4.6 GB/s against 25-31)
    that strata's runs do not follow (2 ranks at 1 MiB ran 106-388 us beside
    a slow sample, 189-436 us between fast ones; docs/sim/calibration.txt,
    2026-11-28 13:00-13:32). Their best is no better: one L2-tier slot write
    at 19.5 GB/s among 6.2-7.0 predicted 2 ranks at 64 KiB at half their
    measured median (2026-11-29, run G)."""
    med = statistics.median

    def fast_median(xs):
        return med([x for x in xs if x >= med(xs) / 2])

    def sweep(curves):
        """The point-by-point median of the samples' sweeps."""
        return [(points[0][0], med([r for _, r in points])) for points in zip(*curves)]

    pick = lambda k: sweep if k == "sweep" else fast_median if k in HANDOFF_FIELDS else med  # noqa: E731
    tiers = [{k: (t0[k] if k == "cache" else pick(k)([m["tiers"][j][k] for m in memory])) for k in t0}
             for j, t0 in enumerate(memory[0]["tiers"])]
    for t in tiers:
        if "sweep" in t:
            t["shares"] = l3_shares(t.pop("sweep"), t["fold"], tiers[-1]["fold"])
    nts = [m["nt"] for m in memory if "nt" in m]  # none in logs from before it was measured
    r = {"tiers": tiers, "nt": {k: fast_median([x[k] for x in nts]) for k in HANDOFF_FIELDS} if nts else None,
         "ring": {n: med([m["ring"][n] for m in memory]) for n in memory[0]["ring"]},
         "shared": {n: med([m["shared"][n] for m in memory]) for n in memory[0].get("shared", {})},
         "floor": med(floors)}
    if net:  # none where no tcp configuration ran (--transports shm)
        r.update(net_gbps={s: med([x["net_gbps"][s] for x in net]) for s in net[0]["net_gbps"]},
                 net_lat=med([x["net_lat"] for x in net]))
    return r


# Logs from before calibrate.py printed it were measured with 8 MiB, the
# default until 2026-11-29.
SHM_NT_LINE = "strata-perf's shared-memory connectors time their slot stores from %d bytes (STRATA_SHM_NT_BYTES)"
OLD_SHM_NT_BYTES = 8 << 20


def shm_nt_bytes(args):
    """STRATA_SHM_NT_BYTES as strata-perf will run with it: the environment's,
    else the registry's default (strata-info --params)."""
    if os.environ.get("STRATA_SHM_NT_BYTES"):
        return int(os.environ["STRATA_SHM_NT_BYTES"])
    table = run([os.path.join(args.build, "src/strata-info"), "--params"])
    return int(re.search(r"`STRATA_SHM_NT_BYTES` \| \w+ \| `(\d+)`", table).group(1))


def measure_all(args):
    samples, runs, floors = {"memory": {}, "net": {}}, {}, {}
    hosts = Hosts(2, tag="strsim") if "tcp" in args.transports else None
    try:
        for i in range(args.repeat):
            repeat(args, hosts, i, samples, runs)
            fs = [latency_floor(args) for _ in range(3)]
            add_floors(floors, fs)
            print("  placement probe: %s us (strata-latency-floor)" % " ".join("%.3f" % f for f in fs))
    finally:
        if hosts:
            hosts.close()
    return samples, runs, floors


def parse_log(text):
    """samples, runs and floors as measure_all() returns them, and the
    STRATA_SHM_NT_BYTES the run had, from the lines main(), repeat() and
    measure_all() printed. Logs from before the input rate was
    measured read it as the copy rate, the fill rate the sim then used; logs
    without the placement probe's lines leave the hop's latency to main()'s
    defaults."""
    samples, runs, floors = {"memory": {}, "net": {}}, {}, {}
    shm_nt = OLD_SHM_NT_BYTES
    placed = lambda where: None if where == "None" else where  # noqa: E731
    num = r"([\d.]+)"
    tier = re.compile(r"  (DRAM|(\d+) MiB cache), cores (\w+): copy %s, fold %s, output from cache %s"
                      r"(?:, input into cache %s)?; hand-off: slot write %s, copy-out %s, fold %s" % ((num,) * 7))
    sample = None
    for line in text.splitlines():
        m = re.match(re.escape(SHM_NT_LINE).replace("%d", r"(\d+)"), line)
        if m:
            shm_nt = int(m.group(1))
            continue
        m = tier.match(line)
        if m:
            t = dict(zip(("copy", "fold", "output", "input", "write", "copy_out", "slot_fold"),
                         (float(x) if x else None for x in m.groups()[3:])))
            if t["input"] is None:
                t["input"] = t["copy"]
            t["cache"] = None if m.group(1) == "DRAM" else int(m.group(2)) << 20
            if sample is None or sample["tiers"][-1]["cache"] is None:
                sample = {"tiers": [], "ring": {}}
                samples["memory"].setdefault(placed(m.group(3)), []).append(sample)
            sample["tiers"].append(t)
            continue
        m = re.match(r"  past the (\d+) MiB cache's eighth: fold (.*) GB/s", line)
        if m:
            points = re.findall(r"%s MiB %s" % (num, num), m.group(2))
            next(t for t in sample["tiers"] if t["cache"] == int(m.group(1)) << 20)["sweep"] = \
                [(int(float(w) * (1 << 20)), float(r)) for w, r in points]
            continue
        m = re.match(r"  non-temporal slots, cores \w+: slot write %s, copy-out %s, fold %s" % (num, num, num), line)
        if m:
            sample["nt"] = dict(zip(HANDOFF_FIELDS, (float(x) for x in m.groups())))
            continue
        m = re.match(r"  (\d+) processes on \d+ cores: %s us a hop(?:.*?fold at %s of)?" % (num, num), line)
        if m:
            sample["ring"][int(m.group(1))] = float(m.group(2))
            if m.group(3):
                sample.setdefault("shared", {})[int(m.group(1))] = float(m.group(3))
            continue
        m = re.match(r"  tcp, cores (\w+): %s us one way; each way with both at once: (.*) GB/s" % num, line)
        if m:
            rates = {int(k) << 10: float(g) for k, g in re.findall(r"(\d+) KiB %s" % num, m.group(3))}
            samples["net"].setdefault(placed(m.group(1)), []).append({"net_gbps": rates, "net_lat": float(m.group(2))})
            continue
        # Logs from before the rate per size: 16 MiB's for every size.
        m = re.match(r"  tcp, cores (\w+): %s GB/s each way.*?, %s us one way" % (num, num), line)
        if m:
            samples["net"].setdefault(placed(m.group(1)), []).append(
                {"net_gbps": {s: float(m.group(2)) for s in SIZES}, "net_lat": float(m.group(3))})
            continue
        m = re.match(r"  (shm|tcp) (\d+) ranks +(\d+) KiB (\w+) +%s us, cores (\w+)" % num, line)
        if m:
            key = (m.group(1), int(m.group(2)), int(m.group(3)) << 10)
            runs.setdefault(placed(m.group(6)), {}).setdefault(key, []).append((float(m.group(5)), m.group(4)))
            continue
        m = re.match(r"  placement probe: ([\d. ]+) us", line)
        if m:
            add_floors(floors, [float(f) for f in m.group(1).split()])
    return samples, runs, floors, shm_nt


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build", help="where strata-perf and strata-membw are")
    p.add_argument("--sim", default="build-sim/bench/sim/strata-sim")
    # 200: with 20 (and 3 warm-up calls) 2 ranks at 1 MiB measured 140-360 us
    # in a dozen runs where 200 measured 76-95 us a minute later.
    p.add_argument("--iters", type=int, default=200, help="timed calls per strata-perf run (a tenth more warm up)")
    p.add_argument("--repeat", type=int, default=8, help="repeats, each measuring the rates and every configuration")
    p.add_argument("--replay", metavar="LOG", help="measure nothing: predict a log this script printed (one run's "
                   "section of docs/sim/calibration.txt) with the sim given")
    p.add_argument("--sizes", type=lambda v: [parse_size(x) for x in v.split(",")], default=SIZES,
                   help="allreduce sizes to measure, e.g. 1M,2M,3M (default 64K,1M,16M)")
    p.add_argument("--congestion", default="reno",
                   help="STRATA_TCP_CONGESTION of the tcp runs and probes (default reno; '' for the kernel's: "
                   "net_sample says why)")
    p.add_argument("--transports", type=lambda v: v.split(","), default=["shm", "tcp"],
                   help="configurations to measure: shm (2, 4 and 8 ranks), tcp (2 namespaces); default both")
    p.add_argument("--holds", type=float, metavar="MIB", help="with --replay, for a log from before calibrate.py "
                   "measured the L3's shares: the MiB of a set it holds whole (a larger set, that over its size)")
    args = p.parse_args()
    args.perf = os.path.join(args.build, "bench/strata-perf")
    if set(args.transports) - {"shm", "tcp"}:
        p.error("--transports takes shm, tcp or both, not %s" % ",".join(args.transports))
    args.configs = [c for c in CONFIGS if c[0] in args.transports]

    if args.replay:
        samples, runs, floors, args.shm_nt = parse_log(open(args.replay).read())
    else:
        args.shm_nt = shm_nt_bytes(args)
        print(SHM_NT_LINE % args.shm_nt)
        print("tcp connections' congestion control: %s" % (args.congestion or "the kernel's default"))
        samples, runs, floors = measure_all(args)
    print()
    print("| cores | transport | ranks | size | algorithm | runs | measured median (us) | runs' spread | "
          "predicted (us) | predicted / median | runs within 25% of predicted | without hand-offs / median |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for where in ("near", "far"):
        memory, net = samples["memory"].get(where), samples["net"].get(where)
        if not memory or where not in runs or (not net and any(kind == "tcp" for kind, _, _ in runs[where])):
            print("| %s | no rates or runs in this placement |  |  |  |  |  |  |  |  |  |  |" % where)
            continue
        # The hop's latency: the probes taken between repeats in this placement.
        r = median_rates(memory, net, floors.get(where) or [0.07 if where == "near" else 0.35])
        if args.holds:
            r["tiers"][-2].setdefault("shares", [(args.holds * (1 << 20), 1.0)])
        for kind, ranks, size in sorted(runs[where], key=lambda k: (CONFIGS.index(k[:2]), k[2])):
            got = runs[where][(kind, ranks, size)]
            times = sorted(us for us, _ in got)
            algo = got[0][1]
            us = statistics.median(times)
            pred = predict(args, kind, ranks, algo, size, model_flags(kind, ranks, size, r))
            plain = predict(args, kind, ranks, algo, size, model_flags(kind, ranks, size, r, handoffs=False))
            print("| %s | %s | %d | %d KiB | %s | %d | %.1f | %.2f | %.1f | %.2f | %d of %d | %.2f |"
                  % (where, kind, ranks, size >> 10, algo, len(times), us, times[-1] / times[0], pred, pred / us,
                     sum(0.75 <= pred / t <= 1.25 for t in times), len(times), plain / us))


if __name__ == "__main__":
    main()
