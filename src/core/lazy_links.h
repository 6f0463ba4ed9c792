// Pairs of ranks connected at the first call that needs them
// (STRATA_CONNECT=lazy): a rank holds connections only to the peers its
// plans and sends use, so its sockets grow with those, not with the size of
// the communicator.
//
// Both ranks of a pair take part in connecting it, yet neither may wait for
// the other's caller: a lone isend to a rank that is busy elsewhere (the
// ring shift of MPI codes) must not hang. So the rank that needs the pair
// asks the peer's control plane (fault/control_plane.h), and a thread of the
// peer's, started for the request, runs that end while its caller goes on
// (the control plane's own thread stays free for revokes and stall reports). When both
// ask at once, the request of the lower rank is served, and the higher
// rank's caller waits for its own control plane to finish the pair.
//
// Over the request's socket the two ranks see an OutOfBand of just the two
// of them (PairOob), so a transport's ordinary connect() makes the pair's
// connectors (Transport::connectsPairs).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "oob.h"
#include "status.h"

namespace strata {

// The two ranks of a pair, over a connected socket: allgather fills only
// their own two records (both ranks call the same exchanges in the same
// order, as every transport's connect does).
class PairOob final : public OutOfBand {
 public:
  PairOob(int fd, int rank, int nranks, int peer, double deadline);
  int rank() const override { return rank_; }
  int size() const override { return nranks_; }
  Status allgather(const void* in, void* out, size_t bytes) override;
  Status barrier() override;
  // The other rank closed the socket: its half failed.
  bool abandoned() override;

 private:
  int fd_;
  int rank_;
  int nranks_;
  int peer_;
  double deadline_;
  std::string peerName_;
};

class LazyLinks {
 public:
  // Opens a proven socket to `peer`'s control plane asking for the pair.
  using Reach = std::function<Status(int peer, double deadline, int* fd)>;
  // Makes and installs the pair's connectors over `oob`; both ranks run it at once.
  using ConnectPair = std::function<Status(int peer, OutOfBand& oob)>;

  // `connected[p]`: the pair with p needs no connecting (connected at init,
  // or this rank itself).
  LazyLinks(int rank, std::vector<bool> connected, double timeoutSeconds, Reach reach, ConnectPair connect);

  // Returns once the pair with `peer` is connected (at once when it is), or
  // fails: the peer's process gone, its link down, or no answer before the
  // deadline. A pair that failed to connect stays failed.
  Status ensure(int peer);
  // `peer` asks for the pair over `fd` (owned from here): answered, and
  // served, on a thread of its own; `onFailure` gets the status where this
  // rank took the pair on and connecting it failed.
  void serve(int peer, int fd, std::function<void(const Status&)> onFailure);
  // Waits for the threads serve() started.
  ~LazyLinks();

  // How many peers this rank holds connected (those at init included).
  int connectedCount() const;

 private:
  enum class State { Absent, Asking, Serving, Connected, Failed };
  Status answer(int peer, int fd);
  // Runs the pair's connecting over `fd` (closed after), unless `failed`
  // says it cannot start, and records the outcome.
  Status finish(int peer, int fd, Status failed = Status::ok());
  // Waits (lock held) until the pair is connected or failed (true, and
  // *outcome says which), or the deadline (false, *outcome a timeout).
  bool awaitOutcome(std::unique_lock<std::mutex>& lock, int peer, double deadline, Status* outcome);

  int rank_;
  double timeout_;
  Reach reach_;
  ConnectPair connect_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<State> state_;
  std::vector<Status> failure_;
  struct Server {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Server> servers_;  // under mutex_; those done are joined by the next serve()
};

}  // namespace strata
