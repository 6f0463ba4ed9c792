#include "memory_budget.h"

#include <algorithm>

namespace strata {

bool fitSlots(uint64_t budget, const std::function<uint64_t(const SlotSizing&)>& footprint, SlotSizing* sizing) {
  const size_t leastSlot = std::min(sizing->slotBytes, kBudgetMinSlotBytes);
  while (footprint(*sizing) > budget) {
    if (sizing->nslots > 2) {
      sizing->nslots /= 2;
    } else if (sizing->slotBytes > leastSlot) {
      sizing->slotBytes = std::max(leastSlot, sizing->slotBytes / 2);
    } else if (sizing->nchannels > 1) {
      --sizing->nchannels;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace strata
