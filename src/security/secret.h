// The job's secret: 128 random bits that every rank of one communicator holds
// (from a unique id, the launcher, STRATA_SECRET or a file) and no outsider
// does. It never crosses the wire; peers prove they hold it with MACs keyed
// by it (handshake.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "status.h"

namespace strata::security {

constexpr size_t kSecretBytes = 16;

struct Secret {
  uint8_t bytes[kSecretBytes];
};

using Mac = std::array<uint8_t, 32>;  // HMAC-SHA256

// Fills `out` from the kernel's random pool.
Status randomBytes(void* out, size_t bytes);

// Equal bytes, in a time that does not depend on where they first differ, so
// a peer timing rejections learns nothing of the expected value.
bool sameBytes(const void* a, const void* b, size_t bytes);

// HMAC-SHA256 keyed by the secret over the concatenation of `parts`.
struct Bytes {
  const void* data;
  size_t size;
};
Mac mac(const Secret& key, std::initializer_list<Bytes> parts);

// A secret from text a user supplies (STRATA_SECRET, a secret file): any
// length of at least 16 characters, hashed down, so a hex string, a
// passphrase or raw random bytes all work alike.
Status secretFromText(const std::string& text, const char* source, Secret* out);

}  // namespace strata::security
