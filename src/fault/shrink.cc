#include "shrink.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "clock.h"
#include "log.h"
#include "socket.h"

namespace strata::fault {
namespace {

constexpr uint32_t kProposalMagic = 0x31505253;  // "SRP1"
constexpr uint32_t kDecisionMagic = 0x31445253;  // "SRD1"
// How long one attempt to reach a rank may take: a dead process refuses at
// once, a dead host or link answers nothing.
constexpr double kProbeSeconds = 2.0;
constexpr double kProbeInterval = 0.25;
constexpr double kIoSeconds = 2.0;  // for a message to or from a rank that answered

enum Verdict : int32_t { kAgreed = 0, kListsDiffer = 1 };

struct DecisionHead {
  uint32_t magic;
  int32_t verdict;
  int32_t differs;  // kListsDiffer: a rank whose exclude list is not the coordinator's
  int32_t nsurvivors;
  sockaddr_storage root;
  uint32_t rootLen;
  int32_t creatorPid;
  int32_t creatorFd;
  uint32_t reserved;
  uint64_t creatorPidNamespace;
  uint8_t salt[16];
};

size_t bitmapBytes(int n) { return (static_cast<size_t>(n) + 7) / 8; }

std::vector<uint8_t> bitmapOf(const std::vector<int>& ranks, int n) {
  std::vector<uint8_t> bits(bitmapBytes(n), 0);
  for (int r : ranks) bits[r / 8] |= static_cast<uint8_t>(1u << (r % 8));
  return bits;
}

bool has(const uint8_t* bits, int r) { return bits[r / 8] & (1u << (r % 8)); }

// A message: a body, then the sender's signature over it.
std::vector<uint8_t> sealed(const ControlPlane& cp, const std::vector<uint8_t>& body) {
  const security::Mac mac = cp.sign(Message::Propose, cp.rank(), body.data(), body.size());
  std::vector<uint8_t> out(body);
  out.insert(out.end(), mac.begin(), mac.end());
  return out;
}

Status receiveSealed(const ControlPlane& cp, int fd, int sender, size_t bodyBytes, double deadline,
                     const char* what, std::vector<uint8_t>* body) {
  std::vector<uint8_t> raw(bodyBytes + sizeof(security::Mac));
  const std::string peer = "rank " + std::to_string(sender) + "'s control plane";
  STRATA_CHECK(net::recvAll(fd, raw.data(), raw.size(), deadline, peer.c_str()));
  security::Mac mac;
  std::memcpy(mac.data(), raw.data() + bodyBytes, mac.size());
  if (!cp.verify(Message::Propose, sender, raw.data(), bodyBytes, mac))
    return STRATA_ERROR(STRATA_ERR_REMOTE, "%s from rank %d does not carry its signature", what, sender);
  raw.resize(bodyBytes);
  *body = std::move(raw);
  return Status::ok();
}

std::vector<uint8_t> proposalOf(const std::vector<int>& exclude, int n) {
  std::vector<uint8_t> body(sizeof(uint32_t));
  std::memcpy(body.data(), &kProposalMagic, sizeof(uint32_t));
  const std::vector<uint8_t> bits = bitmapOf(exclude, n);
  body.insert(body.end(), bits.begin(), bits.end());
  return body;
}

std::string listOf(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s.empty() ? "none" : s;
}

class Coordinator {
 public:
  Coordinator(ControlPlane& cp, const std::vector<int>& exclude) : cp_(cp), n_(cp.size()), state_(n_, kWaiting) {
    mine_ = proposalOf(exclude, n_);
    for (int r = 0; r < cp.rank(); ++r) state_[r] = kGone;  // why this rank coordinates
    for (int r : exclude) state_[r] = kExcluded;
    state_[cp.rank()] = kProposed;
  }
  ~Coordinator() {
    for (auto& entry : fds_) close(entry.second);
  }

  Status run(double waitUntil, const MakeId& makeId, ShrinkOutcome* out) {
    // Probing first finds the ranks that died before the shrink at once,
    // instead of after a wait for their proposals.
    double nextProbe = 0;
    while (std::count(state_.begin(), state_.end(), kWaiting) > 0 && nowSeconds() < waitUntil) {
      if (nowSeconds() >= nextProbe) {
        for (int r = 0; r < n_; ++r)
          if (state_[r] == kWaiting && !cp_.alive(r, nowSeconds() + kProbeSeconds)) {
            STRATA_INFO(INIT, "shrink: rank %d is gone", r);
            state_[r] = kGone;
          }
        nextProbe = nowSeconds() + kProbeInterval;
        continue;
      }
      Incoming in;
      if (cp_.nextProposal(std::min(waitUntil, nextProbe), &in)) take(in);
    }
    for (int r = 0; r < n_; ++r)
      if (state_[r] == kWaiting)
        STRATA_WARN(INIT, "shrink: rank %d is alive but did not call shrink in time: left out", r);
    dropClosedProposers();

    std::vector<uint8_t> decision(sizeof(DecisionHead));
    DecisionHead head;
    std::memset(&head, 0, sizeof(head));
    head.magic = kDecisionMagic;
    std::vector<int> survivors;
    for (int r = 0; r < n_; ++r)
      if (state_[r] == kProposed) survivors.push_back(r);
    head.nsurvivors = static_cast<int32_t>(survivors.size());
    Status result;
    if (differs_ >= 0) {
      head.verdict = kListsDiffer;
      head.differs = differs_;
      result = STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                            "rank %d passed strata_comm_shrink another exclude list than rank %d's: every "
                            "survivor must pass the same one",
                            differs_, cp_.rank());
    } else {
      boot::IdContents id;
      STRATA_CHECK(security::randomBytes(head.salt, sizeof(head.salt)));
      STRATA_CHECK(makeId(cp_.derive(head.salt, sizeof(head.salt)), &id));
      std::memcpy(&head.root, &id.root, sizeof(head.root));
      head.rootLen = id.rootLen;
      head.creatorPid = id.creatorPid;
      head.creatorFd = id.creatorFd;
      head.creatorPidNamespace = id.creatorPidNamespace;
      out->survivors = survivors;
      out->newRank = 0;
      out->id = id;
    }
    std::memcpy(decision.data(), &head, sizeof(head));
    const std::vector<uint8_t> bits = bitmapOf(survivors, n_);
    decision.insert(decision.end(), bits.begin(), bits.end());
    const std::vector<uint8_t> message = sealed(cp_, decision);
    for (auto& entry : fds_) {
      const std::string peer = "rank " + std::to_string(entry.first) + "'s control plane";
      Status sent = net::sendAll(entry.second, message.data(), message.size(), nowSeconds() + kIoSeconds, peer.c_str());
      if (!sent.isOk())
        STRATA_WARN(INIT, "shrink: the decision did not reach rank %d (%s); the new communicator's init will "
                    "fail, and shrinking again leaves it out", entry.first, sent.message().c_str());
    }
    STRATA_INFO(INIT, "shrink: rank %d coordinated; survivors %s", cp_.rank(), listOf(survivors).c_str());
    return result;
  }

 private:
  enum State { kWaiting, kProposed, kGone, kExcluded };

  // A proposer that died while the others were awaited has closed its
  // connection: it is left out now, rather than named a survivor whose
  // absence would fail the new communicator's init.
  void dropClosedProposers() {
    for (auto it = fds_.begin(); it != fds_.end();) {
      pollfd p{it->second, POLLIN, 0};
      char byte;
      const bool closed = poll(&p, 1, 0) > 0 && recv(it->second, &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
      if (!closed) {
        ++it;
        continue;
      }
      STRATA_INFO(INIT, "shrink: rank %d proposed, then went away: left out", it->first);
      state_[it->first] = kGone;
      close(it->second);
      it = fds_.erase(it);
    }
  }

  void take(const Incoming& in) {
    std::vector<uint8_t> body;
    Status got = receiveSealed(cp_, in.fd, in.rank, mine_.size(), nowSeconds() + kIoSeconds, "a shrink proposal", &body);
    if (!got.isOk()) {
      // A proposal from an earlier attempt whose rank gave up on it, or a
      // rank that died since: its state stays as the probes find it.
      STRATA_INFO(INIT, "shrink: ignored a proposal from rank %d: %s", in.rank, got.message().c_str());
      close(in.fd);
      return;
    }
    if (body != mine_ && differs_ < 0) differs_ = in.rank;
    auto old = fds_.find(in.rank);
    if (old != fds_.end()) close(old->second);
    fds_[in.rank] = in.fd;
    state_[in.rank] = kProposed;
  }

  ControlPlane& cp_;
  const int n_;
  std::vector<State> state_;
  std::vector<uint8_t> mine_;
  std::map<int, int> fds_;  // proposers' connections, for the decision
  int differs_ = -1;
};

// Proposes to `coordinator` and waits for its decision. *gone when the
// coordinator is gone (before or after it took the proposal): the next rank
// up is asked then.
Status proposeTo(ControlPlane& cp, int coordinator, const std::vector<int>& exclude, double giveUp,
                 ShrinkOutcome* out, bool* gone) {
  const int n = cp.size();
  int fd = -1;
  *gone = true;
  STRATA_CHECK(cp.reach(coordinator, Message::Propose, std::min(giveUp, nowSeconds() + kProbeSeconds), &fd));
  std::unique_ptr<int, void (*)(int*)> guard(&fd, [](int* f) { close(*f); });
  const std::string peer = "rank " + std::to_string(coordinator) + "'s control plane";
  const std::vector<uint8_t> proposal = sealed(cp, proposalOf(exclude, n));
  Status sent = net::sendAll(fd, proposal.data(), proposal.size(), nowSeconds() + kIoSeconds, peer.c_str());
  if (!sent.isOk()) return sent;
  std::vector<uint8_t> body;
  Status got = receiveSealed(cp, fd, coordinator, sizeof(DecisionHead) + bitmapBytes(n), giveUp, "a shrink decision", &body);
  *gone = !got.isOk() && got.code() != STRATA_ERR_TIMEOUT;
  if (got.code() == STRATA_ERR_TIMEOUT)
    return STRATA_ERROR(STRATA_ERR_TIMEOUT,
                        "strata_comm_shrink: rank %d, coordinating, gave no decision in time; is every live rank "
                        "calling strata_comm_shrink?",
                        coordinator);
  if (!got.isOk()) return got;
  DecisionHead head;
  std::memcpy(&head, body.data(), sizeof(head));
  const uint8_t* bits = body.data() + sizeof(head);
  if (head.magic != kDecisionMagic)
    return STRATA_ERROR(STRATA_ERR_REMOTE, "rank %d's shrink decision is not one this build reads", coordinator);
  if (head.verdict == kListsDiffer)
    return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                        "rank %d passed strata_comm_shrink another exclude list than rank %d's (the coordinator): "
                        "every survivor must pass the same one",
                        head.differs, coordinator);
  std::vector<int> survivors;
  for (int r = 0; r < n; ++r)
    if (has(bits, r)) survivors.push_back(r);
  const bool rootOk = head.rootLen <= sizeof(head.root) &&
                      (head.root.ss_family == AF_INET || head.root.ss_family == AF_INET6);
  if (head.verdict != kAgreed || !rootOk || static_cast<size_t>(head.nsurvivors) != survivors.size() ||
      survivors.empty() || survivors[0] != coordinator)
    return STRATA_ERROR(STRATA_ERR_REMOTE, "rank %d's shrink decision does not hold together", coordinator);
  auto me = std::find(survivors.begin(), survivors.end(), cp.rank());
  if (me == survivors.end())
    return STRATA_ERROR(STRATA_ERR_REMOTE,
                        "rank %d, coordinating the shrink, left this rank out (it took too long to call "
                        "strata_comm_shrink)",
                        coordinator);
  std::memcpy(&out->id.root, &head.root, sizeof(head.root));
  out->id.rootLen = head.rootLen;
  out->id.creatorPid = head.creatorPid;
  out->id.creatorFd = head.creatorFd;
  out->id.creatorPidNamespace = head.creatorPidNamespace;
  out->id.secret = cp.derive(head.salt, sizeof(head.salt));
  out->survivors = survivors;
  out->newRank = static_cast<int>(me - survivors.begin());
  return Status::ok();
}

}  // namespace

Status agreeOnSurvivors(ControlPlane& cp, const std::vector<int>& exclude, double waitSeconds, const MakeId& makeId,
                        ShrinkOutcome* out) {
  const double start = nowSeconds();
  // Proposers outwait the coordinator's own wait for silent ranks.
  const double giveUp = start + 2 * waitSeconds + 2 * kProbeSeconds;
  for (int c = 0; c < cp.size(); ++c) {
    if (std::binary_search(exclude.begin(), exclude.end(), c)) continue;
    if (c == cp.rank()) return Coordinator(cp, exclude).run(start + waitSeconds, makeId, out);
    bool gone = false;
    Status proposed = proposeTo(cp, c, exclude, giveUp, out, &gone);
    if (!gone || nowSeconds() >= giveUp) return proposed;
    STRATA_INFO(INIT, "shrink: rank %d cannot coordinate (%s); trying the next rank", c, proposed.message().c_str());
  }
  return STRATA_ERROR(STRATA_ERR_INTERNAL, "shrink: no rank to coordinate, this one included");
}

}  // namespace strata::fault
