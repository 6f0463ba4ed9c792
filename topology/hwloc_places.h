// Where an hwloc object sits among the machine's packages and NUMA nodes:
// shared by the probe (hwloc_probe.cc) and the GPU discovery (gpus.cc).
#pragma once

#include <hwloc.h>

namespace strata::topo {

// The logical index of the one object of `type` whose cpus include all of
// `set`; -1 when none or several do (or the set is empty).
int containing(hwloc_topology_t t, hwloc_obj_type_t type, hwloc_const_cpuset_t set);

// The cpus an I/O object is close to: those of its first non-I/O ancestor.
hwloc_const_cpuset_t locality(hwloc_topology_t t, hwloc_obj_t io);

}  // namespace strata::topo
