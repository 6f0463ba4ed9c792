#include "shm_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <thread>

#include "clock.h"
#include "log.h"

namespace strata::shm {
namespace {

// Maps an open segment file; closes fd either way.
Status mapFile(int fd, const std::string& name, size_t bytes, int flags, void** out) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | flags, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED)
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "mmap(%s, %zu) failed: %s", name.c_str(), bytes,
                        errnoText(err).c_str());
  *out = p;
  return Status::ok();
}

// A peer's segment is one it made with O_EXCL and mode 0600 as the same user
// as this rank. Anything else under the expected name was put there by
// someone else (another local user can create any name in /dev/shm first),
// and mapping it would let them read or feed this job's data.
Status checkOwner(const std::string& name, const struct stat& st) {
  const uid_t me = geteuid();
  if (S_ISREG(st.st_mode) && st.st_uid == me && (st.st_mode & 077) == 0) return Status::ok();
  return STRATA_ERROR(STRATA_ERR_SYSTEM,
                      "refusing to map shared-memory segment /dev/shm%s: it is owned by uid %u with mode %04o, "
                      "where a peer of this job makes it as uid %u (this rank's) with mode 0600; another user "
                      "may have planted it (remove it), or ranks on this host run as different users "
                      "(run them as one, or STRATA_TRANSPORT=tcp)",
                      name.c_str(), static_cast<unsigned>(st.st_uid), static_cast<unsigned>(st.st_mode & 07777),
                      static_cast<unsigned>(me));
}

// How often a rank waiting for a peer's segment looks at the peer's side.
constexpr double kLookInterval = 0.1;

uint64_t ownPidNamespace() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

// A peer's segment that has not appeared where this rank looks: when the
// peer is in this pid namespace, its own view of /dev/shm (through
// /proc/<pid>/root) tells a peer that is gone, or one whose /dev/shm is
// another (a container with its own, another mount namespace) and that
// made its segment there, from one that is merely late.
Status whyMissing(const std::string& name) {
  int pid = 0;
  uint64_t pidNamespace = 0;
  if (!parseSegmentName(name.c_str() + 1, &pid, &pidNamespace) || pidNamespace != ownPidNamespace()) return Status::ok();
  const std::string root = "/proc/" + std::to_string(pid) + "/root";
  struct stat theirs, mine;
  if (stat(root.c_str(), &theirs) != 0 && errno == ENOENT)
    return STRATA_ERROR(STRATA_ERR_REMOTE, "the process (pid %d) that was to make shared-memory segment %s is gone",
                        pid, name.c_str());
  if (stat((root + "/dev/shm" + name).c_str(), &theirs) != 0) return Status::ok();  // late, or not ours to look at
  if (stat("/dev/shm", &mine) == 0 && stat((root + "/dev/shm").c_str(), &theirs) == 0 &&
      (mine.st_dev != theirs.st_dev || mine.st_ino != theirs.st_ino))
    return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                        "pid %d made shared-memory segment %s in another /dev/shm than this rank's (they share a "
                        "host but not its /dev/shm: containers need one, e.g. docker run --ipc=host or "
                        "--ipc=container:<first>); give them one, or STRATA_TRANSPORT=tcp",
                        pid, name.c_str());
  return Status::ok();
}

}  // namespace

Segment::~Segment() {
  unlink();
  if (base_) munmap(base_, bytes_);
}

Status Segment::create(const std::string& name, size_t bytes, const std::string& sizing) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    int err = errno;
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "shm_open(%s, O_CREAT) failed: %s%s", name.c_str(),
                        errnoText(err).c_str(),
                        err == EEXIST ? " (another process made a segment of this name: who else writes /dev/shm here?)"
                                      : "");
  }
  name_ = name;
  ownsName_ = true;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    close(fd);
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "ftruncate(%s, %zu) failed: %s (is /dev/shm full?)",
                        name.c_str(), bytes, errnoText(err).c_str());
  }
  // tmpfs gives pages out as they are first touched, and one it cannot give
  // is a SIGBUS in whichever rank touches it, in the middle of a collective
  // (MAP_POPULATE's faults fail silently). Reserving them all now turns a
  // full /dev/shm into an error at init.
  if (int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes))) {
    close(fd);
    if (err == ENOSPC)
      return STRATA_ERROR(STRATA_ERR_SYSTEM,
                          "/dev/shm has no room for the %zu bytes (%.1f MiB) of shared-memory segment %s "
                          "(%s): free space there (df /dev/shm; containers often get 64 MiB: docker run "
                          "--shm-size) or make the segment smaller with STRATA_NCHANNELS, STRATA_NSLOTS or "
                          "STRATA_SLOT_BYTES",
                          bytes, bytes / 1048576.0, name.c_str(), sizing.c_str());
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "posix_fallocate(%s, %zu) failed: %s", name.c_str(), bytes,
                        errnoText(err).c_str());
  }
  STRATA_CHECK(mapFile(fd, name, bytes, MAP_POPULATE, &base_));
  bytes_ = bytes;
  return Status::ok();
}

Status Segment::open(const std::string& name, size_t bytes, double deadline) {
  double nextLook = nowSeconds() + kLookInterval;
  for (;;) {
    int fd = shm_open(name.c_str(), O_RDWR, 0600);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0) {
      if (Status trusted = checkOwner(name, st); !trusted.isOk()) {
        close(fd);
        return trusted;
      }
      if (static_cast<size_t>(st.st_size) >= bytes) {
        STRATA_CHECK(mapFile(fd, name, bytes, 0, &base_));
        bytes_ = bytes;
        return Status::ok();
      }
    }
    if (fd >= 0) close(fd);
    if (nowSeconds() > deadline)
      return STRATA_ERROR(STRATA_ERR_TIMEOUT, "shared-memory segment %s of a peer did not appear",
                          name.c_str());
    if (nowSeconds() >= nextLook) {
      STRATA_CHECK(whyMissing(name));
      nextLook = nowSeconds() + kLookInterval;
    }
    std::this_thread::yield();
  }
}

void Segment::unlink() {
  if (ownsName_) shm_unlink(name_.c_str());
  ownsName_ = false;
}

std::string segmentName(uint64_t commTag, int rank, int pid, uint64_t pidNamespace) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), "/strata-%016" PRIx64 "-r%d-p%d-n%" PRIu64, commTag, rank, pid, pidNamespace);
  return buf;
}

bool parseSegmentName(const char* name, int* pid, uint64_t* pidNamespace) {
  uint64_t tag;
  int rank, end = -1;
  if (std::sscanf(name, "strata-%16" SCNx64 "-r%d-p%d-n%" SCNu64 "%n", &tag, &rank, pid, pidNamespace, &end) != 4)
    return false;
  return end > 0 && name[end] == '\0';
}

void sweepOrphans(uint64_t ownPidNamespace) {
  // A pid means something only in the pid namespace that gave it out: a
  // container sharing this /dev/shm with another namespace would see a live
  // process there as dead here. With our own namespace unknown, nothing is.
  if (ownPidNamespace == 0) return;
  DIR* dir = opendir("/dev/shm");
  if (!dir) return;
  while (struct dirent* e = readdir(dir)) {
    int pid = 0;
    uint64_t ns = 0;
    if (!parseSegmentName(e->d_name, &pid, &ns) || ns != ownPidNamespace || pid <= 0) continue;
    if (kill(pid, 0) != 0 && errno == ESRCH) {
      std::string name = std::string("/") + e->d_name;
      if (shm_unlink(name.c_str()) == 0)
        STRATA_INFO(SHM, "removed %s left by dead process %d", name.c_str(), pid);
    }
  }
  closedir(dir);
}

}  // namespace strata::shm
