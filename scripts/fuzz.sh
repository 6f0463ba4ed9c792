#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang, ASan and UBSan (in
# FUZZ_BUILD_DIR, default build-fuzz: only the targets and the libraries they
# link) and runs each for a bounded time on a scratch copy of its corpus.
#
#   scripts/fuzz.sh [--seconds N] [--merge] [--jobs J] [target...]
#
#   --seconds N  per target (default 60)
#   --merge      afterwards, add the inputs that found new coverage to
#                tests/fuzz/corpus/<target>/ (libFuzzer's -merge=1: only those)
#   --jobs J     build jobs, and targets fuzzed at once (default: the number
#                of cores)
#   target       listen_record, host_info, ... (tests/fuzz/<target>_fuzz.cc);
#                default: every target
#
# Prints per target: runs, exec/s, coverage (libFuzzer's cov:), corpus size
# and new entries, crashes; writes the same as TSV to
# $FUZZ_BUILD_DIR/fuzz-work/summary.tsv (bench/fuzz formats it). Exits 1 if
# any target crashed (or broke an invariant), keeping the input under
# $FUZZ_BUILD_DIR/fuzz-work/<target>/ and saying how to replay it; 2 on a
# usage or build error.
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=60 merge=0 jobs=$(nproc) targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
    --merge) merge=1; shift ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
# (libFuzzer reads -max_total_time=0 as "no limit")
case $seconds in ''|*[!0-9]*|0) echo "fuzz.sh: --seconds wants a whole number of seconds, at least 1" >&2; exit 2 ;; esac

all=()
for f in tests/fuzz/*_fuzz.cc; do
  n=$(basename "$f" _fuzz.cc)
  all+=("$n")
done
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
for t in "${targets[@]}"; do
  if [ ! -f "tests/fuzz/${t}_fuzz.cc" ]; then
    echo "fuzz.sh: no target '$t' (there are: ${all[*]})" >&2
    exit 2
  fi
done
for tool in clang clang++; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool not found (scripts/install-deps.sh installs it)" >&2; exit 2; }
done

dir=${FUZZ_BUILD_DIR:-build-fuzz}
if [ ! -f "$dir/build.ninja" ]; then
  # Only what the targets need: no optional dependencies, no benchmarks.
  log=$(mktemp)
  CC=clang CXX=clang++ meson setup "$dir" -Dfuzz=enabled -Dtests=enabled \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized \
    -Dbenchmarks=disabled -Dmpi=disabled -Dpmix=disabled -Dtorch=disabled -Dib=disabled -Ducx=disabled \
    >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; echo "fuzz.sh: meson setup failed" >&2; exit 2; }
  rm -f "$log"
fi
ninja_targets=()
for t in "${targets[@]}"; do ninja_targets+=("tests/fuzz/${t}_fuzz"); done
echo "=== building ${targets[*]} in $dir"
ninja -C "$dir" -j "$jobs" "${ninja_targets[@]}" >"$dir/fuzz-build.log" 2>&1 ||
  { tail -40 "$dir/fuzz-build.log" >&2; echo "fuzz.sh: build failed ($dir/fuzz-build.log)" >&2; exit 2; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
work="$dir/fuzz-work"
mkdir -p "$work"
summary="$work/summary.tsv"
printf 'target\tseconds\truns\texec_per_s\tcov\tcorpus\tnew\tcrashes\n' >"$summary"
crashed=0
stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -1; }
# libFuzzer runs on one thread: the targets run --jobs at a time, each
# leaving its exit status, time and starting corpus size beside its log.
fuzz_one() {  # target
  local t=$1 tw="$work/$1" start
  rm -rf "$tw"
  mkdir -p "$tw/corpus"
  cp tests/fuzz/corpus/"$t"/* "$tw/corpus/" 2>/dev/null
  ls "$tw/corpus" | wc -l >"$tw/before"
  start=$(date +%s.%N)
  "$dir/tests/fuzz/${t}_fuzz" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$tw/" "$tw/corpus" >"$tw/log" 2>&1
  echo $? >"$tw/rc"
  echo "$(date +%s.%N) - $start" | bc >"$tw/took"
}
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait
for t in "${targets[@]}"; do
  bin="$dir/tests/fuzz/${t}_fuzz"
  tw="$work/$t"
  rc=$(cat "$tw/rc") took=$(cat "$tw/took") before=$(cat "$tw/before")
  runs=$(stat number_of_executed_units "$tw/log")
  execs=$(stat average_exec_per_sec "$tw/log")
  new=$(stat new_units_added "$tw/log")
  cov=$(grep -o 'cov: [0-9]*' "$tw/log" | tail -1 | cut -d' ' -f2)
  after=$(ls "$tw/corpus" | wc -l)
  crashes=$(find "$tw" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi  # died without an artifact
  printf '%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$took" "${runs:-?}" "${execs:-?}" "${cov:-?}" "$after" \
    "${new:-?}" "$crashes" >>"$summary"
  printf '%-14s %4.0f s  runs %-10s exec/s %-7s cov %-5s corpus %s -> %s (+%s new)  crashes %s\n' "$t" "$took" \
    "${runs:-?}" "${execs:-?}" "${cov:-?}" "$before" "$after" "${new:-?}" "$crashes"
  if [ "$crashes" -ne 0 ]; then
    crashed=1
    echo "--- $t crashed: its log is $tw/log; the input(s):"
    find "$tw" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) -printf '    %p\n'
    grep -m3 -E 'ERROR|invariant failed|runtime error' "$tw/log" | sed 's/^/    /'
    echo "    replay: $bin <input>   (or the gcc build's tests/fuzz/${t}_fuzz_replay <input>);"
    echo "    once fixed, commit the input under tests/fuzz/corpus/$t/ as its regression seed"
  elif [ "$merge" -eq 1 ]; then
    n0=$(ls tests/fuzz/corpus/"$t" | wc -l)
    "$bin" -merge=1 "tests/fuzz/corpus/$t" "$tw/corpus" >"$tw/merge.log" 2>&1 ||
      { echo "fuzz.sh: merging $t failed ($tw/merge.log)" >&2; crashed=1; }
    echo "               merged $(( $(ls tests/fuzz/corpus/"$t" | wc -l) - n0 )) input(s) into tests/fuzz/corpus/$t/"
  fi
done
[ "$crashed" -eq 0 ] || { echo "fuzz.sh: a target crashed"; exit 1; }
