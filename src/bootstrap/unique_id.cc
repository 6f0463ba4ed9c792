#include "unique_id.h"

#include <netinet/in.h>

#include <cstddef>
#include <cstring>

namespace strata::boot {
namespace {

constexpr uint64_t kMagic = 0x4449415441525453ull;  // "STRATAID"
constexpr uint32_t kVersion = 2;

struct Wire {
  uint64_t magic;
  uint32_t version;
  uint32_t rootLen;
  uint8_t root[sizeof(sockaddr_in6)];
  uint8_t secret[kSecretBytes];
  int32_t creatorPid;
  int32_t creatorFd;
  uint64_t creatorPidNamespace;
  uint64_t checksum;
};
static_assert(sizeof(Wire) <= STRATA_UNIQUE_ID_BYTES, "the id fits the public struct");

uint64_t fnv1a(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace

void encodeId(const IdContents& contents, strata_unique_id_t* id) {
  Wire w;
  std::memset(&w, 0, sizeof(w));
  w.magic = kMagic;
  w.version = kVersion;
  w.rootLen = static_cast<uint32_t>(contents.rootLen);
  std::memcpy(w.root, &contents.root, contents.rootLen);
  std::memcpy(w.secret, contents.secret.bytes, kSecretBytes);
  w.creatorPid = contents.creatorPid;
  w.creatorFd = contents.creatorFd;
  w.creatorPidNamespace = contents.creatorPidNamespace;
  w.checksum = fnv1a(&w, offsetof(Wire, checksum));
  std::memset(id, 0, sizeof(*id));
  std::memcpy(id->internal, &w, sizeof(w));
}

Status decodeId(const strata_unique_id_t& id, IdContents* contents) {
  Wire w;
  std::memcpy(&w, id.internal, sizeof(w));
  if (w.magic != kMagic || w.version != kVersion ||
      w.checksum != fnv1a(&w, offsetof(Wire, checksum)) || w.rootLen == 0 ||
      w.rootLen > sizeof(sockaddr_in6))
    return STRATA_INVALID_ARG(
        "id is not a strata unique id (bad magic, version or checksum): it must come unchanged "
        "from strata_get_unique_id");
  std::memset(contents, 0, sizeof(*contents));
  std::memcpy(&contents->root, w.root, w.rootLen);
  contents->rootLen = w.rootLen;
  std::memcpy(contents->secret.bytes, w.secret, kSecretBytes);
  contents->creatorPid = w.creatorPid;
  contents->creatorFd = w.creatorFd;
  contents->creatorPidNamespace = w.creatorPidNamespace;
  return Status::ok();
}

SockAddr rootAddress(const IdContents& contents) {
  SockAddr addr;
  std::memcpy(&addr.storage, &contents.root, contents.rootLen);
  addr.len = contents.rootLen;
  return addr;
}

}  // namespace strata::boot
