#!/usr/bin/env python3
"""`pip install .` into a fresh venv (--system-site-packages, so numpy and
Debian's torch are seen), then, from outside the source tree and with no
PYTHONPATH or LD_LIBRARY_PATH: `python3 -m strata.info` names the version,
the transports and the torch backend, and two ranks of the installed package
allreduce through its C library and through torch.distributed's "strata"
backend, checked against sums computed here.

    pip_install_test.py SOURCE_ROOT SANITIZE
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../common"))
from ports import free_port  # noqa: E402

RANK_SCRIPT = r'''
import os, sys
import numpy as np
import strata
with strata.Comm.init_env() as comm:
    x = np.arange(1000, dtype=np.float64) * (comm.rank + 1)
    comm.allreduce(x)
    n = comm.size
    assert np.array_equal(x, np.arange(1000, dtype=np.float64) * n * (n + 1) / 2), x[:4]
if sys.argv[1] == "torch":
    import torch, torch.distributed as dist
    import strata.torch
    dist.init_process_group("strata")
    t = torch.full((100,), float(dist.get_rank() + 1), dtype=torch.bfloat16)
    dist.all_reduce(t)
    n = dist.get_world_size()
    assert torch.equal(t, torch.full((100,), float(n * (n + 1) / 2), dtype=torch.bfloat16)), t[:4]
    dist.destroy_process_group()
print("rank", os.environ["RANK"], "ok from", strata.__file__, flush=True)
'''


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw).stdout


def main(source, sanitize):
    if sanitize != "none":
        print("skipped: pip builds its own release libstrata, which the release leg of the suite tests")
        return 77
    work = tempfile.mkdtemp(prefix="strata-pip-")
    try:
        venv = os.path.join(work, "venv")
        run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv])
        py = os.path.join(venv, "bin", "python3")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
        # Offline (Debian's meson-python, no package index): no build isolation.
        # One compile job: meson test runs another test beside this one.
        # Unoptimised: what this test checks is the package (its files, its
        # library found from outside the tree, its torch backend), and the
        # release leg tests the optimised library; -O0 takes a quarter off
        # the compile (torch's headers: 13 s a file against 17).
        out = run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                   "--config-settings=builddir=" + os.path.join(work, "build"),
                   "--config-settings=setup-args=-Doptimization=0",
                   "--config-settings=compile-args=-j1", source], env=env, cwd=work)
        print(out[-2000:])
        info = run([py, "-m", "strata.info"], env=env, cwd=work)
        print(info)
        site = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"], env=env).strip()
        failures = []
        for needle in ("strata 0.", "package at " + site, "transports: shm", "tcp"):
            if needle not in info:
                failures.append("strata.info does not say %r" % needle)
        has_torch = subprocess.run([py, "-c", "import torch"], env=env).returncode == 0
        if has_torch and 'backend "strata" registered' not in info:
            failures.append("torch is installed but strata.info does not report the backend")
        script = os.path.join(work, "rank.py")
        with open(script, "w") as f:
            f.write(RANK_SCRIPT)
        port = free_port()
        procs = [subprocess.Popen([py, script, "torch" if has_torch else "plain"], cwd=work, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  env=dict(env, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                                           MASTER_PORT=str(port), OMP_NUM_THREADS="1"))
                 for r in range(2)]
        for r, p in enumerate(procs):
            try:
                out, _ = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                failures.append("rank %d did not finish within 120 s" % r)
                continue
            print(out)
            if p.returncode != 0 or ("ok from " + os.path.join(site, "strata")) not in out:
                failures.append("rank %d of the installed package failed (exit %d)" % (r, p.returncode))
        for f in failures:
            print("FAIL", f)
        return 1 if failures else 0
    except subprocess.CalledProcessError as e:
        print("FAIL %s exited %d:\n%s" % (" ".join(e.cmd), e.returncode, (e.stdout or "")[-4000:]))
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
