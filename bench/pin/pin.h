// Pinning a benchmark's forked processes to the cpus they were given, the
// way mpirun's --bind-to core pins ranks. With more processes than cpus,
// left to the scheduler, 4 strata ranks on this machine's 2 cores ran an
// allreduce of 1 MiB in about 190 us in some launches and 260-380 in
// others, a run's median landing wherever its mix of the two fell; pinned,
// 178-220 us in 19 of 20 (2026-11-29, bench/sim/calibrate.py's runs U-AF).
#pragma once

#include <sched.h>

#include <vector>

namespace strata::bench {

// The cpus of this process's affinity mask, in order.
inline std::vector<int> allowedCpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// Sets the calling thread's affinity mask to `cpus` (a process's, before
// it starts threads; what it forks inherits it); false where that fails.
inline bool setAffinity(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  return !cpus.empty() && sched_setaffinity(0, sizeof(set), &set) == 0;
}

// Pins the calling thread, the index-th of `count` processes, to one of
// `cpus` in blocks: consecutive indexes share a cpu before the next one's,
// so that a ring's neighbours mostly share a core and only one hop a core
// crosses between cores. Returns the cpu, or -1 where the mask could not
// be set.
inline int pinInBlocks(const std::vector<int>& cpus, int index, int count) {
  if (cpus.empty() || count <= 0) return -1;
  const int cpu = cpus[static_cast<long>(index) * static_cast<long>(cpus.size()) / count];
  return setAffinity({cpu}) ? cpu : -1;
}

}  // namespace strata::bench
