#include "fingerprint.h"

#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include "stall_report.h"
#include "strata/strata.h"

extern char** environ;

namespace strata::check {
namespace {

template <size_t N>
void copy(char (&to)[N], const std::string& from) {
  std::snprintf(to, N, "%s", from.c_str());
}

template <size_t N>
std::string text(const char (&field)[N]) {
  return std::string(field, strnlen(field, N));
}

uint32_t kernelFeatures() {
  uint32_t f = 0;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (pidfd >= 0) {
    f |= kPidfd;
    // Our own descriptor 0 through our own pidfd: the call exists and is allowed.
    const int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, 0, 0));
    if (fd >= 0) {
      f |= kPidfdGetfd;
      close(fd);
    }
    close(pidfd);
  }
  char src = 1, dst = 0;
  iovec local{&dst, 1}, remote{&src, 1};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1) f |= kCrossMemory;
  return f;
}

std::string featureNames(uint32_t f) {
  std::string s;
  for (auto [bit, name] : {std::pair<uint32_t, const char*>{kPidfd, "pidfd_open"}, {kPidfdGetfd, "pidfd_getfd"},
                           {kCrossMemory, "process_vm_readv"}})
    if (f & bit) s += (s.empty() ? "" : ",") + std::string(name);
  return s.empty() ? "none" : s;
}

std::map<std::string, std::string> envOf(const Fingerprint& fp) {
  std::map<std::string, std::string> vars;
  const std::string all = text(fp.env);
  for (size_t at = 0; at < all.size();) {
    const size_t end = std::min(all.find('\n', at), all.size());
    const std::string line = all.substr(at, end - at);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) vars[line.substr(0, eq)] = line.substr(eq + 1);
    at = end + 1;
  }
  return vars;
}

// "<what> differs: rank 3: X; ranks 0-2,4-7: Y", the most common value
// last; empty when all ranks agree.
template <typename Key>
std::string odd(const std::vector<Fingerprint>& all, const char* what, Key key) {
  std::map<std::string, std::vector<int>> by;
  for (size_t r = 0; r < all.size(); ++r) by[key(all[r])].push_back(static_cast<int>(r));
  if (by.size() < 2) return "";
  auto common = std::max_element(by.begin(), by.end(),
                                 [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  std::string line = std::string(what) + " differs:";
  for (const auto& entry : by)
    if (entry.first != common->first)
      line += std::string(entry.second.size() == 1 ? " rank " : " ranks ") + fault::rankRanges(entry.second) + ": " +
              entry.first + ";";
  return line + (common->second.size() == 1 ? " rank " : " ranks ") + fault::rankRanges(common->second) + ": " +
         common->first;
}

std::string versionText(int32_t code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

}  // namespace

Fingerprint take(const std::string& transports) {
  Fingerprint fp;
  std::memset(&fp, 0, sizeof(fp));
  fp.version = STRATA_VERSION_CODE;
  copy(fp.build, __DATE__ " " __TIME__);
  utsname u;
  if (uname(&u) == 0) copy(fp.kernel, u.release);
  fp.features = kernelFeatures();
  copy(fp.transports, transports);
  struct statvfs vfs;
  if (statvfs("/dev/shm", &vfs) == 0) fp.shmFreeBytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  std::vector<std::string> vars;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "STRATA_", 7) == 0) vars.push_back(*e);
  std::sort(vars.begin(), vars.end());
  std::string env;
  for (const auto& v : vars) env += v + "\n";
  copy(fp.env, env);
  return fp;
}

std::vector<std::string> compare(std::vector<Fingerprint> all) {
  for (Fingerprint& fp : all) {  // strings from other processes end in their arrays
    fp.build[sizeof(fp.build) - 1] = fp.kernel[sizeof(fp.kernel) - 1] = 0;
    fp.transports[sizeof(fp.transports) - 1] = fp.env[sizeof(fp.env) - 1] = 0;
  }
  std::vector<std::string> lines;
  auto add = [&](const std::string& line) {
    if (!line.empty()) lines.push_back(line);
  };
  add(odd(all, "the strata version", [](const Fingerprint& f) { return versionText(f.version); }));
  add(odd(all, "the libstrata build", [](const Fingerprint& f) { return "built " + text(f.build); }));
  add(odd(all, "the kernel", [](const Fingerprint& f) { return text(f.kernel); }));
  add(odd(all, "the kernel features strata uses", [](const Fingerprint& f) { return featureNames(f.features); }));
  add(odd(all, "the usable transports", [](const Fingerprint& f) { return "\"" + text(f.transports) + "\""; }));
  // One line per STRATA_* variable that is not the same everywhere.
  std::map<std::string, int> names;
  std::vector<std::map<std::string, std::string>> envs;
  for (const Fingerprint& f : all) {
    envs.push_back(envOf(f));
    for (const auto& v : envs.back()) names[v.first] = 1;
  }
  for (const auto& n : names) {
    add(odd(all, n.first.c_str(), [&](const Fingerprint& f) {
      const auto& env = envs[&f - all.data()];
      auto it = env.find(n.first);
      return it == env.end() ? "unset" : n.first + "=" + it->second;
    }));
  }
  // /dev/shm: a rank with far less room than the rest (a container's 64 MB).
  std::vector<uint64_t> free;
  for (const Fingerprint& f : all) free.push_back(f.shmFreeBytes);
  std::vector<uint64_t> sorted = free;
  std::sort(sorted.begin(), sorted.end());
  const uint64_t median = sorted[sorted.size() / 2];
  std::vector<int> small;
  for (size_t r = 0; r < free.size(); ++r)
    if (free[r] < median / 4) small.push_back(static_cast<int>(r));
  if (!small.empty())
    add(std::string(small.size() == 1 ? "rank " : "ranks ") + fault::rankRanges(small) + " ha" +
        (small.size() == 1 ? "s " : "ve ") + std::to_string(free[small[0]] >> 20) + " MiB free in /dev/shm, the median rank " +
        std::to_string(median >> 20) + " MiB");
  return lines;
}

std::string describeCommon(const std::vector<Fingerprint>& all) {
  const Fingerprint& f = all[0];
  return "strata " + versionText(f.version) + " built " + text(f.build) + ", kernel " + text(f.kernel) + " (" +
         featureNames(f.features) + "), transports \"" + text(f.transports) + "\", " +
         std::to_string(f.shmFreeBytes >> 20) + " MiB free in /dev/shm (rank 0's)";
}

}  // namespace strata::check
