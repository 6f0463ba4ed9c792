#!/usr/bin/env bash
# Prepares what a GPU machine needs from here, before this checkout is sent
# there (it has no network, and no hwloc, GoogleTest or PMIx to build with):
#   third_party/nccl-tests  nccl-tests' sources (git-ignored)
#   third_party/gpu-build   with --build: strata built here with CUDA for
#                           sm_80/sm_90, nccl-tests built against it for
#                           sm_90, the gpu and nccl suites' programs and what
#                           meson would run them with, and the shared
#                           libraries they load beyond glibc and libstdc++,
#                           packed as third_party/gpu-build.tar.xz
# Send them (carry: third_party/nccl-tests, third_party/gpu-build.tar.xz);
# scripts/gpu-check.sh unpacks and uses a carried build where one is, and
# builds there otherwise.
#   usage: scripts/gpu-carry.sh [--build] [NCCL_TESTS_DIR]
# NCCL_TESTS_DIR defaults to $NCCL_TESTS_SRC, then the shared third_party copy
# beside the checkout (../shared/third_party/nccl-tests). --build builds in
# $GPU_CARRY_BUILD (default build-gpu).
set -euo pipefail
cd "$(dirname "$0")/.."
build=0
if [ "${1:-}" = "--build" ]; then
  build=1
  shift
fi
src=${1:-${NCCL_TESTS_SRC:-../shared/third_party/nccl-tests}}
if [ ! -f "$src/src/common.cu" ]; then
  echo "gpu-carry: no nccl-tests at '$src' (src/common.cu missing): pass its directory" >&2
  exit 1
fi
rm -rf third_party/nccl-tests
mkdir -p third_party
cp -R "$src" third_party/nccl-tests
# The shared copy is read-only; this one must be removable by the next run.
chmod -R u+w third_party/nccl-tests
version=$(sed -n 's/^#define NCCL_TESTS_VERSION "\(.*\)"/\1/p' third_party/nccl-tests/src/common.h)
echo "gpu-carry: nccl-tests ${version:-?} copied to $PWD/third_party/nccl-tests ($(du -sh third_party/nccl-tests | cut -f1))"
[ $build -eq 1 ] || { echo "gpu-carry: send third_party/nccl-tests with the checkout (it is git-ignored)"; exit 0; }

dir=${GPU_CARRY_BUILD:-build-gpu}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
PATH=$(dirname "$nvcc"):$PATH
# The same configuration gpu-check.sh builds there.
[ -f "$dir/build.ninja" ] || meson setup "$dir" -Dcuda=enabled -Dbuildtype=release \
  -Dtorch=disabled -Dbenchmarks=disabled -Dmpi=disabled
ninja -C "$dir"
libnccl=$(readlink -f "$dir/bindings/nccl/libnccl.so.2")
NCCL_TESTS_SRC=$PWD/third_party/nccl-tests NCCL_TESTS_ARCH=sm_90 NCCL_TESTS_OPT=-O3 NVCC=$nvcc \
  tests/nccl/nccl_tests_build.sh "$PWD" "$PWD/bindings/nccl" "$libnccl" "$PWD/$dir/nccl-tests"

out=third_party/gpu-build
rm -rf "$out"
mkdir -p "$out/lib"
# The suites' tests as meson would run them; gpu-check.sh maps this
# checkout's paths (source and build) to where the copy lands.
meson introspect "$dir" --tests | python3 -c '
import json, sys
tests = []
for t in json.load(sys.stdin):
    t["suite"] = [s.split(":")[-1] for s in t["suite"]]  # strata:gpu
    if {"gpu", "nccl"} & set(t["suite"]) and t["name"] != "nccl_tests_build":
        tests.append(t)
json.dump(tests, sys.stdout, indent=1)' >"$out/tests.json"
dirty=""
git diff --quiet HEAD -- || dirty=" with uncommitted changes"
printf '%s\n%s\n%s\n' "$PWD" "$(cd "$dir" && pwd)" "$(git rev-parse --short HEAD)$dirty" >"$out/origin"
# What the tests run, the GPU programs, strata-topo and strata-info, the
# libraries they load from the build, and nccl-tests' programs, each at the
# same place under $out as under the build (meson's rpaths are relative).
files=$(python3 -c '
import json, os, sys
for t in json.load(open(sys.argv[1])):
    for word in map(os.path.normpath, t["cmd"]):
        if word.startswith(sys.argv[2] + "/"):
            print(word[len(sys.argv[2]) + 1:])' "$out/tests.json" "$(cd "$dir" && pwd)" | sort -u)
files="$files bench/strata-gpu-allreduce bench/strata-gpu-kernels src/strata-topo src/strata-info"
files="$files $(cd "$dir" && ls -d src/libstrata.so* bindings/nccl/libnccl.so* nccl-tests/*_perf | grep -v '\.p$')"
for f in $files; do
  mkdir -p "$out/$(dirname "$f")"
  cp -P "$dir/$f" "$out/$f"
  [ -L "$out/$f" ] || strip --strip-debug "$out/$f"
done
# hwloc finds PCI devices (the GPUs among them) through a plugin;
# gpu-check.sh points HWLOC_PLUGINS_PATH at this copy.
plugin=$(pkg-config --variable=libdir hwloc)/hwloc/hwloc_pci.so
mkdir -p "$out/lib/hwloc"
cp "$plugin" "$out/lib/hwloc/"
# Shared libraries from outside the build, except the C and C++ runtimes
# (the GPU machine's are newer, and its torch needs its own).
{ for f in $files; do [ -L "$dir/$f" ] || ldd "$dir/$f"; done; ldd "$plugin"; } |
  awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
  grep -vE '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  grep -v "$(cd "$dir" && pwd)" |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
# Packed: the folder alone comes near the 64 MiB a GPU machine's copy of
# the checkout may hold; the GPU code compresses ten to one.
tar cJf "$out.tar.xz" -C "$(dirname "$out")" "$(basename "$out")"
echo "gpu-carry: strata (CUDA, $(git rev-parse --short HEAD)) and nccl-tests built; $out holds" \
     "$(find "$out" -type f | wc -l) files, $(du -sh "$out" | cut -f1) ($(ls "$out/lib" | wc -l) shared libraries and hwloc's PCI plugin)," \
     "$out.tar.xz $(du -sh "$out.tar.xz" | cut -f1); send third_party/nccl-tests and $out.tar.xz with the checkout (git-ignored)"
