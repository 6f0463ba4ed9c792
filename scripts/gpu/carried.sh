# Sourced by scripts/gpu-check.sh and scripts/gpu-triage.sh on a GPU
# machine. use_carried ROOT: where ROOT/third_party/gpu-build.tar.xz (what
# scripts/gpu-carry.sh --build packs) came with the checkout, unpacks it once
# and points the loader and hwloc at the libraries it holds; sets `carried`
# to the unpacked build, or to "" where none came. Fails if it cannot unpack.
use_carried() {
  carried=$1/third_party/gpu-build
  if [ -f "$carried.tar.xz" ] && [ ! -f "$carried/origin" ]; then
    tar xJf "$carried.tar.xz" -C "$1/third_party" || { carried=""; return 1; }
  fi
  if [ ! -f "$carried/origin" ]; then
    carried=""
    return 0
  fi
  export LD_LIBRARY_PATH=$carried/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export HWLOC_PLUGINS_PATH=$carried/lib/hwloc
}
