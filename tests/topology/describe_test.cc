// The tree and JSON descriptions: the tree reads as documented, and the JSON
// is valid for a real parser (python3's json) even with hostile host names.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "describe.h"
#include "rank_on.h"

namespace strata::topo {
namespace {


// Runs python3 on `script` with the JSON document as argv[1]; its stdout.
std::string python(const std::string& json, const std::string& script) {
  const char* python3 = std::getenv("PYTHON3");
  if (!python3) return "no python3";
  char path[] = "/tmp/strata_describe_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "mkstemp failed";
  if (write(fd, json.data(), json.size()) != static_cast<ssize_t>(json.size())) return "write failed";
  close(fd);
  const std::string command = std::string(python3) + " -c '" + script + "' " + path + " 2>&1";
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[512];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    pclose(p);
  }
  unlink(path);
  return out;
}

TEST(Describe, Tree) {
  std::vector<HostInfo> all = {rankOn("a", "hostA", 0, "eth0"), rankOn("a", "hostA", 0, "eth0"),
                               rankOn("b", "hostB", 1, ""), rankOn("a", "hostA", 1, "eth1"),
                               rankOn("b", "hostB", -1, "")};
  EXPECT_EQ(describeTree(buildHierarchy(all), all),
            "cluster: 2 nodes, 5 ranks\n"
            "  node 0 hostA (2 packages, 2 NUMA, 4 cores, 4 PUs, nics eth0 eth1)\n"
            "    socket 0: ranks 0 1\n"
            "    socket 1: rank 3\n"
            "  node 1 hostB (2 packages, 2 NUMA, 4 cores, 4 PUs, no nic)\n"
            "    socket 1: rank 2\n"
            "    socket ?: rank 4 (cpus span packages, or the package is unknown)\n");
}

TEST(Describe, TreeShowsHostIdsWhenHostnamesRepeat) {
  std::vector<HostInfo> all = {rankOn("A", "box", 0, "eth0"), rankOn("B", "box", 0, "eth0")};
  const std::string tree = describeTree(buildHierarchy(all), all);
  EXPECT_NE(tree.find("node 0 box [host id A] (2 packages"), std::string::npos) << tree;
  EXPECT_NE(tree.find("node 1 box [host id B] (2 packages"), std::string::npos) << tree;
}

TEST(Describe, JsonQuote) {
  EXPECT_EQ(jsonQuote("eth0"), "\"eth0\"");
  EXPECT_EQ(jsonQuote("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\u000ad\\u0001\"");
  EXPECT_EQ(jsonQuote("h\xc3\xa9"), "\"h\xc3\xa9\"");         // UTF-8 stays
  EXPECT_EQ(jsonQuote("h\xff\xc3"), "\"h\\ufffd\\ufffd\"");   // stray bytes do not
  // Nor do sequences that are not well-formed UTF-8 (found by tests/fuzz/host_info_fuzz):
  // overlong forms, surrogates, code points past U+10FFFF.
  EXPECT_EQ(jsonQuote("\xc0\x80"), "\"\\ufffd\\ufffd\"");
  EXPECT_EQ(jsonQuote("\xe0\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
  EXPECT_EQ(jsonQuote("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
  EXPECT_EQ(jsonQuote("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
  EXPECT_EQ(jsonQuote("\xed\x9f\xbf\xf4\x8f\xbf\xbf"), "\"\xed\x9f\xbf\xf4\x8f\xbf\xbf\"");  // the last ones that are
}

TEST(Describe, JsonParses) {
  if (!std::getenv("PYTHON3")) GTEST_SKIP() << "PYTHON3 is not set";
  std::vector<HostInfo> all = {rankOn("id\"1", "we\"ird\\name\n", 0, "eth0"), rankOn("id\xff", "h\xff", 1, ""),
                               rankOn("id\"1", "we\"ird\\name\n", -1, "eth0")};
  const std::string json = describeJson(buildHierarchy(all), all);
  const std::string summary = python(
      json,
      "import json, sys\n"
      "d = json.load(open(sys.argv[1]))\n"
      "print(d[\"nranks\"], [n[\"ranks\"] for n in d[\"nodes\"]],\n"
      "      [[(s[\"package\"], s[\"ranks\"]) for s in n[\"sockets\"]] for n in d[\"nodes\"]],\n"
      "      [r[\"socket\"] for r in d[\"ranks\"]], repr(d[\"nodes\"][0][\"hostname\"]))");
  EXPECT_EQ(summary,
            "3 [[0, 2], [1]] [[(0, [0]), (-1, [2])], [(1, [1])]] [0, 0, 1] 'we\"ird\\\\name\\n'\n")
      << json;

  TopologyProbe probe;
  probe.machine.source = "file '/tmp/x\".xml'";
  probe.machine.packages = 1;
  probe.machine.l3BytesPerPackage = {1 << 25};
  probe.machine.nics.push_back({"eth0", "", "0000:00:03.0", 0, 0});
  probe.machine.numaDistances = {10};
  probe.placement.cpus = "0-1";
  EXPECT_EQ(python(describeMachineJson(probe),
                   "import json, sys\n"
                   "d = json.load(open(sys.argv[1]))\n"
                   "print(d[\"source\"], d[\"nics\"][0][\"pciBusId\"], d[\"placement\"][\"cpus\"])"),
            "file '/tmp/x\".xml' 0000:00:03.0 0-1\n");
}

}  // namespace
}  // namespace strata::topo
