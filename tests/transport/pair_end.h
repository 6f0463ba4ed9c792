// One rank's end of a two-rank connection over one transport, driven the way
// a channel drives connectors (src/progress/channel.cc), but by a test:
// every call on a connector is timed (none may block), waiting pumps
// progress() on every connector that needs it, and health() is checked only
// while something is awaited, as the executor does (a peer that delivered its
// part and left is no failure).
//
// runPair() runs a body on both ranks, each in a process of its own: forked
// here, or, under tests/rdma/run_in_guests.sh (RANK, MASTER_ADDR and
// RDMA_TEST_PORT set), one rank per guest, each guest running only its own.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "message_pattern.h"
#include "multiproc.h"
#include "pair_oob.h"
#include "transport.h"

namespace strata::test {

// A call on a connector that takes longer than this blocked: in every case
// the peer stays silent for longer (kSilenceSeconds) at some point.
constexpr double kCallLimitSeconds = 1.0;
constexpr double kSilenceSeconds = 1.5;
// What a wait for the peer may take before the test says it hangs.
constexpr double kWaitSeconds = 20;

struct PairOptions {
  int nchannels = 1;
  size_t slotBytes = 64 << 10;
  int nslots = 4;
  // Called on each rank with every allgather's result while the transport
  // connects, and the communicator tag: what an attacker on the path learns.
  std::function<void(int rank, const void* all, size_t bytes, uint64_t commTag, Reporter& rep)> eavesdropper;
};

class PairEnd {
 public:
  // Connects to the other rank over the transport named `transport`; null if
  // that failed (reported) or cannot work here (reported as a skip).
  static std::unique_ptr<PairEnd> connect(const std::string& transport, std::unique_ptr<PairOob> oob,
                                          const PairOptions& options, Reporter& rep);
  ~PairEnd();  // the connectors, then the transports that made them
  PairEnd(const PairEnd&) = delete;
  PairEnd& operator=(const PairEnd&) = delete;

  int rank() const { return oob_->rank(); }
  const char* transportName() const { return transport_->name(); }
  int peer() const { return 1 - rank(); }
  int nchannels() const { return options_.nchannels; }
  int nslots() const { return options_.nslots; }
  size_t slotBytes() const { return send(0).slotBytes(); }
  PairOob& oob() { return *oob_; }
  SendConnector& send(int channel) const { return *connections_.send[channel][peer()]; }
  RecvConnector& recv(int channel) const { return *connections_.recv[channel][peer()]; }
  Stream outgoing(int channel) const { return Stream{rank(), channel}; }
  Stream incoming(int channel) const { return Stream{peer(), channel}; }

  // The connector calls, timed.
  void* acquire(int channel, size_t bytes);
  void publish(int channel, size_t bytes, const SlotTag& tag);
  bool publishFrom(int channel, const void* data, size_t bytes, const SlotTag& tag);
  const void* peek(int channel, size_t* bytes, SlotTag* tag);
  void release(int channel);
  bool flushed(int channel);
  // What a channel does on every poll: progress() on every connector that
  // needs it (a transport may move one connector's bytes in another's
  // progress: ib's receive end, ucx's worker). True if anything moved.
  bool pump();

  // Non-blocking steps of a stream. trySend publishes message m of
  // outgoing(channel) if a slot is free, after checking that acquire(0)
  // and acquire(bytes) agree (the executor asks with 0 whether an entry is
  // free). tryReceive: 1 if message m of incoming(channel) was there,
  // correct (peeked twice alike) and released; 0 if nothing was there; -1
  // if something else was (reported).
  bool trySend(int channel, uint64_t m, size_t bytes, Reporter& rep);
  int tryReceive(int channel, uint64_t m, size_t bytes, Reporter& rep);

  // Polls (pump, then `done`) until done() is true. While it is not: the
  // health of `watched` (every connector if empty) must stay OK, and
  // kWaitSeconds bound the wait. False, with a failure naming `what`, if not.
  bool waitUntil(Reporter& rep, const char* what, const std::function<bool()>& done,
                 const std::vector<Connector*>& watched = {});
  bool sendMessage(int channel, uint64_t m, size_t bytes, Reporter& rep);
  bool receiveMessage(int channel, uint64_t m, size_t bytes, Reporter& rep);
  // Waits until every send connector is flushed.
  bool waitFlushed(Reporter& rep);
  // The peer's next word on the test socket, pumping while it comes. Without
  // `checkHealth` (the connectors may have failed on purpose) it fails only
  // if the peer exits without posting it, or at the deadline.
  bool waitWord(Reporter& rep, const char* what, uint64_t* word, bool checkHealth = true);
  // Both ranks reached the end of the body (pumping meanwhile, no health
  // checks: the peer may be tearing down).
  bool meet(Reporter& rep, const char* where);

  // First error among the health() of `which` (every connector if empty).
  Status health(const std::vector<Connector*>& which = {}) const;
  std::vector<Connector*> all() const;

  // Fails `rep` if a connector call took longer than kCallLimitSeconds.
  void expectNothingBlocked(Reporter& rep) const;

 private:
  PairEnd(std::unique_ptr<PairOob> oob, const PairOptions& options) : oob_(std::move(oob)), options_(options) {}
  template <typename Call>
  auto timed(const char* name, Call call);
  // A peeked slot as host memory: itself, or (GPU memory) a copy of it.
  const void* readable(int channel, const void* slot, size_t bytes, Reporter& rep);
  // dst <- src by a copy on `stream`, waited for.
  static Status onStream(void* stream, void* dst, const void* src, size_t bytes);

  std::unique_ptr<PairOob> oob_;
  PairOptions options_;
  std::vector<topo::HostInfo> hosts_;  // connect()'s request points here
  std::vector<std::unique_ptr<Transport>> transports_;
  Transport* transport_ = nullptr;  // the one under test, among transports_
  Connections connections_;
  double slowest_ = 0;
  const char* slowestCall_ = "none";
  std::vector<char> staging_, landed_;  // host copies of GPU slots (deviceStream())
};

// "remote error: <message>", for failure messages.
std::string describe(const Status& s);

// How a rank's process must end.
enum class Ends { Passed, Killed };

// The body runs on both ranks (branching on end.rank()); a rank's process
// has `seconds` in all. outcomes[r] is set where `here[r]`: both ranks when
// forked here, this guest's rank alone under run_in_guests.sh.
struct PairRun {
  std::vector<RankOutcome> outcomes{2};
  std::vector<bool> here{false, false};
};
using PairBody = std::function<void(PairEnd& end, Reporter& rep)>;
PairRun runPair(const std::string& transport, const PairOptions& options, double seconds, const PairBody& body);

}  // namespace strata::test
