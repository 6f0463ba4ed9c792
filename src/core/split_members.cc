#include "split_members.h"

#include <algorithm>
#include <climits>

namespace strata::api {

Status splitGroup(const std::vector<SplitMember>& all, int me, int color, int key,
                  std::vector<SplitMember>* group, int* newRank) {
  const int n = static_cast<int>(all.size());
  if (me < 0 || me >= n)
    return makeErrorQuiet(STRATA_ERR_INTERNAL, "rank %d outside a split of %d rank(s)", me, n);
  for (int r = 0; r < n; ++r) {
    const SplitMember& m = all[r];
    // Each entry lands at its sender's index; a rank field that disagrees
    // would index the gathered ids out of bounds.
    if (m.rank != r)
      return STRATA_ERROR(STRATA_ERR_REMOTE, "rank %d sent a split request naming rank %lld", r,
                          static_cast<long long>(m.rank));
    if ((m.color < 0 && m.color != STRATA_SPLIT_NOCOLOR) || m.color > INT_MAX || m.key < INT_MIN ||
        m.key > INT_MAX)
      return STRATA_ERROR(STRATA_ERR_REMOTE, "rank %d sent a split request with color %lld and key %lld, "
                          "which strata_comm_split cannot have been given",
                          r, static_cast<long long>(m.color), static_cast<long long>(m.key));
  }
  if (all[me].color != color || all[me].key != key)
    return STRATA_ERROR(STRATA_ERR_INTERNAL, "the split's allgather returned color %lld and key %lld for this "
                        "rank (%d), which asked for color %d and key %d",
                        static_cast<long long>(all[me].color), static_cast<long long>(all[me].key), me, color, key);
  if (color == STRATA_SPLIT_NOCOLOR) {
    group->clear();
    *newRank = -1;
    return Status::ok();
  }
  std::vector<SplitMember> mine;
  for (const SplitMember& m : all)
    if (m.color == color) mine.push_back(m);
  std::sort(mine.begin(), mine.end(), [](const SplitMember& a, const SplitMember& b) {
    return a.key != b.key ? a.key < b.key : a.rank < b.rank;
  });
  // Found: all[me] has this color.
  const int at = static_cast<int>(std::find_if(mine.begin(), mine.end(),
                                               [me](const SplitMember& m) { return m.rank == me; }) -
                                  mine.begin());
  *group = std::move(mine);
  *newRank = at;
  return Status::ok();
}

}  // namespace strata::api
