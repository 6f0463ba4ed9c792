#include "allreduce.h"

namespace strata {

const char* algoName(AllreduceAlgo algo) {
  return algo == AllreduceAlgo::Ring ? "ring" : "oneshot";
}

Status parseForcedAlgo(const std::string& text, ForcedAlgo* out) {
  if (text.empty()) *out = ForcedAlgo::None;
  else if (text == "ring") *out = ForcedAlgo::Ring;
  else if (text == "oneshot") *out = ForcedAlgo::OneShot;
  else
    return makeErrorQuiet(STRATA_ERR_INVALID_ARGUMENT,
                          "STRATA_ALGO='%s' is not an algorithm family (ring, oneshot)", text.c_str());
  return Status::ok();
}

Status chooseAllreduce(const PlanShape& shape, uint64_t count, const AllreduceTuning& tuning,
                       AllreduceChoice* choice) {
  const uint64_t bytes = count * shape.elemSize;
  const bool oneshotFits = bytes <= shape.slotBytes;
  AllreduceAlgo algo;
  if (tuning.forced == ForcedAlgo::Ring) {
    algo = AllreduceAlgo::Ring;
  } else if (tuning.forced == ForcedAlgo::OneShot) {
    if (!oneshotFits)
      return makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                            "STRATA_ALGO=oneshot cannot carry %llu bytes: it needs the buffer to "
                            "fit one slot (STRATA_SLOT_BYTES=%zu)",
                            (unsigned long long)bytes, shape.slotBytes);
    algo = AllreduceAlgo::OneShot;
  } else {
    algo = oneshotFits && bytes <= tuning.oneshotBytes ? AllreduceAlgo::OneShot : AllreduceAlgo::Ring;
  }
  *choice = {algo, algo == AllreduceAlgo::Ring ? shape.channelsFor(bytes) : 1};
  return Status::ok();
}

}  // namespace strata
