"""Starts a torch.distributed test script as NRANKS real processes, the way
torchrun starts them (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
MASTER_PORT), each running `script --rank`, and waits for them with a
deadline.

    main(script): the test's entry point; argv is NRANKS SANITIZE.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../common"))
from ports import free_port  # noqa: E402

TIMEOUT = 240


def launch(script, nranks):
    port = free_port()
    procs = []
    for rank in range(nranks):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(nranks), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, script, "--rank"], env=env))
    failed = False
    for rank, p in enumerate(procs):
        try:
            rc = p.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            print("rank %d did not finish within %d s" % (rank, TIMEOUT))
            return 1
        if rc != 0:
            print("rank %d exited with %d" % (rank, rc))
            failed = True
    return 1 if failed else 0


def expect_error(failures, what, call, needle):
    """call() must raise torch's error (RuntimeError or ValueError) naming
    `needle`; otherwise a failure is recorded."""
    try:
        call()
        failures.append("%s: no error" % what)
    except (RuntimeError, ValueError) as e:
        if needle not in str(e):
            failures.append("%s: error %r does not mention %r" % (what, str(e), needle))


def finish(dist, rank, failures):
    """A rank's end: its groups destroyed, its first failures printed, and
    its exit status saying whether there were any."""
    dist.destroy_process_group()
    for f in failures[:20]:
        print("rank %d: FAIL %s" % (rank, f), flush=True)
    sys.exit(1 if failures else 0)


def main(script, child):
    """Runs `child` in a rank process, else launches the ranks (skipping, with
    exit code 77, under a sanitizer: the uninstrumented python3 cannot load
    an instrumented extension; the release build runs the test)."""
    if sys.argv[1:] == ["--rank"]:
        child()
    elif sys.argv[2] != "none":
        print("skipped: this build uses -fsanitize=%s, and the uninstrumented python3 cannot load an "
              "instrumented extension; the release build runs this test" % sys.argv[2])
        sys.exit(77)
    else:
        sys.exit(launch(script, int(sys.argv[1])))
