#include "shm_transport.h"
#include "tcp_transport.h"
#include "transport.h"
#if STRATA_HAVE_UCX
#include "ucx_transport.h"
#endif

namespace strata {

std::vector<std::unique_ptr<Transport>> makeTransports() {
  std::vector<std::unique_ptr<Transport>> all;
  // Preference order: memory within a host, then the network.
  all.push_back(std::make_unique<shm::ShmTransport>());
  all.push_back(std::make_unique<tcp::TcpTransport>());
#if STRATA_HAVE_UCX
  // Last, and tcp always connects: ucx is used only with STRATA_TRANSPORT=ucx.
  all.push_back(std::make_unique<ucx::UcxTransport>());
#endif
  return all;
}

int chooseTransport(const std::vector<std::unique_ptr<Transport>>& transports, const std::string& forced,
                    const topo::HostInfo& a, const topo::HostInfo& b) {
  for (size_t t = 0; t < transports.size(); ++t) {
    if (!forced.empty() && forced != transports[t]->name()) continue;
    if (transports[t]->canConnect(a, b)) return static_cast<int>(t);
  }
  return -1;
}

}  // namespace strata
