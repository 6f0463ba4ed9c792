// strata-sim: every allreduce algorithm's real plans (Planner::plan) played
// over a modelled cluster, per rank count and size, next to the cost
// model's pick and the textbook closed forms. bench/README.md ("bench/sim")
// says how it cuts 16,384 ranks down to size and what it was checked against.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sweep.h"

using namespace strata;
using namespace strata::sim;

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void usage() {
  std::fprintf(stderr,
               "usage: strata-sim [options]\n"
               "  --ranks LIST        rank counts (default 64,1024,16384)\n"
               "  --sizes LIST        bytes, K/M/G suffixes (default 8 and 16 "
               "B..4 GiB by 4: 16 sizes)\n"
               "  --algos LIST        allreduce algorithms (default all in "
               "registry.def)\n"
               "  --ranks-per-node R  (8)    --nics K (1)   --nodes-per-leaf L "
               "(16)   --oversub O (1)\n"
               "  --shm LAT,GBPS      shared-memory hop (0.4,20)\n"
               "  --nic LAT,GBPS      network hop within a leaf, one NIC's "
               "bandwidth (1.5,25)\n"
               "  --spine-latency US  more latency across leaves (0.5)\n"
               "  --msg-overhead US   a NIC's time per message (0.1)\n"
               "  --reduce GBPS       bytes a rank folds per second (10)\n"
               "  --output GBPS       a rank writing its output from a slot (--shm's)\n"
               "  --input GBPS        a rank reading its input into a slot (--shm's)\n"
               "  --handoff WRITE,COPY,FOLD  GB/s of a rank filling a slot another\n"
               "                      core read last, copying and folding one another\n"
               "                      core wrote (default: no limit beyond --shm's and\n"
               "                      --reduce's)\n"
               "  --handoff-nt WRITE,COPY,FOLD  the same for a slot ring written\n"
               "                      non-temporally (default: --handoff's)\n"
               "  --cache BYTES,COPY,FOLD[,WRITE,HCOPY,HFOLD[,OUTPUT,INPUT]]  a node's\n"
               "                      cache of BYTES: a rank's copy and fold GB/s while\n"
               "                      its share holds the rank's buffers, and its\n"
               "                      --handoff rates while it holds its slots and\n"
               "                      what a rank streams between two fills of one;\n"
               "                      its --output and --input rates (default: COPY)\n"
               "                      (repeat, smallest first; none: the rates above only)\n"
               "  --cache-shares BYTES,SHARE,...  the share of a set of BYTES that the\n"
               "                      last --cache holds, measured (default: all up to\n"
               "                      its size, size / BYTES past it)\n"
               "  --channels N (4)   --slot BYTES (262144)   --nslots N (8)   "
               "--oneshot BYTES (16384)\n"
               "  --nt BYTES (8M)     results from this size on are written past the caches\n"
               "  --shm-nt BYTES (512K) a connector carrying this much a call picks its\n"
               "                      slot stores by timing (STRATA_SHM_NT_BYTES; 0: never)\n"
               "  --budget STEPS      most steps one play runs before "
               "extrapolating (4000000)\n"
               "  --calibrate shm|tcp this machine: 2 cores, ranks on one host "
               "(shm) or one per namespace (tcp)\n"
               "  --csv FILE          one row per ranks/algorithm/size\n"
               "  --plan-time         time building one rank's plan, per "
               "algorithm and size, at the largest count\n");
  std::exit(2);
}

uint64_t parseBytes(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  switch (*end) {
    case 'K':
      v *= 1024;
      break;
    case 'M':
      v *= 1024 * 1024;
      break;
    case 'G':
      v *= 1024.0 * 1024 * 1024;
      break;
    default:
      break;
  }
  return static_cast<uint64_t>(v);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

Level parseLevel(const std::string& s) {
  const auto v = split(s);
  if (v.size() != 2) usage();
  return {std::atof(v[0].c_str()), std::atof(v[1].c_str())};
}

std::string human(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && b >= 1024 && b % 1024 == 0) b /= 1024, ++u;
  return std::to_string(b) + units[u];
}

// This machine (2 cores): shm puts every rank on one host, pinned to the
// cores in blocks as strata-perf --bind pins them, tcp one rank in each of
// `ranks` network namespaces. The rates are the flags' (per core:
// bench/sim/calibrate.py measures them); ranks beyond the cores share them,
// so a rank's copies and folds go at the rate over the ranks per core, and
// the channels are Comm::init's (cores / ranks, at least 1). The caches are
// this machine's, shared by all its ranks, whichever namespace holds them.
void calibrate(const std::string& kind, Scenario& sc, int ranks) {
  const int cores = 2;
  const double share = std::max(1.0, double(ranks) / cores);
  if (kind == "shm") {
    sc.topo = {1, ranks, 1, 1, 1.0, cores};
    sc.model.shm.gbps /= share;
    sc.model.reduceGBps /= share;
    sc.model.outputGBps /= share;
    sc.model.inputGBps /= share;
    auto shareHandoff = [share](NetModel::Handoff& h) {
      h.writeGBps /= share, h.copyOutGBps /= share, h.foldGBps /= share;
    };
    shareHandoff(sc.model.handoff);
    shareHandoff(sc.model.nonTemporal);
    for (auto& c : sc.model.caches) {
      c.copyGBps /= share, c.foldGBps /= share, c.outputGBps /= share, c.inputGBps /= share;
      shareHandoff(c.handoff);
    }
  } else if (kind == "tcp") {
    sc.topo = {ranks, 1, 1, ranks, 1.0};
    for (auto& c : sc.model.caches) {
      c.bytes /= ranks;
      for (auto& point : c.shares) point.first /= ranks;
    }
  } else {
    usage();
  }
  sc.nchannels = std::clamp(cores / ranks, 1, 4);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> rankCounts = {64, 1024, 16384};
  std::vector<uint64_t> sizes = {8};
  for (int k = 4; k <= 32; k += 2) sizes.push_back(uint64_t(1) << k);
  std::vector<const AllreduceAlgorithm*> algos = allreduceAlgorithms();
  Scenario base;
  std::string csvPath, calibration;
  bool planTime = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (a == "--ranks") {
      rankCounts.clear();
      for (const auto& s : split(value())) rankCounts.push_back(std::atoi(s.c_str()));
    } else if (a == "--sizes") {
      sizes.clear();
      for (const auto& s : split(value())) sizes.push_back(parseBytes(s));
    } else if (a == "--algos") {
      algos.clear();
      for (const auto& s : split(value())) {
        const AllreduceAlgorithm* found = findAllreduce(s);
        if (!found) usage();
        algos.push_back(found);
      }
    } else if (a == "--ranks-per-node")
      base.topo.ranksPerNode = std::atoi(value().c_str());
    else if (a == "--nics")
      base.topo.nicsPerNode = std::atoi(value().c_str());
    else if (a == "--nodes-per-leaf")
      base.topo.nodesPerLeaf = std::atoi(value().c_str());
    else if (a == "--oversub")
      base.topo.oversub = std::atof(value().c_str());
    else if (a == "--shm")
      base.model.shm = parseLevel(value());
    else if (a == "--nic")
      base.model.nic = parseLevel(value());
    else if (a == "--spine-latency")
      base.model.spineLatencyUs = std::atof(value().c_str());
    else if (a == "--msg-overhead")
      base.model.msgOverheadUs = std::atof(value().c_str());
    else if (a == "--output")
      base.model.outputGBps = std::atof(value().c_str());
    else if (a == "--input")
      base.model.inputGBps = std::atof(value().c_str());
    else if (a == "--reduce")
      base.model.reduceGBps = std::atof(value().c_str());
    else if (a == "--handoff") {
      const auto v = split(value());
      if (v.size() != 3) usage();
      base.model.handoff = {std::atof(v[0].c_str()), std::atof(v[1].c_str()), std::atof(v[2].c_str())};
    } else if (a == "--handoff-nt") {
      const auto v = split(value());
      if (v.size() != 3) usage();
      base.model.nonTemporal = {std::atof(v[0].c_str()), std::atof(v[1].c_str()), std::atof(v[2].c_str())};
    } else if (a == "--cache") {
      const auto v = split(value());
      if (v.size() != 3 && v.size() != 6 && v.size() != 8) usage();
      NetModel::Cache c{double(parseBytes(v[0])), std::atof(v[1].c_str()), std::atof(v[2].c_str()), {}};
      if (v.size() >= 6) c.handoff = {std::atof(v[3].c_str()), std::atof(v[4].c_str()), std::atof(v[5].c_str())};
      if (v.size() == 8) c.outputGBps = std::atof(v[6].c_str()), c.inputGBps = std::atof(v[7].c_str());
      base.model.caches.push_back(c);
    } else if (a == "--cache-shares") {
      const auto v = split(value());
      if (base.model.caches.empty() || v.empty() || v.size() % 2) usage();
      auto& shares = base.model.caches.back().shares;
      for (size_t k = 0; k < v.size(); k += 2) shares.push_back({double(parseBytes(v[k])), std::atof(v[k + 1].c_str())});
      std::sort(shares.begin(), shares.end());
    }
    else if (a == "--channels")
      base.nchannels = std::atoi(value().c_str());
    else if (a == "--slot")
      base.slotBytes = parseBytes(value());
    else if (a == "--nslots")
      base.nslots = std::atoi(value().c_str());
    else if (a == "--oneshot")
      base.oneshotBytes = parseBytes(value());
    else if (a == "--nt")
      base.ntBytes = parseBytes(value());
    else if (a == "--shm-nt")
      base.shmNtBytes = parseBytes(value());
    else if (a == "--budget")
      base.stepBudget = parseBytes(value());
    else if (a == "--calibrate")
      calibration = value();
    else if (a == "--csv")
      csvPath = value();
    else if (a == "--plan-time")
      planTime = true;
    else
      usage();
  }

  FILE* csv = nullptr;
  if (!csvPath.empty()) {
    csv = std::fopen(csvPath.c_str(), "w");
    if (!csv) {
      std::perror(csvPath.c_str());
      return 1;
    }
    std::fprintf(csv,
                 "ranks,nodes,ranks_per_node,algo,bytes,nchannels,time_us,"
                 "algbw_GBps,busbw_GBps,method,steps,"
                 "pick,best,model_us,closed_form_us,wall_s\n");
  }
  const auto started = Clock::now();
  int wrongPicks = 0, cases = 0;
  for (int n : rankCounts) {
    Scenario sc = base;
    if (!calibration.empty()) {
      calibrate(calibration, sc, n);
    } else {
      sc.topo.ranksPerNode = std::min(n, base.topo.ranksPerNode);
      sc.topo.nodes = n / sc.topo.ranksPerNode;
    }
    const auto scaleStart = Clock::now();
    std::printf(
        "\n# %d ranks: %d nodes x %d ranks, %d NIC(s) per node, %d "
        "nodes per leaf, oversubscription %.1f\n",
        n, sc.topo.nodes, sc.topo.ranksPerNode, sc.topo.nicsPerNode, sc.topo.nodesPerLeaf, sc.topo.oversub);
    std::printf("%10s", "size");
    for (const auto* a : algos) std::printf(" %11s", a->name);
    std::printf("  %8s %8s %6s  %s\n", "pick", "best", "x", "closed form ring/rd/hd/tree (us)");
    for (uint64_t bytes : sizes) {
      std::vector<Outcome> out;
      std::vector<double> wall;
      const AllreduceAlgorithm* best = nullptr;
      double bestUs = INFINITY;
      for (const auto* a : algos) {
        const auto t = Clock::now();
        out.push_back(simulate(*a, sc, bytes));
        wall.push_back(secondsSince(t));
        const Outcome& o = out.back();
        // The best among what the cost model may pick (not reproducible-only).
        if (o.carried && !o.stuck && !a->has(kReproducibleOnly) && o.timeUs < bestUs &&
            !(a->has(kUpToOneshotBytes) && bytes > sc.oneshotBytes)) {
          bestUs = o.timeUs;
          best = a;
        }
      }
      const AllreduceAlgorithm* pick = pickOf(sc, bytes);
      double pickUs = NAN;
      for (size_t i = 0; i < algos.size(); ++i)
        if (algos[i] == pick) pickUs = out[i].timeUs;
      const double ratio = pickUs / bestUs;
      if (pick && best) {
        ++cases;
        if (ratio > 1.10) ++wrongPicks;
      }
      std::printf("%10s", human(bytes).c_str());
      for (const Outcome& o : out) {
        if (!o.carried)
          std::printf(" %11s", o.method.empty() ? "-" : "(too large)");
        else
          std::printf(" %10.1f%s", o.timeUs,
                      o.stuck ? "!" : (o.method.find("extrap") != std::string::npos ? "~" : " "));
      }
      std::printf("  %8s %8s %6.2f ", pick ? pick->name : "?", best ? best->name : "?", ratio);
      for (const char* cf : {"ring", "rd", "hd", "tree"}) std::printf(" %.1f", closedFormUs(cf, sc, bytes));
      std::printf("\n");
      std::fflush(stdout);
      if (csv)
        for (size_t i = 0; i < algos.size(); ++i) {
          const Outcome& o = out[i];
          if (!o.carried) continue;
          std::fprintf(csv,
                       "%d,%d,%d,%s,%llu,%d,%.3f,%.4f,%.4f,%s,%llu,%s,%s,%.3f,%"
                       ".3f,%.2f\n",
                       n, sc.topo.nodes, sc.topo.ranksPerNode, algos[i]->name, (unsigned long long)bytes, o.nchannels,
                       o.timeUs, bytes / (o.timeUs * 1e3), busbw(bytes, n, o.timeUs),
                       o.stuck ? "stuck" : o.method.c_str(), (unsigned long long)o.steps, pick ? pick->name : "",
                       best ? best->name : "", modelUs(sc, *algos[i], bytes), closedFormUs(algos[i]->name, sc, bytes),
                       wall[i]);
        }
    }
    std::printf("# %d ranks: %.1f s\n", n, secondsSince(scaleStart));
  }
  std::printf(
      "\n(~: extrapolated from two smaller plays; !: the plans did not "
      "match)\n");
  std::printf(
      "cost model's pick more than 10%% slower than the simulated "
      "best: %d of %d cases\n",
      wrongPicks, cases);
  std::printf("elapsed: %.1f s\n", secondsSince(started));

  if (planTime) {
    Scenario sc = base;
    const int n = rankCounts.back();
    sc.topo.ranksPerNode = std::min(n, base.topo.ranksPerNode);
    sc.topo.nodes = n / sc.topo.ranksPerNode;
    const Layout layout = Layout::blocks(n, sc.topo.nodes);
    std::printf(
        "\n# building one rank's plan at %d ranks (rank %d, the median "
        "of 3): ms, steps, MiB of steps\n",
        n, n / 2 + 1);
    for (const auto* a : algos) {
      for (uint64_t bytes : sizes) {
        if (a->has(kOneSlot) && bytes > sc.slotBytes) continue;
        const uint64_t count = bytes / 4;
        const int nch =
            a->has(kOneSlot) ? 1 : PlanShape{0, n, sc.nchannels, sc.slotBytes, 4, &layout}.channelsFor(bytes);
        double ms[3];
        uint64_t steps = 0;
        for (double& m : ms) {
          PlanSet plans;
          const auto t = Clock::now();
          buildPlans(*a, sc, layout, n / 2 + 1, count, nch, plans);
          m = secondsSince(t) * 1e3;
          steps = 0;
          for (const auto& p : plans) steps += p.steps.size();
        }
        std::sort(ms, ms + 3);
        std::printf("plan %-8s %10s %9.2f ms %10llu steps %8.1f MiB\n", a->name, human(bytes).c_str(), ms[1],
                    (unsigned long long)steps, steps * sizeof(Step) / 1048576.0);
      }
    }
  }
  if (csv) std::fclose(csv);
  return 0;
}
