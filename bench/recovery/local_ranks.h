// What the recovery benchmarks share: ranks forked from one process on a
// fresh unique id, each running a body, with a page the parent reads their
// results from; the parent waits for them (killing any past the deadline).
#pragma once

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "strata/strata.h"

namespace strata::bench {

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A zeroed T in memory the forked ranks share with their parent.
template <typename T>
T* sharedBoard() {
  void* p = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  std::memset(p, 0, sizeof(T));
  return static_cast<T*>(p);
}

// Forks nranks ranks that run body(rank, id) and waits for them all, at most
// `seconds`. False (with a message) when no unique id could be made.
inline bool runLocalRanks(int nranks, double seconds, const std::function<void(int, const strata_unique_id_t&)>& body) {
  strata_unique_id_t id;
  if (strata_get_unique_id(&id) != STRATA_SUCCESS) {
    std::fprintf(stderr, "strata_get_unique_id: %s\n", strata_last_error());
    return false;
  }
  std::vector<pid_t> pids;
  for (int r = 0; r < nranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      body(r, id);
      _exit(0);
    }
    pids.push_back(pid);
  }
  const double deadline = now() + seconds;
  for (pid_t pid : pids)
    while (waitpid(pid, nullptr, WNOHANG) == 0) {
      if (now() > deadline) kill(pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  return true;
}

}  // namespace strata::bench
