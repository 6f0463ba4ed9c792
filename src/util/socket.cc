#include "socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "clock.h"
#include "log.h"
#include "params.h"

namespace strata::net {
namespace {

int msUntil(double deadline) {
  double left = deadline - nowSeconds();
  return left <= 0 ? 0 : static_cast<int>(left * 1000) + 1;
}

// Waits for `events` on fd; false on deadline.
bool waitFor(int fd, short events, double deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = poll(&p, 1, msUntil(deadline));
    if (n > 0) return true;
    if (n == 0 || (n < 0 && errno != EINTR)) return false;
  }
}

}  // namespace

Status resolve(const std::string& text, int port, SockAddr* out) {
  std::string host = text;
  std::string portText = std::to_string(port);
  if (!host.empty() && host[0] == '[') {
    size_t close = host.find(']');
    if (close == std::string::npos) return STRATA_INVALID_ARG("address '%s' lacks ']'", text.c_str());
    if (close + 1 < host.size() && host[close + 1] == ':') portText = host.substr(close + 2);
    host = host.substr(1, close - 1);
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    portText = host.substr(host.find(':') + 1);
    host = host.substr(0, host.find(':'));
  }
  addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), portText.c_str(), &hints, &res);
  if (rc != 0 || !res)
    return STRATA_INVALID_ARG("cannot resolve address '%s': %s", text.c_str(), gai_strerror(rc));
  std::memcpy(&out->storage, res->ai_addr, res->ai_addrlen);
  out->len = res->ai_addrlen;
  freeaddrinfo(res);
  return Status::ok();
}

Status defaultAdvertisedAddress(SockAddr* out) {
  if (!params::bootstrapAddr().empty()) return resolve(params::bootstrapAddr(), 0, out);
  // A non-loopback IPv4 address, else a global IPv6 one, else loopback.
  ifaddrs* list = nullptr;
  const ifaddrs* best = nullptr;
  if (getifaddrs(&list) == 0) {
    for (const ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_addr || (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP)) continue;
      const int family = i->ifa_addr->sa_family;
      if (family == AF_INET6 &&
          IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr))
        continue;
      if (family == AF_INET || (family == AF_INET6 && !best)) best = i;
      if (family == AF_INET) break;
    }
  }
  if (best) {
    size_t len = best->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memset(&out->storage, 0, sizeof(out->storage));
    std::memcpy(&out->storage, best->ifa_addr, len);
    out->len = static_cast<socklen_t>(len);
    STRATA_INFO(BOOT, "advertising interface %s", best->ifa_name);
  }
  if (list) freeifaddrs(list);
  return best ? Status::ok() : resolve("127.0.0.1", 0, out);
}

Status listenOn(SockAddr* addr, int* fd, const char* inUseHint) {
  int s = socket(addr->get()->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    int err = errno;
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "socket() failed: %s", errnoText(err).c_str());
  }
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  // The longest backlog the kernel allows: a whole job's ranks may knock
  // on rank 0 at once, and a full backlog turns them away to retry.
  if (bind(s, addr->get(), addr->len) != 0 || listen(s, SOMAXCONN) != 0) {
    int err = errno;
    close(s);
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "cannot listen on %s: %s%s", toString(*addr).c_str(),
                        errnoText(err).c_str(),
                        err == EADDRINUSE       ? (inUseHint ? inUseHint : " (another job uses this port: pick another MASTER_PORT)")
                        : err == EADDRNOTAVAIL ? " (the address is not on this host)"
                                               : "");
  }
  socklen_t len = sizeof(addr->storage);
  getsockname(s, reinterpret_cast<sockaddr*>(&addr->storage), &len);
  addr->len = len;
  *fd = s;
  return Status::ok();
}

namespace {

// One connection attempt that gives up at the deadline: a blocking connect()
// waits out the kernel's SYN retries (about two minutes) towards an address
// that drops packets or a listener whose backlog is full, whatever the
// deadline says. Returns 0 once connected, with the socket blocking again
// (callers use it that way), else the errno (ETIMEDOUT at the deadline).
int connectBefore(int s, const SockAddr& addr, double deadline) {
  const int flags = fcntl(s, F_GETFL);
  if (flags < 0 || fcntl(s, F_SETFL, flags | O_NONBLOCK) != 0) return errno;
  int err = connect(s, addr.get(), addr.len) == 0 ? 0 : errno;
  // EINTR leaves a non-blocking connect going on in the background, as EINPROGRESS.
  if (err == EINPROGRESS || err == EINTR) {
    if (!waitFor(s, POLLOUT, deadline)) return ETIMEDOUT;
    socklen_t len = sizeof(err);
    if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  }
  if (err == 0 && fcntl(s, F_SETFL, flags) != 0) err = errno;
  return err;
}

}  // namespace

double jittered(double pause) {
  thread_local std::minstd_rand draw(static_cast<unsigned>(getpid()) * 2654435761u ^
                                     static_cast<unsigned>(nowSeconds() * 1e9));
  return pause * (0.5 + std::uniform_real_distribution<double>(0, 1)(draw));
}

Status connectTo(const SockAddr& addr, double deadline, const char* peer, int* fd, bool retry) {
  int lastErr = ETIMEDOUT;
  double pause = 0.001;
  while (nowSeconds() < deadline) {
    int s = socket(addr.get()->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
      int err = errno;
      return STRATA_ERROR(STRATA_ERR_SYSTEM, "socket() failed: %s", errnoText(err).c_str());
    }
    lastErr = connectBefore(s, addr, deadline);
    if (lastErr == 0) {
      int one = 1;
      setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      *fd = s;
      return Status::ok();
    }
    close(s);
    if (!retry && lastErr != ETIMEDOUT)
      return makeErrorQuiet(STRATA_ERR_REMOTE, "%s at %s is gone: %s", peer, toString(addr).c_str(),
                            errnoText(lastErr).c_str());
    // Refused or unreachable: the peer may simply not be listening yet.
    const double left = deadline - nowSeconds();
    if (left <= 0) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(jittered(pause), left)));
    pause = std::min(pause * 2, 0.1);
  }
  return STRATA_ERROR(STRATA_ERR_TIMEOUT,
                      "cannot reach %s at %s before the deadline (STRATA_TIMEOUT; STRATA_BOOTSTRAP_TIMEOUT for "
                      "rank 0): %s; is it running, and is that address reachable from this host?",
                      peer, toString(addr).c_str(), errnoText(lastErr).c_str());
}

namespace {

// Moves all `bytes` through `io` (a non-blocking send or recv), waiting for
// `events` between partial transfers, until the deadline.
template <typename Io>
Status transferAll(int fd, char* p, size_t bytes, double deadline, const char* peer, short events,
                   const char* verb, Io io) {
  while (bytes > 0) {
    if (!waitFor(fd, events, deadline))
      return STRATA_ERROR(STRATA_ERR_TIMEOUT, "%s %s timed out", verb, peer);
    ssize_t n = io(fd, p, bytes);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n == 0 && events == POLLIN)
      return STRATA_ERROR(STRATA_ERR_REMOTE, "%s closed the connection (did it exit or fail?)",
                          peer);
    if (n <= 0) {
      int err = errno;
      return STRATA_ERROR(STRATA_ERR_REMOTE, "connection to %s failed: %s", peer,
                          errnoText(err).c_str());
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return Status::ok();
}

}  // namespace

Status sendAll(int fd, const void* data, size_t bytes, double deadline, const char* peer) {
  return transferAll(fd, static_cast<char*>(const_cast<void*>(data)), bytes, deadline, peer, POLLOUT,
                     "send to", [](int s, char* p, size_t n) { return send(s, p, n, MSG_NOSIGNAL | MSG_DONTWAIT); });
}

Status recvAll(int fd, void* data, size_t bytes, double deadline, const char* peer) {
  return transferAll(fd, static_cast<char*>(data), bytes, deadline, peer, POLLIN, "receive from",
                     [](int s, char* p, size_t n) { return recv(s, p, n, MSG_DONTWAIT); });
}

}  // namespace strata::net
