// A peer's listening address as the socket mesh receives it from the
// out-of-band allgather (sockets::decodeListenRecord). Input: the record's
// bytes, zero-padded to its size.
#include <netinet/in.h>

#include "fuzz_support.h"
#include "socket_mesh.h"

using namespace strata;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  sockets::ListenRecord record;
  in.bytes(&record, sizeof(record));
  SockAddr addr;
  std::memset(&addr.storage, 0xa5, sizeof(addr.storage));
  addr.len = 0xa5a5a5a5;
  const SockAddr before = addr;
  const Status s = sockets::decodeListenRecord(record, 3, &addr);
  if (!s.isOk()) {
    FUZZ_CHECK(s.code() == STRATA_ERR_REMOTE);
    FUZZ_CHECK(addr.len == before.len);  // untouched on failure
    FUZZ_CHECK(std::memcmp(&addr.storage, &before.storage, sizeof(addr.storage)) == 0);
    return 0;
  }
  // Accepted: an IPv4 or IPv6 address whose length is its family's, copied
  // unchanged.
  const int family = record.storage.ss_family;
  FUZZ_CHECK(family == AF_INET || family == AF_INET6);
  FUZZ_CHECK(addr.len == (family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6)));
  FUZZ_CHECK(addr.len <= sizeof(addr.storage));
  FUZZ_CHECK(addr.storage.ss_family == family);
  FUZZ_CHECK(std::memcmp(&addr.storage, &record.storage, addr.len) == 0);
  FUZZ_CHECK(!toString(addr).empty());  // what the mesh logs and connects to
  return 0;
}
