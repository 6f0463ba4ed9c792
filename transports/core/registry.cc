#include <cstdio>
#include <cstring>

#include "transport.h"
#include "transport_factories.h"

namespace strata {
namespace {

bool lists(const topo::HostInfo& h, const std::string& name) {
  const std::string names = ' ' + std::string(h.transports, strnlen(h.transports, sizeof(h.transports))) + ' ';
  return names.find(' ' + name + ' ') != std::string::npos;
}

}  // namespace

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
  std::string names;
  for (auto& t : all) {
    t->describeSelf(self);
    names += (names.empty() ? "" : " ") + std::string(t->name());
  }
  std::snprintf(self->transports, sizeof(self->transports), "%s", names.c_str());
  return all;
}

Status keepCommonTransports(const std::vector<topo::HostInfo>& hosts, int rank, const std::string& forced,
                            std::vector<std::unique_ptr<Transport>>* transports, std::vector<std::string>* dropped) {
  for (auto t = transports->begin(); t != transports->end();) {
    const std::string name = (*t)->name();
    int without = -1;
    for (size_t r = 0; r < hosts.size() && without < 0; ++r)
      if (!lists(hosts[r], name)) without = static_cast<int>(r);
    if (without < 0) {
      ++t;
      continue;
    }
    const topo::HostInfo& h = hosts[without];
    const std::string has(h.transports, strnlen(h.transports, sizeof(h.transports)));
    if (name == forced)
      return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                          "STRATA_TRANSPORT=%s, but rank %d's library (on %s) is built without it (it has: %s)",
                          forced.c_str(), without, h.hostname, has.c_str());
    size_t first = 0;  // the lowest rank that has it says so
    while (first < hosts.size() && !lists(hosts[first], name)) ++first;
    if (first == static_cast<size_t>(rank))
      dropped->push_back(name + " is not built into rank " + std::to_string(without) + "'s library (on " +
                         h.hostname + "; it has: " + has + "), so no rank uses it");
    t = transports->erase(t);
  }
  return Status::ok();
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
