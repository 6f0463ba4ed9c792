#!/usr/bin/env python3
"""strata-info's default output says whether CUDA is built in and, if so, the
runtime and driver versions and either the GPUs or why none is usable.

    strata_info_cuda_test.py <path to strata-info> <true|false: cuda_enabled>
"""
import subprocess
import sys


def main(tool, built):
    out = subprocess.run([tool], check=True, capture_output=True, text=True, timeout=60).stdout
    lines = out.splitlines()
    cuda = [i for i, line in enumerate(lines) if line.startswith("cuda: ")]
    if len(cuda) != 1:
        print(f"FAIL: expected one 'cuda: ' line in:\n{out}")
        return 1
    line = lines[cuda[0]]
    print(line)
    if built == "false":
        ok = line.startswith("cuda: not built in (") and "built without CUDA" in line
    elif "no usable GPU: " in line:
        ok = line.startswith("cuda: built in, runtime ") and ", driver " in line and "cuda" in line.split("no usable GPU: ")[1].lower()
    else:
        gpus = [g for g in lines[cuda[0] + 1:] if g.startswith("  GPU ")]
        ok = line.startswith("cuda: built in, runtime ") and bool(gpus)
        print("\n".join(gpus))
    if not ok:
        print(f"FAIL: the cuda line does not say what was expected (built in: {built}):\n{out}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
