// When the cuda transport may free the GPU memory its local peers map
// (transports/cuda/deferred_free.h), with real importer processes: forked
// children set their words in a shared page, or exit without doing so, and
// pidfds (PeerWatch) see them go. The release here records what it saw
// instead of freeing GPU memory; nothing needs CUDA.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "clock.h"
#include "deferred_free.h"

namespace strata::cuda {
namespace {

// What the importers and the test share.
struct Shared {
  MappingWord words[2];
  std::atomic<uint32_t> go[2];  // the test tells an importer to close its mapping
};

Shared* mapShared() {
  void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(p, MAP_FAILED);
  return static_cast<Shared*>(p);  // zero-filled: never mapped, no go
}

void sleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

enum class Then { CloseAndStay, Exit, CloseOnGo };

// An importer process that has mapped the memory (its word is set before it
// starts, so the test never races its start) and, after `ms`, closes and
// stays alive, exits without closing, or closes once told to.
pid_t importer(Shared* shared, int i, int ms, Then then) {
  EXPECT_TRUE(claimMapping(&shared->words[i]));
  pid_t pid = fork();
  if (pid != 0) return pid;
  sleepMs(ms);
  if (then == Then::Exit) _exit(0);
  if (then == Then::CloseOnGo)
    while (shared->go[i].load() == 0) sleepMs(1);
  shared->words[i].state.store(kClosed, std::memory_order_release);
  for (;;) pause();  // alive until the test kills it
}

void reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

struct Record {
  int releases = 0;
  uint32_t statesSeen[2] = {99, 99};
};

DeferredFree itemOf(Shared* shared, const std::vector<pid_t>& pids, Record* record) {
  DeferredFree item;
  for (size_t i = 0; i < pids.size(); ++i) {
    item.words.push_back(&shared->words[i]);
    item.owners.push_back(std::make_shared<PeerWatch>(static_cast<int>(i), pids[i], true));
  }
  item.release = [shared, record] {
    ++record->releases;
    for (int i = 0; i < 2; ++i) record->statesSeen[i] = shared->words[i].state.load();
  };
  return item;
}

TEST(DeferredFree, ReleasedOnlyOnceEveryImporterHasClosed) {
  Shared* shared = mapShared();
  const std::vector<pid_t> pids = {importer(shared, 0, 100, Then::CloseAndStay),
                                   importer(shared, 1, 400, Then::CloseAndStay)};
  Record record;
  const double start = nowSeconds();
  freeWhenUnmapped(itemOf(shared, pids, &record), 10);
  const double took = nowSeconds() - start;
  EXPECT_EQ(record.releases, 1);
  EXPECT_EQ(record.statesSeen[0], kClosed);
  EXPECT_EQ(record.statesSeen[1], kClosed) << "released while an importer still mapped the memory";
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 9.0) << "waited past both closes";
  EXPECT_EQ(deferredFrees(), 0u);
  for (pid_t pid : pids) {
    EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), 0) << "the importers were alive: their words decided";
    reap(pid);
  }
  munmap(shared, sizeof(Shared));
}

// A peer that died holding its mapping has no mapping left.
TEST(DeferredFree, AnImporterThatExitedIsNotWaitedFor) {
  Shared* shared = mapShared();
  const pid_t pid = importer(shared, 0, 150, Then::Exit);
  Record record;
  const double start = nowSeconds();
  freeWhenUnmapped(itemOf(shared, {pid}, &record), 10);
  EXPECT_EQ(record.releases, 1);
  EXPECT_EQ(record.statesSeen[0], kMapped);
  EXPECT_LT(nowSeconds() - start, 5.0);
  waitpid(pid, nullptr, 0);
  munmap(shared, sizeof(Shared));
}

TEST(DeferredFree, WordsNeverMappedAreNotWaitedFor) {
  Shared* shared = mapShared();
  Record record;
  DeferredFree item = itemOf(shared, {getpid(), getpid()}, &record);
  const double start = nowSeconds();
  freeWhenUnmapped(std::move(item), 10);
  EXPECT_EQ(record.releases, 1);
  EXPECT_LT(nowSeconds() - start, 1.0);
  munmap(shared, sizeof(Shared));
}

// A word never mapped is withdrawn by the release: an importer late to
// the connect (its peer left it early) cannot map what is being freed; one
// that claimed its word first is waited for.
TEST(DeferredFree, ALateImporterCannotClaimWhatWasWithdrawn) {
  Shared* shared = mapShared();
  Record record;
  ASSERT_TRUE(claimMapping(&shared->words[1]));
  DeferredFree item = itemOf(shared, {getpid(), getpid()}, &record);
  EXPECT_FALSE(item.ready()) << "word 1 was claimed by a live importer";
  EXPECT_EQ(shared->words[0].state.load(), kWithdrawn);
  EXPECT_FALSE(claimMapping(&shared->words[0])) << "claimed a withdrawn word";
  shared->words[1].state.store(kClosed);
  EXPECT_TRUE(item.ready());
  EXPECT_FALSE(claimMapping(&shared->words[1])) << "claimed a word already used";
  munmap(shared, sizeof(Shared));
}

// Past its wait, the release is kept, and a later sweep runs it once the
// importer has closed, and only then.
TEST(DeferredFree, PastTheWaitASweepReleasesItOnceClosed) {
  Shared* shared = mapShared();
  const pid_t pid = importer(shared, 0, 0, Then::CloseOnGo);
  Record record;
  const double start = nowSeconds();
  freeWhenUnmapped(itemOf(shared, {pid}, &record), 0.2);
  EXPECT_GE(nowSeconds() - start, 0.2);
  EXPECT_EQ(record.releases, 0);
  EXPECT_EQ(deferredFrees(), 1u);
  sweepDeferredFrees();
  EXPECT_EQ(record.releases, 0) << "swept while the importer still mapped the memory";
  shared->go[0].store(1);
  for (int i = 0; i < 5000 && shared->words[0].state.load() != kClosed; ++i) sleepMs(1);
  sweepDeferredFrees();
  EXPECT_EQ(record.releases, 1);
  EXPECT_EQ(record.statesSeen[0], kClosed);
  EXPECT_EQ(deferredFrees(), 0u);
  sweepDeferredFrees();
  EXPECT_EQ(record.releases, 1) << "released twice";
  reap(pid);
  munmap(shared, sizeof(Shared));
}

}  // namespace
}  // namespace strata::cuda
