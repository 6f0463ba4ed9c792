#include "listener_handoff.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "log.h"
#include "socket.h"

namespace strata::boot {
namespace {

struct Listener {
  SockAddr addr;
  security::Secret secret;
  int fd;
};

std::mutex gMutex;
std::vector<Listener> gListeners;

uint64_t pidNamespace() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

bool sameAddress(const SockAddr& a, const SockAddr& b) {
  return a.len == b.len && std::memcmp(&a.storage, &b.storage, a.len) == 0;
}

// The listener this process (or the parent of this forked child) made for id.
int takeRemembered(const IdContents& id) {
  const SockAddr addr = rootAddress(id);
  std::lock_guard<std::mutex> lock(gMutex);
  auto it = std::find_if(gListeners.begin(), gListeners.end(), [&](const Listener& l) {
    return sameAddress(l.addr, addr) && security::sameBytes(l.secret.bytes, id.secret.bytes, kSecretBytes);
  });
  if (it == gListeners.end()) return -1;
  int fd = it->fd;
  gListeners.erase(it);
  return fd;
}

// A copy of the creator's listening socket, or -1 (another host or pid
// namespace, creator gone, no ptrace rights, or not the socket the id names).
int copyFromCreator(const IdContents& id) {
  if (id.creatorPid <= 0 || id.creatorPid == getpid() || id.creatorPidNamespace != pidNamespace()) return -1;
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, id.creatorPid, 0));
  if (pidfd < 0) return -1;
  int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, id.creatorFd, 0));
  int err = errno;
  close(pidfd);
  if (fd < 0) {
    if (err == EPERM)
      STRATA_WARN(BOOT, "cannot take the unique id's listening socket from its creator (pid %d): no ptrace "
                  "rights over it (another user, or a Yama policy)", id.creatorPid);
    return -1;
  }
  // The pid may have been reused, or the descriptor number recycled: only a
  // socket listening on the id's own address will do.
  SockAddr bound;
  bound.len = sizeof(bound.storage);
  int listening = 0;
  socklen_t optLen = sizeof(listening);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound.storage), &bound.len) != 0 ||
      getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optLen) != 0 || !listening ||
      !sameAddress(bound, rootAddress(id))) {
    close(fd);
    return -1;
  }
  STRATA_INFO(BOOT, "took the unique id's listening socket from its creator (pid %d)", id.creatorPid);
  return fd;
}

}  // namespace

void rememberListener(IdContents* id, int fd) {
  id->creatorPid = static_cast<int32_t>(getpid());
  id->creatorFd = fd;
  id->creatorPidNamespace = pidNamespace();
  Listener l{rootAddress(*id), {}, fd};
  l.secret = id->secret;
  std::lock_guard<std::mutex> lock(gMutex);
  gListeners.push_back(l);
}

Status takeIdListener(const IdContents& id, bool needed, int* fd) {
  *fd = takeRemembered(id);
  if (*fd < 0 && needed) *fd = copyFromCreator(id);
  if (*fd >= 0 || !needed) return Status::ok();
  // No creator left: rank 0 listens on the id's address itself.
  SockAddr addr = rootAddress(id);
  return net::listenOn(&addr, fd,
                       " (held by the process that called strata_get_unique_id, or by another rank 0 of "
                       "the id: run rank 0 on that host, in its network and pid namespaces, as its user, "
                       "while it is alive; or call strata_get_unique_id in rank 0's process)");
}

}  // namespace strata::boot
