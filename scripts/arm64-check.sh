#!/usr/bin/env bash
# strata for 64-bit Arm (Grace, Graviton, Ampere), built and tested on an
# x86-64 Debian 12 host: cross-compiled with Debian's aarch64 compiler
# (scripts/cross/aarch64-linux-gnu.ini; the ucx transport included), every
# test that can run here run under qemu-user (real processes, shared memory
# and sockets, as on the host), then strata-perf's checked --all on 4 ranks,
# then one job whose ranks are x86-64 and aarch64 programs (tests/multiarch).
# qemu-user runs the guest's threads with the host's (x86) memory order, so
# this proves the build and the behaviour, not the weak ordering: that rests
# on the code's atomics (src/fault/op_log.h's sequence lock, for one).
#
#   scripts/arm64-check.sh [test ...]   (default: every test that can run)
#
# BUILD_DIR (default build-arm64). Not run: the tests that run inside the
# rdma-vm's x86-64 guests, and those whose x86-64 Python loads libstrata.
# Ends with meson's counts and a line for the three steps; exits non-zero on
# any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-arm64.sh || exit 1
dir="${BUILD_DIR:-build-arm64}"
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" --cross-file scripts/cross/aarch64-linux-gnu.ini -Ducx=enabled \
    -Dcuda=disabled -Dtorch=disabled -Dmpi=disabled -Dpmix=disabled || exit 1
fi
ninja -C "$dir" || exit 1
echo "aarch64 build: libstrata for $(aarch64-linux-gnu-readelf -h "$dir/src/libstrata.so" | sed -n 's/^ *Machine: *//p')"
"$dir/src/strata-info" | grep "reduction kernels" || exit 1

declare -A not_here=(
  [transport_ib]="runs in the rdma-vm's x86-64 guests"
  [rdma]="runs in the rdma-vm's x86-64 guests"
  [rdma_shrink]="runs in the rdma-vm's x86-64 guests"
  [python]="an x86-64 Python cannot load an aarch64 libstrata"
  [pip_install]="an x86-64 Python cannot load an aarch64 libstrata"
  [libstrata_no_driver]="an x86-64 Python cannot load an aarch64 libstrata"
)
tests=("$@") alone=()
if [ ${#tests[@]} -eq 0 ]; then
  while read -r name; do
    if [ -n "${not_here[$name]:-}" ]; then
      echo "not run: $name (${not_here[$name]})"
    elif [[ $name == *_tls ]]; then
      alone+=("$name")
    else
      tests+=("$name")
    fi
  done < <(meson test -C "$dir" --no-rebuild --list 2>/dev/null | sed 's|.* / ||')
fi
# Emulation runs programs 3-10x slower than the host; two tests at a time,
# as tests with deadlines of their own (60 s for a job) need the cores.
# Those under TLS run after them, one at a time: emulated AES is slower
# still, and their bootstrap cases time a late joiner against handshakes.
meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes 2 \
  --timeout-multiplier "${TIMEOUT_MULTIPLIER:-4}" "${tests[@]}"
rc=$?
if [ ${#alone[@]} -gt 0 ]; then
  meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes 1 \
    --timeout-multiplier "${TIMEOUT_MULTIPLIER:-4}" "${alone[@]}" || rc=1
fi
# The main job: every collective on 4 local ranks, results checked (exit 1
# on any wrong element), in bfloat16, whose kernels differ most from x86's.
echo "=== strata-perf --all --ranks 4 -d bfloat16, checked"
"$dir/bench/strata-perf" --all --ranks 4 -b 8 -e 4M -f 8 -n 5 -w 1 -c 1 -d bfloat16 | grep -E "^# strata-perf|Out of bounds"
perf=${PIPESTATUS[0]}
# One job of both machines, where this host has a native build in build/:
# x86-64 ranks and an aarch64 rank agree bit for bit (tests/multiarch).
mixed=0
if [ -f build/build.ninja ]; then
  echo "=== a job of x86-64 and aarch64 ranks: tests/multiarch/mixed_job.py"
  ninja -C build tests/multiarch/bitwise_job && ninja -C "$dir" tests/multiarch/bitwise_job &&
    python3 tests/multiarch/mixed_job.py build/tests/multiarch/bitwise_job "$dir/tests/multiarch/bitwise_job" \
      build/tests/multiarch/bitwise_job "$dir/tests/multiarch/bitwise_job" || mixed=1
else
  echo "not run: the job of x86-64 and aarch64 ranks (no native build in build/: scripts/build.sh)"
fi
word() { [ "$1" -eq 0 ] && echo passed || echo FAILED; }
echo "tests: $(word $rc); strata-perf: $(word "$perf"); mixed job: $(word $mixed)"
[ $rc -eq 0 ] && [ "$perf" -eq 0 ] && [ $mixed -eq 0 ]
