// Every connection between ranks proves the job's secret before it carries
// anything of the job: a mutual challenge-response keyed by the secret
// (handshake_wire.h). The connector sends a claim and a nonce; the acceptor
// answers with its nonce and a MAC over both; the connector checks it and
// answers with its own MAC. The secret never crosses the wire, a recorded
// exchange replays nowhere (fresh nonces), and until the connector's MAC
// checks out the acceptor says nothing about the job.
//
// Acceptors face whoever reaches their port, so a Gate bounds what an
// unproven connection may cost: a few hundred bytes of state, at most
// kMaxUnproven of them at once (the oldest goes first), and a few seconds.
#pragma once

#include <deque>
#include <string>

#include "handshake_wire.h"
#include "sockaddr.h"
#include "status.h"

namespace strata::security {

// Connects to `addr` and proves the secret under `claim`, retrying (until the
// deadline) while the acceptor is not listening yet or drops the connection
// before answering, as a Gate under a flood of strangers does. On success
// `*fd` is a blocking socket whose peer proved the secret, and `*peerFlags`
// its flags. An answer whose MAC does not check out fails at once: the peer
// holds another secret. `peer` names the acceptor in messages. Without
// `retry`, one attempt (net::connectTo's): for acceptors known to be up, whose
// refusal means that their process is gone; with `retryDropped` as well, a
// connection the acceptor drops before answering (its Gate full of other
// ranks' connections) is tried again until the deadline.
Status connectAndProve(const SockAddr& addr, const Secret& secret, const Claim& claim, double deadline,
                       const char* peer, int* fd, uint32_t* peerFlags, bool retry = true, bool retryDropped = false);

// A connection whose peer proved the secret. The claim is authenticated (it is
// the one the peer made, unaltered) but it is still only what a holder of the
// secret asks for: whether this rank expects it is the caller's decision.
struct Admitted {
  int fd;  // blocking; the caller owns it
  Claim claim;
  std::string from;  // the peer's address, for messages
};

// Admits connections on a listening socket. Not thread-safe: one caller.
class Gate {
 public:
  // Keeps the oldest unproven connection at most this long, and at most this many.
  static constexpr double kUnprovenSeconds = 10;
  static constexpr size_t kMaxUnproven = 64;

  // `purpose` and `selfRank` are what a claim must name; `flags` go back to
  // every connector in the acceptor's answer.
  Gate(int listenFd, const Secret& secret, uint64_t purpose, int selfRank, uint32_t flags);
  ~Gate();
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // The next admitted connection; TIMEOUT when the deadline passes first.
  // With a `wakeFd`, also returns (STRATA_IN_PROGRESS) once that descriptor
  // is readable: how a thread serving the gate for good is told to stop.
  Status next(double deadline, Admitted* out, int wakeFd = -1);
  // Whether the last accept found this process out of file descriptors
  // (freeing an unproven connection's or not): a caller that needs every
  // connection it expects fails now rather than at its deadline.
  bool outOfDescriptors() const { return outOfDescriptors_; }

 private:
  struct Unproven;

  void acceptAll();
  // Reads what arrived; true when the connection was admitted into `out`.
  bool advance(Unproven& u, Admitted* out);
  void drop(Unproven& u, const char* why);
  // Drops the oldest unproven connection; false if there is none.
  bool dropOldest(const char* why);

  int listenFd_;
  Secret secret_;
  uint64_t purpose_;
  int selfRank_;
  uint32_t flags_;
  std::deque<Unproven> unproven_;
  size_t dropped_ = 0;
  bool outOfDescriptors_ = false;
};

}  // namespace strata::security
