// A group of sends and receives (strata_group_start/end, or one strata_send
// or strata_recv) planned as one exchange (exchange.h), so they progress
// together and any pattern whose every send has a matching receive
// completes. Messages to the own rank pair up in order and become copies.
#pragma once

#include <cstdint>
#include <vector>

#include "exchange.h"
#include "executor.h"
#include "plan.h"
#include "status.h"

namespace strata {

struct P2pOp {
  bool send;
  int peer;
  const void* sendbuf;  // send
  void* recvbuf;        // recv
  size_t count;
  strata_datatype_t datatype;
};

// Each message's sequence number counts the messages between one pair of
// ranks in one direction, so both ends tag a message alike.
struct P2pSequences {
  std::vector<uint64_t> sent;      // per peer
  std::vector<uint64_t> received;  // per peer
};

// Fills `messages` (buffers and tags, in the order of `ops` but for the
// copies, which come last, advancing `seqs`) and `spec`. Fails, changing
// nothing, when the group is too large or its messages to itself do not pair up.
Status describeP2pGroup(const std::vector<P2pOp>& ops, int rank, P2pSequences* seqs,
                        std::vector<Message>* messages, ExchangeSpec* spec);

// The group's plans on every channel of `shape` (its elemSize is ignored:
// messages move as bytes).
void buildP2pGroup(const PlanShape& shape, const ExchangeSpec& spec, PlanSet& plans);

}  // namespace strata
