// STRATA_MEM_BUDGET: how the slots of a communicator's transports are sized
// so that what a rank holds for its transfers fits its budget.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace strata {

struct SlotSizing {
  int nchannels;
  size_t slotBytes;
  int nslots;
};

// Slots are not made smaller than this by the budget (a pipeline of smaller
// chunks costs more per byte than fewer channels do), unless asked for.
constexpr size_t kBudgetMinSlotBytes = 65536;

// Shrinks `sizing` until `footprint` of it fits `budget`: slots per FIFO
// halved down to 2, then the slot size halved down to kBudgetMinSlotBytes
// (or the size asked for, if smaller), then channels one by one down to 1.
// False, with the least in *sizing, where even that does not fit.
bool fitSlots(uint64_t budget, const std::function<uint64_t(const SlotSizing&)>& footprint, SlotSizing* sizing);

}  // namespace strata
