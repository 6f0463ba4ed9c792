// Plans a communicator built for earlier calls, kept for the same call again:
// a training loop issues the same collectives step after step, and building a
// large operation's plans costs more than a small operation's whole run.
// Every collective but the v-variants (whose plans follow per-rank count
// arrays) is kept, by what its plans and context depend on.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "executor.h"
#include "memory.h"
#include "op_desc.h"
#include "p2p_group.h"
#include "planner.h"

namespace strata {

struct PlanKey {
  Coll coll;
  uint64_t count;
  strata_datatype_t datatype;
  strata_op_t op;
  int root;   // the peer of a send or receive
  bool inPlace;
  bool send;  // a send (not a receive)
  MemoryType memory;
  CallPick pick = {};  // the caller's or the tuner file's choice

  static bool cacheable(const CollCall& call) {
    return call.coll != Coll::Allgatherv && call.coll != Coll::Alltoallv;
  }
  static PlanKey of(const CollCall& call) {
    return {call.coll,  call.count, call.datatype, call.op, call.root, call.sendbuf == call.recvbuf, false,
            call.memory, call.pick};
  }
  // A lone send or receive: its plans depend on its bytes, peer and direction.
  static PlanKey of(const P2pOp& op) {
    return {Coll::SendRecv, op.count * strata_datatype_size(op.datatype), STRATA_UINT8, STRATA_SUM, op.peer,
            false, op.send, MemoryType::Host};
  }
  bool operator==(const PlanKey& o) const {
    return coll == o.coll && count == o.count && datatype == o.datatype && op == o.op && root == o.root &&
           inPlace == o.inPlace && send == o.send && memory == o.memory && pick == o.pick;
  }
};

// A call's plans and the context every run of it shares (all but its
// buffers and sequence number). Queued operations hold the plans too, so an
// entry replaced while its operation runs lives until that one retires.
struct PlannedCall {
  PlanChoice choice;
  OpContext ctx;
  std::shared_ptr<const PlanSet> plans;
  std::vector<int> peers;  // the ranks its plans send to or receive from, ascending
  // Every one of `peers` was connected at a call with these plans: pairs
  // connected once stay so, so later calls skip the check.
  mutable bool linked = false;
};

class PlanCache {
 public:
  // The entry for `key`, or null.
  const PlannedCall* find(const PlanKey& key) {
    // The same call as last time, first: the common case costs one compare.
    if (entries_[last_].valid && entries_[last_].key == key) return touch(last_);
    for (size_t i = 0; i < kEntries; ++i)
      if (entries_[i].valid && entries_[i].key == key) return touch(i);
    return nullptr;
  }
  // Keeps `call` under `key`, in place of the least recently used entry.
  const PlannedCall& insert(const PlanKey& key, PlannedCall call);
  // Host scratch its plans hold (OpContext::scratch).
  uint64_t scratchBytes() const;

 private:
  static constexpr size_t kEntries = 16;
  struct Entry {
    PlanKey key;
    PlannedCall call;
    uint64_t used = 0;
    bool valid = false;
  };
  const PlannedCall* touch(size_t i) {
    last_ = i;
    entries_[i].used = ++clock_;
    return &entries_[i].call;
  }

  std::array<Entry, kEntries> entries_{};
  size_t last_ = 0;
  uint64_t clock_ = 0;
};

}  // namespace strata
