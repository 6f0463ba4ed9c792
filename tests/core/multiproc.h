// Runs a test body in N real processes (fork), one per rank, with a deadline.
//
// The parent creates the unique id, forks the ranks, and collects what each
// reports over a pipe: failures (with messages) and named hashes of result
// buffers, so it can assert that every rank computed the same bits. A rank
// that crashes, exits early, or outlives the deadline (all ranks are then
// SIGKILLed) fails the test. Children never return into GoogleTest.
//
// Only runRanks and Reporter::ok call the C API (multiproc_comm.cc); the rest
// (multiproc.cc) serves tests below it too.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "strata/strata.h"

namespace strata::test {

class Reporter {
 public:
  explicit Reporter(int fd) : fd_(fd) {}
  // Records a failure; the rank keeps running unless the body returns.
  void fail(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  // Records why this rank could not run its part here (GTEST_SKIP belongs
  // to the parent, which sees it in RankOutcome::skips).
  void skip(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  // Records a named value the parent compares across ranks.
  void value(const std::string& name, uint64_t v);
  // A strata call that must succeed; records a failure naming `what` if not.
  bool ok(strata_result_t rc, strata_comm_t comm, const char* what);
  bool failed() const { return failed_; }

 private:
  void send(const std::string& line);
  int fd_;
  bool failed_ = false;
};

struct RankOutcome {
  bool exited = false;  // exited normally with status 0
  std::string exitText;  // how it ended, for messages
  std::vector<std::string> failures;
  std::vector<std::string> skips;
  std::map<std::string, uint64_t> values;
};

using RankBody = std::function<void(int rank, int nranks, const strata_unique_id_t& id, Reporter& r)>;

// Env is applied in each child before the body runs.
std::vector<RankOutcome> runRanks(int nranks, double timeoutSeconds, const RankBody& body,
                                  const std::vector<std::pair<std::string, std::string>>& env = {});

// The same for any bodies, one child process each: for ranks whose job spans
// machines, where each machine runs only its own.
using ChildBody = std::function<void(Reporter& r)>;
std::vector<RankOutcome> runChildren(const std::vector<ChildBody>& bodies, double timeoutSeconds,
                                     const std::vector<std::pair<std::string, std::string>>& env = {});

// GoogleTest assertions over the outcomes: every rank exited cleanly with no
// failures (but `killed`, which must have died of SIGKILL), and every named
// value is equal on all ranks.
void expectAllPassed(const std::vector<RankOutcome>& outcomes, int killed = -1);
void expectValuesAgree(const std::vector<RankOutcome>& outcomes);

// FNV-1a of a buffer, for comparing results across ranks.
uint64_t hashBytes(const void* data, size_t bytes);

}  // namespace strata::test
