#include "shm_transport.h"
#include "transport.h"

namespace strata {

std::vector<std::unique_ptr<Transport>> makeTransports() {
  std::vector<std::unique_ptr<Transport>> all;
  all.push_back(std::make_unique<shm::ShmTransport>());
  return all;
}

}  // namespace strata
