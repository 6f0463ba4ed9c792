#!/usr/bin/env bash
# Installs what an aarch64 (64-bit Arm) build of strata needs on an x86-64
# Debian 12 host, from Debian's packages: the cross compiler, the arm64
# (multiarch) -dev packages strata links, and qemu-user registered with
# binfmt_misc, so that aarch64 programs, and the programs they start, run
# here. Does nothing when all is in place. Exits 77, saying why, where the
# kernel offers no binfmt_misc (a container without it): no aarch64 program
# can run there. Any other failure exits non-zero, never 77.
set -euo pipefail

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

host=(g++-aarch64-linux-gnu qemu-user-static binfmt-support)
arm64=(libhwloc-dev libssl-dev libgtest-dev libgmock-dev libbenchmark-dev libibverbs-dev libucx-dev)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${host[@]}"; do installed "$p" || missing+=("$p"); done
for p in "${arm64[@]}"; do installed "$p:arm64" || missing+=("$p:arm64"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# qemu-user-static's own registration needs binfmt_misc mounted when it is
# installed, which a fresh container may not have had.
binfmt=/proc/sys/fs/binfmt_misc
[ -e "$binfmt/register" ] || $SUDO mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
if [ ! -e "$binfmt/register" ]; then
  echo "no binfmt_misc in this kernel or container: aarch64 programs cannot run here" >&2
  exit 77
fi
[ -e "$binfmt/qemu-aarch64" ] || $SUDO update-binfmts --enable qemu-aarch64 || true
if [ ! -e "$binfmt/qemu-aarch64" ]; then
  echo "qemu-aarch64 is not registered with binfmt_misc (update-binfmts --enable qemu-aarch64 failed)" >&2
  exit 1
fi
