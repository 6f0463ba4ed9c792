#!/usr/bin/env bash
# Every GPU check in one command, for a machine with an NVIDIA GPU (the lent
# H100 or H200: driver 580, nvcc 13.0, torch with CUDA 13 as python3, the
# nvidia-nccl-cu13 wheel, compute-sanitizer; no network, nothing to install).
# Before sending the checkout there, run scripts/gpu-carry.sh here and send
# third_party/nccl-tests with it (it is git-ignored). That machine has no
# hwloc, GoogleTest or PMIx to build strata with: scripts/gpu-carry.sh --build
# builds it here and packs third_party/gpu-build.tar.xz (send it instead),
# which this script unpacks and uses instead of building: its tests run as
# meson would run them (scripts/gpu/run_carried_tests.py), and the check that
# builds against that machine's own torch does not run.
#
#   usage: scripts/gpu-check.sh
#
# It builds strata with CUDA, runs the meson suites gpu and nccl (the cuda
# transport's conformance cases, every collective on GPU memory GPU to GPU
# and staged with 2 and 4 ranks on GPU 0), checks the GPUs strata-topo finds
# against nvidia-smi's, builds nccl-tests against strata's nccl.h and
# libnccl.so.2 and runs its programs with result checking, runs
# all_reduce_perf again on the NCCL wheel's library for a side-by-side,
# runs PyTorch's NCCL backend over strata's libnccl on 2 and 4 processes
# sharing GPU 0, builds strata's own torch backend against this torch (2.x)
# and runs its tests, measures allreduce on GPU memory (GPU to GPU and staged)
# and the reduction kernels against the GPU's copy rates, and runs one GPU
# program under compute-sanitizer's memcheck. Each check is isolated (one failing does not
# stop the others; those that need its result say NOT RUN) and has a
# deadline. Ends with one table (check | result | detail) and exits 0 only if
# every check ran and passed; a check that could not run counts as failed.
#
# Environment: GPU_CHECK_BUILD (build directory, default build-gpu),
# GPU_CHECK_LOGS (one log per check, default $OUT/gpu-check-logs where the
# device tool set OUT, else <build>-logs),
# GPU_CHECK_MAX_BYTES (nccl-tests' largest size, default 64M),
# GPU_CHECK_SANITIZE (the gpu-suite test to run under compute-sanitizer),
# GPU_CHECK_DEADLINE (seconds for the whole run, default 7200: every check's
# deadline is cut to what is left, so the table comes out in time),
# GPU_CHECK_TEST_CAP (a carried build's tests: longest timeout of any, in
# seconds; default meson's own).
set -u
cd "$(dirname "$0")/.." || exit 1
root=$PWD
carried=""
if [ -z "${GPU_CHECK_BUILD:-}" ]; then
  . scripts/gpu/carried.sh
  use_carried "$root" || exit 1
fi
build=${carried:-${GPU_CHECK_BUILD:-$root/build-gpu}}
# Under the device tool, $OUT is what comes back.
logs=${GPU_CHECK_LOGS:-${OUT:+$OUT/gpu-check-logs}}
logs=${logs:-$build-logs}
maxBytes=${GPU_CHECK_MAX_BYTES:-64M}
deadline=$(( $(date +%s) + ${GPU_CHECK_DEADLINE:-7200} ))
# A wait that stalls this long fails with a message naming what it waited
# for, inside the checks' deadlines (strata's default is 300 s).
export STRATA_TIMEOUT=${STRATA_TIMEOUT:-30}
mkdir -p "$logs" || exit 1

names=() results=() details=()
record() {  # record NAME PASS|FAIL|NOT RUN DETAIL
  names+=("$1")
  results+=("$2")
  details+=("$3")
  printf '[%s] %s: %s\n' "$2" "$1" "$3"
}
logOf() { echo "$logs/${1//[^A-Za-z0-9_.-]/_}.log"; }
run() {  # run NAME SECONDS CMD...: CMD's output goes to NAME's log; a deadline ends it (status 124)
  local name=$1 limit=$2 left
  shift 2
  echo "# $*" >"$(logOf "$name")"
  # The whole run's deadline, less time for the table.
  left=$(( deadline - $(date +%s) - 15 ))
  [ "$left" -lt "$limit" ] && limit=$left
  [ "$limit" -gt 0 ] || { echo "# no time left" >>"$(logOf "$name")"; return 124; }
  timeout --kill-after=10 "$limit" "$@" >>"$(logOf "$name")" 2>&1
}
why() {  # why STATUS NAME: a failed command's status, and its log's first error (else last line)
  local last
  last=$(grep -v '^#' "$(logOf "$2")" | grep -m 1 -E 'FAILED|[Ee]rror:|[Ff]ailure' | cut -c1-160)
  [ -n "$last" ] || last=$(grep -v '^[[:space:]]*$' "$(logOf "$2")" | tail -n 1 | cut -c1-160)
  if [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; then echo "timed out; log $(logOf "$2")"
  else echo "exit $1: $last (log $(logOf "$2"))"; fi
}

# --- the GPU: how many, and whether several processes may share one ---------
ngpu=0
if ! command -v nvidia-smi >/dev/null; then
  record "gpu" "FAIL" "nvidia-smi not found: no NVIDIA driver here"
else
  if ! gpus=$(timeout 60 nvidia-smi --query-gpu=index,name,driver_version,compute_mode,memory.total \
                --format=csv,noheader 2>&1) || [ -z "$gpus" ]; then
    record "gpu" "FAIL" "nvidia-smi: ${gpus:-no GPU listed}"
  else
    ngpu=$(grep -c . <<<"$gpus")
    mode=$(head -n 1 <<<"$gpus" | cut -d, -f4 | tr -d ' ')
    note=""
    # Several ranks on GPU 0 need it shared between processes.
    [ "$mode" = "Default" ] || note="; compute mode $mode: processes cannot share GPU 0, the torch checks will fail"
    record "gpu" "PASS" "$ngpu GPU(s): $(head -n 1 <<<"$gpus" | tr -s ' ')$note"
  fi
fi

# --- tools ------------------------------------------------------------------
nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
[ -n "$nvcc" ] && PATH=$(dirname "$nvcc"):$PATH  # meson's find_program('nvcc') looks on PATH
export PATH
meson=() ninja=""
if command -v meson >/dev/null; then meson=(meson)
elif python3 -c 'import mesonbuild' 2>/dev/null; then meson=(python3 -m mesonbuild.mesonmain)
fi
ninja=$(command -v ninja || command -v ninja-build || true)
sanitizer=$(command -v compute-sanitizer || true)
[ -z "$sanitizer" ] && [ -n "$nvcc" ] && [ -x "$(dirname "$nvcc")/compute-sanitizer" ] && sanitizer=$(dirname "$nvcc")/compute-sanitizer
missing=()
[ ${#meson[@]} -gt 0 ] || missing+=(meson)
[ -n "$ninja" ] || missing+=(ninja)
[ -n "$nvcc" ] || missing+=(nvcc)
command -v python3 >/dev/null || missing+=(python3)
[ -n "$sanitizer" ] || missing+=(compute-sanitizer)
if [ ${#missing[@]} -eq 0 ]; then
  record "tools" "PASS" "meson ${meson[*]}, ninja $ninja, $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/nvcc \1/p'), $sanitizer"
else
  record "tools" "FAIL" "missing: ${missing[*]} (nothing can be installed here: the checks that need them do not run)"
fi

# --- build strata with CUDA ---------------------------------------------------
built=0
libnccl=""
if [ -n "$carried" ]; then
  if [ -e "$carried/bindings/nccl/libnccl.so.2" ]; then
    built=1
    libnccl=$(readlink -f "$carried/bindings/nccl/libnccl.so.2")
    record "build (-Dcuda=enabled)" "PASS" "carried: built by scripts/gpu-carry.sh --build from $(sed -n 3p "$carried/origin"); $(basename "$libnccl")"
  else
    record "build (-Dcuda=enabled)" "FAIL" "$carried has no bindings/nccl/libnccl.so.2: run scripts/gpu-carry.sh --build again"
  fi
elif [ ${#meson[@]} -eq 0 ] || [ -z "$ninja" ] || [ -z "$nvcc" ]; then
  record "build (-Dcuda=enabled)" "NOT RUN" "needs meson, ninja and nvcc"
elif ! grep -q "option('cuda'" meson_options.txt; then
  record "build (-Dcuda=enabled)" "FAIL" "this checkout's meson_options.txt has no cuda option"
else
  if [ ! -f "$build/build.ninja" ]; then
    run build 1800 "${meson[@]}" setup "$build" -Dcuda=enabled -Dbuildtype=release \
      -Dtorch=disabled -Dbenchmarks=disabled -Dmpi=disabled
    status=$?
  else
    status=0
  fi
  if [ $status -eq 0 ]; then
    echo "# $ninja -C $build" >>"$(logOf build)"
    timeout --kill-after=30 1800 "$ninja" -C "$build" >>"$(logOf build)" 2>&1
    status=$?
  fi
  if [ $status -eq 0 ] && [ -e "$build/bindings/nccl/libnccl.so.2" ]; then
    built=1
    libnccl=$(readlink -f "$build/bindings/nccl/libnccl.so.2")
    record "build (-Dcuda=enabled)" "PASS" "$build, $(basename "$libnccl")"
  else
    record "build (-Dcuda=enabled)" "FAIL" "$(why "$status" build)"
  fi
fi

# --- core dumps: where a crashed or hung test's processes were ----------------
# As root (the lent machine), every process that crashes, or that a carried
# test's timeout aborts, leaves a core here; the table's last check prints
# each one's threads' stacks (cuda-gdb, else gdb).
# Beside the logs, not among them: cores of GPU processes are large, and
# $OUT brings back only what is small.
cores=$build-cores
if [ "$(id -u)" -eq 0 ] && mkdir -p "$cores" && echo "$cores/core.%p" >/proc/sys/kernel/core_pattern 2>/dev/null; then
  ulimit -c unlimited
else
  cores=""
fi

# --- meson's GPU and NCCL suites -------------------------------------------------
# A carried build runs both suites at once (a test in both runs once).
suites=(gpu nccl)
[ -n "$carried" ] && suites=(gpu+nccl)
for suite in "${suites[@]}"; do
  name="meson test --suite $suite"
  if [ $built -eq 1 ] && [ -n "$carried" ]; then
    run "$name" 2400 python3 scripts/gpu/run_carried_tests.py "$carried" --cap "${GPU_CHECK_TEST_CAP:-0}"
    status=$?
    listed=$(grep -cE '^[0-9]+/[0-9]+ ' "$(logOf "$name")")
  elif [ $built -eq 0 ]; then
    record "$name" "NOT RUN" "strata did not build"
    continue
  else
    listed=$("${meson[@]}" test -C "$build" --no-rebuild --list --suite "$suite" 2>/dev/null | grep -c ' / ')
    if [ "$listed" -eq 0 ]; then
      record "$name" "NOT RUN" "no tests in suite $suite (none defined in this checkout, or no GoogleTest: tests/ needs it)"
      continue
    fi
    run "$name" 2400 "${meson[@]}" test -C "$build" --no-rebuild --suite "$suite" --print-errorlogs
    status=$?
  fi
  counts=$(grep -E '^(Ok|Fail|Skipped|Timeout|Unexpected Pass):' "$(logOf "$name")" | tr -s ' ' | tr '\n' ' ')
  # Where there is a GPU, a test that skips did not check what it is for.
  skipped=$(sed -n 's/.* \/ \([^ ]*\) *SKIP .*/\1/p' "$(logOf "$name")" | tr '\n' ' ')
  if [ $status -ne 0 ]; then
    record "$name" "FAIL" "$listed tests: ${counts:-$(why "$status" "$name")} (log $(logOf "$name"))"
  elif [ -n "$skipped" ] && [ "$ngpu" -gt 0 ]; then
    record "$name" "FAIL" "$listed tests: skipped with a GPU present: $skipped(log $(logOf "$name"))"
  else
    record "$name" "PASS" "$listed tests: $counts${skipped:+(skipped: $skipped)}"
  fi
done

# --- the topology strata sees: GPUs in hwloc's PCI tree, NVLink from NVML -------
if [ $built -eq 0 ]; then
  record "strata-topo" "NOT RUN" "strata did not build"
else
  run "strata-topo" 120 "$build/src/strata-topo"
  run "strata-topo --json" 120 "$build/src/strata-topo" --json
  status=$?
  # Every GPU nvidia-smi lists must be in the machine, with the rank's (CUDA's device 0) among them.
  seen=$(sed 1d "$(logOf "strata-topo --json")" | python3 -c '
import json, sys
d = json.load(sys.stdin)
m = d["machine"]
rank = d["hierarchy"]["ranks"][0]["gpu"]
print(len(m["gpus"]), "GPU(s):", " ".join(g["pciBusId"] for g in m["gpus"]) + ";", "links row 0:",
      " ".join(m["gpuLinks"][0]) if m["gpuLinks"] else "-", "; nvlink:", m["nvlinkSource"] + "; this rank:",
      rank or "none", "ok" if rank and rank in [g["pciBusId"] for g in m["gpus"]] else "missing")' 2>&1)
  if [ $status -ne 0 ]; then
    record "strata-topo" "FAIL" "$(why "$status" "strata-topo --json")"
  elif [ "${seen%% *}" = "$ngpu" ] && [ "${seen##* }" = "ok" ]; then
    record "strata-topo" "PASS" "$seen (text: $(logOf strata-topo))"
  else
    record "strata-topo" "FAIL" "nvidia-smi lists $ngpu GPU(s); strata-topo: $seen"
  fi
fi

# --- nccl-tests, built against strata -----------------------------------------
ntests=$root/third_party/nccl-tests
ntbin=$build/nccl-tests
ntbuilt=0
if [ -n "$carried" ] && [ $built -eq 1 ]; then
  ntbin=$carried/nccl-tests
  if [ -x "$ntbin/all_reduce_perf" ]; then
    ntbuilt=1
    record "nccl-tests build" "PASS" "carried: built by scripts/gpu-carry.sh --build against strata's libnccl.so.2"
  else
    record "nccl-tests build" "FAIL" "$ntbin has no all_reduce_perf: run scripts/gpu-carry.sh --build again"
  fi
  # Its programs find libnccl.so.2 where they were linked; here it is beside them.
  export LD_LIBRARY_PATH=$carried/bindings/nccl:$LD_LIBRARY_PATH
elif [ $built -eq 0 ]; then
  record "nccl-tests build" "NOT RUN" "strata did not build"
elif [ ! -f "$ntests/src/common.cu" ]; then
  record "nccl-tests build" "NOT RUN" "no $ntests: run scripts/gpu-carry.sh before sending the checkout"
else
  NCCL_TESTS_SRC=$ntests NCCL_TESTS_ARCH=sm_90 NCCL_TESTS_OPT=-O3 NVCC=$nvcc \
    run "nccl-tests build" 1800 tests/nccl/nccl_tests_build.sh "$root" "$root/bindings/nccl" "$libnccl" "$ntbin"
  status=$?
  if [ $status -eq 0 ]; then
    ntbuilt=1
    record "nccl-tests build" "PASS" "$(grep '^time:' "$(logOf "nccl-tests build")"), every nccl* symbol defined by strata's library"
  else
    record "nccl-tests build" "FAIL" "$(why "$status" "nccl-tests build")"
  fi
fi

# Without MPI (there is none there) nccl-tests is one process whose ranks are
# -t threads x -g GPUs, rank i on GPU index i: one GPU cannot hold two of its
# ranks (CUDA_VISIBLE_DEVICES cannot list a device twice). So with one GPU it
# runs one rank: strata's stream path (staging, every datatype and op, results
# checked on the device) without data crossing between ranks; the torch
# checks below put 2 and 4 ranks on GPU 0. With two GPUs or more it runs two
# ranks (-g 2: one thread initialises both inside a group).
ranks=1
[ "$ngpu" -ge 2 ] && ranks=2
ntRuns=(
  "all_reduce_perf -d float" "all_reduce_perf -d half" "all_reduce_perf -d bfloat16" "all_reduce_perf -d int32"
  "all_reduce_perf -d all -o all -e 1M -f 32"
  "all_gather_perf" "reduce_scatter_perf" "broadcast_perf" "sendrecv_perf" "alltoall_perf" "gather_perf"
  "scatter_perf")
for spec in "${ntRuns[@]}"; do
  read -r -a words <<<"$spec"
  prog=${words[0]}
  name="nccl-tests $spec"
  if [ $ntbuilt -eq 0 ] || [ "$ngpu" -eq 0 ]; then
    record "$name" "NOT RUN" "$([ "$ngpu" -eq 0 ] && echo "no GPU" || echo "nccl-tests did not build")"
    continue
  fi
  # Later options win: the runs that give -e and -f override the defaults.
  run "$name" 900 "$ntbin/$prog" -g "$ranks" -b 8 -e "$maxBytes" -f 8 -c 1 -w 1 -n 5 "${words[@]:1}"
  status=$?
  log=$(logOf "$name")
  # #wrong is N/A in place where a collective has no in-place form (sendrecv, alltoall).
  read -r rows bad < <(awk '$1 ~ /^[0-9]+$/ && NF >= 13 { rows++; if ($9 != "0" || ($13 != "0" && $13 != "N/A")) bad++ }
                            END { print rows + 0, bad + 0 }' "$log")
  headers=$(sed -n 's/.*nccl-headers=\([0-9]*\).*/\1/p' "$log" | head -n 1)
  library=$(sed -n 's/.*nccl-library=\([0-9]*\).*/\1/p' "$log" | head -n 1)
  if [ $status -ne 0 ]; then
    record "$name" "FAIL" "$(why "$status" "$name")"
  elif [ -z "$library" ] || [ "$library" != "$headers" ]; then
    record "$name" "FAIL" "ran against NCCL ${library:-?}, not strata's (${headers:-?}); log $log"
  elif ! grep -q 'Out of bounds values : 0 OK' "$log" || [ "$rows" -eq 0 ] || [ "$bad" -ne 0 ]; then
    record "$name" "FAIL" "$rows sizes, $bad with #wrong > 0, $(grep -o 'Out of bounds values : .*' "$log"); log $log"
  else
    record "$name" "PASS" "$ranks rank(s), $rows sizes, #wrong 0, out of bounds 0"
  fi
done

# --- the same nccl-tests binaries on the real NCCL (the nvidia-nccl wheel) ----
# Where NCCL allows the setup (a rank per GPU: it refuses two on one GPU),
# all_reduce_perf runs again with the wheel's libnccl.so.2 preloaded in
# strata's place; the two logs' times at 8 B and at the largest size, side
# by side. Informational: no target.
wheelNccl=$(python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
name="nccl-tests all_reduce_perf: strata vs the NCCL wheel"
strataLog=$(logOf "nccl-tests all_reduce_perf -d float")
if [ $ntbuilt -eq 0 ] || [ "$ngpu" -eq 0 ]; then
  record "$name" "NOT RUN" "$([ "$ngpu" -eq 0 ] && echo "no GPU" || echo "nccl-tests did not build")"
elif [ -z "$wheelNccl" ] || [ ! -f "$wheelNccl" ]; then
  record "$name" "NOT RUN" "python3 finds no nvidia.nccl wheel with lib/libnccl.so.2"
else
  LD_PRELOAD=$wheelNccl run "$name" 900 "$ntbin/all_reduce_perf" -g "$ranks" -b 8 -e "$maxBytes" -f 8 -c 1 -w 1 -n 5 -d float
  status=$?
  log=$(logOf "$name")
  library=$(sed -n 's/.*nccl-library=\([0-9]*\).*/\1/p' "$log" | head -n 1)
  # Time (us, out of place) of the first and last sizes in each log.
  times() { awk '$1 ~ /^[0-9]+$/ && NF >= 13 { if (!first) first = $1 " B " $6 " us"; last = $1 " B " $6 " us" }
                 END { print first "; " last }' "$1"; }
  if [ $status -ne 0 ]; then
    record "$name" "FAIL" "$(why "$status" "$name")"
  else
    record "$name" "PASS" "$ranks rank(s); strata: $(times "$strataLog"); NCCL ${library:-?}: $(times "$log")"
  fi
fi

# --- PyTorch's NCCL backend over strata's libnccl ---------------------------
torchOk=0
torchNote=""
if [ "$ngpu" -eq 0 ]; then
  torchWhy="no GPU"
elif [ $built -eq 0 ]; then
  torchWhy="strata did not build"
elif ! timeout 120 python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  torchWhy="python3 cannot import torch, or torch sees no GPU"
else
  torchOk=1
  # NCCL calls PyTorch's build references that strata lacks resolve lazily:
  # they fail only if called. Named here so that a failure can be read.
  torchLib=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
  if [ -n "$torchLib" ] && [ -f "$torchLib/libtorch_cuda.so" ]; then
    lacks=$(comm -23 <(nm -D --undefined-only "$torchLib/libtorch_cuda.so" | awk '{print $NF}' | grep '^nccl' | sed 's/@.*//' | sort -u) \
                     <(nm -D --defined-only "$libnccl" | awk '{print $NF}' | sort -u) | tr '\n' ' ')
    [ -n "$lacks" ] && torchNote="; torch also references $lacks(unresolved until called)"
  fi
fi
for n in 2 4; do
  name="torch nccl backend, $n processes on GPU 0"
  if [ $torchOk -eq 0 ]; then
    record "$name" "NOT RUN" "$torchWhy"
    continue
  fi
  CUDA_VISIBLE_DEVICES=0 LD_PRELOAD=$libnccl \
    run "$name" 900 python3 scripts/gpu/torch_nccl_check.py --nprocs "$n" --expect-lib "$libnccl"
  status=$?
  log=$(logOf "$name")
  if [ $status -eq 0 ]; then
    record "$name" "PASS" "$(grep -c '^ok ' "$log") checks against float64 references$torchNote"
  else
    first=$(grep -m 1 -A 1 '^FAIL' "$log" | tr -s ' \n' ' ' | cut -c1-200)
    record "$name" "FAIL" "${first:-$(why "$status" "$name")}$torchNote; log $log"
  fi
done

# --- strata's own torch backend, built against this machine's torch 2.x ------
# A CPU-only build of its own (a torch API mismatch must not cost the GPU
# checks their build), -Dpython=python3 so that the backend compiles against
# the torch that python3 imports, then the meson suite torch (every
# collective, dtype and op against float64 references and gloo, futures,
# timeouts, subgroups, DDP and its hooks; 2 and 4 ranks, CPU tensors).
name="strata torch backend on this torch"
tbuild="$build-torch"
if [ -n "$carried" ]; then
  record "$name" "NOT RUN" "a carried build: the backend builds against this machine's torch only where strata builds"
elif ! timeout 120 python3 -c 'import torch' >/dev/null 2>&1; then
  record "$name" "NOT RUN" "python3 cannot import torch"
elif [ ${#meson[@]} -eq 0 ] || [ -z "$ninja" ]; then
  record "$name" "NOT RUN" "needs meson and ninja"
else
  tver=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)
  run "$name" 1800 bash -c "{ [ -f '$tbuild/build.ninja' ] || ${meson[*]} setup '$tbuild' -Dcuda=disabled \
        -Dtorch=enabled -Dpython=\"\$(command -v python3)\" -Dbenchmarks=disabled -Dmpi=disabled; } &&
      $ninja -C '$tbuild' && ${meson[*]} test -C '$tbuild' --suite torch --print-errorlogs"
  status=$?
  log=$(logOf "$name")
  if [ $status -eq 0 ]; then
    record "$name" "PASS" "torch $tver: $(grep -cE '^ *[0-9]+/[0-9]+ .* OK ' "$log") tests of suite torch"
  else
    record "$name" "FAIL" "torch $tver: $(why "$status" "$name")"
  fi
fi

# --- allreduce on GPU memory against the copy rates (issues 17 and 18) --------
# strata-gpu-allreduce: 2 ranks on GPU 0, float32 allreduce of 256 MiB on a
# stream, GPU to GPU (target: busbw at least 40% of the D2D copy rate) and
# staged (target: 70% of the pinned D2H + H2D rate), both measured in the
# same run, in alternating rounds; 8 B latency of each; results checked.
name="allreduce on GPU memory (2 ranks, GPU 0)"
if [ "$ngpu" -eq 0 ]; then
  record "$name" "NOT RUN" "no GPU"
elif [ $built -eq 0 ] || [ ! -x "$build/bench/strata-gpu-allreduce" ]; then
  record "$name" "NOT RUN" "strata-gpu-allreduce was not built"
else
  run "$name" 600 "$build/bench/strata-gpu-allreduce" --ranks 2 --bytes 268435456 --iters 10 --rounds 5
  status=$?
  direct=$(grep -E '^\| GPU to GPU' "$(logOf "$name")" | tail -n 1)
  staged=$(grep -E '^\| staged' "$(logOf "$name")" | tail -n 1)
  if [ $status -eq 0 ] && [ -n "$direct" ] && [ -n "$staged" ]; then
    directRatio=$(cut -d'|' -f7 <<<"$direct" | tr -d ' ')
    stagedRatio=$(cut -d'|' -f8 <<<"$staged" | tr -d ' ')
    detail="GPU to GPU busbw / D2D = $directRatio (target 0.40), 8 B $(cut -d'|' -f9 <<<"$direct" | tr -d ' ') us; staged busbw / pinned = $stagedRatio (target 0.70), 8 B $(cut -d'|' -f9 <<<"$staged" | tr -d ' ') us"
    if awk -v d="$directRatio" -v s="$stagedRatio" 'BEGIN { exit !(d >= 0.40 && s >= 0.70) }'; then
      record "$name" "PASS" "$detail"
    else
      record "$name" "FAIL" "below target: $detail"
    fi
  else
    record "$name" "FAIL" "$(why "$status" "$name")"
  fi
fi

# --- the GPU reduction kernels against the D2D copy rate (issue 18's measure) ---
name="reduction kernels bandwidth"
if [ "$ngpu" -eq 0 ]; then
  record "$name" "NOT RUN" "no GPU"
elif [ $built -eq 0 ] || [ ! -x "$build/bench/strata-gpu-kernels" ]; then
  record "$name" "NOT RUN" "strata-gpu-kernels was not built"
else
  run "$name" 600 "$build/bench/strata-gpu-kernels" --bytes 268435456 --iters 20
  status=$?
  ratios=$(grep -E '^\| [0-9]' "$(logOf "$name")" | awk -F'|' '{gsub(/ /, "", $4); gsub(/ /, "", $6); printf "%s %s, ", $4, $6}')
  if [ $status -eq 0 ] && [ -n "$ratios" ]; then
    record "$name" "PASS" "per byte moved / D2D copy rate (target 0.80): ${ratios%, }"
  else
    record "$name" "FAIL" "$(why "$status" "$name")"
  fi
fi

# --- compute-sanitizer memcheck over one GPU program ---------------------------
name="compute-sanitizer memcheck"
if [ "$ngpu" -eq 0 ]; then
  record "$name" "NOT RUN" "no GPU"
elif [ -z "$sanitizer" ]; then
  record "$name" "NOT RUN" "compute-sanitizer not found"
elif [ $built -eq 0 ]; then
  record "$name" "NOT RUN" "strata did not build"
else
  # GPU_CHECK_SANITIZE names a test of the gpu suite; by default nccl_stream
  # (ranks exchanging device buffers on streams through the NCCL library)
  # where it passed above (a hang would cost its whole timeout again), else
  # device_kernels, else the suite's first test, else nccl-tests' all_reduce
  # with one rank.
  if [ -n "$carried" ]; then
    gpuTests=$(python3 scripts/gpu/run_carried_tests.py "$carried" --list --suite gpu)
  else
    gpuTests=$("${meson[@]}" test -C "$build" --no-rebuild --list --suite gpu 2>/dev/null | sed -n 's/.* \/ //p')
  fi
  target=${GPU_CHECK_SANITIZE:-}
  suiteLogs=$(ls "$logs"/meson_test_--suite_*.log 2>/dev/null)
  if [ -z "$target" ] && grep -qx nccl_stream <<<"$gpuTests" && [ -n "$suiteLogs" ] &&
     grep -qE ' / nccl_stream +OK ' $suiteLogs; then
    target=nccl_stream
  fi
  [ -z "$target" ] && grep -qx device_kernels <<<"$gpuTests" && target=device_kernels
  [ -z "$target" ] && target=$(head -n 1 <<<"$gpuTests")
  memcheck=("$sanitizer" --tool memcheck --error-exitcode 99 --target-processes all)
  if [ -n "$target" ]; then
    if [ -n "$carried" ]; then
      run "$name" 1800 python3 scripts/gpu/run_carried_tests.py "$carried" --only "$target" --wrapper "${memcheck[*]}"
    else
      run "$name" 1800 "${meson[@]}" test -C "$build" --no-rebuild --verbose --wrapper "${memcheck[*]}" "$target"
    fi
    status=$?
    what="meson test $target"
  elif [ $ntbuilt -eq 1 ]; then
    run "$name" 1800 "${memcheck[@]}" "$ntbin/all_reduce_perf" -g 1 -b 8 -e 1M -f 8 -c 1 -w 1 -n 2
    status=$?
    what="all_reduce_perf -g 1 -b 8 -e 1M"
  else
    status=-1
    what=""
  fi
  log=$(logOf "$name")
  if [ -z "$what" ]; then
    record "$name" "NOT RUN" "no gpu suite test and no nccl-tests build to run under it"
  elif [ $status -eq 0 ] && grep -q 'ERROR SUMMARY: 0 errors' "$log"; then
    record "$name" "PASS" "$what: 0 errors"
  else
    record "$name" "FAIL" "$what: $(grep -m 1 -o 'ERROR SUMMARY: .*' "$log" || why "$status" "$name")"
  fi
fi

# --- the cores' stacks ---------------------------------------------------------
name="core dumps"
debugger=$(command -v cuda-gdb || command -v gdb || true)
if [ -z "$cores" ]; then
  record "$name" "PASS" "not collected (needs root to set the core pattern)"
elif ! ls "$cores"/core.* >/dev/null 2>&1; then
  record "$name" "PASS" "no process crashed or was aborted"
elif [ -z "$debugger" ]; then
  record "$name" "FAIL" "$(ls "$cores" | wc -l) core(s) in $cores; no cuda-gdb or gdb to read them"
else
  log=$(logOf "$name")
  : >"$log"
  for core in "$cores"/core.*; do
    exe=$(timeout 60 "$debugger" -batch -c "$core" 2>&1 | sed -n "s/^Core was generated by \`\([^ ']*\).*/\1/p" | head -n 1)
    echo "=== $core: ${exe:-?}" >>"$log"
    timeout 120 "$debugger" -batch -ex "thread apply all bt" "$exe" "$core" 2>&1 | grep -v '^\[New LWP' | head -n 300 >>"$log"
  done
  record "$name" "FAIL" "$(ls "$cores" | wc -l) process(es) crashed or were aborted: their stacks are in $log"
fi

# --- summary -----------------------------------------------------------------
width=5
for n in "${names[@]}"; do [ ${#n} -gt "$width" ] && width=${#n}; done
echo
printf '%-*s | %-7s | %s\n' "$width" "check" "result" "detail"
printf '%s-|-%s-|-%s\n' "$(printf '%*s' "$width" '' | tr ' ' -)" "-------" "------"
failed=0
notRun=()
for i in "${!names[@]}"; do
  printf '%-*s | %-7s | %s\n' "$width" "${names[$i]}" "${results[$i]}" "${details[$i]}"
  [ "${results[$i]}" = "PASS" ] || failed=1
  [ "${results[$i]}" = "NOT RUN" ] && notRun+=("${names[$i]}")
done
echo
if [ ${#notRun[@]} -gt 0 ]; then
  echo "not run:"
  printf '  %s\n' "${notRun[@]}"
fi
echo "logs: $logs"
if [ $failed -eq 0 ]; then echo "gpu-check: every check ran and passed"; else echo "gpu-check: FAILED"; fi
exit $failed
