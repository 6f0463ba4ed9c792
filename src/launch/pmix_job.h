// Joining a job started by a PMIx launcher (Open MPI's mpirun, Slurm's
// srun --mpi=pmix): the launcher's server tells each process its rank, the
// job's size and its rank on the node, and carries small values between
// processes, so the unique id never has to be passed around by the user.
#pragma once

#include <cstddef>
#include <string>

#include "status.h"

namespace strata::launch {

struct PmixJob {
  std::string nspace;  // the job's PMIx namespace
  int rank = 0;
  int size = 0;
  int localRank = 0;
};

// True when a PMIx launcher started this process (it sets PMIX_NAMESPACE);
// says nothing about whether strata was built with PMIx.
bool launchedByPmix();

// Connects to the launcher's PMIx server (once per process; later calls
// return the same job). INVALID_USAGE when strata was built without PMIx.
Status joinPmixJob(PmixJob* job);

// Collective over the job: rank 0's `bytes` bytes at `value`, published
// under `key`, are copied into `value` on every other rank. A fence (bounded
// by timeoutSeconds) separates the publication from the reads.
Status shareFromRankZero(const PmixJob& job, const std::string& key, void* value, size_t bytes,
                         double timeoutSeconds);

}  // namespace strata::launch
