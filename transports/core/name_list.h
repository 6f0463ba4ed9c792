// NCCL-style device lists (NCCL_SOCKET_IFNAME, NCCL_IB_HCA): comma-separated
// items, the whole list negated by a leading '^'. What an item matches is
// the caller's: interface names and RDMA devices read them differently.
#pragma once

#include <sstream>
#include <string>

namespace strata {

inline bool startsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// True if some item of `list` satisfies matches(item), or, with a leading
// '^', if none does. Empty items are skipped.
template <typename Matches>
bool listMatches(const std::string& list, Matches matches) {
  const bool exclude = !list.empty() && list[0] == '^';
  std::stringstream items(exclude ? list.substr(1) : list);
  bool listed = false;
  for (std::string item; std::getline(items, item, ',');)
    if (!item.empty() && matches(item)) listed = true;
  return exclude != listed;
}

}  // namespace strata
