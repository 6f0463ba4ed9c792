// The hierarchy every rank builds from the gathered HostInfos, on hand-made
// jobs: balanced, uneven, interleaved, and ranks bound to no single package.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "hierarchy.h"
#include "rank_on.h"

namespace strata::topo {
namespace {


std::vector<int> packagesOf(const Node& node) {
  std::vector<int> out;
  for (const Socket& s : node.sockets) out.push_back(s.package);
  return out;
}

TEST(Hierarchy, TwoNodesTwoSocketsTwoRanks) {
  std::vector<HostInfo> all;
  for (const char* host : {"A", "B"})
    for (int package : {0, 0, 1, 1}) all.push_back(rankOn(host, host, package, "eth0"));
  Hierarchy h = buildHierarchy(all);
  ASSERT_EQ(h.nodes.size(), 2u);
  EXPECT_TRUE(h.uniform());
  EXPECT_EQ(h.nodeOf, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(h.localRank, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(h.socketOf, (std::vector<int>{0, 0, 1, 1, 0, 0, 1, 1}));
  EXPECT_EQ(h.nodes[1].ranks, (std::vector<int>{4, 5, 6, 7}));
  for (const Node& node : h.nodes) {
    EXPECT_EQ(packagesOf(node), (std::vector<int>{0, 1}));
    EXPECT_EQ(node.nics, (std::vector<std::string>{"eth0"}));
  }
  EXPECT_EQ(h.nodes[0].sockets[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(h.nodes[0].sockets[1].ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(h.nodes[1].sockets[1].ranks, (std::vector<int>{6, 7}));
}

// Three ranks on A (package 1, spanning, package 0), one on B.
TEST(Hierarchy, UnevenNodesAndAnUnboundRank) {
  std::vector<HostInfo> all = {rankOn("A", "A", 1, "ib0"), rankOn("A", "A", -1, "eth0"), rankOn("A", "A", 0, "ib0"),
                               rankOn("B", "B", 0)};
  Hierarchy h = buildHierarchy(all);
  ASSERT_EQ(h.nodes.size(), 2u);
  EXPECT_FALSE(h.uniform());
  EXPECT_EQ(h.nodes[0].ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(h.nodes[1].ranks, (std::vector<int>{3}));
  EXPECT_EQ(h.localRank, (std::vector<int>{0, 1, 2, 0}));
  // Ascending package, the spanning rank's entry last.
  EXPECT_EQ(packagesOf(h.nodes[0]), (std::vector<int>{0, 1, -1}));
  EXPECT_EQ(h.socketOf, (std::vector<int>{1, 2, 0, 0}));
  EXPECT_EQ(h.nodes[0].sockets[2].ranks, (std::vector<int>{1}));
  EXPECT_EQ(h.nodes[0].nics, (std::vector<std::string>{"ib0", "eth0"}));
  EXPECT_TRUE(h.nodes[1].nics.empty());
}

// Nodes of ranks A B A B: nodes in order of their lowest rank.
TEST(Hierarchy, InterleavedRanks) {
  std::vector<HostInfo> all = {rankOn("A", "A", 0), rankOn("B", "B", 1), rankOn("A", "A", 1), rankOn("B", "B", 1)};
  Hierarchy h = buildHierarchy(all);
  ASSERT_EQ(h.nodes.size(), 2u);
  EXPECT_TRUE(h.uniform());
  EXPECT_EQ(h.nodes[0].hostKey, "A");
  EXPECT_EQ(h.nodes[0].ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(h.nodes[1].ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(h.nodeOf, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(h.localRank, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(packagesOf(h.nodes[0]), (std::vector<int>{0, 1}));
  EXPECT_EQ(packagesOf(h.nodes[1]), (std::vector<int>{1}));
  EXPECT_EQ(h.socketOf, (std::vector<int>{0, 0, 1, 0}));
  EXPECT_EQ(h.nodes[1].sockets[0].ranks, (std::vector<int>{1, 3}));
}

TEST(Hierarchy, Empty) {
  Hierarchy h = buildHierarchy({});
  EXPECT_TRUE(h.nodes.empty());
  EXPECT_EQ(h.nranks(), 0);
}

}  // namespace
}  // namespace strata::topo
