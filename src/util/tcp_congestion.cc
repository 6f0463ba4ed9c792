#include "tcp_congestion.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace strata::net {
namespace {

std::string firstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

Status refused(const std::string& name, int err) {
  // The allowed list binds a process without CAP_NET_ADMIN; one with it may
  // take any the kernel has loaded.
  return STRATA_INVALID_ARG("STRATA_TCP_CONGESTION='%s' was refused by the kernel (%s): it allows %s "
                            "(net.ipv4.tcp_allowed_congestion_control), and with CAP_NET_ADMIN any of %s "
                            "(net.ipv4.tcp_available_congestion_control)",
                            name.c_str(), errnoText(err).c_str(),
                            firstLine("/proc/sys/net/ipv4/tcp_allowed_congestion_control").c_str(),
                            firstLine("/proc/sys/net/ipv4/tcp_available_congestion_control").c_str());
}

}  // namespace

Status setCongestion(int fd, const std::string& name) {
  if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), static_cast<socklen_t>(name.size())) != 0)
    return refused(name, errno);
  return Status::ok();
}

Status checkCongestion(const std::string& name) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    const int err = errno;
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "socket() to check STRATA_TCP_CONGESTION failed: %s",
                        errnoText(err).c_str());
  }
  Status s = setCongestion(fd, name);
  close(fd);
  return s;
}

std::string congestionOf(int fd) {
  char name[64] = {};
  socklen_t len = sizeof(name) - 1;
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "";
  return std::string(name, strnlen(name, len));
}

}  // namespace strata::net
