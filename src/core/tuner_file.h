// STRATA_TUNER_FILE: rules that choose a call's algorithm, channels and chunk
// from what the call is and where it runs, one per line, the first that
// matches winning (a call's own strata_call_options_t choice wins over all):
//
//   # collective  bytes     ranks  per-node  datatype  ->  algorithm  channels  chunk
//   allreduce     0-64K     *      *         *         ->  oneshot    *         *
//   allreduce     64K-16M   4      2         float32   ->  hd         2         64K
//   reduce        1M-*      *      *         *         ->  pipelined  *         *
//
// bytes: a range lo-hi of the call's buffer (per rank block for allgather,
// reduce_scatter and alltoall), both ends included, K/M/G suffixes (1024s),
// * for any; ranks: the communicator's size; per-node: its most ranks on one
// node (the same number on every rank); both a number, a range or *. The
// algorithm and the other values are what strata_call_options_t takes (*:
// the communicator's choice). The file is read when a communicator is
// created; one that cannot be read, or any malformed line, fails the
// creation naming the line and why (fail closed: a typo must not silently
// leave the defaults). bench/compare-algos --tuner-file writes one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner.h"
#include "status.h"

namespace strata {

class TunerRules {
 public:
  // What the rules may ask for on this communicator.
  struct Limits {
    int nranks;
    int ranksPerNode;
    int nchannels;
    size_t slotBytes;
    bool reproducible;
  };

  // Reads `path`, keeping the rules that can match on this communicator.
  static Status load(const std::string& path, const Limits& limits, TunerRules* out);

  bool empty() const { return rules_.empty(); }
  // The first matching rule's choice for `call`, and its line (0: none).
  CallPick pickFor(const CollCall& call, int* line) const;
  const std::string& path() const { return path_; }

 private:
  struct Rule {
    int line;
    Coll coll;
    uint64_t loBytes, hiBytes;
    int datatype;  // -1: any
    CallPick pick;
  };
  std::string path_;
  std::vector<Rule> rules_;
};

}  // namespace strata
