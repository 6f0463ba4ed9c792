#!/usr/bin/env bash
# Runs the rdma suite: TEST_BINARY once in each of RDMA_VM_GUESTS (default 2)
# rdma-vm guests (Soft-RoCE under QEMU), one rank per guest, with the verbs
# transport forced.
# Exits 77 (skipped) saying why where the guests cannot run: not root, no
# rdma-vm, or its setup (packages, kernel download) failing.
#   run_in_guests.sh BUILD_DIR TEST_BINARY SOURCE_ROOT [gtest args...]
set -uo pipefail
build=$1 binary=$2 source=$3
shift 3

vm=${RDMA_VM:-}
for candidate in "$source/../shared/tools/rdma-vm" /work/shared/tools/rdma-vm; do
  [ -z "$vm" ] && [ -x "$candidate" ] && vm=$candidate
done
if [ -z "$vm" ]; then
  echo "SKIP: rdma-vm not found (set RDMA_VM to its path)"; exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: rdma-vm needs root to boot its guests"; exit 77
fi
if ! setup=$("$vm" --setup 2>&1); then
  echo "$setup" | tail -5
  echo "SKIP: rdma-vm cannot run here (setup failed, above)"; exit 77
fi

# The guests see the host's files read-only, and the current directory
# read-write at the same path: run from the build directory.
cd "$build" || exit 1
guests=${RDMA_VM_GUESTS:-2}
export STRATA_TRANSPORT=ib RDMA_TEST_PORT=29700 WORLD_SIZE=$guests MASTER_ADDR=rdmavm0
# Every guest stays up until all have finished: with three guests or more,
# rdma-vm joins them through a hub that dies when a guest exits while frames
# for it are still queued (its recv raises ECONNRESET), which would cut the
# link between the guests still running. Each guest marks its end in the
# shared directory and waits for the others' marks; the guests run the same
# tests in step, so two minutes is plenty unless a guest died (its kernel
# panicked), and then waiting longer would only delay the failure.
# Before that, each guest checks its link to the next: rdma-vm starts the
# second QEMU once the first one's socket appears, waiting at most 5 s, and
# QEMU 7.2's client never retries, so on a loaded host both guests can boot
# without a link (CI: every ib conformance test failed on its own socket's
# connect). A connect to a closed port answers "refused" where the link is
# up; "no route" (ARP unanswered) five times means it is not, and the guest
# exits 125, as for a failed boot, which the loop below tries again.
# The same check after a failed run: a link that died during it (CI once:
# an alltoall's bytes stopped, then the next tests' bootstraps timed out
# connecting) is the host's doing, and the run is tried again the same way.
command='peer=rdmavm$(( (RDMA_VM_NODE + 1) % RDMA_VM_NODES ))
linked() {
  for try in 1 2 3 4 5; do
    err=$(timeout 10 bash -c "exec 3<>/dev/tcp/$peer/9" 2>&1) && return 0
    [[ $err == *refused* ]] && return 0
  done
  echo "rdma-vm guest $RDMA_VM_NODE: no link to $peer $1: $err"
  return 1
}
linked "before the tests" || exit 125
RANK=$RDMA_VM_NODE "$0" "$@"; rc=$?
[ "$rc" -ne 0 ] && ! linked "after the failed tests" && rc=125
: > "$RDMA_DONE.$RDMA_VM_NODE"
for _ in $(seq 240); do
  marks=("$RDMA_DONE".*)
  [ "${#marks[@]}" -ge "$RDMA_VM_NODES" ] && break
  sleep 0.5
done
exit $rc'
for attempt in 1 2; do
  export RDMA_DONE="$build/.rdma-done.$$.$attempt"
  "$vm" --nodes "$guests" --timeout 1200 -- bash -c "$command" "$binary" "$@"
  rc=$?
  rm -f "$RDMA_DONE".*
  # 125: a guest did not boot or report, or had no link before or after
  # its tests, which a loaded host can cause once.
  [ "$rc" -ne 125 ] && exit "$rc"
  echo "rdma-vm: a guest failed to boot or lost its link (attempt $attempt)"
done
exit "$rc"
