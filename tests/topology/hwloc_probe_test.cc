// The hwloc probe with real hwloc: on this machine it agrees with what the
// kernel says (sysfs, sched_getaffinity); synthetic and XML topologies give
// the placements they describe; every refused value falls back, with a
// warning naming the variable, to the real machine or the affinity mask.
#include <gtest/gtest.h>
#include <hwloc.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "describe.h"
#include "host.h"
#include "hwloc_probe.h"
#include "params.h"

namespace strata::topo {
namespace {

namespace fs = std::filesystem;

// Two packages, one NUMA node and 32 MiB of L3 each, two cores per package.
constexpr const char* kTwoPackages =
    "package:2 [numa] l3:1(size=33554432) core:2 l2:1(size=1048576) pu:1";

std::vector<int> affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

class Probe : public ::testing::Test {
 protected:
  void TearDown() override { set({}, {}, {}); }

  // Sets (or, when empty, unsets) the three STRATA_TOPO_* variables.
  static void set(const std::string& file, const std::string& synthetic, const std::string& cpus) {
    const std::pair<const char*, const std::string*> vars[] = {
        {"STRATA_TOPO_FILE", &file}, {"STRATA_TOPO_SYNTHETIC", &synthetic}, {"STRATA_TOPO_CPUS", &cpus}};
    for (const auto& [name, value] : vars) {
      if (value->empty()) unsetenv(name);
      else setenv(name, value->c_str(), 1);
    }
    params::reload();
  }

  // The probe, and the warnings it logged.
  static TopologyProbe probe(std::string* warnings = nullptr) {
    ::testing::internal::CaptureStderr();
    TopologyProbe p = probeTopology(affinity());
    std::string err = ::testing::internal::GetCapturedStderr();
    if (warnings) *warnings = err;
    return p;
  }

  static TopologyProbe realMachine() {
    set({}, {}, {});
    return probe();
  }
};

void expectSameMachine(const Machine& a, const Machine& b) {
  EXPECT_EQ(a.packages, b.packages);
  EXPECT_EQ(a.numaNodes, b.numaNodes);
  EXPECT_EQ(a.cores, b.cores);
  EXPECT_EQ(a.pus, b.pus);
  EXPECT_EQ(a.l3BytesPerPackage, b.l3BytesPerPackage);
  EXPECT_EQ(a.l2Bytes, b.l2Bytes);
  EXPECT_EQ(a.nics.size(), b.nics.size());
}

int countDirs(const std::string& dir, const std::string& prefix) {
  int n = 0;
  if (!fs::exists(dir)) return 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename();
    if (name.rfind(prefix, 0) == 0 && name.size() > prefix.size() && isdigit(name[prefix.size()])) ++n;
  }
  return n;
}

TEST_F(Probe, RealMachineAgreesWithTheKernel) {
  TopologyProbe p = realMachine();
  const Machine& m = p.machine;
  EXPECT_EQ(m.source, "this machine");
  EXPECT_EQ(m.pus, sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_GE(m.cores, 1);
  EXPECT_LE(m.cores, m.pus);
  // Packages: the distinct physical_package_id of the online cpus.
  std::set<std::string> packageIds;
  for (const auto& e : fs::directory_iterator("/sys/devices/system/cpu")) {
    std::ifstream f(e.path() / "topology" / "physical_package_id");
    std::string id;
    if (f >> id) packageIds.insert(id);
  }
  if (!packageIds.empty()) {
    EXPECT_EQ(m.packages, static_cast<int>(packageIds.size()));
  }
  const int sysNodes = countDirs("/sys/devices/system/node", "node");
  EXPECT_EQ(m.numaNodes, sysNodes > 0 ? sysNodes : 1);
  EXPECT_EQ(m.l3BytesPerPackage.size(), static_cast<size_t>(m.packages));
  for (const IoDevice& nic : m.nics) EXPECT_TRUE(fs::exists("/sys/class/net/" + nic.name)) << nic.name;
  if (!m.numaDistances.empty()) {
    EXPECT_EQ(m.numaDistances.size(), size_t(m.numaNodes) * m.numaNodes);
  }

  const Placement& at = p.placement;
  EXPECT_FALSE(at.fromTopoCpus);
  EXPECT_GE(at.package, -1);
  EXPECT_LT(at.package, m.packages);
  EXPECT_GE(at.numa, -1);
  EXPECT_LT(at.numa, m.numaNodes);
  if (m.packages == 1) {
    EXPECT_EQ(at.package, 0);  // whatever the mask, it lies in the one package
  }
  if (m.nics.empty()) {
    EXPECT_EQ(at.nic, "");
  } else {
    EXPECT_TRUE(fs::exists("/sys/class/net/" + at.nic)) << at.nic;
  }

  // probeHost carries the same placement.
  HostInfo self = probeHost(-1);
  EXPECT_EQ(self.package, at.package);
  EXPECT_EQ(self.numaNode, at.numa);
  EXPECT_EQ(self.packages, m.packages);
  EXPECT_EQ(self.numaNodes, m.numaNodes);
  EXPECT_EQ(self.cores, m.cores);
  EXPECT_EQ(self.pus, m.pus);
  EXPECT_EQ(std::string(self.nic), at.nic);
}

TEST_F(Probe, SyntheticTopologyWithTopoCpus) {
  set({}, "package:2 numa:1 core:2 pu:1", "2-3");
  TopologyProbe p = probe();
  EXPECT_EQ(p.machine.source, "synthetic 'package:2 numa:1 core:2 pu:1'");
  EXPECT_EQ(p.machine.packages, 2);
  EXPECT_EQ(p.machine.numaNodes, 2);
  EXPECT_EQ(p.machine.cores, 4);
  EXPECT_EQ(p.machine.pus, 4);
  EXPECT_TRUE(p.placement.fromTopoCpus);
  EXPECT_EQ(p.placement.cpus, "2-3");
  EXPECT_EQ(p.placement.package, 1);
  EXPECT_EQ(p.placement.numa, 1);

  HostInfo self = probeHost(-1);
  EXPECT_EQ(self.package, 1);
  EXPECT_EQ(self.packages, 2);
  EXPECT_EQ(self.cores, 4);

  // Spanning both packages: no single one.
  set({}, "package:2 numa:1 core:2 pu:1", "1-2");
  EXPECT_EQ(probe().placement.package, -1);
  EXPECT_EQ(probe().placement.numa, -1);
}

TEST_F(Probe, CachesFromTheSyntheticString) {
  set({}, kTwoPackages, "0");
  TopologyProbe p = probe();
  EXPECT_EQ(p.machine.l3BytesPerPackage, (std::vector<uint64_t>{32ull << 20, 32ull << 20}));
  EXPECT_EQ(p.machine.l2Bytes, 1ull << 20);
  EXPECT_EQ(p.placement.package, 0);
  EXPECT_NE(describeMachine(p).find("L3 32 MiB in package 1"), std::string::npos) << describeMachine(p);
}

// An XML file hwloc itself writes (of a synthetic topology, with a NUMA
// distance matrix added) describes the same machine when read back.
TEST_F(Probe, XmlFileWrittenByHwloc) {
  hwloc_topology_t t;
  ASSERT_EQ(hwloc_topology_init(&t), 0);
  ASSERT_EQ(hwloc_topology_set_synthetic(t, kTwoPackages), 0);
  ASSERT_EQ(hwloc_topology_load(t), 0);
  hwloc_obj_t numa[2] = {hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, 0),
                         hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, 1)};
  hwloc_uint64_t values[4] = {10, 21, 21, 10};
  hwloc_distances_add_handle_t handle = hwloc_distances_add_create(
      t, "test", HWLOC_DISTANCES_KIND_FROM_USER | HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0);
  ASSERT_NE(handle, nullptr);
  ASSERT_EQ(hwloc_distances_add_values(t, handle, 2, numa, values, 0), 0);
  ASSERT_EQ(hwloc_distances_add_commit(t, handle, 0), 0);
  char path[] = "/tmp/strata_topo_XXXXXX.xml";
  const int fd = mkstemps(path, 4);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(hwloc_topology_export_xml(t, path, 0), 0);
  hwloc_topology_destroy(t);

  set({}, kTwoPackages, "2-3");
  TopologyProbe synthetic = probe();
  set(path, {}, "2-3");
  TopologyProbe fromFile = probe();
  // STRATA_TOPO_FILE wins over STRATA_TOPO_SYNTHETIC.
  set(path, "package:3 core:1 pu:1", "2-3");
  TopologyProbe both = probe();
  unlink(path);

  EXPECT_EQ(fromFile.machine.source, "file '" + std::string(path) + "'");
  expectSameMachine(synthetic.machine, fromFile.machine);
  expectSameMachine(fromFile.machine, both.machine);
  EXPECT_TRUE(synthetic.machine.numaDistances.empty());
  EXPECT_EQ(fromFile.machine.numaDistances, (std::vector<uint64_t>{10, 21, 21, 10}));
  EXPECT_EQ(both.machine.numaDistances, fromFile.machine.numaDistances);
  EXPECT_EQ(fromFile.placement.package, 1);
  EXPECT_EQ(fromFile.placement.numa, 1);
  EXPECT_EQ(both.placement.package, 1);
}

TEST_F(Probe, RefusedTopologiesFallBackToThisMachine) {
  const TopologyProbe real = realMachine();
  char garbage[] = "/tmp/strata_topo_XXXXXX.xml";
  const int fd = mkstemps(garbage, 4);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "not xml\n", 8), 8);
  close(fd);
  struct Case {
    std::string file, synthetic, variable;
  };
  for (const Case& c : {Case{"/nonexistent/topo.xml", "", "STRATA_TOPO_FILE='/nonexistent/topo.xml'"},
                        Case{garbage, "", "STRATA_TOPO_FILE='" + std::string(garbage) + "'"},
                        Case{"", "bogus:3", "STRATA_TOPO_SYNTHETIC='bogus:3'"},
                        Case{"", "package:2 core:0", "STRATA_TOPO_SYNTHETIC='package:2 core:0'"}}) {
    SCOPED_TRACE(c.variable);
    set(c.file, c.synthetic, {});
    std::string warnings;
    TopologyProbe p = probe(&warnings);
    EXPECT_NE(warnings.find(c.variable), std::string::npos) << warnings;
    EXPECT_EQ(p.machine.source, "this machine");
    expectSameMachine(p.machine, real.machine);
    EXPECT_EQ(p.machine.numaDistances, real.machine.numaDistances);
    EXPECT_EQ(p.placement.package, real.placement.package);
    // Loaded once: a second probe with the same values warns no more.
    probe(&warnings);
    EXPECT_EQ(warnings.find("STRATA_TOPO"), std::string::npos) << warnings;
  }
  unlink(garbage);
}

TEST_F(Probe, RefusedCpuListsFallBackToTheAffinityMask) {
  for (const char* cpus : {"2-x", "3-1", "1,,2", "-1", "x", "99", "2-99999999999999999999"}) {
    SCOPED_TRACE(cpus);
    set({}, "package:2 numa:1 core:2 pu:1", cpus);
    std::string warnings;
    TopologyProbe p = probe(&warnings);
    EXPECT_NE(warnings.find("STRATA_TOPO_CPUS='" + std::string(cpus) + "'"), std::string::npos) << warnings;
    EXPECT_FALSE(p.placement.fromTopoCpus);
    EXPECT_EQ(p.machine.packages, 2);  // the topology itself was fine
  }
}

TEST_F(Probe, ValidCpuLists) {
  set({}, "package:2 core:4 pu:1", "0-1,3");
  EXPECT_EQ(probe().placement.cpus, "0-1,3");
  EXPECT_EQ(probe().placement.package, 0);
  set({}, "package:2 core:4 pu:1", "5,7");
  EXPECT_EQ(probe().placement.package, 1);
}

}  // namespace
}  // namespace strata::topo
