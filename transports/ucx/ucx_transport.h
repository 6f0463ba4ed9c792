// UCX (UCP tagged messages) between any two ranks, used only when forced
// with STRATA_TRANSPORT=ucx. One UCP context per communicator, one worker
// per channel (a channel is driven by one thread at a time), one endpoint
// per (channel, peer) from worker addresses exchanged over the bootstrap
// network. UCX picks its own transports (UCX_TLS). See README.md.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <vector>

#include "transport.h"

namespace strata::ucx {

class Worker;

class UcxTransport final : public Transport {
 public:
  UcxTransport();
  ~UcxTransport() override;
  const char* name() const override { return "ucx"; }
  bool canConnect(const topo::HostInfo&, const topo::HostInfo&) const override { return true; }
  Status connect(const ConnectRequest& req, Connections& out) override;
  // Per peer and channel: a ring of slots each way.
  uint64_t mostHeld(const ConnectRequest& req, size_t npeers) const override;

 private:
  Status init();

  ucp_context_h context_ = nullptr;
  // Destroyed before the context; the connectors (which use them) are gone
  // by then, as the transport outlives its connectors.
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace strata::ucx
