// Shared memory between ranks of one host. Each rank owns one segment holding
// the FIFOs of all its incoming connections (per channel, per local sender);
// peers map it to write into those FIFOs. See README.md.
#pragma once

#include <memory>
#include <vector>

#include "shm_connector.h"
#include "shm_segment.h"
#include "transport.h"

namespace strata::shm {

class ShmTransport final : public Transport {
 public:
  const char* name() const override { return "shm"; }
  bool canConnect(const topo::HostInfo& self, const topo::HostInfo& peer) const override;
  std::string shortOf(const ConnectRequest& req, size_t npeers) const override;
  Status connect(const ConnectRequest& req, Connections& out) override;
  MemoryHeld held() const override { return {ownBytes_, 0, 0, 0}; }
  // Its own segment: a FIFO per channel and local rank.
  uint64_t mostHeld(const ConnectRequest& req, size_t npeers) const override;

 private:
  std::vector<std::unique_ptr<Segment>> segments_;  // own first, then peers'
  uint64_t ownBytes_ = 0;                           // the own one's size (peers' are theirs)
};

}  // namespace strata::shm
