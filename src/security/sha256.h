// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the handshake's MACs.
// Our own rather than OpenSSL's: OpenSSL's first call in a process costs
// about a millisecond (library and provider set-up), paid by every rank on
// the path of every job start, while a handshake needs a few hundred bytes
// hashed. OpenSSL stays for TLS (STRATA_TLS=1) only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace strata::security {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;
  Sha256();
  void update(const void* data, size_t bytes);
  Digest finish();

 private:
  void compress(const uint8_t* block);
  uint32_t state_[8];
  uint64_t total_ = 0;  // bytes hashed so far
  uint8_t block_[64];
  size_t used_ = 0;  // bytes waiting in block_
};

}  // namespace strata::security
