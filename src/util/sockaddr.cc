#include "sockaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace strata {

std::string toString(const SockAddr& addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  const sockaddr* sa = addr.get();
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(portOf(addr));
  }
  inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, host, sizeof(host));
  return "[" + std::string(host) + "]:" + std::to_string(portOf(addr));
}

int portOf(const SockAddr& addr) {
  const sockaddr* sa = addr.get();
  if (sa->sa_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(sa)->sin_port);
  return ntohs(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port);
}

}  // namespace strata
