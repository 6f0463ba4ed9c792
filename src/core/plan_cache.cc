#include "plan_cache.h"

namespace strata {

const PlannedCall& PlanCache::insert(const PlanKey& key, PlannedCall call) {
  size_t victim = 0;
  for (size_t i = 1; i < kEntries; ++i)
    if (!entries_[i].valid || (entries_[victim].valid && entries_[i].used < entries_[victim].used)) victim = i;
  entries_[victim] = Entry{key, std::move(call), 0, true};
  return *touch(victim);
}

uint64_t PlanCache::scratchBytes() const {
  uint64_t total = 0;
  for (const Entry& e : entries_)
    if (e.valid) total += e.call.choice.scratchElems * strata_datatype_size(e.call.ctx.datatype);
  return total;
}

}  // namespace strata
