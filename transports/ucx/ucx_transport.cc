#include "ucx_transport.h"

#include <cstdlib>
#include <cstring>

#include "clock.h"
#include "log.h"
#include "params.h"
#include "transport_factories.h"
#include "ucx_address.h"
#include "ucx_connector.h"

namespace strata::ucx {
namespace {

using LinkTable = std::vector<std::vector<std::shared_ptr<UcxLink>>>;  // [channel][peer]

// The token of messages from `from` to `to` on channel `ch` (LinkTokens).
uint64_t linkToken(const ConnectRequest& req, int from, int to, int ch) {
  static const char kLabel[] = "strata ucx link";
  const int32_t who[3] = {from, to, ch};
  const security::Mac mac =
      security::mac(req.secret, {{kLabel, sizeof(kLabel)}, {&req.commTag, sizeof(req.commTag)}, {who, sizeof(who)}});
  uint64_t token;
  std::memcpy(&token, mac.data(), sizeof(token));
  return token;
}


// Sends a hello on every (channel, pair) and waits for the peers': proves
// both endpoints carry messages (UCX connects lazily, so a peer that cannot
// be reached shows here and not in the first collective) and that both ends
// are the same channel of the same communicator.
Status handshake(const ConnectRequest& req, const LinkTable& links, double deadline) {
  const int me = req.oob->rank();
  std::vector<std::pair<Worker*, void*>> requests;
  std::vector<Worker*> workers;
  ucp_request_param_t p{};
  Status s;
  auto started = [&](ucs_status_ptr_t r, UcxLink& link, const char* what) {
    if (UCS_PTR_IS_ERR(r))
      return STRATA_ERROR(STRATA_ERR_REMOTE, "%s %s failed: %s", what, link.peerName().c_str(),
                          ucs_status_string(UCS_PTR_STATUS(r)));
    if (r) requests.emplace_back(&link.worker(), r);
    return Status::ok();
  };
  for (int ch = 0; ch < req.nchannels && s.isOk(); ++ch) {
    for (int peer : req.peers) {
      UcxLink& link = *links[ch][peer];
      if (workers.empty() || workers.back() != &link.worker()) workers.push_back(&link.worker());
      link.helloOut = Hello{req.commTag, me, ch, link.sendToken()};
      s = started(ucp_tag_recv_nbx(link.worker().get(), &link.helloIn, sizeof(Hello),
                                   makeTag(Kind::Hello, peer, 0), kFullMask, &p),
                  link, "receiving the hello of");
      if (s.isOk())
        s = started(ucp_tag_send_nbx(link.ep(), &link.helloOut, sizeof(Hello), makeTag(Kind::Hello, me, 0), &p),
                    link, "sending the hello to");
      if (!s.isOk()) break;
    }
  }
  auto linkError = [&]() -> Status {
    for (auto& row : links)
      for (auto& l : row)
        if (l && !l->ok()) return l->error();
    return Status::ok();
  };
  while (s.isOk()) {
    size_t left = 0;
    for (auto& [w, r] : requests) left += ucp_request_check_status(r) == UCS_INPROGRESS;
    if (left == 0) break;
    s = linkError();
    if (s.isOk() && nowSeconds() > deadline)
      s = STRATA_ERROR(STRATA_ERR_TIMEOUT,
                       "%zu ucx hello message(s) between this rank and its peers did not complete within "
                       "STRATA_TIMEOUT (can UCX reach them? see UCX_TLS and UCX_NET_DEVICES)",
                       left);
    for (Worker* w : workers) w->progress();
  }
  // The hellos live in their links, so requests left behind by a failure
  // can finish (or be cancelled) whenever their worker next moves.
  for (auto& [w, r] : requests) {
    if (!s.isOk() && ucp_request_check_status(r) == UCS_INPROGRESS) ucp_request_cancel(w->get(), r);
    ucp_request_free(r);
  }
  if (!s.isOk()) return s;
  for (int ch = 0; ch < req.nchannels; ++ch)
    for (int peer : req.peers) {
      const Hello& h = links[ch][peer]->helloIn;
      if (!links[ch][peer]->fromPeer(h.token, "the hello")) return links[ch][peer]->error();
      if (h.commTag != req.commTag || h.rank != peer || h.channel != ch)
        return STRATA_ERROR(STRATA_ERR_INTERNAL, "ucx hello from %s on channel %d names another communicator, "
                            "rank or channel", links[ch][peer]->peerName().c_str(), ch);
    }
  return Status::ok();
}

}  // namespace

UcxTransport::UcxTransport() = default;

UcxTransport::~UcxTransport() {
  workers_.clear();
  if (context_) ucp_cleanup(context_);
}

Status UcxTransport::init() {
  if (context_) return Status::ok();
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);  // UCX_* from the environment
  if (s != UCS_OK)
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "ucp_config_read failed: %s (check the UCX_* environment variables)",
                        ucs_status_string(s));
  // UCX 1.13 sends large messages over tcp by a rendezvous that runs at a
  // fraction of eager's bandwidth (bench/compare-transports); its newer protocols
  // (UCX_PROTO_ENABLE=y) are fast but abort the process when a failed
  // endpoint with queued sends is closed. So every message goes eager,
  // unless the user says otherwise.
  if (!std::getenv("UCX_RNDV_THRESH")) {
    s = ucp_config_modify(config, "RNDV_THRESH", "inf");
    if (s != UCS_OK)
      STRATA_INFO(NET, "cannot set UCX_RNDV_THRESH=inf (%s); large messages go by rendezvous",
                  ucs_status_string(s));
  }
  ucp_params_t p{};
  p.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  p.features = UCP_FEATURE_TAG;
  p.mt_workers_shared = 0;  // each worker has one driver at a time
  s = ucp_init(&p, config, &context_);
  ucp_config_release(config);
  if (s != UCS_OK) {
    context_ = nullptr;
    const char* tls = std::getenv("UCX_TLS");
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "ucp_init failed: %s (UCX_TLS=%s)", ucs_status_string(s),
                        tls ? tls : "(unset)");
  }
  return Status::ok();
}

uint64_t UcxTransport::mostHeld(const ConnectRequest& req, size_t npeers) const {
  return npeers * req.nchannels * 2 * SlotRing::bytesFor(req.slotBytes, static_cast<uint64_t>(req.nslots));
}

Status UcxTransport::connect(const ConnectRequest& req, Connections& out) {
  const int me = req.oob->rank();
  const int nranks = req.oob->size();
  const double deadline = nowSeconds() + params::timeout();
  if (nranks > kMaxRanks) return STRATA_INVALID_ARG("the ucx transport supports up to %d ranks", kMaxRanks);

  // Every channel's worker and its address; none without ucx peers.
  const size_t first = workers_.size();
  std::vector<std::vector<char>> addresses;
  uint64_t myLen = 0;
  if (!req.peers.empty()) {
    STRATA_CHECK(init());
    for (int ch = 0; ch < req.nchannels; ++ch) {
      ucp_worker_params_t wp{};
      wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
      wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
      ucp_worker_h w;
      ucs_status_t s = ucp_worker_create(context_, &wp, &w);
      if (s != UCS_OK)
        return STRATA_ERROR(STRATA_ERR_SYSTEM, "ucp_worker_create failed: %s", ucs_status_string(s));
      workers_.push_back(std::make_unique<Worker>(w, ch));
      ucp_worker_attr_t attr{};
      attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
      s = ucp_worker_query(w, &attr);
      if (s != UCS_OK)
        return STRATA_ERROR(STRATA_ERR_SYSTEM, "ucp_worker_query(address) failed: %s", ucs_status_string(s));
      const char* a = reinterpret_cast<const char*>(attr.address);
      addresses.emplace_back(a, a + attr.address_length);
      ucp_worker_release_address(w, attr.address);
      myLen = std::max<uint64_t>(myLen, attr.address_length);
    }
  }

  // Address lengths first, then every rank's addresses padded to the
  // longest: [channel] = (length, address).
  std::vector<uint64_t> lens(nranks);
  STRATA_CHECK(req.oob->allgather(&myLen, lens.data(), sizeof(uint64_t)));
  size_t entry = 0;
  STRATA_CHECK(addressEntryBytes(lens, &entry));
  if (entry == 0) return Status::ok();  // nobody uses ucx
  const size_t record = entry * req.nchannels;
  std::vector<char> mine(record, 0), all(record * nranks);
  for (size_t ch = 0; ch < addresses.size(); ++ch) {
    uint64_t len = addresses[ch].size();
    std::memcpy(&mine[ch * entry], &len, sizeof(len));
    std::memcpy(&mine[ch * entry + sizeof(len)], addresses[ch].data(), len);
  }
  STRATA_CHECK(req.oob->allgather(mine.data(), all.data(), record));

  LinkTable links(req.nchannels, std::vector<std::shared_ptr<UcxLink>>(nranks));
  const auto& hosts = *req.hosts;
  for (int peer : req.peers) {
    // Used only where UCX cannot report the peer's failure itself.
    const bool sameMachine = std::strncmp(hosts[peer].machineId, hosts[me].machineId, sizeof(hosts[me].machineId)) == 0 &&
                             hosts[peer].pidNamespace == hosts[me].pidNamespace;
    auto watch = std::make_shared<PeerWatch>(peer, hosts[peer].pid, sameMachine);
    std::vector<AddressView> theirs;
    STRATA_CHECK(parseAddressRecord(&all[peer * record], record, entry, req.nchannels, lens[peer], peer, &theirs));
    for (int ch = 0; ch < req.nchannels; ++ch) {
      Worker& w = *workers_[first + ch];
      auto link = std::make_shared<UcxLink>(w, me, peer, hosts[peer].hostname,
                                            LinkTokens{linkToken(req, me, peer, ch), linkToken(req, peer, me, ch)});
      w.adopt(link);
      if (theirs[ch].len == 0)
        return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                            "rank %d on %s has no ucx worker although this rank connects to it over ucx: set "
                            "STRATA_TRANSPORT alike on every rank",
                            peer, hosts[peer].hostname);
      STRATA_CHECK(link->open(theirs[ch].data, watch));
      links[ch][peer] = std::move(link);
    }
  }
  STRATA_CHECK(handshake(req, links, deadline));

  for (int peer : req.peers) {
    for (int ch = 0; ch < req.nchannels; ++ch) {
      auto recv = std::make_unique<UcxRecvConnector>(links[ch][peer], context_, req.slotBytes, req.nslots);
      STRATA_CHECK(recv->start());
      out.send[ch][peer] = std::make_unique<UcxSendConnector>(links[ch][peer], context_, req.slotBytes, req.nslots);
      out.recv[ch][peer] = std::move(recv);
    }
    STRATA_INFO(NET, "rank %d <-> rank %d over ucx: %d channel(s), one worker and endpoint each", me, peer,
                req.nchannels);
  }
  return Status::ok();
}

}  // namespace strata::ucx

namespace strata {

std::unique_ptr<Transport> makeUcxTransport() { return std::make_unique<ucx::UcxTransport>(); }

}  // namespace strata
