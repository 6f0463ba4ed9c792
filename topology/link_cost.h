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
  double us(double bytes) const { return latencyUs + bytes / (gbps * 1e3); }
};

// Parses "latency_us,GB/s" (e.g. "30,1.2"); `var` names the variable in errors.
Status parseLinkCost(const std::string& text, const char* var, LinkCost* out);

}  // namespace strata
