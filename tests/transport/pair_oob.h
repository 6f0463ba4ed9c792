// The out-of-band network of a two-rank conformance test: one TCP
// connection. The transport's connect() runs its allgathers and barriers
// over it; afterwards the test's two ranks use it to tell each other where
// they are (post/poll a word), and its end-of-stream tells a rank that the
// other process is gone. Rank 0 accepts, rank 1 dials.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "oob.h"

namespace strata::test {

class PairOob final : public OutOfBand {
 public:
  // Rank 0: accepts one connection on `listenFd` (which it then closes).
  static Status accept(int listenFd, double deadline, std::unique_ptr<PairOob>* out);
  // Rank 1: connects to host:port, retrying until rank 0 listens.
  static Status dial(const std::string& host, int port, double deadline, std::unique_ptr<PairOob>* out);
  ~PairOob() override;
  PairOob(const PairOob&) = delete;
  PairOob& operator=(const PairOob&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return 2; }
  Status allgather(const void* in, void* out, size_t bytes) override;
  Status barrier() override;

  // Shows every allgather's result to `watcher` (none: nullptr), as an
  // eavesdropper on the out-of-band network would see it.
  using Watcher = std::function<void(const void* all, size_t bytes)>;
  void watch(Watcher watcher) { watcher_ = std::move(watcher); }

  // A word for the peer; the socket's buffer takes it at once.
  Status post(uint64_t word);
  // The peer's next word, if it has arrived (never waits).
  bool poll(uint64_t* word);
  // Whether the peer's end has closed: its process exited or was killed
  // (never waits; words it posted before are still delivered by poll).
  bool peerGone();

 private:
  PairOob(int fd, int rank) : fd_(fd), rank_(rank) {}
  void readAvailable();

  int fd_;
  int rank_;
  std::string inbox_;  // bytes read ahead of poll()
  bool closed_ = false;
  Watcher watcher_;
};

}  // namespace strata::test
