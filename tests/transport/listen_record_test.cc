// Decoding a peer's listening address (socket_mesh.h): the record arrives
// from another process over the out-of-band network, so a forged length or
// family must be refused before it is copied or connected to.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "socket_mesh.h"

namespace strata::sockets {
namespace {

ListenRecord ipv4Record() {
  ListenRecord r;
  std::memset(&r, 0, sizeof(r));
  auto* in = reinterpret_cast<sockaddr_in*>(&r.storage);
  in->sin_family = AF_INET;
  in->sin_port = htons(29500);
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  r.len = sizeof(sockaddr_in);
  return r;
}

TEST(ListenRecord, HonestAddressDecodes) {
  SockAddr addr;
  ASSERT_TRUE(decodeListenRecord(ipv4Record(), 3, &addr).isOk());
  EXPECT_EQ(addr.len, sizeof(sockaddr_in));
  EXPECT_EQ(toString(addr), "127.0.0.1:29500");
}

TEST(ListenRecord, ForgedLengthIsRefusedNamingTheRank) {
  for (socklen_t len : {socklen_t(sizeof(sockaddr_storage) + 1), socklen_t(1u << 30), socklen_t(0),
                        socklen_t(sizeof(sockaddr_in6))}) {
    ListenRecord forged = ipv4Record();
    forged.len = len;
    SockAddr addr;
    addr.len = 7;  // untouched on failure
    Status s = decodeListenRecord(forged, 3, &addr);
    ASSERT_FALSE(s.isOk()) << len;
    EXPECT_NE(s.message().find("rank 3"), std::string::npos) << s.message();
    EXPECT_EQ(addr.len, 7u);
  }
}

TEST(ListenRecord, UnknownFamilyIsRefused) {
  ListenRecord forged = ipv4Record();
  forged.storage.ss_family = AF_UNIX;
  SockAddr addr;
  EXPECT_FALSE(decodeListenRecord(forged, 5, &addr).isOk());
}

}  // namespace
}  // namespace strata::sockets
