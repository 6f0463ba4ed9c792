#!/usr/bin/env python3
"""Runs meson tests from a build made on another machine (scripts/gpu-carry.sh --build).

The GPU machine has no meson build of its own to run `meson test` in; the
carried build holds tests.json (meson introspect --tests of the suites gpu
and nccl) and origin (the source and build directories there). Each test
runs as meson would run it, its command's paths moved from those
directories to this checkout and the carried build, with its env and
timeout, one at a time. Prints meson's result lines and counts, so that
gpu-check.sh reads both the same way; exits 1 if any test failed.

    run_carried_tests.py CARRIED_BUILD [--only NAME] [--wrapper 'CMD ARGS'] [--cap SECONDS]
                         [--env KEY=VALUE]...
    run_carried_tests.py CARRIED_BUILD --list [--suite SUITE]   (the tests' names, a line each)

--cap shortens every test's timeout to at most SECONDS (meson's are sized
for CI's two cores), so that one hung test leaves time for the others.
--env sets a variable for every test over the test's own (a variant of a
test: CUDA_MODULE_LOADING=EAGER). A test past its timeout first has every
thread's stack of each of its processes printed by gdb (it runs in a process
group of its own, its forked ranks with it), live, which is what a hang
needs and costs no core files; then SIGABRT, so that where core dumps are
on each process leaves one; SIGKILL 10 s later. Killed itself (SIGTERM,
SIGINT: a deadline around this script), it kills the running test's
processes first, so no hung rank outlives it holding the GPU.
"""
import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77  # meson's exit status for a skipped test


def group_pids(pgid):
    """The processes of process group `pgid`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:  # after the name: state, ppid, pgrp
                pids.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return sorted(pids)


def stacks(pgid, seconds=30):
    """Every thread's stack of each process in group `pgid`, from gdb attached live."""
    gdb = shutil.which("gdb") or shutil.which("cuda-gdb")
    if not gdb:
        return "# no gdb here: no stacks\n"
    text = ""
    for pid in group_pids(pgid):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        text += "==== stacks of pid %d: %s\n" % (pid, cmdline[:200])
        try:
            r = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt"],
                               capture_output=True, text=True, timeout=seconds)
            text += "\n".join(line for line in r.stdout.splitlines() if not line.startswith("[New LWP")) + "\n"
        except subprocess.TimeoutExpired:
            text += "# gdb did not finish within %d s\n" % seconds
    return text


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build", help="the carried build (third_party/gpu-build)")
    parser.add_argument("--only", help="run only the test of this name")
    parser.add_argument("--wrapper", default="", help="command every test runs under")
    parser.add_argument("--cap", type=float, default=0, help="longest timeout of any test (0: meson's own)")
    parser.add_argument("--list", action="store_true", help="print the tests' names instead of running them")
    parser.add_argument("--suite", help="only the tests of this suite")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="a variable for every test, over the test's own")
    args = parser.parse_args()
    extra_env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            sys.exit("--env wants KEY=VALUE, not %r" % item)
        extra_env[key] = value

    running = []  # the test's process, while one runs

    def killed(signum, _frame):
        for proc in running:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        print("run_carried_tests: ended by signal %d; the running test's processes were killed" % signum, flush=True)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, killed)
    signal.signal(signal.SIGINT, killed)
    build = os.path.abspath(args.build)
    root = os.path.dirname(os.path.dirname(build))  # <checkout>/third_party/gpu-build
    with open(os.path.join(build, "origin")) as f:
        origin_src, origin_build = f.read().split()[:2]
    with open(os.path.join(build, "tests.json")) as f:
        tests = json.load(f)
    if args.suite:
        tests = [t for t in tests if args.suite in t["suite"]]
    if args.only:
        tests = [t for t in tests if t["name"] == args.only]
        if not tests:
            sys.exit("no test named %s in %s" % (args.only, build))
    if args.list:
        for t in tests:
            print(t["name"])
        return

    def moved(word):
        if not word.startswith("/"):
            return word
        # Interpreters by name: the GPU machine's python3 is not this one's.
        if os.path.basename(word) == "python3":
            return "python3"
        # build/../tests/x.py is a source file. The build directory lies
        # inside the source tree: map it first.
        word = os.path.normpath(word)
        for old, new in ((origin_build, build), (origin_src, root)):
            if word == old or word.startswith(old + "/"):
                return new + word[len(old):]
        return word

    def moved_env(key, value):
        value = ":".join(moved(part) for part in value.split(":"))
        if key == "LD_LIBRARY_PATH" and os.environ.get(key):
            value += ":" + os.environ[key]  # the carried libraries
        return value

    counts = {"Ok": 0, "Fail": 0, "Skipped": 0, "Timeout": 0}
    for i, t in enumerate(tests, 1):
        cmd = shlex.split(args.wrapper) + [moved(w) for w in t["cmd"]]
        env = dict(os.environ)
        env.update({k: moved_env(k, v) for k, v in (t.get("env") or {}).items()})
        env.update(extra_env)
        cwd = moved(t["workdir"]) if t.get("workdir") else build
        limit = t.get("timeout") or 30
        if args.cap > 0:
            limit = min(limit, args.cap)
        start = time.monotonic()
        print("==== %s: %s%s" % (t["name"], "".join("%s=%s " % kv for kv in extra_env.items()), " ".join(cmd)),
              flush=True)
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        running[:] = [proc]
        hung = ""
        try:
            output, _ = proc.communicate(timeout=limit)
            status = proc.returncode
        except subprocess.TimeoutExpired:
            status = None
            output = b""
            hung = stacks(proc.pid)
            for sig, grace in ((signal.SIGABRT, 10), (signal.SIGKILL, None)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    pass  # already gone: collect what it printed
                try:
                    output, _ = proc.communicate(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
        running.clear()
        seconds = time.monotonic() - start
        if status is None:
            result = "TIMEOUT"
            counts["Timeout"] += 1
        elif status == 0:
            result = "OK"
            counts["Ok"] += 1
        elif status == SKIP:
            result = "SKIP"
            counts["Skipped"] += 1
        else:
            result = "FAIL"
            counts["Fail"] += 1
        sys.stdout.write(output.decode(errors="replace"))
        sys.stdout.write(hung)
        print("%d/%d %s / %s %s %.2fs%s" % (i, len(tests), "+".join(t["suite"]), t["name"], result,
                                            seconds, "" if status in (None, 0, SKIP) else " exit status %d" % status),
              flush=True)
    print()
    for name, n in counts.items():
        print("%s: %d" % (name, n))
    sys.exit(1 if counts["Fail"] or counts["Timeout"] else 0)


if __name__ == "__main__":
    main()
