// The one logging facility. STRATA_DEBUG picks the level, STRATA_DEBUG_SUBSYS
// the subsystems; every line carries host, pid and rank so interleaved output
// from many processes can be told apart:
//   host:pid:rank [SUBSYS] LEVEL file.cc:42 message
#pragma once

#include <atomic>
#include <cstdint>

namespace strata::log {

enum class Level : int { None = 0, Warn = 1, Info = 2, Trace = 3 };

enum Subsys : uint32_t {
  INIT = 1u << 0,
  BOOT = 1u << 1,
  TOPO = 1u << 2,
  SHM = 1u << 3,
  NET = 1u << 4,
  ALGO = 1u << 5,
  PROGRESS = 1u << 6,
  COLL = 1u << 7,
};

namespace detail {
extern std::atomic<int> gLevel;  // -1 until STRATA_DEBUG has been read
extern std::atomic<uint32_t> gMask;
int readLevel();  // reads STRATA_DEBUG* the first time, returns the level
}  // namespace detail

// Inline, for hot paths: a load and a compare when the level is off.
inline bool enabled(Level level, Subsys subsys) {
  int current = detail::gLevel.load(std::memory_order_acquire);
  if (current < 0) current = detail::readLevel();
  return static_cast<int>(level) <= current && (detail::gMask.load(std::memory_order_relaxed) & subsys);
}

void write(Level level, Subsys subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// The rank printed in this thread's lines (-1 before a communicator exists).
void setThreadRank(int rank);

// Re-reads STRATA_DEBUG* (after params::reload()).
void reload();

}  // namespace strata::log

#define STRATA_LOG(level, subsys, ...)                                                        \
  do {                                                                                        \
    if (::strata::log::enabled(::strata::log::Level::level, ::strata::log::subsys))           \
      ::strata::log::write(::strata::log::Level::level, ::strata::log::subsys, __FILE__, __LINE__, \
                           __VA_ARGS__);                                                      \
  } while (0)

#define STRATA_WARN(subsys, ...) STRATA_LOG(Warn, subsys, __VA_ARGS__)
#define STRATA_INFO(subsys, ...) STRATA_LOG(Info, subsys, __VA_ARGS__)
#define STRATA_TRACE(subsys, ...) STRATA_LOG(Trace, subsys, __VA_ARGS__)
