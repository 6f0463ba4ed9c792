#include "multiproc.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace strata::test {

void Reporter::send(const std::string& line) {
  std::string out = line + "\n";
  const char* p = out.data();
  size_t left = out.size();
  while (left > 0) {
    ssize_t n = write(fd_, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

namespace {

// One line of the report: printf's text with its newlines folded.
std::string reportLine(const char* kind, const char* fmt, va_list ap) {
  char buf[2048];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  for (char* c = buf; *c; ++c)
    if (*c == '\n') *c = ' ';
  return std::string(kind) + " " + buf;
}

}  // namespace

void Reporter::fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const std::string line = reportLine("FAIL", fmt, ap);
  va_end(ap);
  failed_ = true;
  send(line);
}

void Reporter::skip(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const std::string line = reportLine("SKIP", fmt, ap);
  va_end(ap);
  send(line);
}

void Reporter::value(const std::string& name, uint64_t v) {
  send("VALUE " + name + " " + std::to_string(v));
}

// FNV-1a over 8-byte words (then the tail's bytes), with a shift that
// carries each word's high bits down: byte by byte, hashing the sweeps'
// 32 MiB results took a tenth of their run.
uint64_t hashBytes(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

std::vector<RankOutcome> runChildren(const std::vector<ChildBody>& bodies, double timeoutSeconds,
                                     const std::vector<std::pair<std::string, std::string>>& env) {
  const int nranks = static_cast<int>(bodies.size());
  std::vector<RankOutcome> outcomes(nranks);
  std::vector<pid_t> pids(nranks, -1);
  std::vector<int> fds(nranks, -1);
  std::vector<std::string> buffers(nranks);
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < nranks; ++r) {
    int pipefd[2];
    if (pipe(pipefd) != 0) {
      ADD_FAILURE() << "pipe failed";
      return outcomes;
    }
    pid_t pid = fork();
    if (pid == 0) {
      close(pipefd[0]);
      for (int other = 0; other < r; ++other) close(fds[other]);
      for (const auto& kv : env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
      Reporter reporter(pipefd[1]);
      bodies[r](reporter);
      fflush(stdout);
      fflush(stderr);
      _exit(0);
    }
    close(pipefd[1]);
    // The parent reads without blocking, so that a child that hangs without
    // writing cannot keep it from its deadline.
    fcntl(pipefd[0], F_SETFL, fcntl(pipefd[0], F_GETFL) | O_NONBLOCK);
    pids[r] = pid;
    fds[r] = pipefd[0];
  }

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  int running = nranks;
  bool timedOut = false;
  while (running > 0) {
    std::vector<pollfd> pfds;
    for (int r = 0; r < nranks; ++r)
      if (fds[r] >= 0) pfds.push_back({fds[r], POLLIN, 0});
    if (!pfds.empty()) poll(pfds.data(), pfds.size(), 20);
    else usleep(2000);
    for (int r = 0; r < nranks; ++r) {
      if (fds[r] < 0) continue;
      char buf[4096];
      ssize_t n;
      while ((n = read(fds[r], buf, sizeof(buf))) > 0) {
        buffers[r].append(buf, static_cast<size_t>(n));
        if (n < static_cast<ssize_t>(sizeof(buf))) break;
      }
      if (n == 0) {
        close(fds[r]);
        fds[r] = -1;
      }
    }
    for (int r = 0; r < nranks; ++r) {
      if (pids[r] < 0) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        pids[r] = -1;
        --running;
        if (WIFEXITED(status)) {
          outcomes[r].exited = WEXITSTATUS(status) == 0;
          outcomes[r].exitText = "exit status " + std::to_string(WEXITSTATUS(status));
        } else if (WIFSIGNALED(status)) {
          outcomes[r].exitText = "killed by signal " + std::to_string(WTERMSIG(status));
        }
      }
    }
    if (running > 0 && std::chrono::steady_clock::now() > deadline) {
      timedOut = true;
      for (pid_t pid : pids)
        if (pid > 0) kill(pid, SIGKILL);
      for (int r = 0; r < nranks; ++r)
        if (pids[r] > 0) {
          waitpid(pids[r], nullptr, 0);
          outcomes[r].exitText = "still running at the test's deadline (killed)";
          pids[r] = -1;
        }
      running = 0;
    }
  }
  for (int r = 0; r < nranks; ++r) {
    if (fds[r] >= 0) {
      char buf[4096];
      ssize_t n;
      while ((n = read(fds[r], buf, sizeof(buf))) > 0) buffers[r].append(buf, static_cast<size_t>(n));
      close(fds[r]);
    }
    std::istringstream lines(buffers[r]);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("FAIL ", 0) == 0) {
        outcomes[r].failures.push_back(line.substr(5));
      } else if (line.rfind("SKIP ", 0) == 0) {
        outcomes[r].skips.push_back(line.substr(5));
      } else if (line.rfind("VALUE ", 0) == 0) {
        size_t space = line.rfind(' ');
        outcomes[r].values[line.substr(6, space - 6)] = std::strtoull(line.c_str() + space + 1, nullptr, 10);
      }
    }
  }
  if (timedOut) ADD_FAILURE() << "processes did not finish within " << timeoutSeconds << " s";
  return outcomes;
}

void expectAllPassed(const std::vector<RankOutcome>& outcomes, int killed) {
  for (size_t r = 0; r < outcomes.size(); ++r) {
    if (static_cast<int>(r) == killed) {
      EXPECT_EQ(outcomes[r].exitText, "killed by signal 9") << "rank " << r;
      continue;
    }
    EXPECT_TRUE(outcomes[r].exited) << "rank " << r << ": " << outcomes[r].exitText;
    for (const auto& f : outcomes[r].failures) ADD_FAILURE() << "rank " << r << ": " << f;
  }
}

void expectValuesAgree(const std::vector<RankOutcome>& outcomes) {
  if (outcomes.empty()) return;
  EXPECT_FALSE(outcomes[0].values.empty()) << "rank 0 reported no results to compare";
  for (size_t r = 1; r < outcomes.size(); ++r) {
    EXPECT_EQ(outcomes[r].values.size(), outcomes[0].values.size()) << "rank " << r << " reported a different number of values";
    for (const auto& kv : outcomes[0].values) {
      auto it = outcomes[r].values.find(kv.first);
      if (it == outcomes[r].values.end()) {
        ADD_FAILURE() << "rank " << r << " did not report " << kv.first;
      } else {
        EXPECT_EQ(it->second, kv.second) << kv.first << ": rank " << r << " differs from rank 0";
      }
    }
  }
}

}  // namespace strata::test
