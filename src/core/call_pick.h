// A per-call choice (algorithm, channels, chunk) checked against what a
// communicator allows: for strata_call_options_t and STRATA_TUNER_FILE alike.
#pragma once

#include <cstddef>

#include "planner.h"
#include "status.h"

namespace strata {

struct PickLimits {
  int nchannels;     // the communicator's channels
  size_t slotBytes;  // its slot size
  bool reproducible;
};

// `algorithm` (NULL: none), `channels` and `chunkBytes` (0: none) for `coll`
// as a CallPick; errors name each field as `prefix` + its name
// ("options->algorithm", or "algorithm" in a tuner file's line).
Status makePick(Coll coll, const char* algorithm, int channels, size_t chunkBytes, const PickLimits& limits,
                const char* prefix, CallPick* pick);

}  // namespace strata
