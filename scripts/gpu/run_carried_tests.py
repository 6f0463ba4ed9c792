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
    run_carried_tests.py CARRIED_BUILD --list [--suite SUITE]   (the tests' names, a line each)

--cap shortens every test's timeout to at most SECONDS (meson's are sized
for CI's two cores), so that one hung test leaves time for the others. A
test past its timeout gets SIGABRT (its forked ranks too: it runs in a
process group of its own), so that where core dumps are on, each process
leaves one that shows where it waited; SIGKILL follows 10 s later.
"""
import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time

SKIP = 77  # meson's exit status for a skipped test


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build", help="the carried build (third_party/gpu-build)")
    parser.add_argument("--only", help="run only the test of this name")
    parser.add_argument("--wrapper", default="", help="command every test runs under")
    parser.add_argument("--cap", type=float, default=0, help="longest timeout of any test (0: meson's own)")
    parser.add_argument("--list", action="store_true", help="print the tests' names instead of running them")
    parser.add_argument("--suite", help="only the tests of this suite")
    args = parser.parse_args()
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
        cwd = moved(t["workdir"]) if t.get("workdir") else build
        limit = t.get("timeout") or 30
        if args.cap > 0:
            limit = min(limit, args.cap)
        start = time.monotonic()
        print("==== %s: %s" % (t["name"], " ".join(cmd)), flush=True)
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=limit)
            status = proc.returncode
        except subprocess.TimeoutExpired:
            status = None
            output = b""
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
        print("%d/%d %s / %s %s %.2fs%s" % (i, len(tests), "+".join(t["suite"]), t["name"], result,
                                            seconds, "" if status in (None, 0, SKIP) else " exit status %d" % status),
              flush=True)
    print()
    for name, n in counts.items():
        print("%s: %d" % (name, n))
    sys.exit(1 if counts["Fail"] or counts["Timeout"] else 0)


if __name__ == "__main__":
    main()
