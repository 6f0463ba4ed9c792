// A communicator's settings, read from the config registry (params.def) and
// checked once, when the communicator is created: a bad value fails the init
// with a message naming the variable, and nothing past this point reads the
// environment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "selection.h"
#include "status.h"

namespace strata {

// What strata_comm_init_rank_config set for one communicator (0: the registry's value).
struct CommOverrides {
  double timeoutSeconds = 0;
  int reproducible = 0;  // 1 on, -1 off
  std::string algo;      // empty: STRATA_ALGO
  int nchannels = 0;     // 0: STRATA_NCHANNELS
  // The rank's CUDA device, resolved on the creating thread (the config's,
  // else that thread's current one) before a non-blocking init hands the
  // work to a thread whose current device would be 0; -1: none.
  int device = -1;
  uint64_t memBudget = 0;  // 0: STRATA_MEM_BUDGET
};

struct CommConfig {
  double timeoutSeconds = 0;  // STRATA_TIMEOUT
  int nthreads = 0;           // STRATA_NTHREADS
  int nchannels = 0;          // STRATA_NCHANNELS; 0: chosen from the cores (Comm::init)
  int64_t spin = -1;          // STRATA_SPIN; -1: chosen from the host's load
  size_t slotBytes = 0;       // STRATA_SLOT_BYTES
  int nslots = 0;             // STRATA_NSLOTS
  uint64_t memBudget = 0;     // STRATA_MEM_BUDGET; 0: none
  std::string algo;           // STRATA_ALGO
  const char* algoBy = "STRATA_ALGO";  // or the strata_config_t field that set algo
  bool reproducible = false;  // STRATA_REPRODUCIBLE
  std::string tunerFile;      // STRATA_TUNER_FILE
  size_t oneshotBytes = 0;    // STRATA_ONESHOT_BYTES
  CostModel cost;             // STRATA_COST_SHM, STRATA_COST_NET
  size_t ntBytes = 0;         // STRATA_NT_BYTES
  std::string transport;      // STRATA_TRANSPORT
  bool lazyConnect = true;    // STRATA_CONNECT=lazy
  size_t gpuChunkBytes = 0;         // STRATA_GPU_CHUNK_BYTES
  size_t gpuStagingCacheBytes = 0;  // STRATA_GPU_STAGING_CACHE_BYTES
  int gpuDirect = 0;                // STRATA_GPU_DIRECT: 0 never, 1 where possible, 2 required
  size_t gpuSlotBytes = 0;          // STRATA_GPU_SLOT_BYTES

  // The registry's current values, checked, with `overrides` applied.
  static Status fromParams(const CommOverrides& overrides, CommConfig* out);
};

}  // namespace strata
