// Comm::explain: a call's plan choice as a record a user can read, built from
// the same Planner::choose the call itself runs, so the two cannot disagree.
#include <cmath>
#include <string>

#include "comm.h"
#include "log.h"
#include "cost_model.h"
#include "op_desc.h"
#include "params.h"
#include "selection.h"
#include "status.h"

namespace strata {
namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string number(double v) { return std::isfinite(v) ? formatText("%.3f", v) : "null"; }

// Why the choice fell where it did, for the collectives without estimates.
std::string sizeRule(const Tuning& tuning, uint64_t blockBytes, bool direct) {
  if (tuning.reproducible()) return "reproducible mode: the direct form, which folds in rank order";
  if (tuning.forced() && tuning.forced()->has(kForcesDirect))
    return formatText("%s=%s forces the direct form", tuning.forcedBy(), tuning.forced()->name);
  if (tuning.forced() && tuning.forced()->has(kForcesPipelined))
    return formatText("%s=%s forces the pipelined form", tuning.forcedBy(), tuning.forced()->name);
  return formatText("size: %llu bytes per rank block is %s STRATA_ONESHOT_BYTES=%zu", (unsigned long long)blockBytes,
                    direct ? "at most" : "more than", tuning.oneshotBytes());
}

}  // namespace

Status Comm::explain(const CollCall& call, std::string* json) const {
  PlanChoice choice;
  STRATA_CHECK(choose(call, &choice));
  int ruleLine = 0;
  const CallPick pick = tuned(call, &ruleLine).pick;
  PlanShape shape = shape_;
  shape.elemSize = strata_datatype_size(call.datatype);
  const uint64_t bytes = call.count * shape.elemSize;
  std::string decided, candidates;
  if (call.coll == Coll::Allreduce) {
    const AllreduceAlgorithm* forced = tuning_.forced();
    decided = forced ? formatText("%s=%s", tuning_.forcedBy(), forced->name)
              : tuning_.reproducible()
                  ? std::string("cost model, among the algorithms that fold in rank order (STRATA_REPRODUCIBLE=1)")
                  : std::string("cost model (the cheapest estimate for this size's power-of-two bucket)");
    for (const AllreduceAlgorithm* a : allreduceAlgorithms()) {
      const double us = estimateUs(config_.cost, *a, shape, bytes, tuning_.oneshotBytes());
      std::string note;
      if (!std::isfinite(us)) note = "cannot carry this size";
      else if (tuning_.reproducible() && !a->has(kRankOrder)) note = "folds in another order (reproducible mode)";
      else if (!tuning_.reproducible() && a->has(kReproducibleOnly)) note = "only in reproducible mode";
      else if (forced && forced != a) note = "not forced";
      candidates += formatText("%s{\"algorithm\":%s,\"estimate_us\":%s,\"considered\":%s%s}",
                               candidates.empty() ? "" : ",", quoted(a->name).c_str(), number(us).c_str(),
                               note.empty() ? "true" : "false",
                               note.empty() ? "" : (",\"why_not\":" + quoted(note)).c_str());
    }
  } else if (call.coll == Coll::Broadcast || call.coll == Coll::Reduce || call.coll == Coll::ReduceScatter) {
    const bool rs = call.coll == Coll::ReduceScatter;
    decided = rs && !params::reduceScatterAlgo().empty() && !tuning_.reproducible() && !tuning_.forced()
                  ? "STRATA_REDUCE_SCATTER_ALGO=" + params::reduceScatterAlgo()
              : choice.bruck ? std::string("cost model (Bruck's rounds where they rate below the ring and the direct "
                                           "form: many ranks across nodes, small blocks)")
              : call.coll == Coll::Broadcast && choice.tree != tuning_.useTreeBroadcast(bytes)
                  ? std::string("a pick of the call's own, not the cost model's")
              : choice.tree ? std::string("cost model: a binomial tree (ceil(log2 n) hops) rates below the direct "
                                          "form (the root's n-1 sends) on more than one node")
              : rs && !choice.direct && tuning_.useDirect(bytes)
                  ? std::string("cost model: the ring rates below the direct form (each rank's n-1 sends, many "
                                "ranks across nodes), though the size is at most STRATA_ONESHOT_BYTES")
                  : sizeRule(tuning_, bytes, choice.direct);
    candidates = formatText("{\"algorithm\":\"direct\",\"estimate_us\":null,\"considered\":true},"
                            "{\"algorithm\":%s,\"estimate_us\":null,\"considered\":true}",
                            quoted(rs ? "ring" : "chain").c_str());
    if (call.coll == Coll::Broadcast)
      candidates += ",{\"algorithm\":\"tree\",\"estimate_us\":null,\"considered\":true}";
    if (rs)
      candidates += tuning_.reproducible()
                        ? ",{\"algorithm\":\"bruck\",\"estimate_us\":null,\"considered\":false,\"why_not\":"
                          "\"folds in its rounds' order (reproducible mode)\"}"
                        : ",{\"algorithm\":\"bruck\",\"estimate_us\":null,\"considered\":true}";
  } else if (call.coll == Coll::Allgather) {
    decided = !params::allgatherAlgo().empty()
                  ? "STRATA_ALLGATHER_ALGO=" + params::allgatherAlgo()
                  : std::string("cost model (Bruck's rounds where they rate below one hop to every peer: many ranks "
                                "across nodes, small blocks)");
    candidates = "{\"algorithm\":\"pairwise\",\"estimate_us\":null,\"considered\":true},"
                 "{\"algorithm\":\"bruck\",\"estimate_us\":null,\"considered\":true}";
  } else {
    decided = "the only algorithm for this collective";
    candidates = formatText("{\"algorithm\":%s,\"estimate_us\":null,\"considered\":true}", quoted(choice.algo).c_str());
  }
  if (ruleLine)
    decided = formatText("STRATA_TUNER_FILE=%s line %d (algorithm %s, channels %d, chunk %llu; 0: the "
                         "communicator's)", tuner_.path().c_str(), ruleLine,
                         pick.algo ? pick.algo->name : pick.direct == 1 ? "direct" : pick.direct == 0 ? "pipelined" : "-",
                         pick.nchannels, (unsigned long long)pick.chunkBytes);
  std::string transports;
  for (int p = 0; p < nranks_; ++p) transports += std::string(p ? "," : "") + quoted(transportTo(p));
  // The ranks this rank's plan sends to or receives from: what the call
  // needs connected, against what the communicator holds connected.
  Planner planner;
  PlanSet plans(shape_.nchannels);
  PlanChoice built;
  STRATA_CHECK(planner.plan(tuned(call, nullptr), shape, tuning_, plans, &built));
  std::string peers;
  for (int p : peersOf(plans, rank_, nranks_)) peers += formatText("%s%d", peers.empty() ? "" : ",", p);
  const int connected = connectedPeers();
  // Pieces, not one formatText: its buffer is 1 KiB, a record of many ranks is not.
  *json = formatText("{\"collective\":%s,\"count\":%llu,\"datatype\":%s,\"bytes\":%llu,\"rank\":%d,"
                     "\"ranks\":%d,\"nodes\":%d,\"algorithm\":%s,\"channels\":%d,\"slot_bytes\":%zu,"
                     "\"progress_threads\":%d,\"reproducible\":%s,",
                     quoted(collName(call.coll)).c_str(), (unsigned long long)call.count,
                     quoted(datatypeName(call.datatype)).c_str(), (unsigned long long)bytes, rank_, nranks_,
                     layout_.nodes(), quoted(choice.algo).c_str(), choice.nchannels, shape_.slotBytes, config_.nthreads,
                     tuning_.reproducible() ? "true" : "false");
  *json += "\"decided_by\":" + quoted(decided) + ",\"candidates\":[" + candidates + "],\"transports\":[" +
           transports + "],\"peers\":[" + peers + "],\"connected_peers\":" + std::to_string(connected) +
           ",\"by_size\":" + quoted(tuning_.describe()) + "}";
  return Status::ok();
}

void Comm::logFirstDecision(const CollCall& call) {
  PlanChoice choice;
  if (!choose(call, &choice).isOk()) return;
  const uint64_t bytes = call.count * strata_datatype_size(call.datatype);
  const int sizeClass = bytes <= 1 ? 0 : 64 - __builtin_clzll(bytes - 1);
  if (!explained_.insert(static_cast<int>(call.coll) * 64 + sizeClass).second) return;
  std::string why;
  if (call.coll == Coll::Allreduce) {
    why = tuning_.forced() ? formatText("%s=%s", tuning_.forcedBy(), tuning_.forced()->name)
                           : std::string(tuning_.reproducible() ? "cost model, rank-order folds only" : "cost model");
    PlanShape shape = shape_;
    shape.elemSize = strata_datatype_size(call.datatype);
    why += "; estimates:";
    for (const AllreduceAlgorithm* a : allreduceAlgorithms()) {
      const double us = estimateUs(config_.cost, *a, shape, bytes, tuning_.oneshotBytes());
      why += std::isfinite(us) ? formatText(" %s %.1f us", a->name, us) : formatText(" %s -", a->name);
    }
  } else if (call.coll == Coll::Broadcast || call.coll == Coll::Reduce || call.coll == Coll::ReduceScatter) {
    why = choice.tree ? "cost model: a binomial tree on more than one node" : sizeRule(tuning_, bytes, choice.direct);
  }
  STRATA_INFO(ALGO, "first %s of %llu bytes up to 2^%d (%s): %s on %d channel(s)%s%s (strata_comm_explain has more)",
              collName(call.coll), (unsigned long long)bytes, sizeClass, datatypeName(call.datatype), choice.algo,
              choice.nchannels, why.empty() ? "" : "; ", why.c_str());
}

}  // namespace strata
