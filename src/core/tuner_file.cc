#include "tuner_file.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "call_pick.h"
#include "op_desc.h"

namespace strata {
namespace {

constexpr uint64_t kAny = std::numeric_limits<uint64_t>::max();

// "64K", "16M", "1G", "4096"; false if it is not one.
bool parseSize(const std::string& text, uint64_t* out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  const std::string unit(end);
  const int shift = unit.empty() ? 0 : unit == "K" ? 10 : unit == "M" ? 20 : unit == "G" ? 30 : -1;
  if (shift < 0 || v > (kAny >> shift)) return false;
  *out = static_cast<uint64_t>(v) << shift;
  return true;
}

// "*", "N", "lo-hi" or "lo-*" (both ends included).
bool parseRange(const std::string& text, uint64_t* lo, uint64_t* hi) {
  if (text == "*") {
    *lo = 0;
    *hi = kAny;
    return true;
  }
  const size_t dash = text.find('-');
  if (dash == std::string::npos) return parseSize(text, lo) && (*hi = *lo, true);
  const std::string right = text.substr(dash + 1);
  if (!parseSize(text.substr(0, dash), lo)) return false;
  if (right == "*") *hi = kAny;
  else if (!parseSize(right, hi)) return false;
  return *lo <= *hi;
}

}  // namespace

Status TunerRules::load(const std::string& path, const Limits& limits, TunerRules* out) {
  *out = TunerRules{};
  out->path_ = path;
  std::ifstream file(path);
  if (!file)
    return STRATA_INVALID_ARG("STRATA_TUNER_FILE=%s cannot be read: %s", path.c_str(), std::strerror(errno));
  std::string text;
  for (int line = 1; std::getline(file, text); ++line) {
    auto bad = [&](const std::string& why) {
      return STRATA_INVALID_ARG("STRATA_TUNER_FILE=%s line %d: %s", path.c_str(), line, why.c_str());
    };
    text = text.substr(0, text.find('#'));
    std::istringstream fields(text);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    if (f.empty()) continue;
    if (f.size() != 9 || f[5] != "->")
      return bad("want 'collective bytes ranks per-node datatype -> algorithm channels chunk', got " +
                 std::to_string(f.size()) + " fields");
    Rule r{line, Coll::Allreduce, 0, kAny, -1, {}};
    if (!namedColl(f[0], &r.coll))
      return bad("'" + f[0] + "' is not a collective (allreduce, broadcast, reduce, allgather, reduce_scatter, "
                 "alltoall)");
    if (!parseRange(f[1], &r.loBytes, &r.hiBytes))
      return bad("bytes '" + f[1] + "' is not *, a size or a range lo-hi (K, M, G suffixes)");
    uint64_t ranksLo, ranksHi, perNodeLo, perNodeHi;
    if (!parseRange(f[2], &ranksLo, &ranksHi)) return bad("ranks '" + f[2] + "' is not *, a number or a range");
    if (!parseRange(f[3], &perNodeLo, &perNodeHi))
      return bad("per-node '" + f[3] + "' is not *, a number or a range");
    strata_datatype_t dt;
    if (f[4] != "*" && !namedDatatype(f[4], &dt))
      return bad("'" + f[4] + "' is not a datatype (float32, bfloat16, int64, ...)");
    if (f[4] != "*") r.datatype = dt;
    uint64_t channels = 0, chunk = 0;
    if (f[7] != "*" && (!parseSize(f[7], &channels) || channels > 1024))
      return bad("channels '" + f[7] + "' is not * or a number");
    if (f[8] != "*" && !parseSize(f[8], &chunk)) return bad("chunk '" + f[8] + "' is not * or a size");
    // Checked whether or not it matches here: a file must be right on every communicator.
    Status s = makePick(r.coll, f[6] == "*" ? nullptr : f[6].c_str(), static_cast<int>(channels), chunk,
                        {limits.nchannels, limits.slotBytes, limits.reproducible}, "", &r.pick);
    if (!s.isOk()) return bad(s.message());
    const uint64_t n = static_cast<uint64_t>(limits.nranks), perNode = static_cast<uint64_t>(limits.ranksPerNode);
    if (n >= ranksLo && n <= ranksHi && perNode >= perNodeLo && perNode <= perNodeHi) out->rules_.push_back(r);
  }
  return Status::ok();
}

CallPick TunerRules::pickFor(const CollCall& call, int* line) const {
  const uint64_t bytes = call.count * strata_datatype_size(call.datatype);
  for (const Rule& r : rules_)
    if (r.coll == call.coll && bytes >= r.loBytes && bytes <= r.hiBytes &&
        (r.datatype < 0 || r.datatype == static_cast<int>(call.datatype))) {
      *line = r.line;
      return r.pick;
    }
  *line = 0;
  return CallPick{};
}

}  // namespace strata
