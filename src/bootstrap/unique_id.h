// The unique id: rank 0's bootstrap address and a random secret, sealed with a
// checksum so a corrupted id is refused before any connection is attempted.
#pragma once

#include <sys/socket.h>

#include <cstdint>

#include "secret.h"
#include "sockaddr.h"
#include "status.h"
#include "strata/strata.h"

namespace strata::boot {

using security::kSecretBytes;

struct IdContents {
  sockaddr_storage root;  // rank 0's listening address (IPv4 or IPv6)
  socklen_t rootLen;
  security::Secret secret;
  // Where the listening socket lives until rank 0 takes it: the creating
  // process, its descriptor, and its pid namespace (pids mean nothing outside).
  int32_t creatorPid;
  int32_t creatorFd;
  uint64_t creatorPidNamespace;
};

void encodeId(const IdContents& contents, strata_unique_id_t* id);
// INVALID_ARGUMENT if the id was not made by encodeId (or was damaged since).
Status decodeId(const strata_unique_id_t& id, IdContents* contents);

SockAddr rootAddress(const IdContents& contents);

}  // namespace strata::boot
