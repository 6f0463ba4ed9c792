#include "transport.h"
#include "transport_factories.h"

namespace strata {

std::vector<std::unique_ptr<Transport>> makeTransports(topo::HostInfo* self) {
  std::vector<std::unique_ptr<Transport>> all;
  // Preference order: memory within a host, then RDMA, then sockets.
  all.push_back(makeShmTransport());
#ifdef STRATA_HAVE_IB
  all.push_back(makeIbTransport());
#endif
  all.push_back(makeTcpTransport());
#ifdef STRATA_HAVE_UCX
  // Last, and tcp always connects: ucx is used only with STRATA_TRANSPORT=ucx.
  all.push_back(makeUcxTransport());
#endif
  for (auto& t : all) t->describeSelf(self);
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
