// What must match across a job's ranks, or at least be known when it does
// not: the library (version, build), the STRATA_* environment, the kernel and
// the features of it strata uses, the transports built in and usable, and
// the room in /dev/shm. Each rank takes its own (STRATA_CHECK=1, or
// strata_comm_check) and every rank compares all of them, naming the ranks
// that differ from the rest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::check {

// Plain data: it crosses the wire as bytes. Strings are NUL-terminated
// (compare() terminates them again, since they come from other processes).
struct Fingerprint {
  int32_t version;  // STRATA_VERSION_CODE
  uint32_t features;  // Feature bits this kernel grants
  uint64_t shmFreeBytes;
  char build[32];  // when this libstrata was compiled
  char kernel[64];  // uname's release
  char transports[64];  // usable here, "shm tcp ucx"
  char env[1024];  // the STRATA_* variables, sorted, "A=1\nB=2\n"
};

enum Feature : uint32_t {
  kPidfd = 1,      // pidfd_open: a dead local peer seen at once
  kPidfdGetfd = 2,  // pidfd_getfd: a unique id's listener handed to rank 0
  kCrossMemory = 4,  // process_vm_readv (CMA), which UCX's shared memory uses
};

// This process's. `transports`: the names strata_get_transports gives.
Fingerprint take(const std::string& transports);

// The differences among `all` (all[r] is rank r's), one line each, naming
// the ranks that differ from the majority and how; empty when they agree.
std::vector<std::string> compare(std::vector<Fingerprint> all);

// One line describing what the ranks agree on, for the report's head.
std::string describeCommon(const std::vector<Fingerprint>& all);

}  // namespace strata::check
