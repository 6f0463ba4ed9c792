#include "log.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "params.h"
#include "status.h"

namespace strata::log {

namespace detail {
std::atomic<int> gLevel{-1};
std::atomic<uint32_t> gMask{0};
}  // namespace detail
using detail::gLevel;
using detail::gMask;

namespace {

struct SubsysName {
  Subsys bit;
  const char* name;
};
constexpr SubsysName kNames[] = {{INIT, "INIT"}, {BOOT, "BOOT"},   {TOPO, "TOPO"},
                                 {SHM, "SHM"},   {NET, "NET"},     {ALGO, "ALGO"},
                                 {PROGRESS, "PROGRESS"}, {COLL, "COLL"}};

std::mutex gMutex;  // serialises lines and the file handle
FILE* gOut = nullptr;
char gHost[64] = "";
thread_local int tRank = -1;

const char* subsysName(Subsys s) {
  for (const auto& n : kNames)
    if (n.bit == s) return n.name;
  return "?";
}

Level parseLevel(const std::string& s) {
  if (s == "NONE") return Level::None;
  if (s == "INFO") return Level::Info;
  if (s == "TRACE") return Level::Trace;
  return Level::Warn;
}

uint32_t parseMask(const std::string& s) {
  bool exclude = !s.empty() && s[0] == '^';
  uint32_t mask = 0;
  size_t pos = exclude ? 1 : 0;
  while (pos <= s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    if (item == "ALL") mask = ~0u;
    for (const auto& n : kNames)
      if (item == n.name) mask |= n.bit;
    pos = end + 1;
  }
  return exclude ? ~mask : mask;
}

std::string expandPath(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      if (pattern[i + 1] == 'h') { out += gHost; ++i; continue; }
      if (pattern[i + 1] == 'p') { out += std::to_string(getpid()); ++i; continue; }
    }
    out += pattern[i];
  }
  return out;
}

// Opens STRATA_DEBUG_FILE for appending, or says on stderr why not. The path
// is often in a shared directory such as /tmp, where another user can plant
// a symbolic link under the expected name to have us append our log to (or
// create) a file of their choosing: the last component is never followed.
// A file we create is readable by us alone.
FILE* openDebugFile(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  FILE* f = fd >= 0 ? fdopen(fd, "a") : nullptr;
  if (f) return f;
  const int err = errno;
  if (fd >= 0) close(fd);
  fprintf(stderr, "%s:%d:%d [INIT] WARN log.cc:%d STRATA_DEBUG_FILE %s cannot be opened: %s%s; logging to stderr\n",
          gHost, static_cast<int>(getpid()), tRank, __LINE__, path.c_str(), errnoText(err).c_str(),
          err == ELOOP ? " (it is a symbolic link, which strata does not follow: name the file itself)" : "");
  return nullptr;
}

void ensureRead() {
  if (gLevel.load(std::memory_order_acquire) < 0) reload();
}

}  // namespace

void reload() {
  std::lock_guard<std::mutex> lock(gMutex);
  gethostname(gHost, sizeof(gHost) - 1);
  if (gOut && gOut != stderr) fclose(gOut);
  gOut = stderr;
  const std::string& file = params::debugFile();
  if (!file.empty()) {
    if (FILE* f = openDebugFile(expandPath(file))) gOut = f;
  }
  gMask.store(parseMask(params::debugSubsys()), std::memory_order_relaxed);
  gLevel.store(static_cast<int>(parseLevel(params::debug())), std::memory_order_release);
}

int detail::readLevel() {
  ensureRead();
  return gLevel.load(std::memory_order_acquire);
}

void setThreadRank(int rank) { tRank = rank; }

void write(Level level, Subsys subsys, const char* file, int line, const char* fmt, ...) {
  static const char* kLevelNames[] = {"NONE", "WARN", "INFO", "TRACE"};
  const char* base = std::strrchr(file, '/');
  base = base ? base + 1 : file;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(gMutex);
  fprintf(gOut ? gOut : stderr, "%s:%d:%d [%s] %s %s:%d %s\n", gHost, static_cast<int>(getpid()),
          tRank, subsysName(subsys), kLevelNames[static_cast<int>(level)], base, line, msg);
  fflush(gOut ? gOut : stderr);
}

}  // namespace strata::log
