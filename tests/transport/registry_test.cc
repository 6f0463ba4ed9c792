// The registry's agreement on transports: a rank keeps only those every
// rank's library has, as the HostInfos from the bootstrap list them, so that
// ranks built differently (with and without ucx or ib, for two CPUs) connect
// the same ones. A job of two real builds runs in tests/multiarch.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "transport.h"

namespace strata {
namespace {

std::string namesOf(const std::vector<std::unique_ptr<Transport>>& transports) {
  std::string names;
  for (const auto& t : transports) names += (names.empty() ? "" : " ") + std::string(t->name());
  return names;
}

// Two ranks' HostInfos: this library's, and one whose library lists `other`.
std::vector<topo::HostInfo> hostsWith(const topo::HostInfo& self, const char* other) {
  std::vector<topo::HostInfo> hosts(2, self);
  std::snprintf(hosts[1].transports, sizeof(hosts[1].transports), "%s", other);
  std::snprintf(hosts[1].hostname, sizeof(hosts[1].hostname), "%s", "other-host");
  return hosts;
}

TEST(Registry, MakeTransportsListsTheirNames) {
  topo::HostInfo self{};
  const auto transports = makeTransports(&self);
  EXPECT_EQ(std::string(self.transports), namesOf(transports));
  EXPECT_EQ(namesOf(transports).rfind("shm ", 0), 0u) << "shm comes first: " << namesOf(transports);
  EXPECT_NE((namesOf(transports) + ' ').find(" tcp "), std::string::npos) << namesOf(transports);
}

TEST(Registry, RanksBuiltAlikeKeepEveryTransport) {
  topo::HostInfo self{};
  auto transports = makeTransports(&self);
  const std::string all = namesOf(transports);
  std::vector<std::string> dropped;
  ASSERT_TRUE(keepCommonTransports(hostsWith(self, self.transports), 0, "", &transports, &dropped).isOk());
  EXPECT_EQ(namesOf(transports), all);
  EXPECT_TRUE(dropped.empty());
}

TEST(Registry, ATransportOneRankLacksIsDroppedEverywhereAndSaidOnce) {
  topo::HostInfo self{};
  makeTransports(&self);
  // Ranks 0 and 1 run this library; rank 2's has shm alone (and a transport
  // this one does not know). Every rank keeps shm alone; rank 0, the lowest
  // that has the others, says so, naming rank 2.
  auto hosts = hostsWith(self, "shm quic");
  hosts.insert(hosts.begin(), self);
  for (int rank : {0, 1}) {
    auto transports = makeTransports(&self);
    std::vector<std::string> dropped;
    ASSERT_TRUE(keepCommonTransports(hosts, rank, "", &transports, &dropped).isOk());
    EXPECT_EQ(namesOf(transports), "shm") << "rank " << rank;
    if (rank == 1) {
      EXPECT_TRUE(dropped.empty()) << "rank 0 says it, not rank 1: " << dropped[0];
      continue;
    }
    // One line for each of this library's transports but shm, each naming it.
    topo::HostInfo scratch{};
    const auto built = makeTransports(&scratch);
    ASSERT_EQ(dropped.size(), built.size() - 1);
    for (size_t i = 0; i < dropped.size(); ++i) {
      EXPECT_EQ(dropped[i].rfind(std::string(built[i + 1]->name()) + " is not built into", 0), 0u) << dropped[i];
      EXPECT_NE(dropped[i].find("rank 2's library (on other-host; it has: shm quic)"), std::string::npos)
          << dropped[i];
    }
  }
  // Where rank 0 is the one without, rank 1 says it.
  std::swap(hosts[0], hosts[2]);
  auto transports = makeTransports(&self);
  std::vector<std::string> dropped;
  ASSERT_TRUE(keepCommonTransports(hosts, 1, "", &transports, &dropped).isOk());
  ASSERT_FALSE(dropped.empty());
  EXPECT_NE(dropped[0].find("rank 0's library"), std::string::npos) << dropped[0];
}

TEST(Registry, ForcingATransportOneRankLacksFailsNamingIt) {
  topo::HostInfo self{};
  auto transports = makeTransports(&self);
  std::vector<std::string> dropped;
  const Status s = keepCommonTransports(hostsWith(self, "shm"), 0, "tcp", &transports, &dropped);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), STRATA_ERR_INVALID_USAGE);
  EXPECT_NE(s.message().find("STRATA_TRANSPORT=tcp"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("rank 1's library"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace strata
