#include "secret.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "sha256.h"

namespace strata::security {

Status randomBytes(void* out, size_t bytes) {
  auto* p = static_cast<uint8_t*>(out);
  while (bytes > 0) {
    ssize_t n = getrandom(p, bytes, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return STRATA_ERROR(STRATA_ERR_SYSTEM, "getrandom failed: %s", errnoText(errno).c_str());
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return Status::ok();
}

bool sameBytes(const void* a, const void* b, size_t bytes) {
  const auto* x = static_cast<const volatile uint8_t*>(a);
  const auto* y = static_cast<const volatile uint8_t*>(b);
  uint8_t diff = 0;
  for (size_t i = 0; i < bytes; ++i) diff |= x[i] ^ y[i];
  return diff == 0;
}

Mac mac(const Secret& key, std::initializer_list<Bytes> parts) {
  // RFC 2104 with a key shorter than SHA-256's 64-byte block: the key
  // zero-padded to a block, xored with the inner and outer pads.
  uint8_t inner[64] = {}, outer[64] = {};
  std::memcpy(inner, key.bytes, kSecretBytes);
  std::memcpy(outer, key.bytes, kSecretBytes);
  for (size_t i = 0; i < sizeof(inner); ++i) {
    inner[i] ^= 0x36;
    outer[i] ^= 0x5c;
  }
  Sha256 first;
  first.update(inner, sizeof(inner));
  for (const Bytes& part : parts) first.update(part.data, part.size);
  const Sha256::Digest digest = first.finish();
  Sha256 second;
  second.update(outer, sizeof(outer));
  second.update(digest.data(), digest.size());
  return second.finish();
}

Status secretFromText(const std::string& text, const char* source, Secret* out) {
  if (text.size() < kSecretBytes)
    return STRATA_INVALID_ARG("%s holds %zu characters; a secret needs at least %zu (e.g. openssl rand -hex 16)",
                              source, text.size(), kSecretBytes);
  Sha256 hash;
  hash.update(text.data(), text.size());
  const Sha256::Digest digest = hash.finish();
  std::memcpy(out->bytes, digest.data(), kSecretBytes);
  return Status::ok();
}

}  // namespace strata::security
