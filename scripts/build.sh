#!/usr/bin/env bash
# Configures (once) and builds strata in BUILD_DIR (default: build).
# Extra arguments go to `meson setup`, e.g. -Db_sanitize=address,undefined.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${BUILD_DIR:-build}"
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" "$@"
fi
ninja -C "$dir"
