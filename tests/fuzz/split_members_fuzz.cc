// strata_comm_split's gathered (color, key, rank) entries (split_members.h).
// Input: this rank (1 byte, mod n), then n entries of 3 x int64 (n = what
// the rest holds, 1 to 64). This rank asks for the color and key its own
// entry carries, as it would have sent them.
#include <vector>

#include "fuzz_support.h"
#include "split_members.h"

using namespace strata;
using strata::api::SplitMember;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint8_t meByte = in.take<uint8_t>();
  const size_t n = in.left() / sizeof(SplitMember) < 64 ? in.left() / sizeof(SplitMember) : 64;
  if (n == 0) return 0;
  std::vector<SplitMember> all(n);
  for (SplitMember& m : all) in.bytes(&m, sizeof(m));
  const int me = meByte % static_cast<int>(n);
  const int color = static_cast<int>(all[me].color), key = static_cast<int>(all[me].key);

  std::vector<SplitMember> group(1, SplitMember{7, 7, 7});
  int newRank = 12345;
  const Status s = api::splitGroup(all, me, color, key, &group, &newRank);
  if (!s.isOk()) {
    FUZZ_CHECK(newRank == 12345 && group.size() == 1 && group[0].rank == 7);  // untouched on failure
    return 0;
  }
  // Accepted: every entry names its own rank; this rank's group is every
  // rank of its color, in (key, rank) order, and it is in it once.
  for (size_t r = 0; r < n; ++r) FUZZ_CHECK(all[r].rank == static_cast<int64_t>(r));
  if (color == STRATA_SPLIT_NOCOLOR) {
    FUZZ_CHECK(group.empty() && newRank == -1);
    return 0;
  }
  size_t members = 0;
  for (const SplitMember& m : all) members += m.color == color;
  FUZZ_CHECK(group.size() == members && members >= 1);
  FUZZ_CHECK(newRank >= 0 && newRank < static_cast<int>(group.size()));
  FUZZ_CHECK(group[newRank].rank == me);
  std::vector<int> seen(n, 0);
  for (size_t i = 0; i < group.size(); ++i) {
    const SplitMember& m = group[i];
    FUZZ_CHECK(m.color == color && m.rank >= 0 && m.rank < static_cast<int64_t>(n));
    FUZZ_CHECK(++seen[m.rank] == 1);
    if (i) {
      const SplitMember& p = group[i - 1];
      FUZZ_CHECK(p.key < m.key || (p.key == m.key && p.rank < m.rank));
    }
  }
  return 0;
}
