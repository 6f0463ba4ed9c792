#!/usr/bin/env bash
# Builds NVIDIA's nccl-tests, unchanged, against strata's nccl.h and links
# every *_perf program against strata's libnccl.so.2, then checks that each
# nccl* symbol the programs need is defined by that library. Compiling and
# linking needs nvcc but no GPU; running them is scripts/gpu-check.sh's job.
#
# usage: nccl_tests_build.sh SOURCE_ROOT NCCL_INCLUDE_DIR LIBNCCL OUT_DIR
#   SOURCE_ROOT       strata's checkout (nccl-tests is looked for from it)
#   NCCL_INCLUDE_DIR  the directory of strata's nccl.h
#   LIBNCCL           strata's built libnccl.so.2.x.y
#   OUT_DIR           where objects and programs go (emptied first)
# Environment: NVCC (default: nvcc on PATH, then /usr/local/cuda/bin/nvcc),
# NCCL_TESTS_SRC (an nccl-tests checkout), NCCL_TESTS_ARCH (default sm_90;
# compute_90 builds PTX only, skipping ptxas, which is all a build check needs),
# NCCL_TESTS_JOBS (parallel compiles, default: the CPU count),
# NCCL_TESTS_OPT (optimisation flags, default "-O1 -Xptxas -O1": this only
# proves that the programs build; gpu-check.sh builds them for speed).
# Exit status: 0 built and checked, 77 skipped (no nvcc), 1 failed.
set -uo pipefail

if [ $# -ne 4 ]; then
  echo "usage: $0 SOURCE_ROOT NCCL_INCLUDE_DIR LIBNCCL OUT_DIR" >&2
  exit 2
fi
root=$1 include=$2 libnccl=$3 out=$4
arch=${NCCL_TESTS_ARCH:-sm_90}
jobs=${NCCL_TESTS_JOBS:-$(nproc 2>/dev/null || echo 2)}
read -r -a opt <<<"${NCCL_TESTS_OPT:--O1 -Xptxas -O1}"
tests=(all_reduce all_gather reduce_scatter broadcast sendrecv alltoall gather scatter)

nvcc=${NVCC:-}
if [ -z "$nvcc" ]; then
  nvcc=$(command -v nvcc || true)
  [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
fi
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
  echo "SKIP: no nvcc (NVCC=${NVCC:-unset}, none on PATH, none at /usr/local/cuda/bin): nccl-tests cannot be compiled here"
  exit 77
fi
cxx=${CXX:-g++}

# Where the sources may be: given, carried into the checkout, or in the
# shared folder beside this checkout or beside the one it was cloned from
# (CI clones the working checkout elsewhere).
origin=$(git -C "$root" remote get-url origin 2>/dev/null || true)
[ -d "$origin" ] || origin=""
src=""
for candidate in "${NCCL_TESTS_SRC:-}" "$root/third_party/nccl-tests" "$root/../shared/third_party/nccl-tests" \
                 ${origin:+"$origin/../shared/third_party/nccl-tests"}; do
  if [ -n "$candidate" ] && [ -f "$candidate/src/common.cu" ]; then
    src=$(cd "$candidate" && pwd)
    break
  fi
done
if [ -z "$src" ]; then
  echo "FAIL: no nccl-tests sources: set NCCL_TESTS_SRC, or copy them to $root/third_party/nccl-tests" \
       "(scripts/gpu-carry.sh does), or keep them at $root/../shared/third_party/nccl-tests" \
       "${origin:+(or beside the origin checkout, $origin/../shared)}" >&2
  exit 1
fi
if [ ! -f "$include/nccl.h" ] || [ ! -f "$libnccl" ]; then
  echo "FAIL: strata's nccl.h ($include) or libnccl ($libnccl) is missing" >&2
  exit 1
fi
libdir=$(cd "$(dirname "$libnccl")" && pwd)
if [ ! -e "$libdir/libnccl.so" ]; then
  echo "FAIL: $libdir has no libnccl.so for -lnccl to find" >&2
  exit 1
fi

rm -rf "$out" && mkdir -p "$out" || exit 1
# nccl-tests' own flags (src/common.mk, src/Makefile with MPI=0), our header
# directory first: the CUDA toolkit's include directory, which nvcc adds
# after ours, may hold NVIDIA's nccl.h.
nvflags=(-gencode="arch=compute_${arch#*_},code=$arch" -std=c++17 --extended-lambda -DNCCL_OS_LINUX
         "-I$include" "-I$src/os" "${opt[@]}")
echo "nccl-tests from $src ($(sed -n 's/^#define NCCL_TESTS_VERSION "\(.*\)"/\1/p' "$src/src/common.h"))," \
     "$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/nvcc \1/p'), $arch, $jobs jobs"

# The header the programs see must be ours.
printf '#include "nccl.h"\nNCCL_SUFFIX NCCL_MAJOR.NCCL_MINOR.NCCL_PATCH\n' >"$out/which_nccl.cu"
seen=$("$nvcc" "${nvflags[@]}" -E "$out/which_nccl.cu" 2>&1 | tail -n 1)
case "$seen" in
  '"strata"'*) echo "nccl.h: strata's ($seen)" ;;
  *) echo "FAIL: the programs would see another nccl.h (NCCL_SUFFIX and version: $seen)" >&2; exit 1 ;;
esac

start=$(date +%s)
compile() {  # one source to out/<name>.o; prints nothing unless it fails
  local file=$1 name log
  name=$(basename "${file%.*}")
  log="$out/$name.log"
  case "$file" in
    *.cu) "$nvcc" "${nvflags[@]}" -Xcompiler -fPIC -c "$file" -o "$out/$name.o" >"$log" 2>&1 ;;
    *) "$cxx" -std=c++17 -DNCCL_OS_LINUX -O1 "-I$src/src" "-I$src/os" -c "$file" -o "$out/$name.o" >"$log" 2>&1 ;;
  esac || { echo "FAIL: compiling $file:"; cat "$log"; return 1; }
}
sources=("$src/verifiable/verifiable.cu" "$src/src/common.cu" "$src/src/util.cu" "$src/src/timer.cc"
         "$src/os/linux.cc")
for t in "${tests[@]}"; do sources+=("$src/src/$t.cu"); done
# verifiable.cu, the slowest by far, first, so that the rest overlap it.
pids=() failed=0
for file in "${sources[@]}"; do
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
  compile "$file" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
if [ $failed -ne 0 ]; then
  echo "FAIL: nccl-tests did not compile against strata's nccl.h" >&2
  exit 1
fi
compiled=$(date +%s)

status=0
for t in "${tests[@]}"; do
  if ! "$nvcc" "${nvflags[@]}" -o "$out/${t}_perf" "$out/$t.o" "$out/common.o" "$out/util.o" "$out/timer.o" \
       "$out/verifiable.o" "$out/linux.o" "-L$libdir" -lnccl -lcudart -lrt \
       -Xlinker --no-undefined -Xlinker "-rpath,$libdir" >"$out/${t}_link.log" 2>&1; then
    echo "FAIL: linking ${t}_perf against $libdir/libnccl.so:"
    cat "$out/${t}_link.log"
    status=1
  fi
done
linked=$(date +%s)
[ $status -eq 0 ] || exit 1

# Every nccl* symbol a program leaves undefined (weak ones included: the
# programs call those too when they resolve) must be defined by our library,
# and the loader must resolve libnccl.so.2 to it.
nm -D --defined-only "$libnccl" | awk '{print $NF}' | sort -u >"$out/libnccl.defined"
for t in "${tests[@]}"; do
  bin="$out/${t}_perf"
  nm -D --undefined-only "$bin" | awk '{print $NF}' | grep -E '^p?nccl' | sed 's/@.*//' | sort -u >"$out/$t.needs"
  missing=$(comm -23 "$out/$t.needs" "$out/libnccl.defined")
  resolved=$(LD_LIBRARY_PATH="$libdir" ldd -r "$bin" 2>&1)
  where=$(sed -n 's/^[[:space:]]*libnccl\.so\.2 => \([^ ]*\).*/\1/p' <<<"$resolved")
  undefined=$(grep -E 'undefined symbol: p?nccl' <<<"$resolved" || true)
  if [ -n "$missing" ] || [ -n "$undefined" ]; then
    echo "FAIL: ${t}_perf needs nccl symbols that strata's libnccl lacks: $missing $undefined"
    status=1
  elif [ -z "$where" ] || [ "$(readlink -f "$where")" != "$(readlink -f "$libnccl")" ]; then
    echo "FAIL: ${t}_perf loads libnccl.so.2 from '${where:-nowhere}', not $libnccl"
    status=1
  else
    echo "ok: ${t}_perf, $(wc -l <"$out/$t.needs") nccl symbols, all defined by strata's libnccl.so.2"
  fi
done
echo "time: compile $((compiled - start)) s ($jobs jobs), link $((linked - compiled)) s"
exit $status
