#include "cuda_transport.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "clock.h"
#include "cuda_seam.h"
#include "gpu_path.h"
#include "host_group.h"
#include "log.h"
#include "params.h"
#include "transport_factories.h"

namespace strata::cuda {
namespace {

// Gives this transport's segment a name of its own beside the shm
// transport's for the same communicator and rank (the orphan sweep still
// recognises it).
constexpr uint64_t kSegmentSalt = 0x6375646100000000ull;  // "cuda"

// The self-test writes this many bytes at the start of every FIFO's slots.
constexpr size_t kProbeBytes = 64;

// How long a rank's teardown waits for its local peers in other processes
// to close their mappings of its slots before leaving the free to a later
// sweep: ranks are destroyed alongside, and this bounds a rank destroyed
// well before the others.
constexpr double kUnmapWaitSeconds = 1;

// What each rank tells every other at connect.
struct Offer {
  gpu::IpcHandle slots;  // its region of incoming slots
  uint32_t ready;        // segment and region made; else `why`
  char why[220];
};

// A rank's outcome. Setting up (allocating, exporting, mapping) fails
// before the self-test; a rank that could not set up writes no probe, so
// its peers' self-tests fail too: the setup failure is the one reported.
enum Stage : uint32_t { kPassed = 0, kSetup = 1, kSelfTest = 2 };
struct Verdict {
  uint32_t stage;
  char why[252];
};

void copyText(char* dst, size_t size, const std::string& text) { std::snprintf(dst, size, "%s", text.c_str()); }

// The bytes the FIFO from `sender` to `receiver` on `channel` must hold
// after the self-test, computed alike by both.
void probeBytes(uint64_t commTag, int sender, int receiver, int channel, unsigned char* out) {
  uint64_t x = commTag ^ (uint64_t(sender) << 40) ^ (uint64_t(receiver) << 20) ^ uint64_t(channel) ^ 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < kProbeBytes; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<unsigned char>(x);
  }
}

// Where `sender`'s FIFO sits among `receiver`'s incoming ones: its place in
// the host group, the receiver itself left out.
size_t senderAt(const std::vector<int>& group, int receiver, int sender) {
  return static_cast<size_t>(indexIn(group, sender) - (sender > receiver ? 1 : 0));
}

// A rank's segment: the controls of its incoming FIFOs (`fifoHost` bytes
// each, channel-major), then one MappingWord per local sender.
size_t segmentBytes(size_t fifoHost, int nchannels, size_t senders) {
  return fifoHost * nchannels * senders + sizeof(MappingWord) * senders;
}
MappingWord* mappingWord(char* base, size_t fifoHost, int nchannels, size_t senders, size_t sender) {
  return reinterpret_cast<MappingWord*>(base + fifoHost * nchannels * senders) + sender;
}

std::string hex(const unsigned char* b, size_t n) {
  std::string s;
  char two[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(two, sizeof(two), "%02x", b[i]);
    s += two;
  }
  return s;
}

}  // namespace

CudaTransport::~CudaTransport() {
  // Every stream finishes (its counter stores reach the segments) before
  // the memory it writes is unregistered or unmapped, even if a connector
  // still holds it; memory a stream that never finished may still write
  // stays as it is (leaked), and so do this rank's slots, which its peers
  // then wait for until this process is gone.
  bool finished = true;
  for (auto& cs : streams_) finished &= cs->finish();
  streams_.clear();
  if (finished) {
    // The peers' slots first: a peer frees its own once this rank has
    // closed them, so two ranks never wait for each other.
    for (Mapped& p : peers_) {
      gpu::ipcClose(p.slots);
      if (p.word) p.word->state.store(kClosed, std::memory_order_release);
      if (p.registered) gpu::unregisterHost(p.segment->base());
    }
    if (own_->base() || region_) {
      DeferredFree item{importerWords_, importers_,
                        [own = own_, registered = ownRegistered_, region = region_, device = device_] {
                          // Perhaps run later by another communicator's thread.
                          gpu::DeviceScope onGpu(device);
                          if (registered) gpu::unregisterHost(own->base());
                          Status s = gpu::freeDevice(region);
                          if (!s.isOk()) STRATA_WARN(NET, "freeing the cuda transport's slots: %s", s.message().c_str());
                        }};
      // A sender that is a thread of this process is destroyed by it, later
      // perhaps (one thread destroying its ranks in turn), and sweeps then;
      // its peers in other processes then wait for a later sweep too.
      freeWhenUnmapped(std::move(item), importerInProcess_ ? 0 : kUnmapWaitSeconds);
    }
  }
  sweepDeferredFrees();
}

void CudaTransport::describeSelf(topo::HostInfo* self) {
  machine_ = topo::probeTopology(topo::maskCpus(*self)).machine;
}

bool CudaTransport::canConnect(const topo::HostInfo& self, const topo::HostInfo& peer) const {
  // Facts every rank shares, so all decide alike; a rank whose CUDA fails
  // finds out in connect(), which then fails on every rank.
  topo::GpuCosts costs;
  if (!topo::gpuCostsFromParams(&costs).isOk()) return false;
  return topo::chooseGpuPath(machine_, self, peer, costs).route == topo::GpuRoute::Direct;
}

Status CudaTransport::connect(const ConnectRequest& req, Connections& out) {
  const auto& hosts = *req.hosts;
  const int me = req.oob->rank();
  const int nranks = req.oob->size();
  const std::vector<int> group = hostGroup(hosts, me);
  const size_t senders = group.size() - 1;  // this rank's local peers
  const size_t slotBytes = (req.slotBytes + 4095) & ~size_t(4095);
  const size_t fifoSlots = slotBytes * req.nslots;
  const size_t fifoHost = (fifoHostBytes(req.nslots) + kCacheLine - 1) & ~(kCacheLine - 1);
  const uint64_t tag = req.commTag ^ kSegmentSalt;
  const double deadline = nowSeconds() + params::timeout();

  // Slots earlier communicators could not free at their teardown.
  sweepDeferredFrees();
  device_ = gpu::currentDevice();
  std::vector<std::shared_ptr<PeerWatch>> watches(nranks);
  for (int peer : req.peers)
    watches[peer] =
        std::make_shared<PeerWatch>(peer, hosts[peer].pid, hosts[peer].pidNamespace == hosts[me].pidNamespace);

  // 1. This rank's incoming FIFOs: controls in a shared segment, slots on its GPU.
  Offer mine{};
  if (!req.peers.empty()) {
    shm::sweepOrphans(hosts[me].pidNamespace);
    const size_t hostBytes = segmentBytes(fifoHost, req.nchannels, senders);
    char sizing[160];
    std::snprintf(sizing, sizeof(sizing), "%d channel(s) x %zu local peers x %zu bytes of FIFO control",
                  req.nchannels, senders, fifoHost);
    Status s = own_->create(shm::segmentName(tag, me, hosts[me].pid, hosts[me].pidNamespace), hostBytes, sizing);
    if (s.isOk()) {
      for (int peer : group) {
        if (peer == me || !watches[peer]) continue;
        importerWords_.push_back(mappingWord(own_->base(), fifoHost, req.nchannels, senders, senderAt(group, me, peer)));
        importers_.push_back(watches[peer]);
        importerInProcess_ |= hosts[peer].pid == hosts[me].pid && hosts[peer].pidNamespace == hosts[me].pidNamespace;
      }
      s = gpu::registerHost(own_->base(), hostBytes);
    }
    ownRegistered_ = s.isOk();
    if (s.isOk()) ownBytes_ = hostBytes;
    if (s.isOk()) s = gpu::allocDevice(fifoSlots * req.nchannels * senders, &region_);
    if (s.isOk()) regionBytes_ = fifoSlots * req.nchannels * senders;
    if (s.isOk()) s = gpu::ipcExport(region_, &mine.slots);
    mine.ready = s.isOk();
    if (!s.isOk()) copyText(mine.why, sizeof(mine.why), s.message());
  }
  std::vector<Offer> offers(nranks);
  STRATA_CHECK(req.oob->allgather(&mine, offers.data(), sizeof(Offer)));

  // From here every rank runs the same collective steps whatever failed
  // where, and all agree at the end.
  std::string failure;
  if (!req.peers.empty() && !mine.ready) failure = "rank " + std::to_string(me) + ": " + mine.why;
  for (int peer : req.peers) {
    if (!failure.empty()) break;
    offers[peer].why[sizeof(offers[peer].why) - 1] = '\0';
    if (!offers[peer].ready) failure = "rank " + std::to_string(peer) + ": " + offers[peer].why;
  }

  // 2. Map each peer's FIFOs, and make one stream per channel.
  peers_.resize(nranks);
  for (int peer : req.peers) {
    if (!failure.empty()) break;
    Mapped& p = peers_[peer];
    const std::vector<int> peerGroup = hostGroup(hosts, peer);
    const size_t peerSenders = peerGroup.size() - 1;
    const size_t peerHostBytes = segmentBytes(fifoHost, req.nchannels, peerSenders);
    p.segment = std::make_unique<shm::Segment>();
    Status s = p.segment->open(shm::segmentName(tag, peer, hosts[peer].pid, hosts[peer].pidNamespace), peerHostBytes,
                               deadline);
    if (s.isOk()) s = gpu::registerHost(p.segment->base(), peerHostBytes);
    p.registered = s.isOk();
    MappingWord* word = s.isOk() ? mappingWord(p.segment->base(), fifoHost, req.nchannels, peerSenders,
                                               senderAt(peerGroup, peer, me))
                                 : nullptr;
    const bool claimed = word && claimMapping(word);
    if (word && !claimed)
      s = makeErrorQuiet(STRATA_ERR_REMOTE, "rank %d is freeing its slots (it left the connect)", peer);
    if (claimed) s = gpu::ipcOpen(offers[peer].slots, &p.slots);
    if (claimed && !s.isOk()) word->state.store(kClosed, std::memory_order_release);  // nothing is mapped
    if (claimed && s.isOk()) p.word = word;
    if (!s.isOk())
      failure = "rank " + std::to_string(me) + " cannot map rank " + std::to_string(peer) + "'s FIFOs: " + s.message();
  }
  for (int ch = 0; ch < req.nchannels && failure.empty() && !req.peers.empty(); ++ch) {
    auto cs = std::make_shared<ChannelStream>();
    Status s = gpu::createStream(&cs->stream);
    if (s.isOk()) cs->lane = gpu::cudaLane(cs->stream);
    if (!s.isOk()) failure = "rank " + std::to_string(me) + ": " + s.message();
    else streams_.push_back(std::move(cs));
  }

  const bool setUp = failure.empty();
  // 3. The self-test: each sender writes its probe into every FIFO it will
  // fill, by the copy engine, into the receiver's GPU memory...
  std::vector<unsigned char> probes(req.peers.size() * req.nchannels * kProbeBytes);
  if (failure.empty()) {
    for (size_t i = 0; i < req.peers.size(); ++i) {
      const int peer = req.peers[i];
      const std::vector<int> peerGroup = hostGroup(hosts, peer);
      for (int ch = 0; ch < req.nchannels; ++ch) {
        unsigned char* probe = &probes[(i * req.nchannels + ch) * kProbeBytes];
        probeBytes(req.commTag, me, peer, ch, probe);
        char* dst = static_cast<char*>(peers_[peer].slots) +
                    fifoSlots * (ch * (peerGroup.size() - 1) + senderAt(peerGroup, peer, me));
        Status s = streams_[ch]->lane->copy(dst, probe, kProbeBytes);
        if (!s.isOk() && failure.empty()) failure = "rank " + std::to_string(me) + ": " + s.message();
      }
    }
    for (auto& cs : streams_) {
      Status s = gpu::synchronize(cs->stream);
      if (!s.isOk() && failure.empty())
        failure = "rank " + std::to_string(me) + " writing into its peers' GPU memory: " + s.message();
    }
  }
  STRATA_CHECK(req.oob->barrier());
  // ...and each receiver reads back what landed in its own.
  for (size_t i = 0; i < req.peers.size() && failure.empty(); ++i) {
    const int peer = req.peers[i];
    for (int ch = 0; ch < req.nchannels && failure.empty(); ++ch) {
      unsigned char want[kProbeBytes], got[kProbeBytes];
      probeBytes(req.commTag, peer, me, ch, want);
      const char* src = static_cast<const char*>(region_) + fifoSlots * (ch * senders + senderAt(group, me, peer));
      Status s = streams_[ch]->lane->copy(got, src, kProbeBytes);
      if (s.isOk()) s = gpu::synchronize(streams_[ch]->stream);
      if (!s.isOk()) {
        failure = "rank " + std::to_string(me) + " reading its own GPU memory: " + s.message();
      } else if (std::memcmp(got, want, kProbeBytes) != 0) {
        failure = "rank " + std::to_string(peer) + "'s copy into rank " + std::to_string(me) + "'s GPU memory (channel " +
                  std::to_string(ch) + ") did not land: read " + hex(got, 8) + "..., want " + hex(want, 8) +
                  "...: peer-to-peer copies between these GPUs do not work here (peer access disabled, an IOMMU or "
                  "PCIe ACS in the way)";
      }
    }
  }
  Verdict verdict{failure.empty() ? kPassed : setUp ? kSelfTest : kSetup, {}};
  copyText(verdict.why, sizeof(verdict.why), failure);
  std::vector<Verdict> verdicts(nranks);
  STRATA_CHECK(req.oob->allgather(&verdict, verdicts.data(), sizeof(Verdict)));
  const Verdict* first = nullptr;  // the earliest stage's failure, of the lowest rank
  for (const Verdict& v : verdicts)
    if (v.stage != kPassed && (!first || v.stage < first->stage)) first = &v;
  if (first) {
    char why[sizeof(first->why)];
    std::memcpy(why, first->why, sizeof(why));
    why[sizeof(why) - 1] = '\0';
    return makeErrorQuiet(STRATA_ERR_CUDA, "the cuda transport cannot connect this communicator's GPUs: %s", why);
  }

  // 4. The connectors.
  for (int peer : req.peers) {
    const std::vector<int> peerGroup = hostGroup(hosts, peer);
    const std::shared_ptr<PeerWatch>& watch = watches[peer];
    for (int ch = 0; ch < req.nchannels; ++ch) {
      const size_t sendAt = ch * (peerGroup.size() - 1) + senderAt(peerGroup, peer, me);
      const size_t recvAt = ch * senders + senderAt(group, me, peer);
      out.send[ch][peer] = std::make_unique<CudaSendConnector>(
          peers_[peer].segment->base() + fifoHost * sendAt, static_cast<char*>(peers_[peer].slots) + fifoSlots * sendAt,
          slotBytes, req.nslots, watch, streams_[ch]);
      out.recv[ch][peer] = std::make_unique<CudaRecvConnector>(own_->base() + fifoHost * recvAt,
                                                               static_cast<char*>(region_) + fifoSlots * recvAt,
                                                               slotBytes, req.nslots, watch, streams_[ch]);
    }
  }
  // Once every peer has mapped this rank's segment its name can go.
  STRATA_CHECK(req.oob->barrier());
  if (!req.peers.empty()) own_->unlink();
  STRATA_INFO(NET, "cuda: %zu peer(s) x %d channel(s), %d slots of %zu bytes each on this GPU", req.peers.size(),
              req.nchannels, req.nslots, slotBytes);
  return Status::ok();
}

}  // namespace strata::cuda

namespace strata {

std::unique_ptr<Transport> makeCudaTransport() { return std::make_unique<cuda::CudaTransport>(); }

}  // namespace strata
