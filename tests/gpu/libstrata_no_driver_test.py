#!/usr/bin/env python3
"""libstrata.so must load where no CUDA driver is installed: it names neither
libcuda (the driver, reached only through cudaGetDriverEntryPointByVersion)
nor libcudart (linked statically), and loading it loads no libcuda.

    libstrata_no_driver_test.py <path to libstrata.so> <b_sanitize>
"""
import ctypes
import re
import subprocess
import sys


def main(lib, sanitize):
    dynamic = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True, text=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    cuda = [n for n in needed if n.startswith(("libcuda.", "libcudart."))]
    if cuda:
        print(f"FAIL: {lib} needs {cuda}: the driver must come through "
              f"cudaGetDriverEntryPointByVersion and the runtime from libcudart_static.a")
        return 1
    print(f"NEEDED: {', '.join(needed)}")
    ldd = subprocess.run(["ldd", lib], check=True, capture_output=True, text=True).stdout
    missing = [line.strip() for line in ldd.splitlines() if "not found" in line]
    if missing:
        print(f"FAIL: ldd {lib}: {missing}")
        return 1
    if sanitize != "none":
        print(f"SKIP: the build uses -fsanitize={sanitize}; python cannot load an instrumented libstrata")
        return 77
    strata = ctypes.CDLL(lib)
    strata.strata_result_string.restype = ctypes.c_char_p
    if strata.strata_result_string(8) != b"CUDA error":
        print(f"FAIL: strata_result_string(STRATA_ERR_CUDA) = {strata.strata_result_string(8)!r}")
        return 1
    with open("/proc/self/maps") as maps:
        loaded = sorted({line.split()[-1] for line in maps if "/libcuda.so" in line})
    if loaded:
        print(f"FAIL: loading {lib} loaded {loaded}")
        return 1
    try:
        ctypes.CDLL("libcuda.so.1")
        print(f"OK: loaded {lib} without loading the driver that this machine has")
    except OSError:
        print(f"OK: loaded {lib} on a machine where libcuda.so.1 cannot be loaded")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
