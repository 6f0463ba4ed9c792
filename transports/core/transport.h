// The transport interface. A transport's only job is to connect ranks with
// connectors (connector.h) and keep them moving; it never knows which
// collective runs over them. One folder per transport implements this.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "connector.h"
#include "host.h"
#include "oob.h"
#include "secret.h"

namespace strata {

struct ConnectRequest {
  OutOfBand* oob;
  const std::vector<topo::HostInfo>* hosts;  // every rank's, indexed by rank
  std::vector<int> peers;                    // ranks this transport must connect, both ways
  uint64_t commTag;                          // unique per communicator (names resources)
  security::Secret secret;                   // the job's: every connection must prove it (and keys TLS)
  int nchannels;
  size_t slotBytes;
  int nslots;
};

// Connectors by [channel][peer rank]; null where no connection exists.
struct Connections {
  std::vector<std::vector<std::unique_ptr<SendConnector>>> send;
  std::vector<std::vector<std::unique_ptr<RecvConnector>>> recv;

  // Room for every channel and rank, all null.
  void resize(int nchannels, int nranks) {
    send.resize(nchannels);
    recv.resize(nchannels);
    for (int ch = 0; ch < nchannels; ++ch) {
      send[ch].resize(nranks);
      recv[ch].resize(nranks);
    }
  }
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  // Adds what this transport offers on this host (HostInfo::rdma) before the
  // bootstrap shares it; peers' canConnect decisions read it.
  virtual void describeSelf(topo::HostInfo* /*self*/) {}
  virtual bool canConnect(const topo::HostInfo& self, const topo::HostInfo& peer) const = 0;
  // What connecting `npeers` of this host's ranks would need of the host that
  // it lacks (the shared-memory segments of all of them against free
  // /dev/shm): "" when nothing is short, else what is needed and what there
  // is. Asked before connect(); only nchannels, slotBytes and nslots of
  // `req` are set then.
  virtual std::string shortOf(const ConnectRequest& /*req*/, size_t /*npeers*/) const { return ""; }
  // Collective: every rank calls it (with its own peers, possibly none). Fills
  // the entries of `out` for req.peers. The transport outlives its connectors.
  virtual Status connect(const ConnectRequest& req, Connections& out) = 0;
  // Whether connect() may also be called for one pair at a time after init:
  // by both ranks of the pair only, over an OutOfBand whose allgather fills
  // just their two records, from any thread, several pairs at once, while
  // this transport's other connectors run. Such a transport's pairs connect
  // at the first call that needs them (STRATA_CONNECT=lazy).
  virtual bool connectsPairs() const { return false; }
  // The memory it allocated for all its connectors (a segment of incoming
  // slots, a worker's regions); read from any thread.
  virtual MemoryHeld held() const { return {}; }
  // The most host memory (shared, private and pinned) it and its connectors
  // would hold on this rank once connected to `npeers` peers, sized as
  // shortOf's `req`: what STRATA_MEM_BUDGET sizes the slots by.
  virtual uint64_t mostHeld(const ConnectRequest& /*req*/, size_t /*npeers*/) const { return 0; }
};

// Every transport built into this library, in order of preference, each
// having described itself into `self`, their names in self->transports.
std::vector<std::unique_ptr<Transport>> makeTransports(topo::HostInfo* self);

// Drops from `transports` those that some rank's library lacks (`hosts`:
// every rank's, from the bootstrap), so that every rank connects the same
// transports in the same order: a transport's connect is a collective step,
// and ranks that disagree would wait for each other until the timeout.
// `dropped` gets a line per dropped transport, naming a rank without it, on
// the lowest rank (`rank`) that has it, so that a job says so once. Fails
// where `forced` (STRATA_TRANSPORT) is one of them.
Status keepCommonTransports(const std::vector<topo::HostInfo>& hosts, int rank, const std::string& forced,
                            std::vector<std::unique_ptr<Transport>>* transports, std::vector<std::string>* dropped);

// Index into `transports` of the one that connects a to b: the first that
// can, only `forced` if that is not empty; -1 if none. Symmetric, so both
// ends of a pair pick alike.
int chooseTransport(const std::vector<std::unique_ptr<Transport>>& transports, const std::string& forced,
                    const topo::HostInfo& a, const topo::HostInfo& b);

}  // namespace strata
