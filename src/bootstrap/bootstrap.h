// The bootstrap network: a star of TCP connections to rank 0, used to meet
// (exchange HostInfo), to set up transports (allgather, barrier), and never
// for collective data.
//
// Rank 0 admits connections that prove the job's secret (security/handshake.h)
// until all nranks-1 peers have joined with the right world size and a rank not
// taken yet. Strangers (garbage, another job's secret, idle connections) are
// dropped without a word; a joiner that proved the secret but claims a wrong
// world size or a taken rank is told why. The job goes on waiting for the
// right ranks until STRATA_TIMEOUT. With STRATA_TLS=1 (on every rank: the
// handshake's flags say it, and a joiner that differs is refused) each
// connection starts TLS right after its proof, and carries everything after
// it, the joiner's HostInfo included, through it.
#pragma once

#include <memory>
#include <vector>

#include "host.h"
#include "oob.h"
#include "secret.h"
#include "socket.h"
#include "unique_id.h"

namespace strata::security {
class TlsSession;
}

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
  // The job's secret, which every transport's connections prove in turn
  // (and which keys STRATA_TLS's sessions).
  const security::Secret& secret() const { return secret_; }

 private:
  Bootstrap(int rank, int nranks);
  Status runRoot(int listenFd);
  Status join(const BootstrapConfig& config);
  std::string peerName(int rank) const;

  // STRATA_TLS=1: TLS on a bootstrap connection right after its peer proved
  // the secret (security/handshake.h), the joiner the client; null in *out
  // without STRATA_TLS. Everything after it goes through sendTo/recvFrom,
  // or the session itself while the connection has no rank yet.
  Status startTls(int fd, bool joiner, const std::string& peer, double deadline,
                  std::unique_ptr<security::TlsSession>* out) const;
  // Blocking transfers with the peer at fds_[rank] (a joiner's only peer is
  // rank 0), through its TLS session when it has one.
  Status sendTo(int rank, const void* data, size_t bytes, double deadline);
  Status recvFrom(int rank, void* data, size_t bytes, double deadline);

  int rank_;
  int nranks_;
  std::vector<int> fds_;  // rank 0: one per peer; others: fds_[0] to rank 0
  // Next to fds_, null where a connection carries no TLS; destroyed before
  // the sockets close (their close_notify goes out on them).
  std::vector<std::unique_ptr<security::TlsSession>> tls_;
  std::vector<topo::HostInfo> hosts_;
  uint64_t commTag_ = 0;
  security::Secret secret_;
};

}  // namespace strata::boot
