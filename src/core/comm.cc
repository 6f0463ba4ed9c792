#include "comm.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <thread>

#include "clock.h"
#include "cuda_seam.h"
#include "device_kernels.h"
#include "describe.h"
#include "dump_signal.h"
#include "fingerprint.h"
#include "hardware_queues.h"
#include "log.h"
#include "op_desc.h"
#include "params.h"
#include "stall_report.h"
#include "transport_factories.h"
#include "wait_loop.h"

namespace strata {
namespace {

// How long a stall report may spend asking the ranks: a dead host or link
// answers nothing, and the report holds its timeout's error up meanwhile.
constexpr double kStallReportSeconds = 0.5;
// Every rank that times out asks every other: past this many ranks that is
// a storm of connections, and a timeout's report is left to strata_comm_dump.
constexpr int kStallReportMaxRanks = 512;

// strata_test's polls in a row that moved nothing, per polling thread: a
// completion thread may poll while another issues calls. Not a WaitPolicy,
// whose long waits nap: a caller testing between pieces of its own work
// must get its thread back at once, so a test only ever yields.
thread_local int64_t tFruitlessTests = 0;

void abortAll(const Connections& made) {
  for (const auto& channel : made.send)
    for (const auto& c : channel)
      if (c) c->abort();
  for (const auto& channel : made.recv)
    for (const auto& c : channel)
      if (c) c->abort();
}

}  // namespace

Status Comm::create(const boot::BootstrapConfig& config, const CommOverrides& overrides,
                    std::unique_ptr<Comm>* out) {
  std::unique_ptr<Comm> comm(new Comm());
  STRATA_CHECK(comm->init(config, overrides));
  *out = std::move(comm);
  return Status::ok();
}

Comm::~Comm() {
  fault::stopDumpOnSignal(this);
  // Before what its failure path reads (control_); drainStreams() below
  // lets stuck streams go by its own deadline.
  deviceWatch_.reset();
  // First: its thread may fail() the communicator on a peer's revoke, or
  // start a thread that connects a pair (lazy_ waits for those).
  control_.reset();
  lazy_.reset();
  if (stager_) drainStreams();
  // Threads first: they may be driving channels that point at connectors.
  threads_.reset();
  channels_.clear();
  connections_ = Connections();
  {
    // What the cuda transport closes, unregisters and frees is its GPU's.
    gpu::DeviceScope onGpu(deviceTransport_ ? device() : -1);
    deviceConnections_ = Connections();
    deviceTransport_.reset();
  }
  transports_.clear();
}

Status Comm::init(const boot::BootstrapConfig& bootConfig, const CommOverrides& overrides) {
  rank_ = bootConfig.rank;
  nranks_ = bootConfig.nranks;
  log::setThreadRank(rank_);
  overrides_ = overrides;
  STRATA_CHECK(CommConfig::fromParams(overrides_, &config_));

  topo::HostInfo self = topo::probeHost(overrides.device);
  transports_ = makeTransports(&self);
  STRATA_CHECK(boot::Bootstrap::create(bootConfig, self, &bootstrap_));
  if (params::check() != 0) compareFingerprints();
  std::vector<std::string> dropped;
  STRATA_CHECK(keepCommonTransports(bootstrap_->hosts(), rank_, config_.transport, &transports_, &dropped));
  for (const std::string& line : dropped) STRATA_WARN(INIT, "%s", line.c_str());

  const auto& hosts = bootstrap_->hosts();
  const auto shares = topo::hostShares(hosts);
  // Cores are counted per machine: ranks in other namespaces of it compete for them too.
  const topo::HostShare& local = shares.at(topo::machineKey(self));
  const int localRanks = local.ranks;
  // Every rank's plans assume the same channel count, so the automatic choice
  // is the smallest any host's ranks would make from their cores (all ranks
  // know every rank's host and mask from the bootstrap, and reach the same value).
  int nchannels = config_.nchannels;
  if (nchannels == 0) {
    nchannels = 4;
    for (const auto& entry : shares)
      nchannels = std::min(nchannels, std::clamp(entry.second.cores / std::max(1, entry.second.ranks), 1, 4));
  }
  spins_ = chooseSpins(config_.spin, localRanks, local.cores);
  for (const auto& entry : shares) oversubscribed_ |= entry.second.ranks > entry.second.cores;
  layout_ = Layout::of(topo::buildHierarchy(hosts));
  shape_ = PlanShape{rank_, nranks_, nchannels, config_.slotBytes, 0, &layout_};
  p2pSeqs_.sent.assign(nranks_, 0);
  p2pSeqs_.received.assign(nranks_, 0);
  isa_ = kernels::selectedIsa();

  // Connecting settles the channels and slots (STRATA_MEM_BUDGET), which
  // the tuning then plans with.
  STRATA_CHECK(connectTransports(self));
  STRATA_CHECK(Tuning::create(config_.algo, config_.oneshotBytes, config_.cost, shape_, config_.reproducible, &tuning_,
                              config_.algoBy));
  if (!config_.tunerFile.empty()) {
    int perNode = 0;
    for (const topo::Node& node : layout_.hierarchy.nodes) perNode = std::max(perNode, int(node.ranks.size()));
    STRATA_CHECK(TunerRules::load(config_.tunerFile,
                                  {nranks_, perNode, shape_.nchannels, shape_.slotBytes, config_.reproducible}, &tuner_));
  }
  STRATA_CHECK(decideDevice(self));
  nchannels = shape_.nchannels;
  channels_ = std::vector<Channel>(nchannels);
  STRATA_CHECK(timeline::Timeline::open(rank_, nranks_, bootstrap_->commTag(), nchannels, transportNames(), &timeline_));
  for (int ch = 0; ch < nchannels; ++ch) {
    channels_[ch].timeline = timeline_.get();
    channels_[ch].index = ch;
    channels_[ch].links = linksOf(connections_, ch);
    if (!channels_[ch].links.pollers.empty()) hasSockets_ = true;
  }
  STRATA_CHECK(ProgressThreads::start(channels_, *this, config_.nthreads, spins_, rank_, &threads_));
  if (config_.lazyConnect) {
    std::vector<bool> connected(nranks_);
    for (int p = 0; p < nranks_; ++p) connected[p] = p == rank_ || !transports_[peerTransport_[p]]->connectsPairs();
    lazy_ = std::make_unique<LazyLinks>(
        rank_, std::move(connected), config_.timeoutSeconds,
        [this](int peer, double deadline, int* fd) {
          return control_->reach(peer, fault::Message::Connect, deadline, fd, /*patient=*/true);
        },
        [this](int peer, OutOfBand& oob) { return connectPair(peer, oob); });
  }
  // Last: a peer's revoke may come as soon as it exists, and fail() then
  // needs the channels and threads; so may a peer's request to connect.
  STRATA_CHECK(fault::ControlPlane::create(
      *bootstrap_, bootstrap_->secret(), bootstrap_->commTag(),
      [this](int from) { fail(makeErrorQuiet(STRATA_ERR_REVOKED, "rank %d revoked the communicator", from)); },
      [this](int from, int fd) {
        if (!lazy_) {
          close(fd);
          return;
        }
        lazy_->serve(from, fd, [this](const Status& s) { fail(s); });
      },
      opLog_, &control_));
  fault::dumpOnSignal(this, [this] {
    STRATA_WARN(COLL, "stall report, rank %d of %d:\n%s", rank_, nranks_,
                stallReport(true, nowSeconds() + kStallReportSeconds).c_str());
  });
  STRATA_INFO(INIT, "rank %d of %d: %d ranks on this machine's %d cores (%d in its own mask), %d channels, "
              "%lld threads, spin %lld, %lld slots x %lld bytes, reduce isa %s",
              rank_, nranks_, localRanks, local.cores, self.cpusAllowed, nchannels,
              (long long)config_.nthreads, (long long)spins_, (long long)config_.nslots,
              (long long)config_.slotBytes, kernels::isaName(isa_));
  STRATA_INFO(BOOT, "rank %d: init sent %llu and received %llu bytes over the bootstrap", rank_,
              (unsigned long long)bootstrap_->bytesSent(), (unsigned long long)bootstrap_->bytesReceived());
  if (rank_ == 0) {
    STRATA_INFO(TOPO, "%s", topo::describeTree(layout_.hierarchy, hosts).c_str());
    STRATA_INFO(ALGO, "%d nodes; allreduce by size: %s", layout_.nodes(), tuning_.describe().c_str());
  }
  return Status::ok();
}

void Comm::compareFingerprints() {
  std::string names;
  for (const auto& t : transports_) names += (names.empty() ? "" : " ") + std::string(t->name());
  const check::Fingerprint mine = check::take(names);
  std::vector<check::Fingerprint> all(nranks_);
  if (!bootstrap_->allgather(&mine, all.data(), sizeof(mine)).isOk()) return;  // the next step says why
  const std::vector<std::string> differences = check::compare(all);
  if (rank_ != 0 || differences.empty()) return;
  std::string text;
  for (const auto& line : differences) text += "\n  " + line;
  STRATA_WARN(INIT, "STRATA_CHECK, before connecting the ranks, %d of them:%s", nranks_, text.c_str());
}

std::string Comm::transportNames() const {
  std::string names;
  for (int p = 0; p < nranks_; ++p) {
    const std::string name = transportTo(p);
    if (p != rank_ && (',' + names + ',').find(',' + name + ',') == std::string::npos)
      names += (names.empty() ? "" : ",") + name;
  }
  return names;
}

ChannelLinks Comm::linksOf(const Connections& made, int ch) const {
  ChannelLinks links;
  links.send.assign(nranks_, nullptr);
  links.recv.assign(nranks_, nullptr);
  for (int p = 0; p < nranks_; ++p) links.add(p, made.send[ch][p].get(), made.recv[ch][p].get());
  return links;
}

Status Comm::connectTransports(const topo::HostInfo& self) {
  const auto& hosts = bootstrap_->hosts();
  const std::string& forced = config_.transport;
  if (!forced.empty() &&
      std::none_of(transports_.begin(), transports_.end(),
                   [&](const auto& t) { return forced == t->name(); }))
    return STRATA_INVALID_ARG("STRATA_TRANSPORT='%s' is not a transport built into this library",
                              forced.c_str());

  // Each peer goes to the first transport (in preference order) that can
  // reach it; both ends decide alike because canConnect is symmetric.
  std::vector<std::vector<int>> peersOf(transports_.size());
  peerTransport_.assign(nranks_, -1);
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_) continue;
    const int t = chooseTransport(transports_, forced, self, hosts[p]);
    if (t < 0)
      return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                          "no transport reaches rank %d on host %s from this host (%s)%s%s",
                          p, hosts[p].hostname, self.hostname, forced.empty() ? "" : " with STRATA_TRANSPORT=",
                          forced.c_str());
    peerTransport_[p] = t;
  }
  STRATA_CHECK(avoidShortTransports(self));
  STRATA_CHECK(fitMemoryBudget());
  int otherPidNamespace = -1;
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_) continue;
    peersOf[peerTransport_[p]].push_back(p);
    STRATA_TRACE(INIT, "rank %d -> rank %d over %s", rank_, p, transports_[peerTransport_[p]]->name());
    if (std::string(transports_[peerTransport_[p]]->name()) == "shm" && hosts[p].pidNamespace != self.pidNamespace &&
        otherPidNamespace < 0)
      otherPidNamespace = p;
  }
  // A pidfd reaches no process of another pid namespace: over shared memory,
  // such a peer's death is seen only at the deadline.
  if (otherPidNamespace >= 0)
    STRATA_WARN(INIT, "rank %d shares this host and /dev/shm with rank %d (pid %d) but not its pid namespace (separate "
                "containers?): should it die, this rank learns it only after STRATA_TIMEOUT (%.0f s). Share the pid "
                "namespace (docker run --pid=host or --pid=container:<first>) or set STRATA_TRANSPORT=tcp to see "
                "deaths at once",
                rank_, otherPidNamespace, hosts[otherPidNamespace].pid, config_.timeoutSeconds);
  connections_.resize(shape_.nchannels, nranks_);
  for (size_t t = 0; t < transports_.size(); ++t) {
    if (connectsLater(t)) continue;  // pair by pair, when first needed (LazyLinks)
    ConnectRequest req{bootstrap_.get(), &hosts,           peersOf[t],     bootstrap_->commTag(),
                       bootstrap_->secret(), shape_.nchannels, shape_.slotBytes, config_.nslots};
    STRATA_CHECK(transports_[t]->connect(req, connections_));
  }
  return Status::ok();
}

Status Comm::connectPair(int peer, OutOfBand& oob) {
  Connections made;
  made.resize(shape_.nchannels, nranks_);
  ConnectRequest req{&oob, &bootstrap_->hosts(), {peer}, bootstrap_->commTag(), bootstrap_->secret(),
                     shape_.nchannels, shape_.slotBytes, config_.nslots};
  STRATA_CHECK(transports_[peerTransport_[peer]]->connect(req, made));
  adopt(made, peer);
  return Status::ok();
}

void Comm::adopt(Connections& made, int peer) {
  std::lock_guard<std::mutex> lock(linksMutex_);
  for (int ch = 0; ch < shape_.nchannels; ++ch) {
    auto& send = connections_.send[ch][peer] = std::move(made.send[ch][peer]);
    auto& recv = connections_.recv[ch][peer] = std::move(made.recv[ch][peer]);
    channels_[ch].addLinks(peer, send.get(), recv.get());
    if ((send && send->needsProgress()) || (recv && recv->needsProgress())) hasSockets_ = true;
    // fail() aborted what it found: these came after.
    if (failed()) {
      if (send) send->abort();
      if (recv) recv->abort();
    }
  }
}

Status Comm::link(const std::vector<int>& peers) {
  if (!lazy_) return Status::ok();
  // From the next rank up, wrapping: where every rank needs every other (an
  // alltoall), each is then asked by about one rank at a time, not all by all.
  const size_t first = std::upper_bound(peers.begin(), peers.end(), rank_) - peers.begin();
  for (size_t k = 0; k < peers.size(); ++k) {
    const int peer = peers[(first + k) % peers.size()];
    Status s = lazy_->ensure(peer);
    if (s.isOk()) continue;
    // Ranks waiting on this one in the call that needed the pair learn it
    // from their connectors, as from any lost peer.
    fail(s);
    return s;
  }
  return Status::ok();
}

int Comm::connectedPeers() const {
  if (lazy_) return lazy_->connectedCount();
  return nranks_ - 1;
}

uint64_t Comm::mostHeld(const SlotSizing& s) const {
  const ConnectRequest sizing{nullptr, nullptr, {}, 0, {}, s.nchannels, s.slotBytes, s.nslots};
  uint64_t most = 0;
  for (size_t t = 0; t < transports_.size(); ++t) {
    const size_t npeers = std::count(peerTransport_.begin(), peerTransport_.end(), static_cast<int>(t));
    if (npeers) most += transports_[t]->mostHeld(sizing, npeers);
  }
  return most;
}

Status Comm::fitMemoryBudget() {
  if (!budgeted_) return Status::ok();
  // Sent as bytes: no padding left uninitialised.
  struct Fit {
    uint64_t budget;     // this rank's STRATA_MEM_BUDGET (0: none)
    uint64_t slotBytes;  // the slots within it (the sizing unchanged
    uint64_t least;      // without one), or the least it needs
    int32_t nchannels;
    int32_t nslots;
    uint32_t fits;
    uint32_t pad;
  } mine{config_.memBudget, 0, 0, 0, 0, 1, 0};
  SlotSizing fitted{shape_.nchannels, shape_.slotBytes, config_.nslots};
  if (config_.memBudget != 0)
    mine.fits = fitSlots(config_.memBudget, [this](const SlotSizing& s) { return mostHeld(s); }, &fitted);
  mine.slotBytes = fitted.slotBytes;
  mine.least = mostHeld(fitted);
  mine.nchannels = fitted.nchannels;
  mine.nslots = fitted.nslots;
  std::vector<Fit> fits(nranks_);
  STRATA_CHECK(bootstrap_->allgather(&mine, fits.data(), sizeof(Fit)));
  // Every rank's plans assume the same slots: the smallest any rank's budget allows.
  for (int r = 0; r < nranks_; ++r) {
    const Fit& f = fits[r];
    if (!f.fits)
      return STRATA_INVALID_ARG("a memory budget of %llu bytes on rank %d (STRATA_MEM_BUDGET, or its config's "
                                "memory_budget) is less than it needs at least: %llu bytes (%d channel(s), %d slots "
                                "of %llu bytes per FIFO, to every peer it may use)",
                                (unsigned long long)f.budget, r, (unsigned long long)f.least, f.nchannels, f.nslots,
                                (unsigned long long)f.slotBytes);
    shape_.nchannels = std::min(shape_.nchannels, static_cast<int>(f.nchannels));
    shape_.slotBytes = std::min<size_t>(shape_.slotBytes, f.slotBytes);
    config_.nslots = std::min(config_.nslots, static_cast<int>(f.nslots));
  }
  config_.slotBytes = shape_.slotBytes;
  if (config_.memBudget == 0) return Status::ok();
  const uint64_t most = mostHeld({shape_.nchannels, shape_.slotBytes, config_.nslots});
  config_.gpuStagingCacheBytes = std::min<uint64_t>(config_.gpuStagingCacheBytes, config_.memBudget - most);
  STRATA_INFO(INIT, "STRATA_MEM_BUDGET=%llu: %d channel(s), %d slots of %zu bytes per FIFO, at most %llu bytes of "
              "slots here; %zu for the staging cache", (unsigned long long)config_.memBudget, shape_.nchannels,
              config_.nslots, shape_.slotBytes, (unsigned long long)most, config_.gpuStagingCacheBytes);
  return Status::ok();
}

Status Comm::avoidShortTransports(const topo::HostInfo& self) {
  const auto& hosts = bootstrap_->hosts();
  // What each transport chosen here lacks on this host, voted by every rank.
  // Sent as bytes: no padding left uninitialised.
  struct Vote {
    uint32_t shortMask;  // bit t: transport t is short here
    uint32_t lazy;       // STRATA_CONNECT=lazy: asked here, where every rank's answer is heard
    uint64_t budget;     // STRATA_MEM_BUDGET: fitMemoryBudget() runs where any rank has one
    char why[512];
  } mine{};
  mine.lazy = config_.lazyConnect;
  mine.budget = config_.memBudget;
  const ConnectRequest sizing{nullptr, nullptr, {}, 0, {}, shape_.nchannels, shape_.slotBytes, config_.nslots};
  for (size_t t = 0; t < transports_.size() && t < 32; ++t) {
    // Pairs connected when first needed cannot be counted ahead: a shortage
    // is that pair's error, when it comes.
    if (connectsLater(t)) continue;
    const size_t npeers = std::count(peerTransport_.begin(), peerTransport_.end(), static_cast<int>(t));
    const std::string why = npeers ? transports_[t]->shortOf(sizing, npeers) : "";
    if (why.empty()) continue;
    if (!mine.shortMask) std::snprintf(mine.why, sizeof(mine.why), "%s", why.c_str());
    mine.shortMask |= 1u << t;
  }
  std::vector<Vote> votes(nranks_);
  STRATA_CHECK(bootstrap_->allgather(&mine, votes.data(), sizeof(Vote)));
  for (int r = 0; r < nranks_; ++r)
    if (votes[r].lazy != mine.lazy)
      return STRATA_INVALID_ARG("ranks %d and %d disagree: STRATA_CONNECT=%s and %s; every rank of a communicator "
                                "needs the same", rank_, r, mine.lazy ? "lazy" : "eager",
                                votes[r].lazy ? "lazy" : "eager");
  budgeted_ = std::any_of(votes.begin(), votes.end(), [](const Vote& v) { return v.budget != 0; });
  // A transport short on a host is left out of that host's pairs, on both
  // ends alike: every rank reads the same votes.
  bool warned = false;
  auto shortFor = [&](size_t t, const topo::HostInfo& host) {
    for (int r = 0; r < nranks_; ++r)
      if ((votes[r].shortMask >> t & 1) && topo::sameHost(hosts[r], host)) return r;
    return -1;
  };
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_) continue;
    int t = peerTransport_[p];
    const int voter = std::max(shortFor(t, self), shortFor(t, hosts[p]));
    if (voter < 0) continue;
    votes[voter].why[sizeof(votes[voter].why) - 1] = '\0';
    const char* name = transports_[t]->name();
    // Only shared memory has somewhere to fall back to: a tcp job short of
    // descriptors would be as short of them over the next transport.
    if (!config_.transport.empty() || params::shmFallback() == 0 || std::string(name) != "shm")
      return STRATA_ERROR(STRATA_ERR_SYSTEM, "rank %d cannot connect over %s: %s%s", voter, name, votes[voter].why,
                          std::string(name) != "shm"        ? ""
                          : config_.transport.empty() ? " (STRATA_SHM_FALLBACK=0: no other transport is tried)"
                                                      : " (STRATA_TRANSPORT forces it)");
    while (++t < static_cast<int>(transports_.size()) &&
           (!transports_[t]->canConnect(self, hosts[p]) || std::max(shortFor(t, self), shortFor(t, hosts[p])) >= 0)) {
    }
    if (t >= static_cast<int>(transports_.size()))
      return STRATA_ERROR(STRATA_ERR_SYSTEM, "rank %d cannot connect over %s (%s), and no other transport reaches "
                          "rank %d", voter, name, votes[voter].why, p);
    // Said once per host, by its first rank.
    if (!warned && std::none_of(hosts.begin(), hosts.begin() + rank_, [&](const auto& h) { return topo::sameHost(h, self); }))
      STRATA_WARN(INIT, "rank %d: %s; this host's ranks reach each other over %s instead of %s (STRATA_SHM_FALLBACK=0 "
                  "fails instead)", voter, votes[voter].why, transports_[t]->name(), name);
    warned = true;
    peerTransport_[p] = t;
  }
  return Status::ok();
}

Status Comm::decideDevice(const topo::HostInfo& self) {
  if (nranks_ < 2) return Status::ok();
  const auto& hosts = bootstrap_->hosts();
  const bool required = config_.gpuDirect == 2;
  // Every rank holds the same HostInfos: where some rank is on another host
  // or has no GPU, every rank stops here alike.
  for (int r = 0; r < nranks_; ++r) {
    if (topo::sameHost(hosts[r], self) && !topo::gpuKey(hosts[r]).empty()) continue;
    if (!required) return Status::ok();
    return STRATA_INVALID_ARG("STRATA_GPU_DIRECT=2, but rank %d %s: GPU buffers move GPU to GPU only among the GPUs "
                              "of one host", r, topo::sameHost(hosts[r], self) ? "has no GPU" : "is on another host");
  }
  // The rest is this rank's settings and view of the machine: agreed on
  // first, so that every rank connects, or none does.
  std::unique_ptr<Transport> transport = makeCudaTransport();
  topo::HostInfo described = self;
  transport->describeSelf(&described);
  struct Vote {
    int32_t mode;     // STRATA_GPU_DIRECT
    uint32_t direct;  // every pair direct by this rank's cost model
    uint64_t slotBytes;
    int32_t queues;  // CUDA_DEVICE_MAX_CONNECTIONS (gpu/hardware_queues.h)
    int32_t pad = 0;  // sent as bytes: no padding left uninitialised
  } mine{config_.gpuDirect, 1, config_.gpuSlotBytes, gpu::hardwareQueues()};
  for (int a = 0; a < nranks_ && mine.direct; ++a)
    for (int b = a + 1; b < nranks_ && mine.direct; ++b) mine.direct = transport->canConnect(hosts[a], hosts[b]);
  std::vector<Vote> votes(nranks_);
  STRATA_CHECK(bootstrap_->allgather(&mine, votes.data(), sizeof(Vote)));
  bool direct = true;
  for (int r = 0; r < nranks_; ++r) {
    if (votes[r].mode != votes[0].mode || votes[r].slotBytes != votes[0].slotBytes)
      return STRATA_INVALID_ARG("ranks 0 and %d disagree: STRATA_GPU_DIRECT=%d and %d, STRATA_GPU_SLOT_BYTES=%llu and "
                                "%llu; every rank of a communicator needs the same", r, votes[0].mode, votes[r].mode,
                                (unsigned long long)votes[0].slotBytes, (unsigned long long)votes[r].slotBytes);
    direct &= votes[r].direct != 0;
  }
  if (config_.gpuDirect == 0) return Status::ok();
  // A call parks the caller's stream while the channels' streams move its
  // bytes: with fewer hardware queues than those streams, two of them
  // share one and the call never ends (gpu/hardware_queues.h).
  for (int r = 0; r < nranks_; ++r) {
    if (votes[r].queues > shape_.nchannels) continue;
    const std::string why = formatText(
        "rank %d runs with CUDA_DEVICE_MAX_CONNECTIONS=%d, and a stream-ordered call over the cuda transport needs "
        "at least %d hardware queues (the caller's stream and %d channel stream%s), or streams that share one wait "
        "for each other forever",
        r, votes[r].queues, shape_.nchannels + 1, shape_.nchannels, shape_.nchannels == 1 ? "" : "s");
    if (required) return STRATA_INVALID_ARG("STRATA_GPU_DIRECT=2, but %s", why.c_str());
    if (rank_ == 0)
      STRATA_WARN(INIT, "stream-ordered calls on GPU memory are staged through host memory: %s", why.c_str());
    return Status::ok();
  }
  if (!direct) {
    if (required)
      return STRATA_INVALID_ARG("STRATA_GPU_DIRECT=2, but the topology's cost model stages between some pair of this "
                                "communicator's GPUs (strata-topo says which and why)");
    STRATA_INFO(INIT, "stream-ordered calls on GPU memory are staged: the cost model stages between some pair of "
                "this communicator's GPUs");
    return Status::ok();
  }
  deviceWanted_ = true;
  return Status::ok();
}

MemoryHeld Comm::memoryHeld() {
  MemoryHeld held;
  auto connectors = [&held](const Connections& c) {
    for (const auto& perPeer : c.send)
      for (const auto& send : perPeer)
        if (send) held += send->held();
    for (const auto& perPeer : c.recv)
      for (const auto& recv : perPeer)
        if (recv) held += recv->held();
  };
  {
    // Pairs connected lazily join under this lock, their transport's
    // connect() done.
    std::lock_guard<std::mutex> lock(linksMutex_);
    for (const auto& t : transports_) held += t->held();
    connectors(connections_);
  }
  {
    std::lock_guard<std::mutex> lock(deviceMutex_);
    if (deviceTransport_) held += deviceTransport_->held();
    connectors(deviceConnections_);
  }
  if (stager_) held.pinned += stager_->pinnedBytes();
  held.host += cache_.scratchBytes();
  return held;
}

void Comm::prepareDevice(const CollCall& call, const streams::PartSpec& part, const streams::PreMul& premul) {
  // Connected at the first such call, on every rank alike (calls come in
  // the same order everywhere): a job that never passes GPU buffers never
  // makes a CUDA context or GPU memory for them.
  if (!deviceTried_ && !call.pick.any() && onDevice(part, premul)) deviceConnected_ = connectDevice();
}

Status Comm::connectDevice() {
  deviceTried_ = true;
  // What connecting allocates, maps and loads belongs to the communicator's
  // GPU, whichever device the calling thread has current.
  gpu::DeviceScope onGpu(device());
  const auto& hosts = bootstrap_->hosts();
  std::unique_ptr<Transport> transport = makeCudaTransport();
  topo::HostInfo self = hosts[rank_];
  transport->describeSelf(&self);
  std::vector<int> peers;
  for (int p = 0; p < nranks_; ++p)
    if (p != rank_) peers.push_back(p);
  deviceShape_ = shape_;
  deviceShape_.slotBytes = config_.gpuSlotBytes;
  // Made aside, then kept under the lock fail() takes to abort them.
  Connections made;
  made.resize(shape_.nchannels, nranks_);
  ConnectRequest req{bootstrap_.get(), &hosts,           peers,          bootstrap_->commTag(),
                     bootstrap_->secret(), shape_.nchannels, config_.gpuSlotBytes, config_.nslots};
  Status s = transport->connect(req, made);
  // Before any call can hold a stream waiting for the host: a kernel
  // loaded at its first launch may wait for every stream (device_kernels.h).
  // Every rank learns every rank's outcome (the transport's own is agreed
  // already): one rank staging while the others go GPU to GPU would never
  // meet them.
  if (s.isOk()) {
    const int32_t mine = kernels::device::preload();
    std::vector<int32_t> loaded(nranks_);
    STRATA_CHECK(bootstrap_->allgather(&mine, loaded.data(), sizeof(mine)));
    for (int r = 0; r < nranks_ && s.isOk(); ++r)
      if (loaded[r] != 0)
        s = makeErrorQuiet(STRATA_ERR_CUDA, "rank %d could not load the GPU reduction kernels: CUDA error %d", r,
                           loaded[r]);
  }
  if (!s.isOk()) {
    if (config_.gpuDirect == 2) return s;
    if (rank_ == 0)
      STRATA_WARN(INIT, "stream-ordered calls on GPU memory are staged through host memory: %s (STRATA_GPU_DIRECT=0 "
                  "stages them without trying)", s.message().c_str());
    return Status::ok();
  }
  // Ring and chain plans only: a direct plan's fold of more than two
  // ranks goes through a host scratch buffer.
  STRATA_CHECK(Tuning::create("ring", config_.oneshotBytes, config_.cost, deviceShape_, false, &deviceTuning_));
  for (int ch = 0; ch < shape_.nchannels; ++ch) {
    // Read only by whoever drives a device operation, which is queued after
    // this (the channel's queue orders it): the progress threads may run.
    Channel& c = channels_[ch];
    c.deviceLinks = linksOf(made, ch);
    for (SendConnector* send : c.deviceLinks.send)
      if (send) c.deviceStream = send->deviceStream();
    c.deviceLane = gpu::cudaLane(c.deviceStream);
    c.device = device();
  }
  {
    std::lock_guard<std::mutex> lock(deviceMutex_);  // fail() aborts the connectors from any thread
    deviceConnections_ = std::move(made);
    deviceTransport_ = std::move(transport);
  }
  std::vector<const std::atomic<double>*> since;
  for (const Channel& c : channels_) since.push_back(&c.deviceCallSince);
  deviceWatch_ = std::make_unique<StuckWatch>(since, config_.timeoutSeconds, [this](int ch, double seconds) {
    // A device operation, the only kind a watched thread runs, was
    // reserved in the stager before it was queued: stager_ is there. The
    // streams go first (only stores to flags): what the stuck call waits for.
    stager_->abandon();
    fail(STRATA_ERROR(STRATA_ERR_TIMEOUT,
                      "rank %d: the thread driving channel %d's GPU-to-GPU work has been inside a CUDA call for "
                      "%.1f s (STRATA_TIMEOUT): the driver is not returning; every stream this communicator holds "
                      "is let go (their output is undefined)", rank_, ch, seconds));
  });
  STRATA_INFO(INIT, "stream-ordered calls on GPU memory move GPU to GPU (cuda transport, CUDA device %d, %zu-byte "
              "slots)", device(), config_.gpuSlotBytes);
  return Status::ok();
}

CollCall Comm::tuned(const CollCall& call, int* line) const {
  int matched = 0;
  CollCall out = call;
  // Calls on device memory plan with the device's own slots and channels.
  if (!call.pick.any() && !tuner_.empty() && call.memory != MemoryType::Device)
    out.pick = tuner_.pickFor(call, &matched);
  if (line) *line = matched;
  return out;
}

Status Comm::choose(const CollCall& given, PlanChoice* choice) const {
  const CollCall call = tuned(given, nullptr);
  const bool device = call.memory == MemoryType::Device;
  PlanShape shape = device ? deviceShape_ : shape_;
  shape.elemSize = strata_datatype_size(call.datatype);
  return Planner::choose(call, shape, device ? deviceTuning_ : tuning_, choice);
}

Status Comm::build(const CollCall& call, PlannedCall* planned) {
  const size_t elemSize = strata_datatype_size(call.datatype);
  const bool device = call.memory == MemoryType::Device;
  PlanShape shape = device ? deviceShape_ : shape_;
  shape.elemSize = elemSize;
  // The scratch region lives with the plans it serves: a queued operation
  // holds them, so an entry the cache replaces meanwhile keeps both.
  struct PlansAndScratch {
    PlanSet plans;
    std::vector<char> scratch;
  };
  auto owned = std::make_shared<PlansAndScratch>();
  owned->plans.resize(shape_.nchannels);
  STRATA_CHECK(planner_.plan(call, shape, device ? deviceTuning_ : tuning_, owned->plans, &planned->choice));
  owned->scratch.resize(planned->choice.scratchElems * elemSize);
  planned->plans = std::shared_ptr<const PlanSet>(owned, &owned->plans);
  // Device plans run over the cuda transport's connectors, all made at once.
  planned->peers = device ? std::vector<int>() : peersOf(owned->plans, rank_, nranks_);
  planned->linked = planned->peers.empty();

  OpContext& ctx = planned->ctx;
  ctx = OpContext{};
  ctx.scratch = owned->scratch.data();
  ctx.datatype = call.datatype;
  ctx.op = call.op;
  ctx.elemSize = elemSize;
  ctx.rank = rank_;
  ctx.nranks = nranks_;
  ctx.tag = SlotTag{0, OpDesc{call.coll, call.datatype, call.op, call.count}.pack()};
  ctx.memory = &memoryOps(call.memory);
  ctx.reduceFn = ctx.memory->reduceKernel(call.datatype, call.op, isa_);
  uint64_t outBytes = call.count * elemSize;
  if (call.coll == Coll::Allgather || call.coll == Coll::Alltoall) outBytes *= nranks_;
  ctx.ntOutput = outBytes >= config_.ntBytes;
  ctx.sendFromCaller = planned->choice.inputStable;
  return Status::ok();
}

Status Comm::planMiss(const CollCall& call, const PlannedCall** planned) {
  if (log::enabled(log::Level::Info, log::ALGO)) logFirstDecision(call);
  if (PlanKey::cacheable(call)) {
    PlannedCall built;
    STRATA_CHECK(build(call, &built));
    *planned = &cache_.insert(PlanKey::of(call), std::move(built));
  } else {
    STRATA_CHECK(build(call, &uncached_));
    *planned = &uncached_;
  }
  return Status::ok();
}

void Comm::traceStart(const PlanChoice& choice, const OpContext& ctx) const {
  STRATA_TRACE(COLL, "%s #%llu: %s on %d channel(s)", OpDesc::unpack(ctx.tag.desc).describe().c_str(),
               (unsigned long long)ctx.tag.seq, choice.algo, choice.nchannels);
}

Status Comm::submit(const CollCall& call, bool callerWaits, Request* request) {
  const PlannedCall* planned;
  OpContext ctx;
  STRATA_CHECK(prepare(call, &planned, &ctx));
  request->seq = ctx.tag.seq;
  enqueue(ctx, planned->plans, planned->choice.nchannels, callerWaits, request);
  return Status::ok();
}

Status Comm::run(const CollCall& call, Request* request) {
  const PlannedCall* planned;
  OpContext ctx;
  STRATA_CHECK(prepare(call, &planned, &ctx));
  request->seq = ctx.tag.seq;
  Status outcome;
  if (planned->choice.nchannels == 1 && channels_[0].runNow((*planned->plans)[0], ctx, *this, spins_, &outcome)) {
    noteDone(ctx.tag.seq, 0, outcome);
    request->finishedAlone(outcome);
    return Status::ok();
  }
  enqueue(ctx, planned->plans, planned->choice.nchannels, true, request);
  return Status::ok();
}

Status Comm::submitGroup(const std::vector<P2pOp>& ops, bool callerWaits, Request* request,
                         const std::vector<InputGate*>* gates) {
  if (lazy_) {
    std::vector<int> peers;
    for (const P2pOp& op : ops)
      if (op.peer != rank_) peers.push_back(op.peer);
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    STRATA_CHECK(link(peers));
  }
  STRATA_CHECK(describeP2pGroup(ops, rank_, &p2pSeqs_, &request->messages, &p2pSpec_));
  request->seq = 0;
  request->p2pGroup = opLog_.p2pGroup();
  for (const P2pOp& op : ops)
    opLog_.p2pIssued(request->p2pGroup, op.peer, op.count * strata_datatype_size(op.datatype), op.send);
  if (gates) {
    // The messages come in the order of ops, but copies to this rank (a send
    // and a receive each) last; a copy reads its send's input.
    size_t m = 0;
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].peer != rank_) request->messages[m++].gate = (*gates)[i];
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].peer == rank_ && ops[i].send) request->messages[m++].gate = (*gates)[i];
  }
  // A lone send or receive is the same plan every time it moves the same
  // bytes to or from the same peer; a group's plans are built for it alone.
  const bool single = ops.size() == 1 && ops[0].peer != rank_;
  const PlanKey key = single ? PlanKey::of(ops[0]) : PlanKey{};
  const PlannedCall* cached = single ? cache_.find(key) : nullptr;
  std::shared_ptr<const PlanSet> plans = cached ? cached->plans : nullptr;
  if (!plans) {
    auto built = std::make_shared<PlanSet>(shape_.nchannels);
    buildP2pGroup(shape_, p2pSpec_, *built);
    if (single) cache_.insert(key, PlannedCall{{"p2p", shape_.nchannels}, OpContext{}, built});
    plans = std::move(built);
  }
  OpContext ctx{};
  ctx.datatype = STRATA_UINT8;
  ctx.op = STRATA_SUM;
  ctx.elemSize = 1;
  ctx.rank = rank_;
  ctx.nranks = nranks_;
  ctx.tag = request->messages.empty() ? SlotTag{} : request->messages[0].tag;
  ctx.reduceFn = ctx.memory->reduceKernel(STRATA_UINT8, STRATA_SUM, isa_);
  ctx.messages = request->messages.data();
  ctx.sendFromCaller = true;  // send buffers stay untouched until the request completes
  enqueue(ctx, plans, shape_.nchannels, callerWaits, request,
          single ? (uint64_t(ops[0].peer) << 1 | uint64_t(ops[0].send)) + 1 : 0);
  return Status::ok();
}

streams::Stager& Comm::stager() {
  if (!stager_) {
    if (!pinned_.alloc) pinned_ = {&gpu::allocPinned, &gpu::freePinned};
    stager_ = std::make_unique<streams::Stager>(pinned_, config_.gpuChunkBytes, config_.gpuStagingCacheBytes);
    stager_->onEnded([this](const Request& r) { noteDone(r.seq, r.p2pGroup, r.status(), /*offThread=*/true); });
  }
  return *stager_;
}

Status Comm::checkStreamsDriven() const {
  if (config_.nthreads == 0)
    return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                        "stream-ordered calls need a progress thread to run them, and STRATA_NTHREADS=0");
  return Status::ok();
}

bool Comm::onDevice(const streams::PartSpec& part, const streams::PreMul& premul) const {
  // Reproducible mode stages through host memory: on device memory, plans
  // beyond two ranks are rings and chains (deviceTuning_), not rank-order folds.
  if (!deviceWanted_ || premul.set || part.in.bytes + part.out.bytes == 0 || config_.reproducible) return false;
  auto reached = [&](const streams::UserBuffer& b) {
    return b.bytes == 0 || b.kind == gpu::MemKind::Managed || b.kind == gpu::MemKind::PinnedHost ||
           (b.kind == gpu::MemKind::Device && b.device == device());
  };
  return reached(part.in) && reached(part.out);
}

Status Comm::submitOnDevice(const CollCall& call, gpu::StreamLane& lane, const streams::PartSpec& part) {
  CollCall dev = call;
  dev.memory = MemoryType::Device;
  const PlannedCall* planned = nullptr;
  STRATA_CHECK(lookup(dev, &planned));
  // Nothing is staged: the channels' streams read and write the buffers in place.
  streams::PartSpec inPlace = part;
  inPlace.in.staged = inPlace.out.staged = false;
  const int nch = planned->choice.nchannels;
  streams::Stager& st = stager();
  streams::StagedOp* op = nullptr;
  STRATA_CHECK(st.reserve({inPlace}, {}, &op, nch));
  STRATA_CHECK(st.enqueue(lane, op));
  OpContext ctx;
  start(dev, *planned, &ctx);
  op->request.seq = ctx.tag.seq;
  enqueue(ctx, planned->plans, nch, false, &op->request, 0, op);
  return Status::ok();
}

Status Comm::submitOnStream(const CollCall& call, gpu::StreamLane& lane, const streams::PartSpec& part,
                            const streams::PreMul& premul) {
  STRATA_CHECK(checkStreamsDriven());
  // One rank: every collective's result is its input, so the stream copies
  // it (a device-to-device copy for GPU buffers) and nothing is staged.
  if (nranks_ == 1 && !premul.set && part.in.bytes == part.out.bytes) {
    if (part.in.bytes == 0 || part.in.ptr == part.out.ptr) return Status::ok();
    return lane.copy(const_cast<void*>(part.out.ptr), part.in.ptr, part.in.bytes);
  }
  if (!call.pick.any() && onDevice(part, premul)) {
    prepareDevice(call, part, premul);
    Status connected = std::move(deviceConnected_);
    deviceConnected_ = Status::ok();
    STRATA_CHECK(connected);
    if (deviceTransport_) return submitOnDevice(call, lane, part);
  }
  streams::Stager& st = stager();
  streams::StagedOp* op = nullptr;
  STRATA_CHECK(st.reserve({part}, premul, &op));
  CollCall host = call;
  host.sendbuf = op->parts[0].hostInput();
  host.recvbuf = op->parts[0].hostOutput();
  if (premul.set) host.op = STRATA_SUM;
  const PlannedCall* planned = nullptr;
  Status s = lookup(host, &planned);
  if (!s.isOk()) {
    st.cancel(op);
    return s;
  }
  STRATA_CHECK(st.enqueue(lane, op));
  OpContext ctx;
  start(host, *planned, &ctx);
  ctx.gate = &op->parts[0];
  op->request.seq = ctx.tag.seq;
  // Nobody waits on it: the progress threads drive it, its end releases the stream.
  enqueue(ctx, planned->plans, planned->choice.nchannels, false, &op->request);
  return Status::ok();
}

Status Comm::submitGroupOnStream(const std::vector<P2pOp>& ops, gpu::StreamLane& lane,
                                 const std::vector<streams::PartSpec>& parts) {
  STRATA_CHECK(checkStreamsDriven());
  streams::Stager& st = stager();
  streams::StagedOp* op = nullptr;
  STRATA_CHECK(st.reserve(parts, {}, &op));
  std::vector<P2pOp> host = ops;
  std::vector<InputGate*> gates;
  for (size_t i = 0; i < host.size(); ++i) {
    host[i].sendbuf = op->parts[i].hostInput();
    host[i].recvbuf = op->parts[i].hostOutput();
    gates.push_back(&op->parts[i]);
  }
  // The group must be one the exchange accepts before anything goes on the
  // stream: checked on a copy of the message counts, which it advances.
  P2pSequences scratch = p2pSeqs_;
  std::vector<Message> messages;
  ExchangeSpec spec;
  Status s = describeP2pGroup(host, rank_, &scratch, &messages, &spec);
  if (!s.isOk()) {
    st.cancel(op);
    return s;
  }
  STRATA_CHECK(st.enqueue(lane, op));
  s = submitGroup(host, false, &op->request, &gates);
  if (!s.isOk()) op->request.finishedAlone(s);  // checked above: cannot happen, but never strand the stream
  return s;
}

void Comm::drainStreams() {
  // Operations in flight end on their own once their streams reach them;
  // give them the communicator's deadline, then fail what is left, which
  // releases every stream still waiting.
  const double deadline = nowSeconds() + config_.timeoutSeconds;
  while (stager_->running() > 0 && !failed() && nowSeconds() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  if (stager_->running() > 0)
    fail(STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                      "rank %d destroyed the communicator with %zu stream-ordered operations its streams had "
                      "not reached", rank_, stager_->running()));
  while (stager_->running() > 0 && nowSeconds() < deadline + 1)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  // A stream blocked on the user's other work may never get there: its
  // pinned memory is then left allocated (Stager's destructor says so),
  // and the device streams waiting for it are let go.
  if (!stager_->drain(nowSeconds() + std::min(10.0, config_.timeoutSeconds))) stager_->releaseAll();
}

void Comm::enqueue(const OpContext& ctx, const std::shared_ptr<const PlanSet>& plans, int nch, bool callerWaits,
                   Request* request, uint64_t p2pKey, const streams::StagedOp* device) {
  // A large blocking call spread over several channels wants the progress
  // threads' help; a single-channel one is cheaper driven by its caller alone.
  const bool forThreads = !callerWaits || nch > 1;
  request->start(nch);
  for (int ch = 0; ch < nch; ++ch) {
    Channel& channel = channels_[ch];
    ChannelOp* slot = channel.reserve();
    if (!slot)  // the queue is full: drive this channel until an entry frees up
      driveUntil(spins_, false, [&] { return (slot = channel.reserve()) != nullptr; },
                 [&](auto&& fn) { fn(channel, *this); });
    slot->request = request;
    slot->ctx = ctx;
    slot->plans = plans;
    slot->plan = &(*plans)[ch];
    slot->cursor = 0;
    slot->posted = 0;
    slot->forThreads = forThreads;
    slot->p2pKey = p2pKey;
    slot->finished = false;
    slot->ctx.stream = device ? channel.deviceStream : nullptr;
    slot->deviceStart = device ? device->parts[0].landedFlag() : nullptr;
    slot->deviceDone = device ? device->deviceDone(ch) : nullptr;
    slot->deviceStarted = false;
    slot->started = 0;
    channel.commit();
  }
  if (forThreads) threads_->wake();
}

Status Comm::wait(Request& request) {
  // An operation run at once is done already: no loop to set up.
  if (!request.done())
    driveUntil(spins_, hasSockets_, [&] { return request.done(); }, [&](auto&& fn) { forEachChannel(fn); });
  noteDone(request);
  return request.status();
}

bool Comm::test(Request& request) {
  bool progressed = false;
  for (Channel& ch : channels_)
    if (ch.hasWork()) progressed |= ch.drive(*this);
  if (!request.done()) {
    // A caller polling strata_test in a loop is a waiter too: past the spin
    // budget (at once with more ranks than cores) it gives its core away,
    // or each poll can keep the rank it waits for off the core for a time
    // slice (bench/README.md, "Measurements behind the code").
    if (progressed) tFruitlessTests = 0;
    else if (++tFruitlessTests > spins_) sched_yield();
    return false;
  }
  tFruitlessTests = 0;
  noteDone(request);
  return true;
}

Status Comm::failure() const {
  std::lock_guard<std::mutex> lock(errorMutex_);
  return failure_;
}

void Comm::fail(const Status& why) {
  if (failed()) return;
  // A timeout is where users lose hours: say at once where every rank
  // stands. Asked before the failure is set, while peers still answer.
  std::string report;
  if (why.code() == STRATA_ERR_TIMEOUT && control_ && nranks_ <= kStallReportMaxRanks) {
    report = stallReport(true, nowSeconds() + kStallReportSeconds);
    STRATA_WARN(COLL, "stall report, rank %d of %d:\n%s", rank_, nranks_, report.c_str());
    report = " Stall report: " + report.substr(0, report.find('\n'));
  }
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (failed_.load(std::memory_order_relaxed)) return;
    failure_ = report.empty() ? why : makeErrorQuiet(why.code(), "%s%s", why.message().c_str(), report.c_str());
    lastError_ = failure_.message();
    failed_.store(true, std::memory_order_release);
  }
  // Progress threads asleep on sockets see the failure and fail what they hold.
  if (threads_) threads_->wake();
  // A revoke reaches every rank over the control plane: aborting the links
  // too would race it, and fail some peers as "aborted" instead of revoked.
  if (why.code() == STRATA_ERR_REVOKED) return;
  // Tell every peer at once, so ranks that wait on others than us fail too.
  {
    std::lock_guard<std::mutex> lock(linksMutex_);
    abortAll(connections_);
  }
  std::lock_guard<std::mutex> lock(deviceMutex_);
  abortAll(deviceConnections_);
}

std::string Comm::stallReport(bool full, double deadline) const {
  const auto all = control_->gatherSnapshots(deadline);
  return full ? fault::describeStall(all) : fault::summarizeStall(all);
}

void Comm::revoke() {
  const std::vector<int> missed = control_->sendRevoke(nowSeconds() + std::min(2.0, config_.timeoutSeconds));
  if (!missed.empty())
    STRATA_INFO(INIT, "revoke: %zu rank(s) not reached (gone already)", missed.size());
  fail(makeErrorQuiet(STRATA_ERR_REVOKED, "this rank (%d) revoked the communicator", rank_));
}

void Comm::setLastError(const std::string& message) {
  std::lock_guard<std::mutex> lock(errorMutex_);
  lastError_ = message;
}

std::string Comm::lastError() const {
  std::lock_guard<std::mutex> lock(errorMutex_);
  return lastError_;
}

}  // namespace strata
