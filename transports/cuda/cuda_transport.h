// GPU to GPU within a host: each rank's incoming slots are device memory of
// its own GPU, which its local senders map through CUDA IPC and fill with
// copy-engine copies or kernels on their channel's stream; the counters that
// order them are stored by the streams into a shared host segment (see
// README.md). A rank pair is connected only where the topology's cost model
// picks direct copies for it (topology/gpu_path.h; canConnect reads only
// what every rank knows, so all decide alike), and connect() proves every
// pair by a self-test before any connector exists.
#pragma once

#include <memory>
#include <vector>

#include "cuda_connector.h"
#include "deferred_free.h"
#include "hwloc_probe.h"
#include "shm_segment.h"
#include "stream_lane.h"
#include "transport.h"

namespace strata::cuda {

class CudaTransport final : public Transport {
 public:
  ~CudaTransport() override;
  const char* name() const override { return "cuda"; }
  void describeSelf(topo::HostInfo* self) override;
  bool canConnect(const topo::HostInfo& self, const topo::HostInfo& peer) const override;
  // Fails on every rank, with the first failing pair and CUDA's reason
  // (IPC refused, peer access impossible, the self-test's bytes did not
  // land), when any rank could not set up or prove its connections.
  Status connect(const ConnectRequest& req, Connections& out) override;
  MemoryHeld held() const override { return {ownBytes_, 0, 0, regionBytes_}; }

 private:
  struct Mapped {  // a peer's slots and segment, as this process maps them
    void* slots = nullptr;
    std::unique_ptr<shm::Segment> segment;
    bool registered = false;
    MappingWord* word = nullptr;  // this rank's, in the peer's segment, once its slots are mapped
  };

  topo::Machine machine_;  // this host's, for canConnect
  // This rank's FIFO controls and headers, then its importers' MappingWords;
  // shared with the release that may outlive this object (deferred_free.h).
  std::shared_ptr<shm::Segment> own_ = std::make_shared<shm::Segment>();
  bool ownRegistered_ = false;
  void* region_ = nullptr;  // this rank's incoming slots, on its GPU
  uint64_t regionBytes_ = 0, ownBytes_ = 0;  // its size, and own_'s
  int device_ = -1;         // that GPU, current when connecting
  std::vector<MappingWord*> importerWords_;                   // in own_, one per local sender
  std::vector<std::shared_ptr<PeerWatch>> importers_;         // the same senders
  bool importerInProcess_ = false;                            // a sender is a thread of this process
  std::vector<Mapped> peers_;
  std::vector<std::shared_ptr<ChannelStream>> streams_;  // one per channel
};

}  // namespace strata::cuda
