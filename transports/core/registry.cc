#include "shm_transport.h"
#ifdef STRATA_HAVE_IB
#include "ib_transport.h"
#endif
#include "tcp_transport.h"
#include "transport.h"
#ifdef STRATA_HAVE_UCX
#include "ucx_transport.h"
#endif

namespace strata {

std::vector<std::unique_ptr<Transport>> makeTransports(topo::HostInfo* self) {
  std::vector<std::unique_ptr<Transport>> all;
  // Preference order: memory within a host, then RDMA, then sockets.
  all.push_back(std::make_unique<shm::ShmTransport>());
#ifdef STRATA_HAVE_IB
  all.push_back(std::make_unique<ib::IbTransport>());
#endif
  all.push_back(std::make_unique<tcp::TcpTransport>());
#ifdef STRATA_HAVE_UCX
  // Last, and tcp always connects: ucx is used only with STRATA_TRANSPORT=ucx.
  all.push_back(std::make_unique<ucx::UcxTransport>());
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
