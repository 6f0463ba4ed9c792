// What strata_comm_split learns from its parent's allgather: every rank's
// (color, key, rank), each entry written by that rank. The entries come from
// other processes, so they are checked before this rank's new group, its
// place in it and the group's first member (whose unique id everyone takes)
// are read out of them.
#pragma once

#include <cstdint>
#include <vector>

#include "status.h"

namespace strata::api {

struct SplitMember {
  int64_t color, key, rank;  // int64 on the wire: gathered as 3 x STRATA_INT64
};

// From all[r] (rank r's entry, n = all.size()): this rank's group, the
// members whose color is `color` ordered by (key, rank), and its own place
// in it. Refuses (STRATA_ERR_REMOTE, naming the rank) an entry that names
// another rank or carries a color or key no int holds, and an own entry
// other than (color, key, me). A rank with STRATA_SPLIT_NOCOLOR gets an
// empty group and *newRank = -1. Outputs are set only on success.
Status splitGroup(const std::vector<SplitMember>& all, int me, int color, int key,
                  std::vector<SplitMember>* group, int* newRank);

}  // namespace strata::api
