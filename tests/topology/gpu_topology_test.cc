// GPUs in the topology, on an injected machine (tests/topology/data/
// gpu_server.xml, read by real hwloc): which PCI devices count as GPUs, the
// link class of every pair (PIX, PHB, NODE, SYS and NVLink lanes from
// STRATA_TOPO_NVLINK), the rank's GPU from STRATA_TOPO_GPU, the hierarchy's
// GPU level, and the cost model's choice between direct copies and staging,
// each checked against numbers worked out here from the variables' values.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_path.h"
#include "gpus.h"
#include "hierarchy.h"
#include "host.h"
#include "hwloc_probe.h"
#include "params.h"

namespace strata::topo {
namespace {

const std::string kServer = std::string(STRATA_TEST_DATA) + "/gpu_server.xml";

// The bus ids gpu_server.xml places, in hwloc's order, and where.
const std::vector<std::string> kBusIds = {"0000:03:00.0", "0000:04:00.0", "0000:06:00.0", "0000:11:00.0",
                                          "0000:21:00.0", "0000:25:00.0", "0000:27:00.0"};
const std::vector<int> kPackages = {0, 0, 0, 0, 1, 1, 1};
constexpr int kGpus = 7;

// What the XML's PCI tree says, pair by pair: on package 0, 0 and 1 under
// one switch, 2 on a second root port of their host bridge, 3 under a second
// host bridge; on package 1 (another NUMA node), 4 on one root port, 5 and 6
// on another, 6 behind one more switch.
GpuLink expectedPciLink(int a, int b) {
  if (a == b) return GpuLink::Same;
  if (a > b) std::swap(a, b);
  if (a <= 3 && b >= 4) return GpuLink::Sys;
  if (b == 3) return GpuLink::Node;
  if (b == 2) return GpuLink::Phb;
  if (b == 1) return GpuLink::Pix;
  if (a == 4) return GpuLink::Phb;
  return GpuLink::Pxb;
}

// A rank of host `host` using GPU `busId` ("" for none), bound to `package`.
HostInfo rank(const char* host, const std::string& busId, int package = 0) {
  HostInfo h;
  std::memset(&h, 0, sizeof(h));
  std::snprintf(h.hostId, sizeof(h.hostId), "%s", host);
  std::snprintf(h.machineId, sizeof(h.machineId), "%s", host);
  std::snprintf(h.hostname, sizeof(h.hostname), "%s", host);
  std::snprintf(h.gpu, sizeof(h.gpu), "%s", busId.c_str());
  h.package = package;
  return h;
}

class GpuTopology : public ::testing::Test {
 protected:
  void SetUp() override { set("STRATA_TOPO_FILE", kServer); }
  void TearDown() override {
    for (const char* v : {"STRATA_TOPO_FILE", "STRATA_TOPO_NVLINK", "STRATA_TOPO_GPU", "STRATA_P2P_LEVEL",
                          "STRATA_COST_SHM", "STRATA_COST_PCIE", "STRATA_COST_NVLINK", "STRATA_COST_DEVICE_COPY"})
      unsetenv(v);
    params::reload();
  }

  static void set(const char* name, const std::string& value) {
    setenv(name, value.c_str(), 1);
    params::reload();
  }

  static Machine machine(std::string* warnings = nullptr) {
    ::testing::internal::CaptureStderr();
    Machine m = probeTopology({0}).machine;
    const std::string err = ::testing::internal::GetCapturedStderr();
    if (warnings) *warnings = err;
    return m;
  }

  static GpuCosts costs() {
    GpuCosts c;
    const Status s = gpuCostsFromParams(&c);
    EXPECT_TRUE(s.isOk()) << s.message();
    return c;
  }
};

TEST_F(GpuTopology, FindsTheComputeGpusAndTheirPlaces) {
  const Machine m = machine();
  ASSERT_EQ(m.gpus.size(), kBusIds.size()) << "the VGA display at 0000:20:03.0 is no compute GPU; the 7 NVIDIA ones are";
  for (size_t i = 0; i < kBusIds.size(); ++i) {
    EXPECT_EQ(m.gpus[i].pciBusId, kBusIds[i]);
    EXPECT_EQ(m.gpus[i].package, kPackages[i]) << kBusIds[i];
    EXPECT_EQ(m.gpus[i].numa, kPackages[i]) << kBusIds[i];
    EXPECT_EQ(gpuIndex(m, kBusIds[i]), static_cast<int>(i));
  }
  EXPECT_EQ(m.gpus[0].name, "cuda0,nvml0");
  EXPECT_EQ(m.gpus[0].subtype, "CUDA");
  EXPECT_EQ(m.gpus[1].name, "[10de:2330]") << "without os devices a GPU is named by its PCI ids";
  ASSERT_EQ(m.nics.size(), 1u);
  EXPECT_EQ(m.nics[0].name, "ib0");
}

TEST_F(GpuTopology, PciLinksFollowTheTree) {
  const Machine m = machine();
  ASSERT_EQ(m.gpus.size(), size_t(kGpus));
  for (int a = 0; a < kGpus; ++a)
    for (int b = 0; b < kGpus; ++b) {
      EXPECT_EQ(gpuLink(m, a, b), expectedPciLink(a, b)) << a << "-" << b;
      EXPECT_EQ(nvlinkLanes(m, a, b), 0);
    }
  EXPECT_EQ(gpuLink(m, 0, kGpus), GpuLink::Unknown);
  EXPECT_EQ(gpuLink(m, -1, 0), GpuLink::Unknown);
  // An injected topology's lanes come only from STRATA_TOPO_NVLINK, never
  // from the NVML of the machine the test runs on.
  EXPECT_NE(m.nvlinkSource.find("injected"), std::string::npos) << m.nvlinkSource;
}

TEST_F(GpuTopology, NvlinkLanesFromTheVariable) {
  set("STRATA_TOPO_NVLINK", "0-1:4,2-3:2");
  Machine m = machine();
  EXPECT_EQ(m.nvlinkSource, "STRATA_TOPO_NVLINK");
  for (int a = 0; a < kGpus; ++a)
    for (int b = 0; b < kGpus; ++b) {
      const bool paired = (std::min(a, b) == 0 && std::max(a, b) == 1) || (std::min(a, b) == 2 && std::max(a, b) == 3);
      EXPECT_EQ(nvlinkLanes(m, a, b), paired ? (a + b == 1 ? 4 : 2) : 0) << a << "-" << b;
      EXPECT_EQ(gpuLink(m, a, b), paired ? GpuLink::NVLink : expectedPciLink(a, b)) << a << "-" << b;
    }
  EXPECT_EQ(linkText(gpuLink(m, 1, 0), nvlinkLanes(m, 1, 0)), "NV4");

  set("STRATA_TOPO_NVLINK", "all:18");
  m = machine();
  for (int a = 0; a < kGpus; ++a)
    for (int b = 0; b < kGpus; ++b) {
      EXPECT_EQ(nvlinkLanes(m, a, b), a == b ? 0 : 18);
      EXPECT_EQ(gpuLink(m, a, b), a == b ? GpuLink::Same : GpuLink::NVLink);
    }
}

TEST_F(GpuTopology, RefusedNvlinkSpecsAreWarnedAndIgnored) {
  for (const char* bad : {"0-0:4", "0-7:1", "0-1:0", "0-1", "all:", "all:0", "1-2:3;", "x"}) {
    set("STRATA_TOPO_NVLINK", bad);
    std::string warnings;
    const Machine m = machine(&warnings);
    EXPECT_NE(warnings.find("STRATA_TOPO_NVLINK='" + std::string(bad) + "'"), std::string::npos) << warnings;
    EXPECT_EQ(m.nvlinkSource, "none (STRATA_TOPO_NVLINK refused)") << bad;
    EXPECT_EQ(gpuLink(m, 0, 1), GpuLink::Pix) << bad;
  }
}

TEST(GpuWords, BusIdsAndLevels) {
  EXPECT_EQ(normalizeBusId("0000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalizeBusId("00000000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalizeBusId("3b:1f.7"), "0000:3b:1f.7");
  EXPECT_EQ(normalizeBusId("10000:01:00.0"), "10000:01:00.0") << "VMD domains are wider than 16 bits";
  for (const char* bad : {"", "3b", "3b:00", "0000:3b:00.8", "0000:3b:20.0", "0000:100:00.0", "0000:3b:00.0x",
                          " 0000:3b:00.0", "+3b:00.0", "0x00:3b:00.0", "0000:3b:00.0:1"})
    EXPECT_EQ(normalizeBusId(bad), "") << bad;
  const std::pair<const char*, GpuLink> levels[] = {{"LOC", GpuLink::Same}, {"NVL", GpuLink::NVLink},
                                                    {"PIX", GpuLink::Pix},  {"PXB", GpuLink::Pxb},
                                                    {"PHB", GpuLink::Phb},  {"NODE", GpuLink::Node},
                                                    {"SYS", GpuLink::Sys}};
  for (const auto& [name, link] : levels) {
    GpuLink parsed = GpuLink::Unknown;
    EXPECT_TRUE(parseLinkLevel(name, &parsed)) << name;
    EXPECT_EQ(parsed, link) << name;
  }
  GpuLink parsed;
  EXPECT_FALSE(parseLinkLevel("pix", &parsed));
  EXPECT_FALSE(parseLinkLevel("", &parsed));
}

TEST_F(GpuTopology, TheRanksGpuFromTheVariable) {
  unsetenv("STRATA_TOPO_GPU");
  params::reload();
  ::testing::internal::CaptureStderr();
  const std::string natural = gpuKey(probeHost(-1));
  EXPECT_EQ(natural, "") << "in an injected topology a rank has no GPU unless STRATA_TOPO_GPU names one";
  ::testing::internal::GetCapturedStderr();
  const std::pair<const char*, std::string> cases[] = {
      {"2", kBusIds[2]}, {"0000:21:00.0", kBusIds[4]}, {"0000:11:00.0", kBusIds[3]},
      {"00000000:04:00.0", kBusIds[1]}, {"0000:0a:00.0", "0000:0a:00.0"}};
  for (const auto& [value, want] : cases) {
    set("STRATA_TOPO_GPU", value);
    EXPECT_EQ(gpuKey(probeHost(-1)), want) << value;
  }
  for (const char* bad : {"7", "-1", "gpu0"}) {
    set("STRATA_TOPO_GPU", bad);
    ::testing::internal::CaptureStderr();
    const std::string got = gpuKey(probeHost(-1));
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(got, natural) << bad;
    EXPECT_NE(err.find("STRATA_TOPO_GPU='" + std::string(bad) + "'"), std::string::npos) << err;
  }
}

TEST(GpuHierarchy, RanksGroupByGpuWithinTheirSocket) {
  // Host A: ranks 0 and 2 share GPU 04, rank 1 has 03, rank 3 (package 1)
  // has 21, rank 4 none; host B: rank 5 on 03.
  const std::vector<HostInfo> all = {rank("A", "0000:04:00.0", 0), rank("A", "0000:03:00.0", 0),
                                     rank("A", "0000:04:00.0", 0), rank("A", "0000:21:00.0", 1),
                                     rank("A", "", 0),             rank("B", "0000:03:00.0", 0)};
  const Hierarchy h = buildHierarchy(all);
  ASSERT_EQ(h.nodes.size(), 2u);
  ASSERT_EQ(h.nodes[0].sockets.size(), 2u);
  const Socket& s0 = h.nodes[0].sockets[0];
  EXPECT_EQ(s0.ranks, (std::vector<int>{0, 1, 2, 4}));
  ASSERT_EQ(s0.gpus.size(), 2u);
  EXPECT_EQ(s0.gpus[0].busId, "0000:03:00.0");
  EXPECT_EQ(s0.gpus[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(s0.gpus[1].busId, "0000:04:00.0");
  EXPECT_EQ(s0.gpus[1].ranks, (std::vector<int>{0, 2}));
  const Socket& s1 = h.nodes[0].sockets[1];
  ASSERT_EQ(s1.gpus.size(), 1u);
  EXPECT_EQ(s1.gpus[0].ranks, (std::vector<int>{3}));
  ASSERT_EQ(h.nodes[1].sockets[0].gpus.size(), 1u);
  EXPECT_EQ(h.nodes[1].sockets[0].gpus[0].ranks, (std::vector<int>{5}));
}

// The estimate for 16 MiB over a link of `gbps` after `latencyUs`, as the
// cost model's variables define it.
double us(double latencyUs, double gbps) { return latencyUs + 16.0 * (1 << 20) / (gbps * 1e3); }

TEST_F(GpuTopology, TheCostModelPicksPerPair) {
  set("STRATA_TOPO_NVLINK", "0-2:3");
  set("STRATA_COST_SHM", "2,6");
  set("STRATA_COST_PCIE", "6,22");
  set("STRATA_COST_NVLINK", "4,20");
  set("STRATA_COST_DEVICE_COPY", "4,1000");
  const Machine m = machine();
  const GpuCosts c = costs();
  const double staging = us(2 * 6 + 2, 6);  // out and in over PCIe, across shm; shm's 6 GB/s is the slowest stage
  struct Case {
    int a, b;
    GpuLink link;
    double directUs;
    GpuRoute route;
  } cases[] = {
      {0, 0, GpuLink::Same, us(4, 1000), GpuRoute::Direct},
      {0, 2, GpuLink::NVLink, us(4, 60), GpuRoute::Direct},
      {0, 1, GpuLink::Pix, us(6, 22), GpuRoute::Direct},
      {1, 2, GpuLink::Phb, us(6, 11), GpuRoute::Direct},
      {1, 3, GpuLink::Node, us(6, 11), GpuRoute::Direct},
      {5, 6, GpuLink::Pxb, us(6, 22), GpuRoute::Direct},
      {1, 4, GpuLink::Sys, us(6, 5.5), GpuRoute::Staging},
  };
  for (const Case& k : cases) {
    const GpuPath p = chooseGpuPath(m, rank("A", kBusIds[k.a]), rank("A", kBusIds[k.b]), c);
    EXPECT_EQ(p.link, k.link) << k.a << "-" << k.b;
    EXPECT_NEAR(p.directUs, k.directUs, 1e-6) << k.a << "-" << k.b;
    EXPECT_NEAR(p.stagingUs, staging, 1e-6) << k.a << "-" << k.b;
    EXPECT_EQ(p.route, k.route) << k.a << "-" << k.b << ": " << p.why;
    EXPECT_NE(p.why.find(k.route == GpuRoute::Direct ? "beat staging" : "beats direct"), std::string::npos) << p.why;
  }
  EXPECT_EQ(chooseGpuPath(m, rank("A", kBusIds[0]), rank("A", kBusIds[2]), c).nvlinks, 3);

  // A GPU hwloc does not show: priced as through a host bridge.
  const GpuPath unknown = chooseGpuPath(m, rank("A", kBusIds[0]), rank("A", "0000:0a:00.0"), c);
  EXPECT_EQ(unknown.link, GpuLink::Unknown);
  EXPECT_NEAR(unknown.directUs, us(6, 11), 1e-6);
  EXPECT_NE(unknown.why.find("unknown PCI path"), std::string::npos) << unknown.why;

  // Nothing to choose: different hosts, or a rank without a GPU.
  EXPECT_EQ(chooseGpuPath(m, rank("A", kBusIds[0]), rank("B", kBusIds[0]), c).route, GpuRoute::None);
  EXPECT_EQ(chooseGpuPath(m, rank("A", kBusIds[0]), rank("A", ""), c).route, GpuRoute::None);
}

TEST_F(GpuTopology, FasterHostMemoryMovesTheChoice) {
  set("STRATA_COST_SHM", "2,50");  // staging now paced by PCIe's 22 GB/s, which a host bridge's 11 cannot beat
  const Machine m = machine();
  const GpuPath p = chooseGpuPath(m, rank("A", kBusIds[1]), rank("A", kBusIds[2]), costs());
  EXPECT_EQ(p.link, GpuLink::Phb);
  EXPECT_EQ(p.route, GpuRoute::Staging) << p.why;
  EXPECT_NEAR(p.stagingUs, us(2 * 6 + 2, 22), 1e-6);
}

TEST_F(GpuTopology, TheLevelStopsDirectCopies) {
  const Machine m = machine();
  set("STRATA_P2P_LEVEL", "PIX");
  GpuCosts c = costs();
  GpuPath p = chooseGpuPath(m, rank("A", kBusIds[0]), rank("A", kBusIds[1]), c);
  EXPECT_EQ(p.route, GpuRoute::Direct) << p.why;
  p = chooseGpuPath(m, rank("A", kBusIds[1]), rank("A", kBusIds[2]), c);
  EXPECT_EQ(p.route, GpuRoute::Staging);
  EXPECT_EQ(p.directUs, 0);
  EXPECT_NE(p.why.find("beyond STRATA_P2P_LEVEL=PIX"), std::string::npos) << p.why;

  set("STRATA_P2P_LEVEL", "LOC");
  c = costs();
  EXPECT_EQ(chooseGpuPath(m, rank("A", kBusIds[0]), rank("A", kBusIds[0]), c).route, GpuRoute::Direct);
  EXPECT_EQ(chooseGpuPath(m, rank("A", kBusIds[0]), rank("A", kBusIds[1]), c).route, GpuRoute::Staging);
}

TEST_F(GpuTopology, BadCostVariablesAreErrorsNamingThem) {
  const std::pair<const char*, const char*> bad[] = {
      {"STRATA_P2P_LEVEL", "pxb"}, {"STRATA_COST_PCIE", "6"}, {"STRATA_COST_NVLINK", "1,0"},
      {"STRATA_COST_DEVICE_COPY", "x,1"}};
  for (const auto& [name, value] : bad) {
    set(name, value);
    GpuCosts c;
    const Status s = gpuCostsFromParams(&c);
    EXPECT_EQ(s.code(), STRATA_ERR_INVALID_ARGUMENT) << name;
    EXPECT_NE(s.message().find(std::string(name) + "='" + value + "'"), std::string::npos) << s.message();
    unsetenv(name);
    params::reload();
  }
}

}  // namespace
}  // namespace strata::topo
