#include "dump_signal.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <map>
#include <mutex>
#include <thread>

#include "log.h"
#include "params.h"
#include "status.h"

namespace strata::fault {
namespace {

std::mutex gMutex;
std::map<const void*, std::function<void()>> gDumps;
int gPipe[2] = {-1, -1};

void onSignal(int) {
  const int saved = errno;
  const char byte = 1;
  (void)!write(gPipe[1], &byte, 1);
  errno = saved;
}

void watch() {
  for (;;) {
    char byte;
    const ssize_t n = read(gPipe[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    std::lock_guard<std::mutex> lock(gMutex);
    STRATA_WARN(INIT, "SIGUSR1 (STRATA_DUMP_ON_SIGNAL): a stall report for each of %zu communicator(s)", gDumps.size());
    for (auto& entry : gDumps) entry.second();
  }
}

// Under gMutex.
bool started() {
  if (gPipe[0] >= 0) return true;
  if (pipe2(gPipe, O_CLOEXEC) != 0) {
    STRATA_WARN(INIT, "STRATA_DUMP_ON_SIGNAL: pipe2 failed: %s", errnoText(errno).c_str());
    return false;
  }
  fcntl(gPipe[1], F_SETFL, O_NONBLOCK);  // a burst of signals never blocks the handler
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
  std::thread(watch).detach();
  return true;
}

}  // namespace

void dumpOnSignal(const void* key, std::function<void()> dump) {
  if (params::dumpOnSignal() == 0) return;
  std::lock_guard<std::mutex> lock(gMutex);
  if (started()) gDumps[key] = std::move(dump);
}

void stopDumpOnSignal(const void* key) {
  std::lock_guard<std::mutex> lock(gMutex);
  gDumps.erase(key);
}

}  // namespace strata::fault
