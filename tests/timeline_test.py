#!/usr/bin/env python3
"""STRATA_TIMELINE on a real 4-rank job (strata-perf): every rank writes a
valid trace-event JSON file holding every collective it issued (sequence
numbers 1..N, none missing, the same N on every rank), each with its span on
a channel track and its steps (peers and bytes), and scripts/timeline-merge
joins them into one valid trace with the four ranks as processes and every
call of every rank in it."""
import glob
import json
import os
import subprocess
import sys
import tempfile

perf, merge = sys.argv[1:3]

with tempfile.TemporaryDirectory() as tmp:
    prefix = os.path.join(tmp, "run")
    env = dict(os.environ, STRATA_TIMELINE=prefix)
    r = subprocess.run([perf, "--ranks", "4", "-b", "8", "-e", "64K", "-f", "8", "-n", "3", "-w", "1"],
                       env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"strata-perf failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    files = sorted(glob.glob(prefix + ".*.rank*.json"))
    if len(files) != 4:
        sys.exit(f"expected 4 rank files, got {files}")
    counts = set()
    for path in files:
        events = json.load(open(path))  # must be valid JSON as written
        calls = [e for e in events if e.get("cat") == "call"]
        seqs = sorted(e["args"]["seq"] for e in calls)
        if not seqs or seqs != list(range(1, len(seqs) + 1)):
            sys.exit(f"{path}: call sequence numbers {seqs[:5]}... are not 1..N")
        spans = {int(e["name"][1:]) for e in events if e.get("cat") == "channel" and e["name"] != "p2p"}
        if spans != set(seqs):
            sys.exit(f"{path}: channel spans for {len(spans)} operations, calls {len(seqs)}")
        steps = [e for e in events if e.get("cat") == "step"]
        if {e["args"]["seq"] for e in steps} != set(seqs):
            sys.exit(f"{path}: steps for {len({e['args']['seq'] for e in steps})} operations, calls {len(seqs)}")
        for e in steps:
            a = e["args"]
            peers = [a[k] for k in ("from", "to") if k in a]  # none: reduceAll reads every peer's slot
            if (not peers and e["name"] != "reduceAll") or any(p not in range(4) for p in peers) or \
                    a["bytes"] <= 0 or e["dur"] < 0:
                sys.exit(f"{path}: a step event does not hold together: {e}")
        for e in calls:
            a = e["args"]
            if e["dur"] < 0 or not a["ok"] or not a["algorithm"] or a["channels"] < 1 or a["transports"] != "shm":
                sys.exit(f"{path}: a call event does not hold together: {e}")
            if e["name"] != a["call"].split("(")[0] + " #" + str(a["seq"]):
                sys.exit(f"{path}: event {e['name']} is not call {a['call']} #{a['seq']}")
        if sum(1 for e in calls if e["name"].startswith("allreduce #")) < 10:
            sys.exit(f"{path}: strata-perf's allreduces are missing")
        counts.add(len(seqs))
    if len(counts) != 1:
        sys.exit(f"ranks issued different numbers of calls: {counts}")
    out = os.path.join(tmp, "merged.json")
    subprocess.run([merge, prefix, "-o", out], check=True, timeout=60)
    merged = json.load(open(out))["traceEvents"]
    pids = {e["pid"] for e in merged}
    calls = sum(1 for e in merged if e.get("cat") == "call")
    if pids != {0, 1, 2, 3} or calls != 4 * counts.pop():
        sys.exit(f"merged trace: processes {pids}, {calls} calls")
    if min(e["ts"] for e in merged if "ts" in e) != 0:
        sys.exit("merged trace does not start at 0")
print("timeline: 4 valid rank files with every call, merged into one valid trace")
