#!/usr/bin/env python3
"""The README's C example compiles against the built library (with the
build's C compiler: a cross build's runs through its binfmt emulator) and,
run as a 2-rank job from torchrun's variables, prints the average of each
rank's values: 1.5 and (0+1)/2."""
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "common"))
from ports import free_port  # noqa: E402

readme, include_dir, lib_dir, sanitize, compiler = sys.argv[1:6]
match = re.search(r"```c\n(.*?)```", open(readme).read(), flags=re.S)
if not match:
    sys.exit("README.md has no ```c example")

with tempfile.TemporaryDirectory() as tmp:
    src, exe = os.path.join(tmp, "example.c"), os.path.join(tmp, "example")
    open(src, "w").write(match.group(1))
    flags = [] if sanitize == "none" else ["-fsanitize=" + sanitize]
    subprocess.run(shlex.split(compiler) + ["-std=c11", "-Wall", "-Werror", src, "-o", exe, "-I" + include_dir,
                    "-L" + lib_dir, "-lstrata", "-Wl,-rpath," + lib_dir] + flags, check=True)
    port = free_port()
    ranks = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))
        ranks.append(subprocess.Popen([exe], env=env, stdout=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=60)[0] for p in ranks]

failed = False
for rank, (p, out) in enumerate(zip(ranks, outputs)):
    expected = "rank %d: 1.5 0.5" % rank
    if p.returncode != 0 or out.strip() != expected:
        print("rank %d: exit %d, printed %r, expected %r" % (rank, p.returncode, out, expected))
        failed = True
sys.exit(1 if failed else 0)
