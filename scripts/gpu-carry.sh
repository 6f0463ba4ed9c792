#!/usr/bin/env bash
# Copies nccl-tests into third_party/nccl-tests (git-ignored), so that the copy
# of this checkout sent to a GPU machine, which has no network, carries the
# sources scripts/gpu-check.sh builds there. Run it here, before sending.
#   usage: scripts/gpu-carry.sh [NCCL_TESTS_DIR]
# NCCL_TESTS_DIR defaults to $NCCL_TESTS_SRC, then the shared third_party copy
# beside the checkout (../shared/third_party/nccl-tests).
set -euo pipefail
cd "$(dirname "$0")/.."
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
echo "gpu-carry: nccl-tests ${version:-?} copied to $PWD/third_party/nccl-tests ($(du -sh third_party/nccl-tests | cut -f1));" \
     "send third_party/nccl-tests with the checkout (it is git-ignored)"
