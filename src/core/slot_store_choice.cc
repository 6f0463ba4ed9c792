#include "slot_store_choice.h"

namespace strata {

bool SlotStoreChoice::next() {
  ++ops_;
  if (ops_ <= kAlternate) return ops_ % 2 == 0;
  return ops_ % kExplore == 0 ? !best() : best();
}

bool SlotStoreChoice::best() const {
  return secondsPerByte_[1] > 0 && secondsPerByte_[1] * kMargin < secondsPerByte_[0];
}

void SlotStoreChoice::record(bool streamed, uint64_t bytes, double seconds) {
  if (bytes > 0 && seconds > 0) secondsPerByte_[streamed ? 1 : 0] = seconds / static_cast<double>(bytes);
}

}  // namespace strata
