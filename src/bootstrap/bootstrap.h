// The bootstrap network: a star of TCP connections to rank 0, used to meet
// (exchange HostInfo), to set up transports (allgather, barrier), and never
// for collective data.
//
// Rank 0 admits connections that prove the job's secret (security/handshake.h)
// until all nranks-1 peers have joined with the right world size and a rank not
// taken yet. Strangers (garbage, another job's secret, idle connections) are
// dropped without a word; a joiner that proved the secret but claims a wrong
// world size or a taken rank is told why. The job goes on waiting for the
// right ranks until STRATA_TIMEOUT.
#pragma once

#include <memory>
#include <vector>

#include "host.h"
#include "oob.h"
#include "socket.h"
#include "unique_id.h"

namespace strata::boot {

// The largest world a bootstrap accepts. Every rank keeps a HostInfo (about
// half a KiB) per rank and rank 0 a socket per rank, so a world this size is
// already past what a star can serve; a larger nranks is a mistake, and must
// be refused before it sizes those tables (INT_MAX would ask for ~1 TiB).
constexpr int kMaxRanks = 1 << 20;

struct BootstrapConfig {
  IdContents id;
  int rank;
  int nranks;
  // From strata_get_unique_id, whose caller holds rank 0's listening socket
  // (see rememberListener); false for MASTER_ADDR jobs, whose rank 0 binds id.root.
  bool fromUniqueId = false;
};

class Bootstrap final : public OutOfBand {
 public:
  static Status create(const BootstrapConfig& config, const topo::HostInfo& self,
                       std::unique_ptr<Bootstrap>* out);
  ~Bootstrap() override;

  int rank() const override { return rank_; }
  int size() const override { return nranks_; }
  Status allgather(const void* in, void* out, size_t bytes) override;
  Status barrier() override;

  const std::vector<topo::HostInfo>& hosts() const { return hosts_; }
  // Random, chosen by rank 0: names this communicator's resources.
  uint64_t commTag() const { return commTag_; }
  // The job's secret, which every transport's connections prove in turn.
  const security::Secret& secret() const { return secret_; }

 private:
  Bootstrap(int rank, int nranks) : rank_(rank), nranks_(nranks) {}
  Status runRoot(int listenFd);
  Status join(const BootstrapConfig& config);
  std::string peerName(int rank) const;

  int rank_;
  int nranks_;
  std::vector<int> fds_;  // rank 0: one per peer; others: fds_[0] to rank 0
  std::vector<topo::HostInfo> hosts_;
  uint64_t commTag_ = 0;
  security::Secret secret_;
};

}  // namespace strata::boot
