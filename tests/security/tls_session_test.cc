// TlsSession over real loopback TCP connections: both ends agree and carry
// bytes both ways; what crosses the wire is not the plaintext; a wrong
// secret, a peer that never speaks TLS and a peer that speaks plain bytes
// fail both ends with an error that names the peer, inside the deadline;
// the non-blocking calls behave like send/recv (EAGAIN, partial writes
// retried with the same bytes, close and EOF as 0), and bytes OpenSSL holds
// are visible through pending()/hasBuffered().
#include "tls_session.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "clock.h"
#include "loopback.h"
#include "socket.h"

namespace strata::security {
namespace {

std::string describe(const Status& s) { return s.isOk() ? "OK" : s.message(); }

// A connected pair of TCP sockets over loopback; closed at the end.
struct SocketPair {
  int client = -1;
  int server = -1;
  explicit SocketPair(const Listener& l) {
    EXPECT_TRUE(net::connectTo(l.addr, nowSeconds() + 5, "the test listener", &client).isOk());
    server = l.accept();
    EXPECT_GE(server, 0);
  }
  SocketPair() : SocketPair(Listener()) {}
  ~SocketPair() {
    if (client >= 0) close(client);
    if (server >= 0) close(server);
  }
};

std::vector<char> pattern(size_t bytes, const std::string& motif) {
  std::vector<char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = motif[i % motif.size()];
  return v;
}

bool contains(const std::vector<char>& haystack, const std::string& needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) != haystack.end();
}

TEST(TlsSession, CarriesBytesBothWays) {
  SocketPair p;
  const Secret secret = secretOf(1);
  const std::vector<char> up = pattern(3 << 20, "from the client, ");
  const std::vector<char> down = pattern(1 << 20, "and back from the server; ");
  Status serverStatus;
  std::vector<char> gotUp(up.size());
  std::thread server([&] {
    std::unique_ptr<TlsSession> s;
    const double deadline = nowSeconds() + 20;
    serverStatus = TlsSession::start(p.server, TlsRole::kServer, secret, "the client", deadline, &s);
    if (serverStatus.isOk()) serverStatus = s->recvAll(gotUp.data(), gotUp.size(), deadline);
    if (serverStatus.isOk()) serverStatus = s->sendAll(down.data(), down.size(), deadline);
  });
  std::unique_ptr<TlsSession> c;
  const double deadline = nowSeconds() + 20;
  Status s = TlsSession::start(p.client, TlsRole::kClient, secret, "the server", deadline, &c);
  if (s.isOk()) s = c->sendAll(up.data(), up.size(), deadline);
  std::vector<char> gotDown(down.size());
  if (s.isOk()) s = c->recvAll(gotDown.data(), gotDown.size(), deadline);
  server.join();
  ASSERT_TRUE(s.isOk()) << describe(s);
  ASSERT_TRUE(serverStatus.isOk()) << describe(serverStatus);
  EXPECT_TRUE(gotUp == up);
  EXPECT_TRUE(gotDown == down);
}

// Forwards bytes between a client and a server in both directions, keeping
// a copy of everything it forwards: what an observer of the wire sees.
class RecordingProxy {
 public:
  RecordingProxy(const Listener& front, const SockAddr& back) {
    threads_.emplace_back([this, &front, back] {
      int in = front.accept();
      int out = -1;
      if (in < 0 || !net::connectTo(back, nowSeconds() + 5, "the server", &out).isOk()) return;
      std::thread up([&] { pump(in, out, &upstream_); });
      pump(out, in, &downstream_);
      up.join();
      close(in);
      close(out);
    });
  }
  ~RecordingProxy() { join(); }
  void join() {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  std::vector<char> upstream() {
    std::lock_guard<std::mutex> lock(mutex_);
    return upstream_;
  }
  std::vector<char> downstream() {
    std::lock_guard<std::mutex> lock(mutex_);
    return downstream_;
  }

 private:
  void pump(int from, int to, std::vector<char>* record) {
    char buffer[65536];
    for (;;) {
      ssize_t n = ::recv(from, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        record->insert(record->end(), buffer, buffer + n);
      }
      if (::send(to, buffer, static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
    }
    shutdown(to, SHUT_WR);
  }

  std::mutex mutex_;
  std::vector<char> upstream_, downstream_;
  std::vector<std::thread> threads_;
};

// One exchange through the proxy: `bytes` of the marker each way, with TLS
// or (the control, which shows that the search would find it) without.
void exchangeThroughProxy(bool tls, size_t bytes, const std::string& marker, RecordingProxy** made,
                          std::unique_ptr<RecordingProxy>* keep) {
  Listener server;
  Listener front;
  keep->reset(new RecordingProxy(front, server.addr));
  *made = keep->get();
  const std::vector<char> data = pattern(bytes, marker);
  const Secret secret = secretOf(2);
  Status serverStatus;
  std::thread serverThread([&] {
    int fd = server.accept();
    const double deadline = nowSeconds() + 20;
    std::vector<char> got(data.size());
    if (tls) {
      std::unique_ptr<TlsSession> s;
      serverStatus = TlsSession::start(fd, TlsRole::kServer, secret, "the client", deadline, &s);
      if (serverStatus.isOk()) serverStatus = s->recvAll(got.data(), got.size(), deadline);
      if (serverStatus.isOk()) serverStatus = s->sendAll(got.data(), got.size(), deadline);
    } else {
      serverStatus = net::recvAll(fd, got.data(), got.size(), deadline, "the client");
      if (serverStatus.isOk()) serverStatus = net::sendAll(fd, got.data(), got.size(), deadline, "the client");
    }
    close(fd);
  });
  int fd = -1;
  const double deadline = nowSeconds() + 20;
  Status s = net::connectTo(front.addr, deadline, "the proxy", &fd);
  std::vector<char> back(data.size());
  if (s.isOk() && tls) {
    std::unique_ptr<TlsSession> c;
    s = TlsSession::start(fd, TlsRole::kClient, secret, "the server", deadline, &c);
    if (s.isOk()) s = c->sendAll(data.data(), data.size(), deadline);
    if (s.isOk()) s = c->recvAll(back.data(), back.size(), deadline);
  } else if (s.isOk()) {
    s = net::sendAll(fd, data.data(), data.size(), deadline, "the server");
    if (s.isOk()) s = net::recvAll(fd, back.data(), back.size(), deadline, "the server");
  }
  serverThread.join();
  if (fd >= 0) close(fd);
  (*made)->join();
  ASSERT_TRUE(s.isOk()) << describe(s);
  ASSERT_TRUE(serverStatus.isOk()) << describe(serverStatus);
  EXPECT_TRUE(back == data);
}

TEST(TlsSession, WireDoesNotCarryThePlaintext) {
  const std::string marker = "strata plaintext marker 0123456789 ";
  const size_t bytes = 512 << 10;
  std::unique_ptr<RecordingProxy> keep;
  RecordingProxy* proxy = nullptr;

  // Control: without TLS the observer sees the marker both ways.
  exchangeThroughProxy(false, bytes, marker, &proxy, &keep);
  EXPECT_TRUE(contains(proxy->upstream(), marker));
  EXPECT_TRUE(contains(proxy->downstream(), marker));

  exchangeThroughProxy(true, bytes, marker, &proxy, &keep);
  const std::vector<char> up = proxy->upstream();
  const std::vector<char> down = proxy->downstream();
  // Everything crossed (plus records' overhead and the handshake)...
  EXPECT_GT(up.size(), bytes);
  EXPECT_GT(down.size(), bytes);
  // ...and none of it as plaintext, not even a fragment of the marker.
  const std::string fragment = marker.substr(0, 12);
  EXPECT_FALSE(contains(up, fragment));
  EXPECT_FALSE(contains(down, fragment));
}

// Both ends' handshakes, each in its own thread, and how long each took.
struct HandshakeOutcome {
  Status client, server;
  double clientSeconds = 0, serverSeconds = 0;
};

HandshakeOutcome shakeHands(int clientFd, int serverFd, const Secret& clientSecret, const Secret& serverSecret,
                            double timeout) {
  HandshakeOutcome o;
  std::thread server([&] {
    const double start = nowSeconds();
    std::unique_ptr<TlsSession> s;
    o.server = TlsSession::start(serverFd, TlsRole::kServer, serverSecret, "rank 1 on client-host", start + timeout, &s);
    o.serverSeconds = nowSeconds() - start;
    if (!o.server.isOk()) shutdown(serverFd, SHUT_RDWR);  // as the bootstrap's close would
  });
  const double start = nowSeconds();
  std::unique_ptr<TlsSession> c;
  o.client = TlsSession::start(clientFd, TlsRole::kClient, clientSecret, "rank 0 on server-host", start + timeout, &c);
  o.clientSeconds = nowSeconds() - start;
  if (!o.client.isOk()) shutdown(clientFd, SHUT_RDWR);
  server.join();
  return o;
}

TEST(TlsSession, WrongSecretFailsBothEndsClearly) {
  SocketPair p;
  HandshakeOutcome o = shakeHands(p.client, p.server, secretOf(3), secretOf(4), 10);
  ASSERT_FALSE(o.client.isOk());
  ASSERT_FALSE(o.server.isOk());
  EXPECT_EQ(o.client.code(), STRATA_ERR_INVALID_USAGE) << o.client.message();
  EXPECT_EQ(o.server.code(), STRATA_ERR_INVALID_USAGE) << o.server.message();
  EXPECT_NE(o.client.message().find("TLS handshake with rank 0 on server-host failed"), std::string::npos)
      << o.client.message();
  EXPECT_NE(o.server.message().find("TLS handshake with rank 1 on client-host failed"), std::string::npos)
      << o.server.message();
  EXPECT_NE(o.server.message().find("same job secret"), std::string::npos) << o.server.message();
  // Refused at once, not at the deadline.
  EXPECT_LT(o.clientSeconds, 2.0);
  EXPECT_LT(o.serverSeconds, 2.0);
}

TEST(TlsSession, SilentPeerTimesOutAtTheDeadline) {
  // The peer holds the connection open and never speaks TLS (a rank
  // without STRATA_TLS waiting for its next plain message).
  for (TlsRole role : {TlsRole::kClient, TlsRole::kServer}) {
    SocketPair p;
    const int fd = role == TlsRole::kClient ? p.client : p.server;
    const double start = nowSeconds();
    std::unique_ptr<TlsSession> s;
    Status st = TlsSession::start(fd, role, secretOf(5), "rank 7 on quiet-host", start + 0.5, &s);
    const double took = nowSeconds() - start;
    ASSERT_FALSE(st.isOk());
    EXPECT_EQ(st.code(), STRATA_ERR_TIMEOUT) << st.message();
    EXPECT_NE(st.message().find("rank 7 on quiet-host"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("STRATA_TLS=1"), std::string::npos) << st.message();
    EXPECT_GE(took, 0.45);
    EXPECT_LT(took, 3.0);
  }
}

TEST(TlsSession, PlainPeerFailsClearly) {
  // A peer that sends plain bytes where TLS records belong: either end
  // refuses at once.
  std::string plain(200, 'x');
  for (TlsRole role : {TlsRole::kClient, TlsRole::kServer}) {
    SocketPair p;
    const int mine = role == TlsRole::kClient ? p.client : p.server;
    const int theirs = role == TlsRole::kClient ? p.server : p.client;
    ASSERT_EQ(::send(theirs, plain.data(), plain.size(), MSG_NOSIGNAL), static_cast<ssize_t>(plain.size()));
    const double start = nowSeconds();
    std::unique_ptr<TlsSession> s;
    Status st = TlsSession::start(mine, role, secretOf(6), "rank 2 on plain-host", start + 10, &s);
    ASSERT_FALSE(st.isOk());
    EXPECT_EQ(st.code(), STRATA_ERR_INVALID_USAGE) << st.message();
    EXPECT_NE(st.message().find("TLS handshake with rank 2 on plain-host failed"), std::string::npos)
        << st.message();
    EXPECT_LT(nowSeconds() - start, 2.0);
  }
}

// A pair of sessions that shook hands in this thread (handshakeAll steps
// both ends), for the non-blocking calls.
struct SessionPair {
  SocketPair sockets;
  std::unique_ptr<TlsSession> client, server;
  explicit SessionPair(int socketBuffer = 0) {
    if (socketBuffer > 0)
      for (int fd : {sockets.client, sockets.server}) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &socketBuffer, sizeof(socketBuffer));
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &socketBuffer, sizeof(socketBuffer));
      }
    const Secret secret = secretOf(7);
    EXPECT_TRUE(TlsSession::create(sockets.client, TlsRole::kClient, secret, "server", &client).isOk());
    EXPECT_TRUE(TlsSession::create(sockets.server, TlsRole::kServer, secret, "client", &server).isOk());
    Status s = TlsSession::handshakeAll({client.get(), server.get()}, nowSeconds() + 10);
    EXPECT_TRUE(s.isOk()) << describe(s);
  }
  ~SessionPair() {
    client.reset();
    server.reset();
  }
};

TEST(TlsSession, HandshakesOfManyConnectionsRunTogether) {
  // Every end of 8 connections in one thread, the servers listed first: a
  // blocking handshake per connection would wait forever on the first.
  Listener l;
  std::vector<std::unique_ptr<SocketPair>> pairs;
  std::vector<std::unique_ptr<TlsSession>> sessions;
  std::vector<TlsSession*> all;
  const Secret secret = secretOf(8);
  for (int i = 0; i < 8; ++i) pairs.emplace_back(new SocketPair(l));
  for (TlsRole role : {TlsRole::kServer, TlsRole::kClient})
    for (auto& p : pairs) {
      sessions.emplace_back();
      ASSERT_TRUE(TlsSession::create(role == TlsRole::kClient ? p->client : p->server, role, secret, "peer",
                                     &sessions.back())
                      .isOk());
      all.push_back(sessions.back().get());
    }
  Status s = TlsSession::handshakeAll(all, nowSeconds() + 10);
  ASSERT_TRUE(s.isOk()) << describe(s);
  // Each connection carries its own bytes.
  for (size_t i = 0; i < pairs.size(); ++i) {
    const uint64_t word = 0x1234000000000000ull + i;
    ASSERT_TRUE(sessions[8 + i]->sendAll(&word, sizeof(word), nowSeconds() + 5).isOk());
    uint64_t got = 0;
    ASSERT_TRUE(sessions[i]->recvAll(&got, sizeof(got), nowSeconds() + 5).isOk());
    EXPECT_EQ(got, word);
  }
  sessions.clear();
}

bool waitReadable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, ms) > 0;
}

TEST(TlsSession, NonBlockingCallsActLikeSendAndRecv) {
  SessionPair p(32768);
  char byte;
  // Nothing sent: EAGAIN, not 0.
  errno = 0;
  EXPECT_EQ(p.server->read(&byte, 1), -1);
  EXPECT_EQ(errno, EAGAIN);

  // A header and a large payload through writev, with socket buffers far
  // smaller than the payload: the writer meets EAGAIN, offers the same list
  // again (advanced by what was taken), the reader drains between.
  struct Header {
    uint64_t a, b, c;
  } header{1, 2, 3};
  const std::vector<char> payload = pattern(3 << 20, "payload bytes in order ");
  std::vector<char> expected(reinterpret_cast<char*>(&header), reinterpret_cast<char*>(&header) + sizeof(header));
  expected.insert(expected.end(), payload.begin(), payload.end());
  std::vector<char> received;
  size_t offset = 0;  // of header + payload, as the tcp connector keeps it
  int eagains = 0;
  char buffer[20000];
  const double deadline = nowSeconds() + 20;
  while ((offset < expected.size() || received.size() < expected.size()) && nowSeconds() < deadline) {
    // Write until the socket is full, then read what arrived.
    while (offset < expected.size()) {
      iovec iov[2];
      int n = 0;
      if (offset < sizeof(header)) iov[n++] = {reinterpret_cast<char*>(&header) + offset, sizeof(header) - offset};
      const size_t done = offset > sizeof(header) ? offset - sizeof(header) : 0;
      iov[n++] = {const_cast<char*>(payload.data()) + done, payload.size() - done};
      ssize_t w = p.client->writev(iov, n);
      if (w > 0) {
        offset += static_cast<size_t>(w);
      } else {
        ASSERT_EQ(w, -1);
        ASSERT_EQ(errno, EAGAIN);
        ++eagains;
        break;
      }
    }
    for (;;) {
      ssize_t r = p.server->read(buffer, sizeof(buffer));
      if (r < 0) {
        ASSERT_EQ(errno, EAGAIN);
        break;
      }
      ASSERT_GT(r, 0);
      received.insert(received.end(), buffer, buffer + r);
    }
  }
  EXPECT_GT(eagains, 0) << "the writer never met a full socket: the retry path went untested";
  ASSERT_EQ(received.size(), expected.size());
  EXPECT_TRUE(received == expected);
}

TEST(TlsSession, BufferedBytesAreVisible) {
  SessionPair p;
  const std::vector<char> record = pattern(16000, "one record ");
  ASSERT_EQ(p.client->write(record.data(), record.size()), static_cast<ssize_t>(record.size()));
  // Wait until the whole record has arrived in the socket.
  const double deadline = nowSeconds() + 5;
  int queued = 0;
  while (nowSeconds() < deadline && (ioctl(p.sockets.server, FIONREAD, &queued), queued) < 16000)
    waitReadable(p.sockets.server, 10);
  char buffer[16000];
  ASSERT_EQ(p.server->read(buffer, 100), 100);
  // The rest is decrypted and held by OpenSSL; the socket has nothing left,
  // so a reader that only polled the socket would stall here.
  EXPECT_EQ(p.server->pending(), 15900u);
  EXPECT_TRUE(p.server->hasBuffered());
  EXPECT_FALSE(waitReadable(p.sockets.server, 0));
  ASSERT_EQ(p.server->read(buffer + 100, sizeof(buffer) - 100), 15900);
  EXPECT_TRUE(std::equal(record.begin(), record.end(), buffer));
  EXPECT_EQ(p.server->pending(), 0u);
  EXPECT_FALSE(p.server->hasBuffered());
  errno = 0;
  EXPECT_EQ(p.server->read(buffer, 1), -1);
  EXPECT_EQ(errno, EAGAIN);
}

TEST(TlsSession, CloseAndEndOfStreamReadAsZero) {
  {
    // Orderly: close_notify.
    SessionPair p;
    p.client->close();
    char byte;
    ASSERT_TRUE(waitReadable(p.sockets.server, 5000));
    EXPECT_EQ(p.server->read(&byte, 1), 0);
  }
  {
    // A peer gone without close_notify (died, or aborted with shutdown()).
    SessionPair p;
    shutdown(p.sockets.client, SHUT_RDWR);
    char byte;
    ASSERT_TRUE(waitReadable(p.sockets.server, 5000));
    EXPECT_EQ(p.server->read(&byte, 1), 0);
  }
  {
    // Writing to a peer that is gone: an errno, never SIGPIPE (which would
    // end this test binary).
    SessionPair p;
    p.client.reset();
    close(p.sockets.client);
    p.sockets.client = -1;
    const std::vector<char> data(1 << 16, 'z');
    ssize_t w = 0;
    const double deadline = nowSeconds() + 5;
    while (nowSeconds() < deadline && (w = p.server->write(data.data(), data.size())) > 0) {
    }
    EXPECT_EQ(w, -1);
    EXPECT_TRUE(errno == EPIPE || errno == ECONNRESET) << errno;
  }
}

}  // namespace
}  // namespace strata::security
