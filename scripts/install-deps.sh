#!/usr/bin/env bash
# Installs everything strata needs to build, test and benchmark on Debian 12,
# from Debian's own packages. Does nothing when all are present already.
set -euo pipefail

packages=(
  meson ninja-build g++ pkg-config python3      # build
  libgtest-dev libgmock-dev                     # tests
  libbenchmark-dev                              # kernel microbenchmarks
  libopenmpi-dev openmpi-bin                    # bench/compare's MPI references: Open MPI,
  libmpich-dev mpich                            # and MPICH (Open MPI stays the default mpirun)
  libpmix-dev                                   # strata_comm_init_world under mpirun / srun
  libhwloc-dev hwloc                            # topology probe (packages, NUMA, NICs); lstopo
  python3-numpy                                 # Python bindings' tests
  python3-matplotlib                            # bench/compare*'s --plot
  python3-torch libtorch-dev pybind11-dev python3-dev  # PyTorch backend
  python3-mesonpy python3-venv python3-pip      # pip install . (pyproject.toml), tested in a fresh venv
  libopenblas0-pthread                          # torch's BLAS (Debian's default is the reference BLAS)
  libgloo-dev iperf3                            # bench/compare-net's references
  iproute2 nftables                             # multi-host tests in network namespaces
  libibverbs-dev ibverbs-providers perftest     # ib transport; ib_write_bw for bench/compare-rdma
  libucx-dev                                    # the ucx transport (STRATA_TRANSPORT=ucx)
  libssl-dev                                    # the job secret's HMAC, and TLS (STRATA_TLS=1)
  clang libclang-rt-14-dev                      # libFuzzer targets for the wire parsers (scripts/fuzz.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
