// Shared-memory segments against the real /dev/shm: which names the orphan
// sweep may remove, and which segments a rank agrees to map.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <string>

#include "clock.h"
#include "shm_segment.h"

namespace strata::shm {
namespace {

uint64_t ownPidNamespace() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

// A pid that was this process's child and has been reaped: dead here.
int deadPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

uint64_t randomTag() { return std::random_device{}() | uint64_t(std::random_device{}()) << 32; }

bool exists(const std::string& name) { return access(("/dev/shm" + name).c_str(), F_OK) == 0; }

// A segment as a crashed creator would leave it (not through Segment, whose
// destructor unlinks it).
void leave(const std::string& name, mode_t mode = 0600) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0) << name;
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  ASSERT_EQ(fchmod(fd, mode), 0);
  close(fd);
}

TEST(SegmentName, CarriesPidAndPidNamespace) {
  const std::string name = segmentName(0xabcdef, 3, 4242, 4026531836ull);
  int pid = 0;
  uint64_t ns = 0;
  ASSERT_TRUE(parseSegmentName(name.c_str() + 1, &pid, &ns)) << name;
  EXPECT_EQ(pid, 4242);
  EXPECT_EQ(ns, 4026531836ull);
  // Names of the older form, without a namespace, or with anything after it, are not ours to judge.
  EXPECT_FALSE(parseSegmentName("strata-0000000000abcdef-r3-p4242", &pid, &ns));
  EXPECT_FALSE(parseSegmentName((name.substr(1) + "x").c_str(), &pid, &ns));
  EXPECT_FALSE(parseSegmentName("other-0000000000abcdef-r3-p4242-n1", &pid, &ns));
}

TEST(SweepOrphans, RemovesOnlyDeadCreatorsOfThisPidNamespace) {
  const uint64_t ns = ownPidNamespace();
  ASSERT_NE(ns, 0u) << "cannot read /proc/self/ns/pid";
  const uint64_t tag = randomTag();
  const int dead = deadPid();
  const std::string orphan = segmentName(tag, 0, dead, ns);
  // The same pid in another pid namespace (a container sharing /dev/shm) may
  // well be alive there: its segment must stay.
  const std::string foreign = segmentName(tag, 1, dead, ns + 1);
  const std::string live = segmentName(tag, 2, getpid(), ns);
  leave(orphan);
  leave(foreign);
  leave(live);
  sweepOrphans(ns);
  EXPECT_FALSE(exists(orphan)) << "a dead creator's segment was left";
  EXPECT_TRUE(exists(foreign)) << "a segment of another pid namespace was removed";
  EXPECT_TRUE(exists(live)) << "a live creator's segment was removed";
  for (const auto& n : {orphan, foreign, live}) shm_unlink(n.c_str());
}

TEST(SweepOrphans, RemovesNothingWithoutItsOwnNamespace) {
  const uint64_t tag = randomTag();
  const std::string orphan = segmentName(tag, 0, deadPid(), 0);
  leave(orphan);
  sweepOrphans(0);
  EXPECT_TRUE(exists(orphan));
  shm_unlink(orphan.c_str());
}

TEST(SegmentOpen, MapsAPeersSegment) {
  const std::string name = segmentName(randomTag(), 0, getpid(), ownPidNamespace());
  Segment own;
  ASSERT_TRUE(own.create(name, 8192, "test").isOk());
  Segment peer;
  Status st = peer.open(name, 8192, nowSeconds() + 5);
  ASSERT_TRUE(st.isOk()) << st.message();
  own.base()[100] = 42;
  EXPECT_EQ(peer.base()[100], 42);
}

TEST(SegmentOpen, RefusesAGroupOrWorldAccessibleSegment) {
  const std::string name = segmentName(randomTag(), 0, getpid(), ownPidNamespace());
  leave(name, 0666);
  Segment peer;
  Status st = peer.open(name, 4096, nowSeconds() + 5);
  EXPECT_EQ(st.code(), STRATA_ERR_SYSTEM);
  EXPECT_NE(st.message().find("refusing to map"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(name), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("0666"), std::string::npos) << st.message();
  shm_unlink(name.c_str());
}

TEST(SegmentOpen, RefusesASegmentOfAnotherUser) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a segment to another user";
  const std::string name = segmentName(randomTag(), 0, getpid(), ownPidNamespace());
  leave(name);
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fchown(fd, 65534, static_cast<gid_t>(-1)), 0);
  close(fd);
  Segment peer;
  Status st = peer.open(name, 4096, nowSeconds() + 5);
  EXPECT_EQ(st.code(), STRATA_ERR_SYSTEM);
  EXPECT_NE(st.message().find("owned by uid 65534"), std::string::npos) << st.message();
  shm_unlink(name.c_str());
}

}  // namespace
}  // namespace strata::shm
