#include "handshake.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "clock.h"
#include "log.h"
#include "socket.h"

namespace strata::security {
namespace {

// What one attempt came to: a connection reset before the acceptor answered
// is worth another attempt; a wrong answer is not.
enum class Attempt { Proven, Retry, Failed };

Attempt proveOnce(int fd, const Secret& secret, const Claim& claim, double deadline, const char* peer,
                  uint32_t* peerFlags, Status* error) {
  ClientHello hello;
  std::memset(&hello, 0, sizeof(hello));
  hello.magic = kHandshakeMagic;
  hello.version = kHandshakeVersion;
  hello.claim = claim;
  *error = randomBytes(hello.nonce, sizeof(hello.nonce));
  if (!error->isOk()) return Attempt::Failed;
  if (!net::sendAll(fd, &hello, sizeof(hello), deadline, peer).isOk()) return Attempt::Retry;
  uint8_t raw[sizeof(ServerProof)];
  *error = net::recvAll(fd, raw, sizeof(raw), deadline, peer);
  if (!error->isOk()) return error->code() == STRATA_ERR_TIMEOUT ? Attempt::Failed : Attempt::Retry;
  ServerProof proof;
  if (!decodeServerProof(raw, sizeof(raw), &proof)) {
    *error = STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                          "%s answered with something other than a strata handshake: another program "
                          "listens there, or a rank of an incompatible strata version",
                          peer);
    return Attempt::Failed;
  }
  const Mac expected = serverMac(secret, hello, proof);
  if (!sameBytes(expected.data(), proof.mac.data(), expected.size())) {
    *error = STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                          "%s does not hold this job's secret, so this rank did not join it: a rank of "
                          "another job (a unique id from another job or an older call, a different "
                          "STRATA_SECRET, or another WORLD_SIZE on this MASTER_PORT), or an impostor",
                          peer);
    return Attempt::Failed;
  }
  ClientProof mine{clientMac(secret, hello, proof)};
  if (!net::sendAll(fd, &mine, sizeof(mine), deadline, peer).isOk()) return Attempt::Retry;
  *peerFlags = proof.flags;
  return Attempt::Proven;
}

bool setBlocking(int fd, bool blocking) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return false;
  flags = blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK;
  return fcntl(fd, F_SETFL, flags) == 0;
}

}  // namespace

Status connectAndProve(const SockAddr& addr, const Secret& secret, const Claim& claim, double deadline,
                       const char* peer, int* fd, uint32_t* peerFlags, bool retry, bool retryDropped) {
  double pause = 0.005;
  for (;;) {
    int s = -1;
    STRATA_CHECK(net::connectTo(addr, deadline, peer, &s, retry));
    Status error;
    const Attempt attempt = proveOnce(s, secret, claim, deadline, peer, peerFlags, &error);
    if (attempt == Attempt::Proven) {
      *fd = s;
      return Status::ok();
    }
    close(s);
    if (attempt == Attempt::Failed) return error;
    if (!retry && !retryDropped)
      return STRATA_ERROR(STRATA_ERR_REMOTE, "%s closed the connection during the handshake", peer);
    if (nowSeconds() + pause >= deadline)
      return STRATA_ERROR(STRATA_ERR_TIMEOUT,
                          "%s kept closing the connection before the handshake completed, until "
                          "STRATA_TIMEOUT: is it failing, or flooded with other connections?",
                          peer);
    STRATA_TRACE(NET, "%s closed the connection during the handshake; trying again", peer);
    std::this_thread::sleep_for(std::chrono::duration<double>(net::jittered(pause)));
    pause = std::min(pause * 2, 0.2);
  }
}

struct Gate::Unproven {
  int fd;
  std::string from;
  double since;
  bool answered;  // the acceptor's proof went out; the connector's is awaited
  size_t got;
  uint8_t raw[sizeof(ClientHello)];
  ClientHello hello;
  ServerProof proof;
};

Gate::Gate(int listenFd, const Secret& secret, uint64_t purpose, int selfRank, uint32_t flags)
    : listenFd_(listenFd), secret_(secret), purpose_(purpose), selfRank_(selfRank), flags_(flags) {
  // Accepting until EAGAIN drains a burst without a poll per connection.
  setBlocking(listenFd_, false);
}

Gate::~Gate() {
  for (Unproven& u : unproven_)
    if (u.fd >= 0) close(u.fd);
  if (dropped_ > 0)
    STRATA_INFO(NET, "dropped %zu connection(s) that did not prove this job's secret", dropped_);
}

void Gate::drop(Unproven& u, const char* why) {
  // A flood of strangers gets a few lines, not one each.
  if (++dropped_ <= 3) STRATA_WARN(NET, "dropped a connection from %s: %s", u.from.c_str(), why);
  else STRATA_TRACE(NET, "dropped a connection from %s: %s", u.from.c_str(), why);
  close(u.fd);
  u.fd = -1;
}

bool Gate::dropOldest(const char* why) {
  for (Unproven& u : unproven_)
    if (u.fd >= 0) {
      drop(u, why);
      return true;
    }
  return false;
}

void Gate::acceptAll() {
  for (int i = 0; i < 256; ++i) {
    SockAddr from;
    socklen_t len = sizeof(from.storage);
    int fd = accept4(listenFd_, reinterpret_cast<sockaddr*>(&from.storage), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: free the oldest stranger's, or, with none to
        // free, pause rather than spin on a listener that stays readable.
        outOfDescriptors_ = true;
        if (dropOldest("out of file descriptors (raise ulimit -n)")) continue;
        STRATA_WARN(NET, "accept failed: %s", errnoText(errno).c_str());
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      return;  // EAGAIN: drained
    }
    from.len = len;
    outOfDescriptors_ = false;
    // Both sides of a setup exchange write small messages back to back
    // (an answer, then a reply and a table): Nagle would hold the second
    // for the peer's delayed ACK, 40 ms a time.
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    const size_t live = std::count_if(unproven_.begin(), unproven_.end(), [](const Unproven& u) { return u.fd >= 0; });
    if (live >= kMaxUnproven) dropOldest("too many connections waiting to prove the secret");
    Unproven u;
    u.fd = fd;
    u.from = toString(from);
    u.since = nowSeconds();
    u.answered = false;
    u.got = 0;
    unproven_.push_back(std::move(u));
  }
}

bool Gate::advance(Unproven& u, Admitted* out) {
  const size_t want = u.answered ? sizeof(ClientProof) : sizeof(ClientHello);
  ssize_t n = recv(u.fd, u.raw + u.got, want - u.got, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  if (n <= 0) {
    drop(u, u.answered ? "closed without proving the secret (another secret?)" : "closed before its handshake");
    return false;
  }
  u.got += static_cast<size_t>(n);
  if (u.got < want) return false;
  u.got = 0;
  if (!u.answered) {
    if (!decodeClientHello(u.raw, sizeof(ClientHello), &u.hello)) {
      drop(u, "not a strata handshake");
      return false;
    }
    if (u.hello.claim.purpose != purpose_ || u.hello.claim.peerRank != selfRank_) {
      drop(u, "a handshake meant for another connection (a different transport or rank)");
      return false;
    }
    std::memset(&u.proof, 0, sizeof(u.proof));
    u.proof.magic = kHandshakeMagic;
    u.proof.flags = flags_;
    if (!randomBytes(u.proof.nonce, sizeof(u.proof.nonce)).isOk()) {
      drop(u, "no random bytes for a nonce");
      return false;
    }
    u.proof.mac = serverMac(secret_, u.hello, u.proof);
    // A fresh socket's buffer takes 64 bytes whole; anything less is a peer
    // not reading, which is not worth waiting for.
    if (send(u.fd, &u.proof, sizeof(u.proof), MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(u.proof)) {
      drop(u, "could not answer its handshake");
      return false;
    }
    u.answered = true;
    return false;
  }
  const Mac expected = clientMac(secret_, u.hello, u.proof);
  if (!sameBytes(expected.data(), u.raw, expected.size())) {
    drop(u, "wrong proof of the secret");
    return false;
  }
  if (!setBlocking(u.fd, true)) {
    drop(u, "fcntl failed");
    return false;
  }
  out->fd = u.fd;
  out->claim = u.hello.claim;
  out->from = u.from;
  u.fd = -1;
  return true;
}

Status Gate::next(double deadline, Admitted* out, int wakeFd) {
  for (;;) {
    const double now = nowSeconds();
    for (Unproven& u : unproven_)
      if (u.fd >= 0 && now - u.since > kUnprovenSeconds) drop(u, "did not complete its handshake in time");
    unproven_.erase(std::remove_if(unproven_.begin(), unproven_.end(), [](const Unproven& u) { return u.fd < 0; }),
                    unproven_.end());
    if (now >= deadline) return makeErrorQuiet(STRATA_ERR_TIMEOUT, "no admitted connection before the deadline");

    std::vector<pollfd> fds{{listenFd_, POLLIN, 0}};
    for (const Unproven& u : unproven_) fds.push_back({u.fd, POLLIN, 0});
    if (wakeFd >= 0) fds.push_back({wakeFd, POLLIN, 0});
    // Unproven connections are timed out above, so with some waiting the
    // poll comes back in time to do it; with none it may sleep to the deadline.
    double wait = unproven_.empty() ? std::min(deadline - now, 3600.0) : std::min(deadline - now, 0.1);
    if (poll(fds.data(), fds.size(), static_cast<int>(wait * 1000) + 1) <= 0) continue;
    if (wakeFd >= 0 && fds.back().revents) return makeErrorQuiet(STRATA_IN_PROGRESS, "woken");
    if (wakeFd >= 0) fds.pop_back();
    // Unproven connections first: acceptAll may drop some and add more.
    bool admitted = false;
    for (size_t i = 1; i < fds.size() && !admitted; ++i)
      if (fds[i].revents) admitted = advance(unproven_[i - 1], out);
    if (admitted) return Status::ok();
    if (fds[0].revents & POLLIN) acceptAll();
  }
}

}  // namespace strata::security
