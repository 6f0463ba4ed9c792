// Attacks on the handshake, each against a real Gate on a loopback port.
// Every test that drops an attacker also admits the honest connection that
// follows it: a refused stranger must cost the job nothing.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "clock.h"
#include "handshake.h"
#include "loopback.h"
#include "socket.h"

namespace strata::security {
namespace {

constexpr uint64_t kPurpose = 0x5453455454534554ull;

Claim claimOf(int rank, int index) { return Claim{kPurpose, 77, rank, 0, index, 2, 0, 0}; }

int rawConnect(const SockAddr& addr) {
  int fd = -1;
  EXPECT_TRUE(net::connectTo(addr, nowSeconds() + 5, "the test gate", &fd).isOk());
  return fd;
}

// Connects honestly on a thread; `ok` says whether it got in.
struct HonestPeer {
  std::thread thread;
  Status result;
  int fd = -1;
  HonestPeer(const SockAddr& addr, const Secret& secret, Claim claim, double seconds = 20) {
    thread = std::thread([=] {
      uint32_t flags = 0;
      result = connectAndProve(addr, secret, claim, nowSeconds() + seconds, "the test gate", &fd, &flags);
    });
  }
  ~HonestPeer() {
    if (thread.joinable()) thread.join();
    if (fd >= 0) close(fd);
  }
};

// Admits one connection within `seconds` and checks that it is the honest one.
void expectAdmits(Gate& gate, const Claim& claim, double seconds = 20) {
  Admitted a;
  Status s = gate.next(nowSeconds() + seconds, &a);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(a.claim.rank, claim.rank);
  EXPECT_EQ(a.claim.index, claim.index);
  EXPECT_EQ(a.claim.commTag, claim.commTag);
  // The admitted socket is the honest peer's: a byte goes through.
  char byte = 'x';
  EXPECT_EQ(send(a.fd, &byte, 1, MSG_NOSIGNAL), 1);
  close(a.fd);
}

void expectAdmitsNothing(Gate& gate, double seconds) {
  Admitted a;
  Status s = gate.next(nowSeconds() + seconds, &a);
  EXPECT_EQ(s.code(), STRATA_ERR_TIMEOUT) << "admitted a connection claiming rank " << a.claim.rank;
  if (s.isOk()) close(a.fd);
}

TEST(Handshake, HonestPeersAreAdmittedWithTheirClaimAndFlags) {
  Listener l;
  Gate gate(l.fd, secretOf(1), kPurpose, 0, kFlagTls);
  Claim claim = claimOf(3, 1);
  claim.flags = kFlagTls;
  std::thread peer([&] {
    int fd = -1;
    uint32_t flags = 0;
    Status s = connectAndProve(l.addr, secretOf(1), claim, nowSeconds() + 10, "the test gate", &fd, &flags);
    EXPECT_TRUE(s.isOk()) << s.message();
    EXPECT_EQ(flags, kFlagTls) << "the acceptor's flags reach the connector";
    if (fd >= 0) close(fd);
  });
  Admitted a;
  ASSERT_TRUE(gate.next(nowSeconds() + 10, &a).isOk());
  EXPECT_EQ(a.claim.rank, 3);
  EXPECT_EQ(a.claim.index, 1);
  EXPECT_EQ(a.claim.flags, kFlagTls);
  close(a.fd);
  peer.join();
}

TEST(Handshake, AWrongSecretFailsBothWaysWithAClearError) {
  Listener l;
  Gate gate(l.fd, secretOf(1), kPurpose, 0, 0);
  HonestPeer stranger(l.addr, secretOf(2), claimOf(1, 0), 5);
  expectAdmitsNothing(gate, 1.5);
  stranger.thread.join();
  EXPECT_EQ(stranger.result.code(), STRATA_ERR_INVALID_USAGE);
  EXPECT_NE(stranger.result.message().find("does not hold this job's secret"), std::string::npos)
      << stranger.result.message();
}

// A hello with the right claim, then 32 bytes that are not the MAC.
TEST(Handshake, AForgedProofIsDroppedAndTheHonestPeerStillGetsIn) {
  Listener l;
  Gate gate(l.fd, secretOf(1), kPurpose, 0, 0);
  int fd = rawConnect(l.addr);
  ClientHello hello;
  std::memset(&hello, 0, sizeof(hello));
  hello.magic = kHandshakeMagic;
  hello.version = kHandshakeVersion;
  hello.claim = claimOf(1, 0);
  ASSERT_EQ(send(fd, &hello, sizeof(hello), MSG_NOSIGNAL), static_cast<ssize_t>(sizeof(hello)));
  std::thread forger([&] {
    ServerProof proof;
    EXPECT_TRUE(net::recvAll(fd, &proof, sizeof(proof), nowSeconds() + 5, "the gate").isOk());
    ClientProof forged;
    forged.mac.fill(0xab);
    (void)!send(fd, &forged, sizeof(forged), MSG_NOSIGNAL);
  });
  expectAdmitsNothing(gate, 1.0);
  forger.join();
  char byte;
  EXPECT_EQ(recv(fd, &byte, 1, 0), 0) << "the gate closes the forger's connection";
  close(fd);
  HonestPeer honest(l.addr, secretOf(1), claimOf(1, 0));
  expectAdmits(gate, claimOf(1, 0));
}

// A man in the middle records an honest exchange and replays it on a
// connection of its own: the gate's fresh nonce makes the old proof worthless.
TEST(Handshake, AReplayedExchangeIsDropped) {
  Listener l;
  Gate gate(l.fd, secretOf(1), kPurpose, 0, 0);
  Listener relay;
  std::vector<char> recorded;
  std::thread mitm([&] {
    int in = accept(relay.fd, nullptr, nullptr);
    int out = rawConnect(l.addr);
    char buf[sizeof(ClientHello)];
    // Client -> gate: the hello, then (after the gate's answer) the proof.
    ASSERT_TRUE(net::recvAll(in, buf, sizeof(ClientHello), nowSeconds() + 5, "client").isOk());
    recorded.insert(recorded.end(), buf, buf + sizeof(ClientHello));
    ASSERT_TRUE(net::sendAll(out, buf, sizeof(ClientHello), nowSeconds() + 5, "gate").isOk());
    ASSERT_TRUE(net::recvAll(out, buf, sizeof(ServerProof), nowSeconds() + 5, "gate").isOk());
    ASSERT_TRUE(net::sendAll(in, buf, sizeof(ServerProof), nowSeconds() + 5, "client").isOk());
    ASSERT_TRUE(net::recvAll(in, buf, sizeof(ClientProof), nowSeconds() + 5, "client").isOk());
    recorded.insert(recorded.end(), buf, buf + sizeof(ClientProof));
    ASSERT_TRUE(net::sendAll(out, buf, sizeof(ClientProof), nowSeconds() + 5, "gate").isOk());
    close(in);
    close(out);
  });
  {
    HonestPeer honest(relay.addr, secretOf(1), claimOf(1, 0));
    expectAdmits(gate, claimOf(1, 0));
  }
  mitm.join();
  ASSERT_EQ(recorded.size(), sizeof(ClientHello) + sizeof(ClientProof));
  std::thread replay([&] {
    int fd = rawConnect(l.addr);
    EXPECT_TRUE(net::sendAll(fd, recorded.data(), sizeof(ClientHello), nowSeconds() + 5, "gate").isOk());
    ServerProof fresh;
    EXPECT_TRUE(net::recvAll(fd, &fresh, sizeof(fresh), nowSeconds() + 5, "gate").isOk());
    (void)!send(fd, recorded.data() + sizeof(ClientHello), sizeof(ClientProof), MSG_NOSIGNAL);
    char byte;
    EXPECT_EQ(recv(fd, &byte, 1, 0), 0) << "the gate closes the replayer's connection";
    close(fd);
  });
  expectAdmitsNothing(gate, 1.5);
  replay.join();
}

TEST(Handshake, AProofForAnotherPurposeOrRankIsWorthNothing) {
  Listener l;
  Gate gate(l.fd, secretOf(1), kPurpose, 0, 0);
  Claim otherPurpose = claimOf(1, 0);
  otherPurpose.purpose = kPurpose + 1;
  Claim otherRank = claimOf(1, 0);
  otherRank.peerRank = 5;  // meant for rank 5, not this gate's rank 0
  for (const Claim& c : {otherPurpose, otherRank}) {
    HonestPeer misdirected(l.addr, secretOf(1), c, 1.5);
    expectAdmitsNothing(gate, 1.0);
    misdirected.thread.join();
    EXPECT_FALSE(misdirected.result.isOk());
  }
  HonestPeer honest(l.addr, secretOf(1), claimOf(1, 0));
  expectAdmits(gate, claimOf(1, 0));
}

TEST(Handshake, GarbageAndShortWritesAreDropped) {
  Listener l;
  Gate gate(l.fd, secretOf(1), kPurpose, 0, 0);
  std::vector<int> fds;
  for (size_t bytes : {size_t(1), size_t(71), size_t(72), size_t(4096)}) {
    int fd = rawConnect(l.addr);
    std::vector<char> noise(bytes, 'z');
    (void)!send(fd, noise.data(), noise.size(), MSG_NOSIGNAL);
    if (bytes == 1) shutdown(fd, SHUT_WR);
    fds.push_back(fd);
  }
  HonestPeer honest(l.addr, secretOf(1), claimOf(1, 0));
  expectAdmits(gate, claimOf(1, 0));
  for (int fd : fds) close(fd);
}

// Raises the soft descriptor limit to what `want` more descriptors need, if
// the hard limit allows; returns how many may be opened.
int raiseFdLimit(int want) {
  rlimit r;
  getrlimit(RLIMIT_NOFILE, &r);
  rlim_t need = static_cast<rlim_t>(want) + 256;
  if (r.rlim_cur < need) {
    r.rlim_cur = std::min(need, r.rlim_max);
    setrlimit(RLIMIT_NOFILE, &r);
  }
  getrlimit(RLIMIT_NOFILE, &r);
  return static_cast<int>(std::min<rlim_t>(want, r.rlim_cur > 256 ? r.rlim_cur - 256 : 0));
}

// 1,000 connections that never say a word, opened before the honest peer:
// the gate keeps at most kMaxUnproven of them and still admits it.
TEST(Handshake, AThousandIdleConnectionsDoNotKeepTheHonestPeerOut) {
  const int idle = std::min(1000, raiseFdLimit(2 * 1000 + 16) / 2);
  ASSERT_GE(idle, 500) << "this test needs a descriptor limit of at least ~1300";
  Listener l;
  std::atomic<bool> opened{false};
  std::vector<int> strangers;
  std::thread flood([&] {
    for (int i = 0; i < idle; ++i) strangers.push_back(rawConnect(l.addr));
    opened = true;
  });
  Gate gate(l.fd, secretOf(1), kPurpose, 0, 0);
  // The gate drains the flood while the honest peer arrives last.
  std::thread honestThread([&] {
    while (!opened) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    HonestPeer honest(l.addr, secretOf(1), claimOf(1, 0));
  });
  const double start = nowSeconds();
  expectAdmits(gate, claimOf(1, 0), 30);
  honestThread.join();
  flood.join();
  RecordProperty("seconds", std::to_string(nowSeconds() - start));
  std::printf("%d idle connections; the honest peer was admitted after %.2f s\n", idle, nowSeconds() - start);
  for (int fd : strangers) close(fd);
}

// Strangers exhaust the acceptor's descriptors: accept fails with EMFILE,
// and the gate frees the oldest stranger's descriptor instead of spinning.
TEST(Handshake, OutOfDescriptorsTheGateEvictsStrangers) {
  Listener l;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The acceptor, with room for only a handful of connections.
    int highest = l.fd;
    rlimit r{static_cast<rlim_t>(highest + 8), static_cast<rlim_t>(highest + 8)};
    setrlimit(RLIMIT_NOFILE, &r);
    Gate gate(l.fd, secretOf(1), kPurpose, 0, 0);
    Admitted a;
    Status s = gate.next(nowSeconds() + 20, &a);
    _exit(s.isOk() && a.claim.rank == 1 ? 0 : 1);
  }
  std::vector<int> strangers;
  for (int i = 0; i < 40; ++i) strangers.push_back(rawConnect(l.addr));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the child is now out of descriptors
  HonestPeer honest(l.addr, secretOf(1), claimOf(1, 0));
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the gate did not admit the honest peer";
  honest.thread.join();
  EXPECT_TRUE(honest.result.isOk()) << honest.result.message();
  for (int fd : strangers) close(fd);
}

}  // namespace
}  // namespace strata::security
