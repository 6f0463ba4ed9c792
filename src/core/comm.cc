#include "comm.h"

#include <poll.h>

#include <algorithm>
#include <string>
#include <unordered_map>

#include "clock.h"
#include "describe.h"
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
  transports_ = makeTransports(&self);
  STRATA_CHECK(boot::Bootstrap::create(config, self, &bootstrap_));

  const auto& hosts = bootstrap_->hosts();
  const auto shares = topo::hostShares(hosts);
  // Cores are counted per machine: ranks in other namespaces of it compete for them too.
  const topo::HostShare& local = shares.at(topo::machineKey(self));
  const int localRanks = local.ranks;
  // Every rank's plans assume the same channel count, so the automatic choice
  // is the smallest any host's ranks would make from their cores (all ranks
  // know every rank's host and mask from the bootstrap, and reach the same value).
  int nchannels = static_cast<int>(params::nchannels());
  if (nchannels == 0) {
    nchannels = 4;
    for (const auto& entry : shares)
      nchannels = std::min(nchannels, std::clamp(entry.second.cores / std::max(1, entry.second.ranks), 1, 4));
  }
  spins_ = chooseSpins(params::spinCount(), localRanks, local.cores);
  layout_ = Layout::of(topo::buildHierarchy(hosts));
  shape_ = PlanShape{rank_, nranks_, nchannels, static_cast<size_t>(slotBytes), 0, &layout_};
  sendSeq_.assign(nranks_, 0);
  recvSeq_.assign(nranks_, 0);
  CostModel cost;
  STRATA_CHECK(parseLinkCost(params::costShm(), "STRATA_COST_SHM", &cost.shm));
  STRATA_CHECK(parseLinkCost(params::costNet(), "STRATA_COST_NET", &cost.net));
  STRATA_CHECK(Tuning::create(params::algo(), static_cast<size_t>(std::max<int64_t>(0, params::oneshotBytes())),
                              cost, shape_, &tuning_));
  streamingBytes_ = static_cast<size_t>(std::max<int64_t>(0, params::streamingStores()));
  isa_ = kernels::selectedIsa();

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
    hasSockets_ |= !c.links.pollers.empty();
  }
  threads_ = std::make_unique<ProgressThreads>(channels_, *this, static_cast<int>(params::nthreads()),
                                               spins_, rank_);
  STRATA_INFO(INIT, "rank %d of %d: %d ranks on this machine's %d cores (%d in its own mask), %d channels, "
              "%lld threads, spin %lld, %lld slots x %lld bytes, reduce isa %s",
              rank_, nranks_, localRanks, local.cores, self.cpusAllowed, nchannels,
              (long long)params::nthreads(), (long long)spins_, (long long)nslots,
              (long long)slotBytes, kernels::isaName(isa_));
  if (rank_ == 0) {
    STRATA_INFO(TOPO, "%s", topo::describeTree(layout_.hierarchy, hosts).c_str());
    STRATA_INFO(ALGO, "%d nodes; allreduce by size: %s", layout_.nodes(), tuning_.describe().c_str());
  }
  return Status::ok();
}

Status Comm::connectTransports(const topo::HostInfo& self) {
  const auto& hosts = bootstrap_->hosts();
  const std::string& forced = params::transport();
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
    peersOf[t].push_back(p);
    peerTransport_[p] = t;
    STRATA_TRACE(INIT, "rank %d -> rank %d over %s", rank_, p, transports_[t]->name());
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

Status Comm::choose(const CollCall& call, PlanChoice* choice) const {
  PlanShape shape = shape_;
  shape.elemSize = strata_datatype_size(call.datatype);
  return Planner::choose(call, shape, tuning_, choice);
}

Status Comm::prepare(const CollCall& call, PlanChoice* choice, OpContext* ctx) {
  const bool inPlace = call.sendbuf == call.recvbuf;
  if (planKept_ && call.coll == Coll::Allreduce && kept_.count == call.count && kept_.datatype == call.datatype &&
      kept_.op == call.op && kept_.inPlace == inPlace) {
    // The same allreduce again: only the buffers and the sequence number change.
    *choice = kept_.choice;
    *ctx = kept_.ctx;
    ctx->input = static_cast<const char*>(call.sendbuf);
    ctx->output = static_cast<char*>(call.recvbuf);
    ctx->tag.seq = ++seq_;
    traceStart(*choice, *ctx);
    return Status::ok();
  }
  planKept_ = false;
  const size_t elemSize = strata_datatype_size(call.datatype);
  PlanShape shape = shape_;
  shape.elemSize = elemSize;
  STRATA_CHECK(planner_.plan(call, shape, tuning_, plans_, choice));

  *ctx = OpContext{};
  ctx->input = static_cast<const char*>(call.sendbuf);
  ctx->output = static_cast<char*>(call.recvbuf);
  ctx->datatype = call.datatype;
  ctx->op = call.op;
  ctx->elemSize = elemSize;
  ctx->rank = rank_;
  ctx->nranks = nranks_;
  ctx->tag = SlotTag{++seq_, OpDesc{call.coll, call.datatype, call.op, call.count}.pack()};
  ctx->reduceFn = kernels::kernel(call.datatype, call.op, isa_);
  uint64_t outBytes = call.count * elemSize;
  if (call.coll == Coll::Allgather || call.coll == Coll::Alltoall) outBytes *= nranks_;
  ctx->streamingOutput = outBytes >= streamingBytes_;
  ctx->sendFromCaller = choice->inputStable;
  if (call.coll == Coll::Barrier) {
    static const uint8_t kZero = 0;
    ctx->input = reinterpret_cast<const char*>(&kZero);
    ctx->output = reinterpret_cast<char*>(&barrierBytes_[seq_ % barrierBytes_.size()]);
  }
  if (call.coll == Coll::Allreduce) kept_ = {call.count, call.datatype, call.op, inPlace, *choice, *ctx};
  traceStart(*choice, *ctx);
  return Status::ok();
}

void Comm::traceStart(const PlanChoice& choice, const OpContext& ctx) const {
  STRATA_TRACE(COLL, "%s #%llu: %s on %d channel(s)", OpDesc::unpack(ctx.tag.desc).describe().c_str(),
               (unsigned long long)ctx.tag.seq, choice.algo, choice.nchannels);
}

Status Comm::submit(const CollCall& call, bool callerWaits, Request* request) {
  PlanChoice choice;
  OpContext ctx;
  STRATA_CHECK(prepare(call, &choice, &ctx));
  request->timing = {};
  if (SlotStoreChoice* stores = slotStoresFor(call, ctx)) ctx.streamSlots = stores->best();
  planKept_ = false;  // the queue takes the plans
  enqueue(ctx, choice.nchannels, callerWaits, request);
  return Status::ok();
}

Status Comm::run(const CollCall& call, Request* request) {
  PlanChoice choice;
  OpContext ctx;
  STRATA_CHECK(prepare(call, &choice, &ctx));
  request->timing = {};
  if (SlotStoreChoice* stores = slotStoresFor(call, ctx)) {
    ctx.streamSlots = stores->next();
    request->timing = {nowSeconds(), call.count * ctx.elemSize, ctx.streamSlots};
  }
  Status outcome;
  if (choice.nchannels == 1 && channels_[0].runNow(plans_[0], ctx, *this, spins_, &outcome)) {
    planKept_ = call.coll == Coll::Allreduce;
    request->finishedAlone(outcome);
    return Status::ok();
  }
  planKept_ = false;
  enqueue(ctx, choice.nchannels, true, request);
  return Status::ok();
}

Status Comm::submitGroup(const std::vector<P2pOp>& ops, bool callerWaits, Request* request) {
  if (ops.size() > UINT16_MAX)  // Step::msg is 16 bits
    return STRATA_ERROR(STRATA_ERR_INVALID_USAGE, "a group holds at most %d sends and receives",
                        UINT16_MAX);
  // Every message moves as bytes; each has its own buffers and tag.
  request->messages.clear();
  p2pSpec_.clear();
  std::vector<size_t> selfSends, selfRecvs;
  for (size_t i = 0; i < ops.size(); ++i) {
    const P2pOp& op = ops[i];
    const uint64_t bytes = op.count * strata_datatype_size(op.datatype);
    if (op.peer == rank_) {
      (op.send ? selfSends : selfRecvs).push_back(i);
      continue;
    }
    uint64_t seq = ++(op.send ? sendSeq_ : recvSeq_)[op.peer];
    SlotTag tag{seq, OpDesc{Coll::SendRecv, op.datatype, STRATA_SUM, op.count}.pack()};
    auto msg = static_cast<uint16_t>(request->messages.size());
    request->messages.push_back({static_cast<const char*>(op.sendbuf), static_cast<char*>(op.recvbuf), tag});
    (op.send ? p2pSpec_.sends : p2pSpec_.recvs).push_back({op.peer, msg, 0, 0, bytes});
  }
  // Messages to oneself pair up in order and become copies.
  if (selfSends.size() != selfRecvs.size())
    return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                        "rank %d posted %zu send(s) to itself but %zu receive(s) from itself in "
                        "one group; they must pair up", rank_, selfSends.size(), selfRecvs.size());
  for (size_t k = 0; k < selfSends.size(); ++k) {
    const P2pOp& s = ops[selfSends[k]];
    const P2pOp& r = ops[selfRecvs[k]];
    const uint64_t bytes = s.count * strata_datatype_size(s.datatype);
    if (bytes != r.count * strata_datatype_size(r.datatype))
      return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                          "send to self #%zu has %llu bytes but its receive has %llu", k,
                          (unsigned long long)bytes,
                          (unsigned long long)(r.count * strata_datatype_size(r.datatype)));
    auto msg = static_cast<uint16_t>(request->messages.size());
    request->messages.push_back({static_cast<const char*>(s.sendbuf), static_cast<char*>(r.recvbuf), {}});
    p2pSpec_.copies.push_back({rank_, msg, 0, 0, bytes});
  }

  PlanShape shape = shape_;
  shape.elemSize = 1;
  planKept_ = false;
  buildExchange(shape, p2pSpec_, shape.nchannels, plans_);
  OpContext ctx{};
  ctx.datatype = STRATA_UINT8;
  ctx.op = STRATA_SUM;
  ctx.elemSize = 1;
  ctx.rank = rank_;
  ctx.nranks = nranks_;
  ctx.tag = request->messages.empty() ? SlotTag{} : request->messages[0].tag;
  ctx.reduceFn = kernels::kernel(STRATA_UINT8, STRATA_SUM, isa_);
  ctx.messages = request->messages.data();
  ctx.sendFromCaller = true;  // send buffers stay untouched until the request completes
  const bool single = ops.size() == 1 && ops[0].peer != rank_;
  enqueue(ctx, shape.nchannels, callerWaits, request,
          single ? (uint64_t(ops[0].peer) << 1 | uint64_t(ops[0].send)) + 1 : 0);
  return Status::ok();
}

void Comm::enqueue(const OpContext& ctx, int nch, bool callerWaits, Request* request,
                   uint64_t p2pKey) {
  // A large blocking call spread over several channels wants the progress
  // threads' help; a single-channel one is cheaper driven by its caller alone.
  const bool forThreads = !callerWaits || nch > 1;
  request->start(nch);
  for (int ch = 0; ch < nch; ++ch) {
    ChannelOp* slot;
    WaitPolicy wait(spins_);
    while (!(slot = channels_[ch].reserve())) wait.afterPoll(channels_[ch].drive(*this));
    slot->request = request;
    slot->ctx = ctx;
    slot->plan.steps.swap(plans_[ch].steps);
    slot->cursor = 0;
    slot->forThreads = forThreads;
    slot->p2pKey = p2pKey;
    slot->finished = false;
    channels_[ch].commit();
  }
  if (forThreads) threads_->wake();
}

Status Comm::wait(Request& request) {
  if (!request.done()) driveUntilDone(request);
  const Request::Timing& t = request.timing;
  if (t.bytes > 0 && request.status().isOk())
    slotStores_[sizeBucket(t.bytes)].record(t.streamed, t.bytes, nowSeconds() - t.start);
  return request.status();
}

SlotStoreChoice* Comm::slotStoresFor(const CollCall& call, const OpContext& ctx) {
  if (call.coll != Coll::Allreduce || !ctx.streamingOutput) return nullptr;
  return &slotStores_[sizeBucket(call.count * ctx.elemSize)];
}

void Comm::driveUntilDone(Request& request) {
  WaitPolicy wait(spins_);
  SleepSet sleep;
  // Without sockets there is nothing to sleep on: skip the bookkeeping on
  // the path the smallest allreduces take.
  SleepSet* sleepSet = hasSockets_ ? &sleep : nullptr;
  // Fruitless polls since anything moved: once past the budget the thread
  // sleeps on every fruitless poll, until something moves again.
  int64_t idlePolls = 0;
  const int64_t socketPolls = socketPollsBeforeSleep(spins_);
  while (!request.done()) {
    bool progressed = false;
    sleep.fds.clear();
    sleep.memoryWait = false;
    for (Channel& ch : channels_)
      if (ch.hasWork()) progressed |= ch.drive(*this, sleepSet);
    if (progressed) {
      idlePolls = 0;
    } else if (sleep.canSleep() && ++idlePolls > socketPolls) {
      (void)!::poll(sleep.fds.data(), sleep.fds.size(), kSocketSleepMs);
      continue;
    }
    wait.afterPoll(progressed);
  }
}

bool Comm::test(Request& request) {
  poll();
  return request.done();
}

bool Comm::poll() {
  bool progressed = false;
  for (Channel& ch : channels_)
    if (ch.hasWork()) progressed |= ch.drive(*this);
  return progressed;
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
