#include "secret.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <vector>

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
  // The messages are a few hundred bytes: one buffer and OpenSSL's one-shot
  // HMAC (its streaming context is deprecated in OpenSSL 3).
  std::vector<unsigned char> message;
  for (const Bytes& part : parts) {
    const auto* p = static_cast<const unsigned char*>(part.data);
    message.insert(message.end(), p, p + part.size);
  }
  Mac out{};
  unsigned len = 0;
  if (!HMAC(EVP_sha256(), key.bytes, kSecretBytes, message.data(), message.size(), out.data(), &len) ||
      len != out.size())
    out.fill(0);  // never equals a peer's MAC made by a working HMAC
  return out;
}

Status secretFromText(const std::string& text, const char* source, Secret* out) {
  if (text.size() < kSecretBytes)
    return STRATA_INVALID_ARG("%s holds %zu characters; a secret needs at least %zu (e.g. openssl rand -hex 16)",
                              source, text.size(), kSecretBytes);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  std::memcpy(out->bytes, digest, kSecretBytes);
  return Status::ok();
}

}  // namespace strata::security
