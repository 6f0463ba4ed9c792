#include "stall_report.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <tuple>

#include "op_desc.h"
#include "status.h"

namespace strata::fault {
namespace {

std::string plural(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + rankRanges(ranks);
}

const OpSnapshot::Op* find(const OpSnapshot& s, uint64_t seq) {
  for (const auto& op : s.recent)
    if (op.seq == seq && seq != 0) return &op;
  return nullptr;
}

std::string opName(const OpSnapshot& s, uint64_t seq) {
  const OpSnapshot::Op* op = find(s, seq);
  return (op ? OpDesc::unpack(op->desc).describe() : std::string("operation")) + " #" + std::to_string(seq);
}

// What a rank that has not issued the frontier collective is doing.
std::string whereBehind(const OpSnapshot& s) {
  if (s.issued > s.completed) {
    const OpSnapshot::Op* op = find(s, s.issued);
    return formatText("is in %s (issued %.1f s ago), not complete", opName(s, s.issued).c_str(), op ? op->issuedAgo : 0.0f);
  }
  if (s.completed == 0) return "has issued no collective yet";
  const OpSnapshot::Op* op = find(s, s.completed);
  return formatText("completed #%llu, issued %.1f s ago, and has issued nothing since (it is in its own code)",
                static_cast<unsigned long long>(s.completed), op ? op->issuedAgo : 0.0f);
}

// Its oldest send or receive not complete, or null.
const OpSnapshot::P2p* oldestPendingP2p(const OpSnapshot& s) {
  for (const auto& m : s.p2p)
    if (m.group != 0 && !m.done) return &m;
  return nullptr;
}

std::string p2pText(const OpSnapshot::P2p& m) {
  return formatText("%s of %llu B %s rank %d", m.send ? "a send" : "a receive", static_cast<unsigned long long>(m.bytes),
                    m.send ? "to" : "from", m.peer);
}

}  // namespace

std::string rankRanges(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ranks[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string summarizeStall(const std::vector<std::optional<OpSnapshot>>& ranks) {
  std::vector<int> gone;
  uint64_t frontier = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (!ranks[r]) gone.push_back(static_cast<int>(r));
    else frontier = std::max(frontier, ranks[r]->issued);
  }
  // Sends and receives waited on, whatever the collectives say.
  std::string p2pLines;
  for (size_t r = 0; r < ranks.size(); ++r)
    if (ranks[r])
      if (const OpSnapshot::P2p* m = oldestPendingP2p(*ranks[r]))
        p2pLines += formatText("; rank %zu waits in %s (issued %.1f s ago)", r, p2pText(*m).c_str(), m->issuedAgo);
  std::string out;
  const std::string goneLine =
      gone.empty() ? "" : plural(gone) + (gone.size() == 1 ? " is" : " are") + " gone (no answer from its control plane)";
  if (gone.size() == ranks.size()) return "no rank answered";
  if (frontier == 0) return "no rank has issued a collective yet" + (goneLine.empty() ? "" : "; " + goneLine) + p2pLines;

  // The ranks at the frontier, by what they issued there: two collectives
  // at one sequence number mean that the ranks called different ones.
  std::map<uint64_t, std::vector<int>> atFrontier;  // desc -> ranks
  std::vector<int> waiting, caughtUp;
  std::map<std::tuple<uint64_t, uint64_t>, std::vector<int>> behind;  // (issued, completed) -> ranks
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (!ranks[r]) continue;
    const OpSnapshot& s = *ranks[r];
    if (s.issued == frontier) {
      const OpSnapshot::Op* op = find(s, frontier);
      atFrontier[op ? op->desc : 0].push_back(static_cast<int>(r));
      (s.completed >= frontier ? caughtUp : waiting).push_back(static_cast<int>(r));
    } else {
      behind[{s.issued, s.completed}].push_back(static_cast<int>(r));
    }
  }
  std::vector<int> culprits = gone;
  for (const auto& entry : behind) culprits.insert(culprits.end(), entry.second.begin(), entry.second.end());
  std::sort(culprits.begin(), culprits.end());

  if (!waiting.empty()) {
    const OpSnapshot& w = *ranks[waiting[0]];
    out += formatText("%s wait%s in %s", plural(waiting).c_str(), waiting.size() == 1 ? "s" : "",
                  opName(w, frontier).c_str());
    if (!culprits.empty()) out += " for " + plural(culprits);
    else out += ", which every rank has issued: a rank is still moving its data, or a link between two is down";
  } else {
    out += formatText("%s completed #%llu", plural(caughtUp).c_str(), static_cast<unsigned long long>(frontier));
  }
  for (const auto& entry : behind) {
    const OpSnapshot& s = *ranks[entry.second[0]];
    out += "; " + plural(entry.second) + " " + whereBehind(s);
  }
  if (!goneLine.empty()) out += "; " + goneLine;
  if (atFrontier.size() > 1) {
    out += "; at #" + std::to_string(frontier) + " the ranks called different collectives:";
    for (const auto& entry : atFrontier)
      out += " " + plural(entry.second) + " " + OpDesc::unpack(entry.first).describe() + ",";
    out.pop_back();
  }
  return out + p2pLines;
}

std::string describeStall(const std::vector<std::optional<OpSnapshot>>& ranks) {
  std::string out = summarizeStall(ranks) + "\n";
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (!ranks[r]) {
      out += formatText("  rank %zu: gone\n", r);
      continue;
    }
    const OpSnapshot& s = *ranks[r];
    out += formatText("  rank %zu:", r);
    for (const auto& op : s.recent) {
      if (op.seq == 0) continue;
      out += formatText(" #%llu %s", static_cast<unsigned long long>(op.seq), OpDesc::unpack(op.desc).describe().c_str());
      out += op.done ? std::string(" done") : formatText(" (pending %.1f s)", op.issuedAgo);
      out += ",";
    }
    if (out.back() == ',') out.pop_back();
    if (s.issued == 0) out += " no collective yet";
    std::string p2p;
    for (const auto& m : s.p2p)
      if (m.group != 0)
        p2p += " " + p2pText(m) + (m.done ? " done," : formatText(" (pending %.1f s),", m.issuedAgo));
    if (!p2p.empty()) {
      p2p.pop_back();
      out += ";" + p2p;
    }
    out += "\n";
  }
  return out;
}

}  // namespace strata::fault
