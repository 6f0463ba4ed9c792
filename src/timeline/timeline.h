// STRATA_TIMELINE=prefix: a trace of every operation of a communicator, one
// file per rank, in Chrome's trace-event JSON (Perfetto and chrome://tracing
// open it; scripts/timeline-merge joins a communicator's ranks into one).
//
// A rank's file is <prefix>.<communicator tag>.rank<r>.json: its ranks share
// the tag, so a job's several communicators (splits, dups, shrinks) never mix.
// Events, in microseconds of the host's monotonic clock (the file's
// strata_clock event gives the offset to the wall clock, which lines up
// hosts):
//  - on the "calls" track, one span per collective, from its call to the
//    moment its caller saw it complete, with its count, datatype, op, bytes,
//    algorithm, channels and the transports to its peers;
//  - on a track per channel, that channel's part of each operation, from
//    its first step to its last (a send or receive group is a "p2p" span).
// Off, it costs a branch per call; on, formatting an event per call and per
// channel, buffered and written in 64 KiB pieces (bench/README.md has the cost).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "status.h"

namespace strata::timeline {

class Timeline {
 public:
  // Null in *out when STRATA_TIMELINE is unset. `transports`: those this
  // rank's peers are reached over ("shm,tcp"), for every call's arguments.
  static Status open(int rank, int nranks, uint64_t commTag, int nchannels, const std::string& transports,
                     std::unique_ptr<Timeline>* out);
  ~Timeline();  // writes what is left and closes the JSON array
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Collective `seq` (`desc`: OpDesc::pack()) issued now, to run with
  // `algo` on `nchannels` channels; its span ends when its caller sees it
  // complete or fail.
  void issued(uint64_t seq, uint64_t desc, const char* algo, int nchannels);
  void completed(uint64_t seq, bool ok);
  // Channel `ch`'s part of operation `seq` (0 for a send/receive group).
  void channelSpan(int ch, uint64_t seq, double start, double end);

  const std::string& path() const { return path_; }

 private:
  Timeline() = default;
  void append(const std::string& event);
  void appendLocked(const std::string& event);
  void flushLocked();

  int rank_ = 0;
  std::string path_;
  std::string transports_;  // to the peers, e.g. "shm,tcp"
  FILE* file_ = nullptr;
  std::mutex mutex_;  // calls come from the API thread, spans from progress threads too
  struct Pending {
    uint64_t desc;
    const char* algo;
    int nchannels;
    double issuedAt;
  };
  std::map<uint64_t, Pending> pending_;  // issued, not seen complete yet
  std::string buffer_;
  bool first_ = true;
};

// Microseconds for the trace's "ts" from a nowSeconds() value.
inline double micros(double seconds) { return seconds * 1e6; }

}  // namespace strata::timeline
