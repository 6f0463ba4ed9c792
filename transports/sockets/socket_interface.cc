#include "socket_interface.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstring>

#include "log.h"
#include "name_list.h"

namespace strata::sockets {

bool interfaceMatches(const std::string& spec, const std::string& name) {
  if (spec.empty()) return !startsWith(name, "lo") && !startsWith(name, "docker");
  return listMatches(spec, [&](const std::string& item) {
    return item[0] == '=' ? name == item.substr(1) : startsWith(name, item);
  });
}

Status chooseInterface(const std::string& spec, Interface* out) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    int err = errno;
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "getifaddrs failed: %s", errnoText(err).c_str());
  }
  // Best first: a matching IPv4, a matching IPv6, then (no spec) loopback.
  const ifaddrs* best = nullptr;
  int bestRank = 0;
  std::string seen;
  for (const ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (family == AF_INET6 &&
        IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr))
      continue;
    seen += std::string(seen.empty() ? "" : ", ") + i->ifa_name;
    int rank = 0;
    if (interfaceMatches(spec, i->ifa_name)) rank = family == AF_INET ? 4 : 3;
    else if (spec.empty() && (i->ifa_flags & IFF_LOOPBACK)) rank = family == AF_INET ? 2 : 1;
    if (rank > bestRank) {
      best = i;
      bestRank = rank;
    }
  }
  Status result;
  if (!best) {
    result = STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                          "no network interface matches STRATA_SOCKET_IFNAME='%s' (interfaces up: %s)",
                          spec.c_str(), seen.empty() ? "none" : seen.c_str());
  } else {
    out->name = best->ifa_name;
    size_t len = best->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memset(&out->addr.storage, 0, sizeof(out->addr.storage));
    std::memcpy(&out->addr.storage, best->ifa_addr, len);
    out->addr.len = static_cast<socklen_t>(len);
    STRATA_INFO(NET, "tcp connections use interface %s (%s)%s", out->name.c_str(), toString(out->addr).c_str(),
                spec.empty() ? "" : (" from STRATA_SOCKET_IFNAME=" + spec).c_str());
  }
  freeifaddrs(list);
  return result;
}

}  // namespace strata::sockets
