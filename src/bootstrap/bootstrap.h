// The bootstrap network: TCP connections used to meet (exchange HostInfo),
// to set up transports (allgather, barrier), and never for collective data.
//
// Every rank joins rank 0 once, with its HostInfo and the address it listens
// on for the bootstrap. Once all have joined, rank 0 answers each with the
// address of its parent in a binomial tree (bootstrap_tree.h) and keeps only
// the connections to its own children; every other rank connects to its
// parent. HostInfo, allgather and barrier then flow along the tree: log2(n)
// hops, at most log2(n) + 1 sockets per rank, and no rank that sends
// n messages of n entries (rank 0 of a star sent n^2 HostInfos).
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
// half a KiB) per rank, and rank 0 a socket per rank while they join; a
// larger nranks is a mistake, and must be refused before it sizes those
// tables (INT_MAX would ask for ~1 TiB).
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
  // Payload bytes this rank has sent and received over the bootstrap so far
  // (handshakes and TLS records aside): what init costs the network.
  uint64_t bytesSent() const { return bytesSent_; }
  uint64_t bytesReceived() const { return bytesReceived_; }

 private:
  Bootstrap(int rank, int nranks);
  Status runRoot(int listenFd);
  Status join(const BootstrapConfig& config);
  // A joiner whose parent is not rank 0: connect to it, then admit this
  // rank's children on `listenFd`.
  Status linkParent(const SockAddr& parentAddr, double deadline);
  Status admitChildren(int listenFd, double deadline);
  // Every rank's HostInfo, from rank 0 down the tree.
  Status spreadHosts(double deadline);
  std::string peerName(int rank) const;

  // STRATA_TLS=1: TLS on a bootstrap connection right after its peer proved
  // the secret (security/handshake.h), the joiner the client; null in *out
  // without STRATA_TLS. Everything after it goes through sendTo/recvFrom,
  // or the session itself while the connection has no rank yet.
  Status startTls(int fd, bool joiner, const std::string& peer, double deadline,
                  std::unique_ptr<security::TlsSession>* out) const;
  // Blocking transfers with the peer at fds_[rank] (after the join: this
  // rank's parent and children in the tree), through its TLS session when
  // it has one.
  Status sendTo(int rank, const void* data, size_t bytes, double deadline);
  Status recvFrom(int rank, void* data, size_t bytes, double deadline);

  int rank_;
  int nranks_;
  std::vector<int> fds_;  // by rank; -1 but for tree neighbours (and, at rank 0, joiners)
  // Next to fds_, null where a connection carries no TLS; destroyed before
  // the sockets close (their close_notify goes out on them).
  std::vector<std::unique_ptr<security::TlsSession>> tls_;
  std::vector<topo::HostInfo> hosts_;
  uint64_t commTag_ = 0;
  security::Secret secret_;
  uint64_t bytesSent_ = 0;
  uint64_t bytesReceived_ = 0;
};

}  // namespace strata::boot
