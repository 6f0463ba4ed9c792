// A link's price in strata's cost models: a latency per hop and a one-way
// bandwidth, written "latency_us,GB/s" in the variables that set them. The
// planner prices shared-memory and network hops with it
// (algorithms/planner/cost_model.h); the GPU path choice prices device
// copies, NVLink and PCIe with it (gpu_path.h).
#pragma once

#include <string>

#include "status.h"

namespace strata {

struct LinkCost {
  double latencyUs;  // per hop
  double gbps;       // GB/s one way
  // Of latencyUs, the time in flight (wire, switches, a NIC's DMA), which
  // messages leaving a node together overlap. The rest is the node's own
  // work per message (system calls and protocol processing over TCP, where
  // it is all of it: 0; a NIC's per-message time over RDMA), which they pay
  // one after another.
  double inFlightUs = 0;
  // Whether gbps is the node's, which ranks of a node sending at once share
  // (a NIC), or each connection's own (TCP between namespaces here, where a
  // connection's bytes are copied by its own rank's core).
  bool shared = false;

  double us(double bytes) const { return latencyUs + bytes / (gbps * 1e3); }
  // The latency of `messages` messages that ranks of one node send at once,
  // until the last arrives.
  double burstUs(int messages) const { return latencyUs + (messages - 1) * (latencyUs - inFlightUs); }
  // How many of `messages` sent at once by ranks of one node each message's
  // bytes wait for.
  int sharers(int messages) const { return shared ? messages : 1; }
};

// Parses "latency_us,GB/s" (e.g. "30,1.2"), then optionally the in-flight
// part (e.g. "1.6,25,1.5": all but 0.1 us of a message's latency overlaps
// others') and the word "shared" (e.g. "1.6,25,1.5,shared": a node's ranks
// share the bandwidth); `var` names the variable in errors.
Status parseLinkCost(const std::string& text, const char* var, LinkCost* out);

}  // namespace strata
