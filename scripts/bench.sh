#!/usr/bin/env bash
# The main job: install what is missing, build, then run the allreduce
# benchmark on local ranks. Arguments replace the default strata-perf flags.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
if [ $# -eq 0 ]; then
  set -- --ranks 2 -b 8 -e 256M -f 4 -n 20 -w 5 -c 1
fi
exec build/bench/strata-perf "$@"
