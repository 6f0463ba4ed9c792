#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every test; then
# a dozen of them built for aarch64 and run under qemu-user; then build again
# with AddressSanitizer and UndefinedBehaviorSanitizer and run the suite once
# more; then ThreadSanitizer over the tests that drive the progress engine's
# threads, aborts and failures. A short libFuzzer run of the fuzz targets
# counts as one test. Ends with "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1

passed=0 failed=0 skipped=0
shm_before=$(ls /dev/shm 2>/dev/null | grep '^strata-' | sort || true)
run_suite() {  # build-dir, label, "tests to run (empty: all)", meson-setup-args...
  local dir=$1 label=$2 tests=$3
  shift 3
  echo "=== $label: build ($dir)"
  local rebuild=()
  if [ -z "$tests" ]; then
    BUILD_DIR="$dir" scripts/build.sh "$@" || { failed=$((failed + 1)); return; }
  else
    # Only the programs those tests run (and what they link): a leg that
    # runs a few tests need not build the whole tree.
    [ -f "$dir/build.ninja" ] || meson setup "$dir" "$@" || { failed=$((failed + 1)); return; }
    local targets
    targets=$(meson introspect "$dir" --tests | python3 -c '
import json, os, sys
root, wanted = os.path.abspath(sys.argv[1]), sys.argv[2].split()
print(" ".join(sorted({os.path.relpath(t["cmd"][0], root) for t in json.load(sys.stdin) if t["name"] in wanted})))
' "$dir" "$tests")
    # shellcheck disable=SC2086
    ninja -C "$dir" $targets || { failed=$((failed + 1)); return; }
    rebuild=(--no-rebuild)
  fi
  echo "=== $label: meson test $tests"
  # Three tests at a time on the two cores: many wait on deadlines more than
  # they compute (robustness: 15 core-s in 20 s). The ASan leg's tests took
  # 221 s against 242 s with two at a time, 215 s with four.
  # Sanitized programs run several times slower than the timeouts in the
  # meson files allow for (plans under TSan: 23 s in the release leg, over
  # 120 s here, three tests sharing the two cores): TIMEOUT_MULTIPLIER.
  local log="$dir/meson-logs/testlog.json"
  rm -f "$log"  # a reused build directory's old log must not count again
  # shellcheck disable=SC2086
  meson test -C "$dir" "${rebuild[@]}" --print-errorlogs --num-processes 3 \
    --timeout-multiplier "${TIMEOUT_MULTIPLIER:-1}" $tests
  local status=$? p=0 f=0 s=0
  if [ -f "$log" ]; then
    read -r p f s < <(python3 - "$log" <<'PY'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"): p += 1
    elif r == "SKIP": s += 1
    else: f += 1
print(p, f, s)
PY
)
  fi
  # meson test failing with no failed test in its log (it stopped before
  # running them, or wrote no log), or running none, is one failure.
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "FAIL: $label: meson test exited $status"
    f=1
  elif [ $((p + f + s)) -eq 0 ]; then
    echo "FAIL: $label: meson test ran no test"
    f=1
  fi
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

# The ucx transport is opt-in at build time (meson_options.txt says why):
# the plain and ASan runs build and test it. TSan runs without it: UCX's
# memory hooks (libucm) patch madvise, which TSan's own interceptors crash on.
run_suite build "release" "" -Ducx=enabled
# The same code for 64-bit Arm (scripts/arm64-check.sh runs every test that
# can run; this leg a dozen of them in about three minutes): cross-compiled,
# run under qemu-user. It keeps x86-only code out of the portable build, and
# runs the portable kernels bit for bit, transports and collectives there,
# then a job that mixes both machines.
echo "=== aarch64 under qemu-user: scripts/install-arm64.sh"
scripts/install-arm64.sh
case $? in
  0) TIMEOUT_MULTIPLIER=4 run_suite build-arm64-ci "aarch64 (qemu-user)" \
       "kernels element_ops shm_slot_stores op_log transport_shm transport_tcp api comm_memory check nccl_api stream_comm collectives" \
       --cross-file scripts/cross/aarch64-linux-gnu.ini -Dcuda=disabled -Dtorch=disabled -Dmpi=disabled \
       -Dpmix=disabled -Dbenchmarks=disabled
     # One job of both, as one test: x86-64 ranks with the AVX kernels and
     # aarch64 ranks with the portable ones agree bit for bit (tests/multiarch).
     # Not run where either build failed, which counted already.
     x86=build/tests/multiarch/bitwise_job arm=build-arm64-ci/tests/multiarch/bitwise_job
     if [ -x "$x86" ] && [ -f build-arm64-ci/build.ninja ]; then
       echo "=== a job of x86-64 and aarch64 ranks: tests/multiarch/mixed_job.py"
       if ninja -C build-arm64-ci tests/multiarch/bitwise_job &&
          python3 tests/multiarch/mixed_job.py "$x86" "$arm" "$x86" "$arm"; then
         passed=$((passed + 1))
       else
         failed=$((failed + 1))
       fi
     fi ;;
  77) echo "SKIP: aarch64 leg: no binfmt_misc in this kernel or container"; skipped=$((skipped + 1)) ;;
  *) echo "FAIL: scripts/install-arm64.sh"; failed=$((failed + 1)) ;;
esac
# The fuzz targets (tests/fuzz) under libFuzzer for a few seconds each, with
# clang, ASan and UBSan (scripts/fuzz.sh; about a minute the first time, with
# its build): one test, failed by any crash or broken invariant, and the
# sanitized replay of their corpora. The release leg also replays them
# (meson suite 'fuzz').
echo "=== libFuzzer smoke: scripts/fuzz.sh --seconds 5"
if ! command -v clang++ >/dev/null; then
  echo "SKIP: clang++ not found"; skipped=$((skipped + 1))
elif scripts/fuzz.sh --seconds 5; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
fi
# Under ASan, shared memory and fork work as usual; leaks are reported too.
# No torch backend here: python cannot load a sanitized libstrata, so its
# tests could only skip (tests/python says why), and it is the slowest build.
# No CUDA either: without a GPU its code answers "no driver" (the release
# leg tests that), and nvcc would only add build time; nor the benchmark and
# MPI comparison programs, which no test runs.
# -O1: the instrumented build is the suite's longest step, and -O2 takes it
# 40% longer to compile (plans_test.cc: 33 s against 20 s) for tests that
# run about as fast. -g1 (after meson's -g: the last one counts): line
# tables, all a sanitizer's report names, and a third less compile time than
# -g's full debug information (plans_test.cc: 43 s against 61 s; meson.build
# says what the test programs leave out as well: 24 s).
ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 TIMEOUT_MULTIPLIER=3 \
  run_suite build-asan "address+undefined sanitizers" "" \
  -Db_sanitize=address,undefined -Ddebug=true -Doptimization=1 -Dcpp_args=-g1 -Dc_args=-g1 -Db_lundef=false \
  -Ducx=enabled -Dtorch=disabled -Dcuda=disabled -Dbenchmarks=disabled -Dmpi=disabled
# A TSan report makes the reporting process exit non-zero, failing its test.
# Only those tests' programs are built (run_suite), without torch,
# benchmarks, MPI programs or CUDA: stream-ordered calls' staging is the
# same code either way, and its tests run it with host threads for streams.
TSAN_OPTIONS=halt_on_error=1 TIMEOUT_MULTIPLIER=3 \
  run_suite build-tsan "thread sanitizer" "plans api collectives robustness robustness_tcp survival lazy_connect handshake staging stuck_watch op_log stream_comm nccl_api" \
  -Db_sanitize=thread -Dbuildtype=debugoptimized -Dcpp_args=-g1 -Dc_args=-g1 -Db_lundef=false -Dtorch=disabled \
  -Dbenchmarks=disabled -Dmpi=disabled -Dcuda=disabled

shm_after=$(ls /dev/shm 2>/dev/null | grep '^strata-' | sort || true)
leftovers=$(comm -13 <(echo "$shm_before") <(echo "$shm_after") | grep . || true)
if [ -n "$leftovers" ]; then
  echo "FAIL: the suite left strata segments in /dev/shm:"; echo "$leftovers"
  failed=$((failed + 1))
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
