// How a rank writes the slots of its large shared-memory sends.
//
// With regular stores the data sits in the sender's cache and the receiver
// pulls it from there, line by line; with non-temporal stores it goes to
// memory and the receiver reads it from DRAM. Which is faster depends on how
// far apart the two cores are: close (one core complex), cache to cache wins
// (2 ranks, 16 MiB: 7.3-8.7 GB/s busbw with regular stores, 5.1-5.8 with
// streaming ones); far (another socket, or a VM whose vCPUs the host has
// placed apart) it collapses and memory wins (1.3-2.1 against 5.7-8.9). A
// VM's placement changes while a job runs, so each rank times its own large
// blocking allreduces both ways and uses the faster, trying the other again
// every kExplore operations. The choice is a rank's own: the receiver reads
// a slot the same way whichever stores filled it. Its measurements are not:
// an operation's time also depends on the peers' stores and on when they
// arrived, hence the margin below, and the communicator keeps one choice
// per power-of-two size.
#pragma once

#include <cstdint>

namespace strata {

class SlotStoreChoice {
 public:
  // Whether the next large blocking operation streams its slot writes (now
  // and then the way that is not the best, to measure it again).
  bool next();
  // The best way measured so far, for operations that are not timed.
  bool best() const;
  // The operation run with `streamed` moved `bytes` in `seconds`.
  void record(bool streamed, uint64_t bytes, double seconds);

 private:
  static constexpr uint64_t kExplore = 32;
  // The first operations alternate, so that each way is measured twice
  // before one is picked (the first operation on a buffer also pays for
  // touching its pages).
  static constexpr uint64_t kAlternate = 4;
  // Streaming must be this much faster to be kept: where the cores are far
  // apart it is 3-4x faster, and when they are close, one operation's time
  // varies by more than the small difference there is (more so with more
  // ranks than cores).
  static constexpr double kMargin = 1.25;
  // Seconds per byte of each way's last operation (0: none yet).
  double secondsPerByte_[2] = {0, 0};
  uint64_t ops_ = 0;
};

}  // namespace strata
