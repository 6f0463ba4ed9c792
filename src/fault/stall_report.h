// One report of where every rank of a communicator stands, from each rank's
// operation log (op_log.h): which ranks wait in which collective, for whom,
// and what those are doing instead ("ranks 0-6 wait in allreduce(...) #1042
// for rank 7; rank 7 completed #1041, issued 2.1 s ago, and has issued
// nothing since"), ranks that are gone, ranks that reached the same
// sequence number in different collectives, and sends and receives waited
// on. Then each rank's recent operations, one line per rank.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "op_log.h"

namespace strata::fault {

// ranks[r]: rank r's snapshot, or nullopt when it could not be asked (gone).
std::string describeStall(const std::vector<std::optional<OpSnapshot>>& ranks);

// The summary alone: the report's first lines, without the per-rank table.
std::string summarizeStall(const std::vector<std::optional<OpSnapshot>>& ranks);

// "0-6", "0,2,5-7"
std::string rankRanges(const std::vector<int>& ranks);

}  // namespace strata::fault
