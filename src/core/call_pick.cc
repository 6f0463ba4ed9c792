#include "call_pick.h"

#include <cstring>
#include <string>

#include "allreduce.h"
#include "op_desc.h"

namespace strata {

Status makePick(Coll coll, const char* algorithm, int channels, size_t chunkBytes, const PickLimits& limits,
                const char* prefix, CallPick* pick) {
  *pick = CallPick{};
  if (channels < 0 || channels > limits.nchannels)
    return STRATA_INVALID_ARG("%schannels=%d must be 0 (the communicator's choice) or 1..%d (its channels, "
                              "STRATA_NCHANNELS, fewer under STRATA_MEM_BUDGET)", prefix, channels, limits.nchannels);
  pick->nchannels = channels;
  if (chunkBytes != 0 && (chunkBytes < 4096 || chunkBytes > limits.slotBytes || chunkBytes % 64 != 0))
    return STRATA_INVALID_ARG("%schunk_bytes=%zu must be 0 (the communicator's) or a multiple of 64 in "
                              "4096..%zu (STRATA_SLOT_BYTES, smaller under STRATA_MEM_BUDGET)", prefix, chunkBytes,
                              limits.slotBytes);
  pick->chunkBytes = chunkBytes;
  if (!algorithm) return Status::ok();
  const std::string name(algorithm, strnlen(algorithm, 64));
  if (coll == Coll::Allreduce) {
    pick->algo = findAllreduce(name);
    if (!pick->algo) {
      std::string names;
      for (const AllreduceAlgorithm* a : allreduceAlgorithms()) names += std::string(names.empty() ? "" : ", ") + a->name;
      return STRATA_INVALID_ARG("%salgorithm='%s' is not an allreduce algorithm (%s)", prefix, name.c_str(),
                                names.c_str());
    }
    if (limits.reproducible && !pick->algo->has(kRankOrder))
      return STRATA_INVALID_ARG("%salgorithm='%s' does not fold in rank order, and this communicator is "
                                "reproducible (STRATA_REPRODUCIBLE)", prefix, name.c_str());
    return Status::ok();
  }
  if (coll == Coll::ReduceScatter && name == "bruck") {
    if (limits.reproducible)
      return STRATA_INVALID_ARG("%salgorithm='bruck' folds in its rounds' order, and this communicator is "
                                "reproducible (STRATA_REPRODUCIBLE)", prefix);
    pick->bruck = 1;
    return Status::ok();
  }
  if (coll == Coll::Broadcast && name == "tree") {
    pick->tree = 1;
    return Status::ok();
  }
  if (coll == Coll::Broadcast || coll == Coll::Reduce || coll == Coll::ReduceScatter) {
    if (name != "direct" && name != "pipelined")
      return STRATA_INVALID_ARG("%salgorithm='%s' is not one of %s's: direct, pipelined%s", prefix, name.c_str(),
                                collName(coll), coll == Coll::ReduceScatter ? ", bruck"
                                                : coll == Coll::Broadcast   ? ", tree"
                                                                            : "");
    if (limits.reproducible && coll != Coll::Broadcast && name == "pipelined")
      return STRATA_INVALID_ARG("%salgorithm='pipelined' folds in chain order, and this communicator is "
                                "reproducible (STRATA_REPRODUCIBLE)", prefix);
    pick->direct = name == "direct" ? 1 : 0;
    return Status::ok();
  }
  if (coll == Coll::Allgather) {
    if (name != "pairwise" && name != "bruck")
      return STRATA_INVALID_ARG("%salgorithm='%s' is not one of allgather's: pairwise, bruck", prefix, name.c_str());
    pick->bruck = name == "bruck" ? 1 : 0;
    return Status::ok();
  }
  if (name != "pairwise")
    return STRATA_INVALID_ARG("%salgorithm='%s': %s has one algorithm, pairwise", prefix, name.c_str(),
                              collName(coll));
  return Status::ok();
}

}  // namespace strata
