#include "shm_transport.h"
#include "tcp_transport.h"
#include "transport.h"

namespace strata {

std::vector<std::unique_ptr<Transport>> makeTransports() {
  std::vector<std::unique_ptr<Transport>> all;
  // Preference order: memory within a host, then the network.
  all.push_back(std::make_unique<shm::ShmTransport>());
  all.push_back(std::make_unique<tcp::TcpTransport>());
  return all;
}

}  // namespace strata
