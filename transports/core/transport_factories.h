// One factory per transport, each defined in its own transport's folder: the
// registry (makeTransports) builds every transport through these without
// seeing any transport's headers, and each transport is a build target of
// its own. makeIbTransport and makeUcxTransport exist only where those
// transports are built (STRATA_HAVE_IB, STRATA_HAVE_UCX).
#pragma once

#include <memory>

#include "transport.h"

namespace strata {

std::unique_ptr<Transport> makeShmTransport();
std::unique_ptr<Transport> makeTcpTransport();
std::unique_ptr<Transport> makeIbTransport();
std::unique_ptr<Transport> makeUcxTransport();
// Not among makeTransports(): its slots are GPU memory, which the executor
// reaches only through a device-memory path (transports/cuda/README.md).
std::unique_ptr<Transport> makeCudaTransport();

}  // namespace strata
