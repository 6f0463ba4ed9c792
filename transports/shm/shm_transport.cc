#include "shm_transport.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "clock.h"
#include "host_group.h"
#include "log.h"
#include "params.h"
#include "transport_factories.h"

namespace strata::shm {
namespace {

// What a segment's size is made of, in the knobs' terms.
std::string sizing(const ConnectRequest& req, size_t localRanks, size_t fifoBytes) {
  char text[192];
  std::snprintf(text, sizeof(text), "%d channel(s) x %zu local ranks x a FIFO of %zu bytes: %d slots of %zu bytes and their headers",
                req.nchannels, localRanks, fifoBytes, req.nslots, req.slotBytes);
  return text;
}

FifoLayout layoutOf(const ConnectRequest& req) { return FifoLayout{(req.slotBytes + 4095) & ~size_t(4095), req.nslots}; }

size_t fifoBytesOf(const ConnectRequest& req) {
  return (layoutOf(req).totalBytes() + kCacheLine - 1) & ~(kCacheLine - 1);
}

}  // namespace

std::string ShmTransport::shortOf(const ConnectRequest& req, size_t npeers) const {
  // Every local rank makes a segment like this rank's: the host needs them all.
  const size_t localRanks = npeers + 1;
  const uint64_t need = uint64_t(fifoBytesOf(req)) * req.nchannels * localRanks * localRanks;
  struct statvfs vfs;
  if (statvfs("/dev/shm", &vfs) != 0) return "";  // connect() will say what is wrong
  const uint64_t free = uint64_t(vfs.f_bavail) * vfs.f_frsize;
  if (free >= need) return "";
  char text[512];
  std::snprintf(text, sizeof(text),
                "/dev/shm has %.1f MiB free, and the %zu ranks of this host need %.1f MiB of shared-memory segments "
                "(each %s): free space there (df /dev/shm; containers often get 64 MiB: docker run --shm-size) or "
                "make the segments smaller with STRATA_NCHANNELS, STRATA_NSLOTS or STRATA_SLOT_BYTES",
                free / 1048576.0, localRanks, need / 1048576.0, sizing(req, localRanks, fifoBytesOf(req)).c_str());
  return text;
}

uint64_t ShmTransport::mostHeld(const ConnectRequest& req, size_t npeers) const {
  return uint64_t(fifoBytesOf(req)) * req.nchannels * (npeers + 1);
}

bool ShmTransport::canConnect(const topo::HostInfo& self, const topo::HostInfo& peer) const {
  return topo::sameHost(self, peer);
}

Status ShmTransport::connect(const ConnectRequest& req, Connections& out) {
  const auto& hosts = *req.hosts;
  const int me = req.oob->rank();
  const FifoLayout layout = layoutOf(req);
  const size_t fifoBytes = fifoBytesOf(req);
  const double deadline = nowSeconds() + params::timeout();
  const auto ntMinBytes = static_cast<uint64_t>(std::max<int64_t>(0, params::shmNtBytes()));

  const std::vector<int> myGroup = hostGroup(hosts, me);
  if (!req.peers.empty()) {
    sweepOrphans(hosts[me].pidNamespace);
    auto own = std::make_unique<Segment>();
    size_t bytes = fifoBytes * req.nchannels * myGroup.size();
    STRATA_CHECK(own->create(segmentName(req.commTag, me, hosts[me].pid, hosts[me].pidNamespace), bytes,
                             sizing(req, myGroup.size(), fifoBytes)));
    STRATA_INFO(SHM, "segment of %zu bytes for %zu local senders x %d channels", bytes,
                myGroup.size() - 1, req.nchannels);
    segments_.push_back(std::move(own));
    ownBytes_ = bytes;
  }
  // Every rank's segment exists before anyone maps a peer's.
  STRATA_CHECK(req.oob->barrier());

  std::vector<std::unique_ptr<Segment>> mapped;
  for (int peer : req.peers) {
    std::vector<int> peerGroup = hostGroup(hosts, peer);
    auto seg = std::make_unique<Segment>();
    STRATA_CHECK(seg->open(segmentName(req.commTag, peer, hosts[peer].pid, hosts[peer].pidNamespace),
                           fifoBytes * req.nchannels * peerGroup.size(), deadline));
    auto watch = std::make_shared<PeerWatch>(peer, hosts[peer].pid,
                                             hosts[peer].pidNamespace == hosts[me].pidNamespace);
    if (!watch->watching())
      STRATA_INFO(SHM, "cannot watch rank %d (pid %d): relying on abort flags and the timeout", peer,
                  hosts[peer].pid);
    int myIndexThere = indexIn(peerGroup, me);
    int peerIndexHere = indexIn(myGroup, peer);
    for (int ch = 0; ch < req.nchannels; ++ch) {
      char* sendFifo = seg->base() + fifoBytes * (ch * peerGroup.size() + myIndexThere);
      char* recvFifo = segments_[0]->base() + fifoBytes * (ch * myGroup.size() + peerIndexHere);
      out.send[ch][peer] = std::make_unique<ShmSendConnector>(sendFifo, layout, watch, ntMinBytes);
      out.recv[ch][peer] = std::make_unique<ShmRecvConnector>(recvFifo, layout, watch);
    }
    mapped.push_back(std::move(seg));
  }
  // Once every peer has mapped our segment its name can go: from here on a
  // crash leaves nothing behind in /dev/shm.
  STRATA_CHECK(req.oob->barrier());
  if (!segments_.empty()) segments_[0]->unlink();
  for (auto& seg : mapped) segments_.push_back(std::move(seg));
  return Status::ok();
}

}  // namespace strata::shm

namespace strata {

std::unique_ptr<Transport> makeShmTransport() { return std::make_unique<shm::ShmTransport>(); }

}  // namespace strata
