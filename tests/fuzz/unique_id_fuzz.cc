// The unique id (boot::decodeId): 128 bytes a user carries from rank 0 to
// every rank (a broadcast, a file, PMIx), refused unless strata_get_unique_id
// made it. Input: a mode byte, then for an even mode the id's bytes
// (zero-padded) and for an odd one the fields of an id to seal with encodeId
// first, so the fuzzer also reaches what lies behind the checksum.
#include <netinet/in.h>

#include "fuzz_support.h"
#include "unique_id.h"

using namespace strata;

namespace {

bool sameContents(const boot::IdContents& a, const boot::IdContents& b) {
  return a.rootLen == b.rootLen && std::memcmp(&a.root, &b.root, a.rootLen) == 0 &&
         std::memcmp(a.secret.bytes, b.secret.bytes, sizeof(a.secret.bytes)) == 0 && a.creatorPid == b.creatorPid &&
         a.creatorFd == b.creatorFd && a.creatorPidNamespace == b.creatorPidNamespace;
}

// An accepted id: a root address that fits its storage, and an id that
// encodes back to the same contents.
void checkAccepted(const boot::IdContents& c) {
  FUZZ_CHECK(c.rootLen > 0 && c.rootLen <= sizeof(sockaddr_in6));
  const SockAddr root = boot::rootAddress(c);
  FUZZ_CHECK(root.len == c.rootLen);
  (void)toString(root);  // logged when a rank connects to it
  strata_unique_id_t again;
  boot::encodeId(c, &again);
  boot::IdContents back;
  FUZZ_CHECK(boot::decodeId(again, &back).isOk());
  FUZZ_CHECK(sameContents(c, back));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint8_t mode = in.take<uint8_t>();
  if (mode % 2 == 0) {
    strata_unique_id_t id;
    in.bytes(&id, sizeof(id));
    boot::IdContents c;
    std::memset(&c, 0x5a, sizeof(c));
    const boot::IdContents before = c;
    if (boot::decodeId(id, &c).isOk())
      checkAccepted(c);
    else
      FUZZ_CHECK(std::memcmp(&c, &before, sizeof(c)) == 0);  // untouched on failure
    return 0;
  }
  boot::IdContents c;
  std::memset(&c, 0, sizeof(c));
  c.rootLen = in.take<uint8_t>() % (sizeof(sockaddr_in6) + 1);  // what encodeId is given: a real address
  in.bytes(&c.root, c.rootLen);
  in.bytes(c.secret.bytes, sizeof(c.secret.bytes));
  c.creatorPid = in.take<int32_t>();
  c.creatorFd = in.take<int32_t>();
  c.creatorPidNamespace = in.take<uint64_t>();
  strata_unique_id_t id;
  boot::encodeId(c, &id);
  boot::IdContents back;
  const bool ok = boot::decodeId(id, &back).isOk();
  FUZZ_CHECK(ok == (c.rootLen != 0));  // a sealed id with an address decodes
  if (ok) {
    FUZZ_CHECK(sameContents(c, back));
    checkAccepted(back);
  }
  return 0;
}
