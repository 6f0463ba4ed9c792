// STRATA_DUMP_ON_SIGNAL=1: SIGUSR1 makes every communicator of the process
// log its stall report (strata_comm_dump), for a job that hangs where no
// timeout fires (a long STRATA_TIMEOUT, a rank in its own code). The handler
// only writes a byte to a pipe; a thread of its own, started with the first
// communicator, makes the reports.
#pragma once

#include <functional>

namespace strata::fault {

// Registers `dump` under `key` (a communicator) when STRATA_DUMP_ON_SIGNAL is
// set; does nothing otherwise.
void dumpOnSignal(const void* key, std::function<void()> dump);
// Unregisters `key`, waiting for a dump of it in progress to end.
void stopDumpOnSignal(const void* key);

}  // namespace strata::fault
