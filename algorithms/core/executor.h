// Runs a channel's plan over connectors without ever blocking: advance()
// executes every step whose connectors are ready and reports whether it moved.
// A step either runs whole or not at all, so a caller may stop between any two
// calls (to poll other channels, yield, check deadlines) and come back later.
#pragma once

#include <string>
#include <vector>

#include "connector.h"
#include "plan.h"
#include "input_gate.h"
#include "kernels.h"
#include "memory.h"

namespace strata {

// The connectors of one channel, indexed by peer rank (null: not connected),
// and those of them that need progress() calls.
struct ChannelLinks {
  std::vector<SendConnector*> send;
  std::vector<RecvConnector*> recv;
  std::vector<Connector*> pollers;
  bool landing = false;  // some receive connector lands in the caller's memory

  // Makes send and recv (either may be null) the connectors to and from
  // `peer`, with the pollers and `landing` they bring.
  void add(int peer, SendConnector* to, RecvConnector* from) {
    send[peer] = to;
    recv[peer] = from;
    for (Connector* end : {static_cast<Connector*>(to), static_cast<Connector*>(from)})
      if (end && end->needsProgress()) pollers.push_back(end);
    landing |= from && from->landsInCaller();
  }
  // Moves bytes for every connector that needs it; true if any moved.
  bool progress() {
    bool moved = false;
    for (Connector* c : pollers) moved |= c->progress();
    return moved;
  }
  bool flushed() const {
    for (const Connector* c : pollers)
      if (!c->flushed()) return false;
    return true;
  }
  void addPollFds(std::vector<pollfd>& out) const {
    for (const Connector* c : pollers) c->addPollFds(out);
  }
};

// One message of an operation made of several (a group of sends and
// receives, each with its own buffers and tag); steps name theirs by Step::msg.
struct Message {
  const char* input;
  char* output;
  SlotTag tag;
  InputGate* gate = nullptr;  // stream-ordered: input that arrives while the message runs
};

// Everything a step needs to know about the running operation.
struct OpContext {
  const char* input;
  char* output;
  strata_datatype_t datatype;
  strata_op_t op;
  size_t elemSize;
  int rank;
  int nranks;
  SlotTag tag;                // expected on every received slot
  // How the buffers' memory is copied and reduced (their memory type's ops).
  const MemoryOps* memory = &kHostMemory;
  kernels::ReduceFn reduceFn;  // memory->reduceKernel's, for (datatype, op); null for device memory
  // Device memory: the channel's stream, on which every copy and kernel of
  // the operation is enqueued (the connectors' deviceStream()).
  void* stream = nullptr;
  bool ntOutput = false;       // write the output with non-temporal stores
  // The plan never writes memory it has sent from before the operation
  // completes, so connectors that can send from the caller's memory may
  // (SendConnector::publishFrom) instead of copying into a slot.
  bool sendFromCaller = false;
  // When set, replaces input, output and tag: message i is messages[i]. The
  // array outlives the operation (its owner keeps it with the request).
  const Message* messages = nullptr;
  // A stream-ordered operation's input arrives over time (input_gate.h);
  // null for host-ordered calls, whose input is all there.
  InputGate* gate = nullptr;
  // Elements the plan keeps between its rounds (kInFromScratch,
  // kOutToScratch): host memory the communicator allocates once per cached
  // plan (PlanChoice::scratchElems), its channels' parts disjoint, so the
  // operations of one plan, which a channel runs one after another, share it.
  char* scratch = nullptr;

  Message message(const Step& step) const {
    return messages ? messages[step.msg] : Message{input, output, tag, gate};
  }

  void copy(void* dst, const void* src, size_t bytes, bool nonTemporal) const {
    memory->copy(dst, src, bytes, nonTemporal, stream);
  }
  // dst = a op b, element-wise.
  void reduce(void* dst, const void* a, const void* b, size_t count) const {
    if (reduceFn) reduceFn(dst, a, b, count);
    else memory->reduce(datatype, op, dst, a, b, count, stream);
  }
};

enum class Advance { Done, Progressed, Blocked, Failed };

class PlanExecutor {
 public:
  // Executes ready steps from *cursor on. On Failed, *error says why.
  // *posted (from 0 with the cursor; null: never) is how far the receives
  // ahead have been posted to connectors that land in the caller's memory.
  Advance advance(const ChannelPlan& plan, size_t* cursor, const OpContext& ctx,
                  const ChannelLinks& links, Status* error, size_t* posted = nullptr);

  // Health of the connectors the step at `cursor` is still waiting on (data
  // not arrived, no free slot), called when a channel has been blocked for a
  // while.
  Status blockedHealth(const ChannelPlan& plan, size_t cursor, const ChannelLinks& links);

  // Whether the step at `cursor` waits on a connector that moves without
  // progress() calls (shared memory): no descriptor will tell a sleeping
  // thread that it can go on.
  // Whether the step at `cursor` waits for its input to arrive from its
  // stream (the GPU has not got there yet): no peer is at fault, so no
  // deadline runs.
  bool waitsOnInput(const ChannelPlan& plan, size_t cursor, const OpContext& ctx) const {
    return cursor < plan.steps.size() && closedGate(plan.steps[cursor], ctx);
  }
  // A closed input gate counts: it opens by a store, too.
  bool waitsOnMemory(const ChannelPlan& plan, size_t cursor, const ChannelLinks& links, const OpContext& ctx);

  // What the step at `cursor` waits for, in words a user can act on when a
  // deadline passes: each peer whose data has not come, with the operation
  // its last message here belonged to (a peer still on an earlier one has
  // not reached this one), and each peer that has not taken what was sent.
  std::string describeWait(const ChannelPlan& plan, size_t cursor, const ChannelLinks& links,
                           const OpContext& ctx);

 private:
  enum class StepResult { Ran, NotReady, Failed };
  // Hands `peer`'s slot, tagged `tag`, back to its sender, and remembers the
  // tag for describeWait().
  void consume(RecvConnector* recv, int peer, const SlotTag& tag) {
    recv->release();
    if (static_cast<size_t>(peer) >= lastFrom_.size()) lastFrom_.resize(peer + 1, SlotTag{0, 0});
    lastFrom_[peer] = tag;
  }
  std::string lastFromText(int peer, const SlotTag& want) const;
  // Tells the landing connectors where the receives from *posted on go
  // (RecvConnector::post), as far as they take them.
  static void postAhead(const ChannelPlan& plan, size_t cursor, size_t* posted, const OpContext& ctx,
                        const ChannelLinks& links);
  // The gate that keeps `step` from running (its input, or the stream, has
  // not come yet), or null.
  static InputGate* closedGate(const Step& step, const OpContext& ctx);
  StepResult run(const Step& step, const OpContext& ctx, const ChannelLinks& links, Status* error);
  StepResult reduceAll(const Step& step, const Message& msg, const OpContext& ctx,
                       const ChannelLinks& links, Status* error);

  std::vector<const void*> peerSlots_;  // ReduceAll's view of every peer's slot
  std::vector<SlotTag> lastFrom_;       // per peer, the tag of the last slot consumed (seq 0: none)
};

}  // namespace strata
