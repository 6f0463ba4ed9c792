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
//    its first step to its last (a send or receive group is a "p2p" span),
//    and each of its steps (receive, reduce, send...) with its peers and
//    bytes.
// Off, it costs a branch per call; on, two clock reads and two appends per
// call and per channel; the JSON is formatted (integers only, no printf) and
// written every kBatch events and at the end (bench/README.md has the cost).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

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
  // `algo` (a string that lives as long as the library) on `nchannels`
  // channels; its span ends when its caller sees it complete or fail.
  void issued(uint64_t seq, uint64_t desc, const char* algo, int nchannels);
  void completed(uint64_t seq, bool ok);
  // Channel `ch`'s part of operation `seq` (0 for a send/receive group).
  void channelSpan(int ch, uint64_t seq, double start, double end);
  // One step of it: `prim` (primName) from rank `recvPeer` and/or to rank
  // `sendPeer` (-1: none), `bytes` long, from when the step before it ended.
  void step(int ch, uint64_t seq, const char* prim, int recvPeer, int sendPeer, uint64_t bytes, double start,
            double end);

  const std::string& path() const { return path_; }

 private:
  // An event as the hot path leaves it: plain values, formatted as JSON in
  // batches (a thread of its own to format them took a core from spinning
  // ranks on a small machine, which cost more than formatting inline).
  enum class Kind : uint8_t { Call, Span, Step };
  struct Record {
    Kind kind;
    bool ok;
    int32_t nchannels;  // a call's; a span's or step's channel
    uint64_t seq;
    uint64_t desc;      // a call's OpDesc; a step's bytes
    const char* name;   // a call's algorithm; a step's primitive
    int32_t recvPeer, sendPeer;
    double start, end;
  };
  static constexpr size_t kBatch = 1 << 16;
  static constexpr size_t kPending = 256;  // calls in flight we remember (a channel queue's depth and more)

  Timeline() = default;
  void push(const Record& r);
  void flushLocked();
  void format(const Record& r, std::string* out);

  int rank_ = 0;
  std::string path_;
  std::string transports_;  // to the peers, e.g. "shm,tcp"
  FILE* file_ = nullptr;
  Record pending_[kPending] = {};  // issued calls, by seq % kPending
  std::mutex mutex_;  // calls come from the API thread, spans from progress threads too
  std::vector<Record> records_;
  std::map<uint64_t, std::string> described_;  // desc -> its call's JSON name and arguments
};

// Microseconds for the trace's "ts" from a nowSeconds() value.
inline double micros(double seconds) { return seconds * 1e6; }

}  // namespace strata::timeline
