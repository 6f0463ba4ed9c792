#include "ib_transport.h"

#include <unistd.h>

#include <cstdio>

#include "clock.h"
#include "ib_connector.h"
#include "log.h"
#include "params.h"
#include "socket.h"
#include "socket_mesh.h"
#include "transport_factories.h"

namespace strata::ib {
namespace {

constexpr uint64_t kHelloMagic = 0x4f4c4c4548424249ull;  // "IBBHELLO"

}  // namespace

void IbTransport::describeSelf(topo::HostInfo* self) {
  std::string why;
  device_ = Device::open(params::ibHca(), params::ibGidIndex(), &why);
  if (!device_) {
    STRATA_INFO(NET, "ib: not available: %s", why.c_str());
    return;
  }
  std::snprintf(self->rdma, sizeof(self->rdma), "%s", device_->label().c_str());
}

Status IbTransport::connect(const ConnectRequest& req, Connections& out) {
  const double deadline = nowSeconds() + params::timeout();
  LinkConfig config{static_cast<int>(params::ibQpsPerConn()), req.slotBytes, req.nslots,
                    static_cast<int>(params::ibTimeout()), static_cast<int>(params::ibRetryCnt()),
                    MrCache::usable()};
  if (config.nqps < 1 || config.nqps > kMaxQps)
    return STRATA_INVALID_ARG("STRATA_IB_QPS_PER_CONN=%d must be in 1..%d", config.nqps, kMaxQps);
  if (config.timeout < 1 || config.timeout > 31)
    return STRATA_INVALID_ARG("STRATA_IB_TIMEOUT=%d must be in 1..31 (4.096 us x 2^value per try)", config.timeout);
  if (config.retryCount < 0 || config.retryCount > 7)
    return STRATA_INVALID_ARG("STRATA_IB_RETRY_CNT=%d must be in 0..7", config.retryCount);

  // Collective even without peers: every rank takes part in the exchange.
  std::vector<std::vector<int>> fds;
  STRATA_CHECK(sockets::connectMesh(req, kHelloMagic, 1, deadline, &fds));
  if (req.peers.empty()) return Status::ok();

  const auto& hosts = *req.hosts;
  std::vector<std::shared_ptr<sockets::SocketLink>> sides(hosts.size());
  for (int peer : req.peers)
    sides[peer] = std::make_shared<sockets::SocketLink>(fds[peer][0], peer, hosts[peer].hostname);
  // links[peer][channel]
  std::vector<std::vector<std::shared_ptr<Link>>> links(hosts.size());
  for (int peer : req.peers) {
    std::vector<LinkCard> cards;
    for (int ch = 0; ch < req.nchannels; ++ch) {
      auto link = std::make_shared<Link>(*device_, sides[peer], config);
      STRATA_CHECK(link->init());
      cards.push_back(link->card());
      links[peer].push_back(std::move(link));
    }
    // Every rank sends all its cards before reading any: a few hundred
    // bytes per peer, which the sockets' buffers take without blocking.
    const std::string name = sides[peer]->peerName();
    STRATA_CHECK(net::sendAll(sides[peer]->fd(), cards.data(), cards.size() * sizeof(LinkCard), deadline,
                              name.c_str()));
  }
  for (int peer : req.peers) {
    std::vector<LinkCard> cards(req.nchannels);
    const std::string name = sides[peer]->peerName();
    STRATA_CHECK(net::recvAll(sides[peer]->fd(), cards.data(), cards.size() * sizeof(LinkCard), deadline,
                              name.c_str()));
    for (int ch = 0; ch < req.nchannels; ++ch) STRATA_CHECK(links[peer][ch]->connect(cards[ch]));
    // Ready only once both ends' queue pairs can receive.
    const char ready = 1;
    STRATA_CHECK(net::sendAll(sides[peer]->fd(), &ready, 1, deadline, name.c_str()));
  }
  for (int peer : req.peers) {
    char ready = 0;
    const std::string name = sides[peer]->peerName();
    STRATA_CHECK(net::recvAll(sides[peer]->fd(), &ready, 1, deadline, name.c_str()));
    for (int ch = 0; ch < req.nchannels; ++ch) {
      out.send[ch][peer] = std::make_unique<IbSendConnector>(links[peer][ch], req.slotBytes);
      out.recv[ch][peer] = std::make_unique<IbRecvConnector>(links[peer][ch]);
    }
    STRATA_INFO(NET, "rank %d <-> %s over ib (%s): %d channel(s) x %d queue pair(s), %s", req.oob->rank(),
                name.c_str(), device_->label().c_str(), req.nchannels, config.nqps,
                config.zeroCopy ? "zero-copy sends from registered buffers" : "sends copy through slots");
  }
  return Status::ok();
}

}  // namespace strata::ib

namespace strata {

std::unique_ptr<Transport> makeIbTransport() { return std::make_unique<ib::IbTransport>(); }

}  // namespace strata
