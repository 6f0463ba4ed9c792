// RDMA (InfiniBand or RoCE) between ranks whose hosts both have an active
// verbs device: preferred to tcp between hosts, forced everywhere with
// STRATA_TRANSPORT=ib. Each (pair, channel) is an ib Link (ib_link.h) of
// STRATA_IB_QPS_PER_CONN RC queue pairs. See README.md.
#pragma once

#include <memory>

#include "ib_device.h"
#include "ib_link.h"
#include "transport.h"

namespace strata::ib {

class IbTransport final : public Transport {
 public:
  const char* name() const override { return "ib"; }
  // Opens the device; HostInfo::rdma names it ("" when there is none).
  void describeSelf(topo::HostInfo* self) override;
  bool canConnect(const topo::HostInfo& self, const topo::HostInfo& peer) const override {
    return self.rdma[0] != '\0' && peer.rdma[0] != '\0';
  }
  Status connect(const ConnectRequest& req, Connections& out) override;
  // Per peer and channel: one link's registered FIFOs.
  uint64_t mostHeld(const ConnectRequest& req, size_t npeers) const override {
    return npeers * req.nchannels * Link::mostRegistered(req.slotBytes, req.nslots);
  }
  // Each call makes its own side sockets, queue pairs and completion queues
  // on the device, which verbs lets threads share.
  bool connectsPairs() const override { return true; }

 private:
  std::unique_ptr<Device> device_;
};

}  // namespace strata::ib
