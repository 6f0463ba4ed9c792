#include "plan_cache.h"

namespace strata {

const PlannedCall& PlanCache::insert(const PlanKey& key, PlannedCall call) {
  size_t victim = 0;
  for (size_t i = 1; i < kEntries; ++i)
    if (!entries_[i].valid || (entries_[victim].valid && entries_[i].used < entries_[victim].used)) victim = i;
  entries_[victim] = Entry{key, std::move(call), 0, true};
  return *touch(victim);
}

}  // namespace strata
