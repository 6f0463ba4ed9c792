// strata-doctor: strata_comm_check across a job, on demand. Started by a
// launcher (mpirun / srun through PMIx, or torchrun's RANK, WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT), every rank joins one communicator and runs
// the check; rank 0 prints the report: what differs between ranks' setups
// (library, STRATA_* environment, kernel, transports, /dev/shm) and which
// pair of ranks is slow or corrupts bytes. Exit status: 0 with no finding, 1
// with some, 2 when the job could not start or a check failed.
//
//   mpirun -np 8 strata-doctor
//   RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. strata-doctor
#include <cstdio>
#include <string>

#include "strata/strata.h"

int main() {
  strata_comm_t comm;
  if (strata_comm_init_world(&comm) != STRATA_SUCCESS) {
    std::fprintf(stderr, "strata-doctor: cannot start the job: %s\n", strata_last_error());
    return 2;
  }
  int rank = 0;
  strata_comm_rank(comm, &rank);
  std::string report(1 << 16, '\0');
  int findings = 0;
  const strata_result_t rc = strata_comm_check(comm, report.data(), report.size(), &findings);
  if (rc != STRATA_SUCCESS) {
    std::fprintf(stderr, "strata-doctor: rank %d: %s\n", rank, strata_comm_last_error(comm));
    strata_comm_destroy(comm);
    return 2;
  }
  if (rank == 0) std::fputs(report.c_str(), stdout);
  strata_comm_destroy(comm);
  return findings > 0 ? 1 : 0;
}
