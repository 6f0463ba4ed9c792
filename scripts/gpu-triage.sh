#!/usr/bin/env bash
# The GPU-to-GPU hang (#18: on the one GPU it met, an H200, stream-ordered
# calls over the cuda transport hung and no deadline fired), narrowed down in
# about seven minutes of a lent GPU machine, before scripts/gpu-check.sh's
# full run. Needs the carried build (scripts/gpu-carry.sh --build here, then
# carry third_party/gpu-build.tar.xz); runs each test the way meson would
# (scripts/gpu/run_carried_tests.py), capped, with gdb's stacks of every
# process of a test that hangs.
#
#   usage: scripts/gpu-triage.sh
#
# In order, each a row of the closing table:
#   device_kernels               the kernels bit for bit against the host's
#   device_kernels_parked        a first launch while another stream waits for
#                                the host, after preload() (the fix in place)
#   ... without the preload      the same with STRATA_TEST_SKIP_PRELOAD=1:
#                                whether this driver has the lazy-loading
#                                hazard at all (informational: either way)
#   transport_cuda               the connector conformance suite on the GPU
#   nccl_stream_staged           the staged path, which passed on the H200
#   nccl_stream                  2 ranks GPU to GPU (the hang), then again
#                                with CUDA_MODULE_LOADING=EAGER and with
#                                CUDA_DEVICE_MAX_CONNECTIONS=32: which one
#                                passes says which cause it was
#   nccl_stream_4                4 ranks GPU to GPU
#   nccl_one_process(_staged)    2 ranks that are communicators of one
#                                process (ncclCommInitAll), staged after
#                                nccl_stream_staged, GPU to GPU last
#   strata-gpu-allreduce, strata-gpu-kernels
#                                measured only where nccl_stream passed
# STRATA_TIMEOUT is 20 s in every test, below the cap: a wait on the host
# fails with its own message first, and only a thread stuck inside CUDA
# meets the cap (then the stacks say where).
#
# Environment: GPU_TRIAGE_CAP (seconds per test, default 45),
# GPU_TRIAGE_DEADLINE (the whole run, default 480: later steps are cut to
# what is left), GPU_TRIAGE_LOGS (default $OUT/gpu-triage where the device
# tool set OUT, else third_party/gpu-triage-logs). Exits 0 when every row
# but the informational one passed.
set -u
cd "$(dirname "$0")/.." || exit 1
root=$PWD
. scripts/gpu/carried.sh
use_carried "$root" || exit 1
if [ -z "$carried" ]; then
  echo "gpu-triage: no carried build: run scripts/gpu-carry.sh --build and carry third_party/gpu-build.tar.xz" >&2
  exit 1
fi
cap=${GPU_TRIAGE_CAP:-45}
deadline=$(( $(date +%s) + ${GPU_TRIAGE_DEADLINE:-480} ))
logs=${GPU_TRIAGE_LOGS:-${OUT:+$OUT/gpu-triage}}
logs=${logs:-$root/third_party/gpu-triage-logs}
mkdir -p "$logs" || exit 1
export STRATA_DEBUG=${STRATA_DEBUG:-INFO} STRATA_DEBUG_SUBSYS=${STRATA_DEBUG_SUBSYS:-INIT,NET}

rows=() failed=0
row() {  # row RESULT NAME DETAIL
  rows+=("$(printf '%-7s | %-46s | %s' "$1" "$2" "$3")")
  printf '[%s] %s: %s\n' "$1" "$2" "$3"
}
left() { echo $(( deadline - $(date +%s) - 10 )); }
# test LABEL NAME [KEY=VALUE...]: one carried test, its result row; sets `status`.
test_() {
  local label=$1 name=$2 limit log line
  shift 2
  log="$logs/${label//[^A-Za-z0-9_.=-]/_}.log"
  limit=$cap
  [ "$(left)" -lt "$limit" ] && limit=$(left)
  if [ "$limit" -le 5 ]; then
    row "NOT RUN" "$label" "no time left"
    status=124
    return
  fi
  local envs=(--env STRATA_TIMEOUT=20)
  for kv in "$@"; do envs+=(--env "$kv"); done
  timeout --kill-after=10 $((limit + 60)) python3 scripts/gpu/run_carried_tests.py "$carried" --only "$name" \
    --cap "$limit" "${envs[@]}" >"$log" 2>&1
  status=$?
  line=$(grep -E "^[0-9]+/[0-9]+ .* / $name " "$log" | tail -n 1)
  case "$line" in
    *" OK "*) row "PASS" "$label" "${line##* / }" ;;
    *" SKIP "*) row "FAIL" "$label" "skipped with a GPU here: $(grep -m 1 -i 'skip' "$log" | cut -c1-120)"; status=1 ;;
    *" TIMEOUT "*) row "FAIL" "$label" "hung past ${limit} s; every process's stacks in $log"; status=124 ;;
    *) row "FAIL" "$label" "$(grep -m 1 -E 'Failure|[Ee]rror|FAILED|rank [0-9]+:' "$log" | cut -c1-160) (log $log)"
       [ "$status" -eq 0 ] && status=1 ;;
  esac
}

gpus=$(timeout 30 nvidia-smi --query-gpu=index,name,driver_version,compute_mode --format=csv,noheader 2>&1)
echo "gpu-triage: $(sed -n 3p "$carried/origin"); GPU: ${gpus:-none}; CUDA_MODULE_LOADING=${CUDA_MODULE_LOADING:-unset}"

test_ "device_kernels" device_kernels
[ "$status" -eq 0 ] || failed=1
test_ "device_kernels_parked" device_kernels_parked
[ "$status" -eq 0 ] || failed=1
test_ "device_kernels_parked, without the preload" device_kernels_parked STRATA_TEST_SKIP_PRELOAD=1
# The case raises the flag after 20 s whatever happened, so a launch that
# waited for the parked stream returns then and the case fails saying so.
parkedLog="$logs/device_kernels_parked__without_the_preload.log"
if grep -qE ' / device_kernels_parked SKIP ' "$parkedLog"; then
  verdict="skipped: $(grep -m 1 '^SKIP' "$parkedLog" | cut -c1-100)"
elif [ "$status" -eq 0 ]; then
  verdict="no hazard: this driver loaded the kernel without waiting for the parked stream"
elif [ "$status" -eq 124 ] || grep -q 'did not return within 20 s' "$parkedLog"; then
  verdict="the hazard preload() removes is real on this driver"
else
  verdict="failed otherwise: read the log"
fi
rows[-1]="$(printf '%-7s | %-46s | %s' INFO "device_kernels_parked, without the preload" "$verdict")"
test_ "transport_cuda" transport_cuda
[ "$status" -eq 0 ] || failed=1
test_ "nccl_stream_staged" nccl_stream_staged
[ "$status" -eq 0 ] || failed=1
test_ "nccl_one_process_staged" nccl_one_process_staged
[ "$status" -eq 0 ] || failed=1
test_ "nccl_stream" nccl_stream
streamOk=$status
[ "$status" -eq 0 ] || failed=1
test_ "nccl_stream, CUDA_MODULE_LOADING=EAGER" nccl_stream CUDA_MODULE_LOADING=EAGER
[ "$status" -eq 0 ] || failed=1
test_ "nccl_stream, CUDA_DEVICE_MAX_CONNECTIONS=32" nccl_stream CUDA_DEVICE_MAX_CONNECTIONS=32
[ "$status" -eq 0 ] || failed=1
test_ "nccl_stream_4" nccl_stream_4
[ "$status" -eq 0 ] || failed=1
test_ "nccl_one_process" nccl_one_process
[ "$status" -eq 0 ] || failed=1

# The measures, where GPU to GPU works: busbw of 2 ranks' 256 MiB allreduce
# against the D2D copy rate (target 0.40), and the kernels against it (0.80).
for bench in "strata-gpu-allreduce --ranks 2 --bytes 268435456 --iters 10 --rounds 3" \
             "strata-gpu-kernels --bytes 268435456 --iters 20"; do
  read -r -a words <<<"$bench"
  log="$logs/${words[0]}.log"
  if [ "$streamOk" -ne 0 ]; then
    row "NOT RUN" "${words[0]}" "nccl_stream did not pass"
    continue
  fi
  limit=120
  [ "$(left)" -lt "$limit" ] && limit=$(left)
  [ "$limit" -gt 5 ] || { row "NOT RUN" "${words[0]}" "no time left"; failed=1; continue; }
  STRATA_TIMEOUT=20 timeout --kill-after=10 "$limit" "$carried/bench/${words[0]}" "${words[@]:1}" >"$log" 2>&1
  status=$?
  if [ $status -eq 0 ]; then
    row "PASS" "${words[0]}" "$(grep -E '^\| ' "$log" | tail -n 3 | tr -s ' ' | tr '\n' ' ' | cut -c1-300)"
  else
    row "FAIL" "${words[0]}" "exit $status: $(tail -n 1 "$log" | cut -c1-160) (log $log)"
    failed=1
  fi
done

echo
printf '%-7s | %-46s | %s\n' "result" "check" "detail"
for r in "${rows[@]}"; do echo "$r"; done
echo "logs: $logs"
[ $failed -eq 0 ] && echo "gpu-triage: passed" || echo "gpu-triage: FAILED"
exit $failed
