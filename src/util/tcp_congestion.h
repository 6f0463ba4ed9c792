// STRATA_TCP_CONGESTION: the congestion control of the tcp transport's
// connections (TCP_CONGESTION on each socket), as iperf3's -C picks one.
// Collectives send in bursts between calls; a kernel whose default paces
// every burst (bbr) can take twice as long as one that does not (reno,
// cubic) over the same link: transports/tcp/README.md has the figures.
#pragma once

#include <string>

#include "status.h"

namespace strata::net {

// Whether this kernel gives a new TCP socket `name`, as setCongestion would:
// checked at init, before any connection. The error (invalid argument) names
// STRATA_TCP_CONGESTION, the kernel's answer and the names it allows.
Status checkCongestion(const std::string& name);
// Sets `name` on `fd`; errors as checkCongestion's.
Status setCongestion(int fd, const std::string& name);
// The congestion control `fd` runs, "" where the kernel does not say.
std::string congestionOf(int fd);

}  // namespace strata::net
