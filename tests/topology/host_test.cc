// What a rank learns about its host: the affinity mask agrees with the
// kernel's, and a machine's cores are the union of its ranks' masks, across
// the hosts (namespaces, simulated nodes) it holds.
#include <gtest/gtest.h>
#include <sched.h>

#include <cstring>
#include <vector>

#include "host.h"

namespace strata::topo {
namespace {

HostInfo onHost(const char* id, std::vector<int> cores, const char* machine = nullptr) {
  HostInfo h;
  std::memset(&h, 0, sizeof(h));
  std::strncpy(h.hostId, id, sizeof(h.hostId) - 1);
  std::strncpy(h.machineId, machine ? machine : id, sizeof(h.machineId) - 1);
  for (int c : cores) h.cpuMask[c / 64] |= 1ull << (c % 64);
  h.cpusAllowed = static_cast<int32_t>(cores.size());
  return h;
}

TEST(Host, MaskMatchesTheKernel) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  HostInfo self = probeHost(-1);
  EXPECT_EQ(self.cpusAllowed, CPU_COUNT(&set));
  for (int c = 0; c < kCpuMaskWords * 64; ++c)
    EXPECT_EQ((self.cpuMask[c / 64] >> (c % 64)) & 1, CPU_ISSET(c, &set) ? 1u : 0u) << "core " << c;
}

TEST(Host, CoresOfHostAreTheUnionOfItsRanksMasks) {
  // Two ranks bound one per core, two unbound ranks sharing four cores, and
  // a rank on another host that must not count.
  std::vector<HostInfo> all = {onHost("a", {0}), onHost("a", {1}), onHost("b", {0, 1, 2, 3}),
                               onHost("b", {0, 1, 2, 3}), onHost("c", {5, 70, 700})};
  auto shares = hostShares(all);
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_EQ(shares.at(machineKey(all[0])).cores, 2);
  EXPECT_EQ(shares.at(machineKey(all[0])).ranks, 2);
  EXPECT_EQ(shares.at(machineKey(all[2])).cores, 4);
  EXPECT_EQ(shares.at(machineKey(all[2])).ranks, 2);
  EXPECT_EQ(shares.at(machineKey(all[4])).cores, 3);
  EXPECT_EQ(shares.at(machineKey(all[4])).ranks, 1);
}

TEST(Host, HostsOfOneMachineShareItsCores) {
  // Two network namespaces (or simulated nodes) of two ranks each on one
  // two-core machine: four ranks on two cores, not two on two per host.
  std::vector<HostInfo> all = {onHost("ns1", {0, 1}, "m"), onHost("ns1", {0, 1}, "m"),
                               onHost("ns2", {0, 1}, "m"), onHost("ns2", {0, 1}, "m")};
  auto shares = hostShares(all);
  ASSERT_EQ(shares.size(), 1u);
  EXPECT_EQ(shares.at("m").ranks, 4);
  EXPECT_EQ(shares.at("m").cores, 2);
  HostInfo self = probeHost(-1);
  EXPECT_NE(machineKey(self).find(self.hostname), std::string::npos) << machineKey(self);
}

// A peer that fills every string with no NUL (a hostile or corrupt hello)
// must not make readers run off the end of the arrays.
TEST(Host, WireStringsAreTerminated) {
  HostInfo forged;
  std::memset(&forged, 'x', sizeof(forged));
  sanitizeWire(&forged);
  EXPECT_EQ(strnlen(forged.hostId, sizeof(forged.hostId)), sizeof(forged.hostId) - 1);
  EXPECT_EQ(strnlen(forged.machineId, sizeof(forged.machineId)), sizeof(forged.machineId) - 1);
  EXPECT_EQ(strnlen(forged.hostname, sizeof(forged.hostname)), sizeof(forged.hostname) - 1);
  EXPECT_EQ(strnlen(forged.nic, sizeof(forged.nic)), sizeof(forged.nic) - 1);
  EXPECT_EQ(strnlen(forged.rdma, sizeof(forged.rdma)), sizeof(forged.rdma) - 1);

  HostInfo honest = probeHost(-1);
  HostInfo copy = honest;
  sanitizeWire(&copy);
  EXPECT_EQ(std::memcmp(&copy, &honest, sizeof(copy)), 0) << "an honest HostInfo is left as it is";
}

}  // namespace
}  // namespace strata::topo
