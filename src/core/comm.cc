#include "comm.h"

#include <algorithm>

#include "log.h"
#include "op_desc.h"
#include "params.h"
#include "wait_policy.h"

namespace strata {
namespace {

bool isPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

Status Comm::create(const boot::BootstrapConfig& config, std::unique_ptr<Comm>* out) {
  std::unique_ptr<Comm> comm(new Comm());
  STRATA_CHECK(comm->init(config));
  *out = std::move(comm);
  return Status::ok();
}

Comm::~Comm() {
  // Threads first: they may be driving channels that point at connectors.
  threads_.reset();
  channels_.clear();
  connections_ = Connections();
  transports_.clear();
}

Status Comm::init(const boot::BootstrapConfig& config) {
  rank_ = config.rank;
  nranks_ = config.nranks;
  log::setThreadRank(rank_);
  timeout_ = params::timeout();
  if (!(timeout_ > 0))
    return STRATA_INVALID_ARG("STRATA_TIMEOUT=%g must be a positive number of seconds", timeout_);
  const int64_t nslots = params::nslots();
  const int64_t slotBytes = params::slotBytes();
  if (!isPowerOfTwo(nslots) || nslots < 2 || nslots > 64)
    return STRATA_INVALID_ARG("STRATA_NSLOTS=%lld must be a power of two in 2..64", (long long)nslots);
  if (slotBytes < 4096 || slotBytes > (64 << 20))
    return STRATA_INVALID_ARG("STRATA_SLOT_BYTES=%lld must be in 4096..67108864", (long long)slotBytes);
  if (params::nthreads() < 0 || params::nthreads() > 64)
    return STRATA_INVALID_ARG("STRATA_NTHREADS=%lld must be in 0..64", (long long)params::nthreads());
  if (params::nchannels() < 0 || params::nchannels() > 32)
    return STRATA_INVALID_ARG("STRATA_NCHANNELS=%lld must be in 0..32", (long long)params::nchannels());

  topo::HostInfo self = topo::probeHost();
  STRATA_CHECK(boot::Bootstrap::create(config, self, &bootstrap_));

  int localRanks = 0;
  for (const auto& h : bootstrap_->hosts()) localRanks += topo::sameHost(h, self) ? 1 : 0;
  int nchannels = static_cast<int>(params::nchannels());
  if (nchannels == 0) nchannels = std::clamp(self.cpusAllowed / std::max(1, localRanks), 1, 4);
  spins_ = chooseSpins(params::spinCount(), localRanks, self.cpusAllowed);
  shape_ = PlanShape{rank_, nranks_, nchannels, static_cast<size_t>(slotBytes), 0};
  tuning_.oneshotBytes = static_cast<size_t>(std::max<int64_t>(0, params::oneshotBytes()));
  STRATA_CHECK(parseForcedAlgo(params::algo(), &tuning_.forced));
  streamingBytes_ = static_cast<size_t>(std::max<int64_t>(0, params::streamingStores()));
  isa_ = reduce::selectedIsa();

  STRATA_CHECK(connectTransports(self));
  channels_ = std::vector<Channel>(nchannels);
  plans_.resize(nchannels);
  for (int ch = 0; ch < nchannels; ++ch) {
    Channel& c = channels_[ch];
    c.links.send.assign(nranks_, nullptr);
    c.links.recv.assign(nranks_, nullptr);
    for (int p = 0; p < nranks_; ++p) {
      c.links.send[p] = connections_.send[ch][p].get();
      c.links.recv[p] = connections_.recv[ch][p].get();
      for (Connector* end : {static_cast<Connector*>(c.links.send[p]), static_cast<Connector*>(c.links.recv[p])})
        if (end && end->needsProgress()) c.links.pollers.push_back(end);
    }
  }
  threads_ = std::make_unique<ProgressThreads>(channels_, *this, static_cast<int>(params::nthreads()),
                                               spins_, rank_);
  STRATA_INFO(INIT, "rank %d of %d: %d local ranks, %d cores, %d channels, %lld threads, spin %lld, "
              "%lld slots x %lld bytes, reduce isa %s",
              rank_, nranks_, localRanks, self.cpusAllowed, nchannels,
              (long long)params::nthreads(), (long long)spins_, (long long)nslots,
              (long long)slotBytes, reduce::isaName(isa_));
  return Status::ok();
}

Status Comm::connectTransports(const topo::HostInfo& self) {
  const auto& hosts = bootstrap_->hosts();
  transports_ = makeTransports();
  const std::string& forced = params::transport();
  if (!forced.empty() &&
      std::none_of(transports_.begin(), transports_.end(),
                   [&](const auto& t) { return forced == t->name(); }))
    return STRATA_INVALID_ARG("STRATA_TRANSPORT='%s' is not a transport built into this library",
                              forced.c_str());

  // Each peer goes to the first transport (in preference order) that can
  // reach it; both ends decide alike because canConnect is symmetric.
  std::vector<std::vector<int>> peersOf(transports_.size());
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_) continue;
    bool placed = false;
    for (size_t t = 0; t < transports_.size() && !placed; ++t) {
      if (!forced.empty() && forced != transports_[t]->name()) continue;
      if (transports_[t]->canConnect(self, hosts[p])) {
        peersOf[t].push_back(p);
        placed = true;
        STRATA_TRACE(INIT, "rank %d -> rank %d over %s", rank_, p, transports_[t]->name());
      }
    }
    if (!placed)
      return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                          "no transport reaches rank %d on host %s from this host (%s)%s%s",
                          p, hosts[p].hostname, self.hostname, forced.empty() ? "" : " with STRATA_TRANSPORT=",
                          forced.c_str());
  }
  connections_.send.resize(shape_.nchannels);
  connections_.recv.resize(shape_.nchannels);
  for (int ch = 0; ch < shape_.nchannels; ++ch) {
    connections_.send[ch].resize(nranks_);
    connections_.recv[ch].resize(nranks_);
  }
  for (size_t t = 0; t < transports_.size(); ++t) {
    ConnectRequest req{bootstrap_.get(),  &hosts,           peersOf[t], bootstrap_->commTag(),
                       shape_.nchannels, shape_.slotBytes, static_cast<int>(params::nslots())};
    STRATA_CHECK(transports_[t]->connect(req, connections_));
  }
  return Status::ok();
}

Status Comm::submitAllreduce(const void* sendbuf, void* recvbuf, size_t count,
                             strata_datatype_t datatype, strata_op_t op, bool callerWaits,
                             Request* request) {
  PlanShape shape = shape_;
  shape.elemSize = strata_datatype_size(datatype);
  AllreduceChoice choice;
  STRATA_CHECK(chooseAllreduce(shape, count, tuning_, &choice));
  if (choice.algo == AllreduceAlgo::Ring)
    buildRingAllreduce(shape, count, choice.nchannels, plans_);
  else
    buildOneShotAllreduce(shape, count, plans_);

  OpContext ctx;
  ctx.input = static_cast<const char*>(sendbuf);
  ctx.output = static_cast<char*>(recvbuf);
  ctx.datatype = datatype;
  ctx.op = op;
  ctx.elemSize = shape.elemSize;
  ctx.rank = rank_;
  ctx.nranks = nranks_;
  ctx.tag = SlotTag{++seq_, OpDesc{Coll::Allreduce, datatype, op, count}.pack()};
  ctx.reduceFn = reduce::kernel(datatype, op, isa_);
  ctx.streamingOutput = count * shape.elemSize >= streamingBytes_;
  STRATA_TRACE(COLL, "allreduce #%llu count %zu %s %s: %s on %d channel(s)",
               (unsigned long long)ctx.tag.seq, count, datatypeName(datatype), opName(op),
               algoName(choice.algo), choice.nchannels);

  // A large blocking call spread over several channels wants the progress
  // threads' help; a single-channel one is cheaper driven by its caller alone.
  const bool forThreads = !callerWaits || choice.nchannels > 1;
  request->start(choice.nchannels);
  for (int ch = 0; ch < choice.nchannels; ++ch) {
    ChannelOp* slot;
    WaitPolicy wait(spins_);
    while (!(slot = channels_[ch].reserve())) wait.afterPoll(channels_[ch].drive(*this));
    slot->request = request;
    slot->ctx = ctx;
    slot->plan.steps.swap(plans_[ch].steps);
    slot->cursor = 0;
    slot->forThreads = forThreads;
    channels_[ch].commit();
  }
  if (forThreads) threads_->wake();
  return Status::ok();
}

Status Comm::wait(Request& request) {
  WaitPolicy wait(spins_);
  while (!request.done()) {
    bool progressed = false;
    for (Channel& ch : channels_)
      if (ch.hasWork()) progressed |= ch.drive(*this);
    wait.afterPoll(progressed);
  }
  return request.status();
}

bool Comm::test(Request& request) {
  for (Channel& ch : channels_)
    if (ch.hasWork()) ch.drive(*this);
  return request.done();
}

Status Comm::failure() const {
  std::lock_guard<std::mutex> lock(errorMutex_);
  return failure_;
}

void Comm::fail(const Status& why) {
  {
    std::lock_guard<std::mutex> lock(errorMutex_);
    if (failed_.load(std::memory_order_relaxed)) return;
    failure_ = why;
    lastError_ = why.message();
    failed_.store(true, std::memory_order_release);
  }
  // Tell every peer at once, so ranks that wait on others than us fail too.
  for (Channel& ch : channels_) ch.abortLinks();
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
