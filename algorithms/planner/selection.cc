#include "selection.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "exchange.h"
#include "params.h"
#include "reduce_scatter.h"
#include "rooted.h"

namespace strata {

Status parseForcedAlgo(const std::string& text, const char* forcedBy, const AllreduceAlgorithm** algo) {
  const AllreduceAlgorithm* found = text.empty() ? nullptr : findAllreduce(text);
  if (!text.empty() && !found) {
    std::string names;
    for (const AllreduceAlgorithm* a : allreduceAlgorithms()) names += std::string(names.empty() ? "" : ", ") + a->name;
    return makeErrorQuiet(STRATA_ERR_INVALID_ARGUMENT, "%s='%s' is not an algorithm (%s)", forcedBy, text.c_str(),
                          names.c_str());
  }
  *algo = found;
  return Status::ok();
}

double estimateUs(const CostModel& model, const AllreduceAlgorithm& algo, const PlanShape& shape, uint64_t bytes,
                  size_t oneshotBytes) {
  if ((algo.has(kOneSlot) && bytes > shape.slotBytes) || (algo.has(kUpToOneshotBytes) && bytes > oneshotBytes))
    return std::numeric_limits<double>::infinity();
  return algo.costUs(CostView{model, shape}, static_cast<double>(bytes));
}

Status Tuning::create(const std::string& forcedAlgo, size_t oneshotBytes, const CostModel& model,
                      const PlanShape& shape, bool reproducible, Tuning* out, const char* forcedBy) {
  Tuning t;
  t.forcedBy_ = forcedBy;
  STRATA_CHECK(parseForcedAlgo(forcedAlgo, forcedBy, &t.forced_));
  if (reproducible && t.forced_ && !t.forced_->has(kRankOrder)) {
    std::string names;
    for (const AllreduceAlgorithm* a : allreduceAlgorithms())
      if (a->has(kRankOrder)) names += std::string(names.empty() ? "" : " or ") + a->name;
    return makeErrorQuiet(STRATA_ERR_INVALID_ARGUMENT,
                          "%s=%s does not fold every rank's input in rank order, so its results "
                          "would depend on it; with STRATA_REPRODUCIBLE=1 force %s, or none",
                          forcedBy, t.forced_->name, names.c_str());
  }
  t.reproducible_ = reproducible;
  t.oneshotBytes_ = oneshotBytes;
  for (int k = 0; k < kBuckets; ++k) {
    const uint64_t bytes = uint64_t(1) << k;
    double best = std::numeric_limits<double>::infinity();
    for (const AllreduceAlgorithm* a : allreduceAlgorithms()) {
      if (reproducible ? !a->has(kRankOrder) : a->has(kReproducibleOnly)) continue;
      double us = estimateUs(model, *a, shape, bytes, oneshotBytes);
      if (us < best) {
        best = us;
        t.byLog2_[k] = a;
      }
    }
  }
  const std::string allgather = params::allgatherAlgo();
  if (!allgather.empty() && allgather != "pairwise" && allgather != "bruck")
    return makeErrorQuiet(STRATA_ERR_INVALID_ARGUMENT,
                          "STRATA_ALLGATHER_ALGO='%s' is not an allgather algorithm (pairwise, bruck)",
                          allgather.c_str());
  const CostView view{model, shape};
  for (int k = 0; k < kBuckets; ++k) {
    const double bytes = static_cast<double>(uint64_t(1) << k);
    t.bruckAllgatherByLog2_[k] =
        allgather.empty() ? bruckAllgatherUs(view, bytes) < pairwiseAllgatherUs(view, bytes) : allgather == "bruck";
  }
  const std::string rs = params::reduceScatterAlgo();
  if (!rs.empty() && rs != "ring" && rs != "direct" && rs != "bruck")
    return makeErrorQuiet(STRATA_ERR_INVALID_ARGUMENT,
                          "STRATA_REDUCE_SCATTER_ALGO='%s' is not a reduce_scatter algorithm (ring, direct, bruck)",
                          rs.c_str());
  if (reproducible && !rs.empty() && rs != "direct")
    return makeErrorQuiet(STRATA_ERR_INVALID_ARGUMENT,
                          "STRATA_REDUCE_SCATTER_ALGO=%s does not fold every rank's input in rank order, so its "
                          "results would depend on it; with STRATA_REPRODUCIBLE=1 force direct, or none",
                          rs.c_str());
  if (rs == "ring" || rs == "direct") t.reduceScatterDirect_ = rs == "direct";
  // A forced allreduce algorithm that forces a form of reduce_scatter, and
  // reproducible mode, leave Bruck's out.
  const bool formForced =
      reproducible || (t.forced_ && (t.forced_->has(kForcesDirect) || t.forced_->has(kForcesPipelined)));
  for (int k = 0; k < kBuckets; ++k) {
    const double bytes = static_cast<double>(uint64_t(1) << k);
    const double ringUs = ringReduceScatterUs(view, bytes), directUs = directReduceScatterUs(view, bytes);
    t.bruckReduceScatterByLog2_[k] =
        !formForced && (rs.empty() ? bruckReduceScatterUs(view, bytes) < std::min(ringUs, directUs) : rs == "bruck");
    t.directReduceScatterRated_[k] = directUs <= ringUs;
    // The tree takes the direct form's sizes only, across nodes: there it
    // ran in 0.58-0.63 of the direct form's time (4 hosts x 2 ranks) or
    // about the same (16 x 1, eight ranks a core: 0.91-1.09), with log2 n
    // peers for n-1, while against the chain from 32 KiB it took 1.00-1.52;
    // within one node it lost to both (4 ranks: 1.2-1.4 times the direct
    // form's time). bench/README.md has the runs.
    t.treeBroadcastByLog2_[k] = !formForced && view.nodes() > 1 && bytes <= oneshotBytes &&
                                treeBroadcastUs(view, bytes) < directBroadcastUs(view, bytes);
  }
  *out = t;
  return Status::ok();
}

Status Tuning::chooseAllreduce(const PlanShape& shape, uint64_t count, AllreduceChoice* choice) const {
  const uint64_t bytes = count * shape.elemSize;
  const AllreduceAlgorithm* algo = forced_;
  if (algo) {
    if (algo->has(kOneSlot) && bytes > shape.slotBytes)
      return makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                            "%s=%s cannot carry %llu bytes: it needs the buffer to "
                            "fit one slot (STRATA_SLOT_BYTES=%zu)",
                            forcedBy_, algo->name, (unsigned long long)bytes, shape.slotBytes);
  } else {
    // A bucket's pick carries the bucket's largest size, 2^k >= bytes, and
    // so every size in it: limits are upper bounds. Only the last bucket
    // holds larger sizes, and its 2^47 bytes exceed any slot (at most
    // 64 MiB).
    algo = byLog2_[bucket(bytes)];
  }
  *choice = {algo, algo->has(kOneSlot) ? 1 : shape.channelsFor(bytes)};
  return Status::ok();
}

int Tuning::bucket(uint64_t bytes) {
  const int k = bytes <= 1 ? 0 : 64 - __builtin_clzll(bytes - 1);
  return std::min(k, kBuckets - 1);
}

bool Tuning::useDirect(uint64_t bytes) const {
  if (reproducible_ || (forced_ && forced_->has(kForcesDirect))) return true;
  if (forced_ && forced_->has(kForcesPipelined)) return false;
  return bytes <= oneshotBytes_;
}

bool Tuning::useBruckAllgather(uint64_t blockBytes) const {
  return bruckAllgatherByLog2_[bucket(blockBytes)];
}

bool Tuning::useBruckReduceScatter(uint64_t blockBytes) const {
  return bruckReduceScatterByLog2_[bucket(blockBytes)];
}

bool Tuning::useDirectReduceScatter(uint64_t blockBytes) const {
  const bool formForced =
      reproducible_ || (forced_ && (forced_->has(kForcesDirect) || forced_->has(kForcesPipelined)));
  if (formForced) return useDirect(blockBytes);
  if (reduceScatterDirect_ >= 0) return reduceScatterDirect_ == 1;
  return useDirect(blockBytes) && directRatedBelowRing(blockBytes);
}

bool Tuning::useTreeBroadcast(uint64_t bytes) const {
  return treeBroadcastByLog2_[bucket(bytes)];
}

bool Tuning::directRatedBelowRing(uint64_t blockBytes) const {
  return directReduceScatterRated_[bucket(blockBytes)];
}

std::string Tuning::describe() const {
  if (forced_) return std::string(forced_->name) + " (STRATA_ALGO)" + (reproducible_ ? ", reproducible" : "");
  auto size = [](int k) {
    char buf[32];
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    std::snprintf(buf, sizeof(buf), "%llu%s", 1ull << (k % 10), units[k / 10]);
    return std::string(buf);
  };
  std::string out;
  int start = 0;
  for (int k = 1; k <= kBuckets; ++k) {
    if (k < kBuckets && byLog2_[k] == byLog2_[start]) continue;
    if (!out.empty()) out += ", ";
    out += size(start) + (k == kBuckets ? "+" : "-" + size(k - 1)) + " " + byLog2_[start]->name;
    start = k;
  }
  return reproducible_ ? out + " (reproducible: rank-order folds only)" : out;
}

}  // namespace strata
