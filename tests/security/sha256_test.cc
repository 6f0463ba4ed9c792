// Our SHA-256 and HMAC-SHA256 against FIPS 180-4's example and against
// OpenSSL's, for every message length across several blocks and split
// across update() calls at every offset.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstring>
#include <random>
#include <vector>

#include "secret.h"
#include "sha256.h"

namespace strata::security {
namespace {

TEST(Sha256, FipsExampleAbc) {
  Sha256 h;
  h.update("abc", 3);
  const Sha256::Digest d = h.finish();
  const uint8_t expected[32] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
                                0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
                                0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
  EXPECT_EQ(std::memcmp(d.data(), expected, 32), 0);
}

TEST(Sha256, MatchesOpenSslAtEveryLengthAndSplit) {
  std::mt19937 rng(7);
  for (size_t n = 0; n < 200; ++n) {
    std::vector<uint8_t> m(n);
    for (auto& b : m) b = static_cast<uint8_t>(rng());
    uint8_t ref[32];
    unsigned len = 0;
    ASSERT_EQ(EVP_Digest(m.data(), n, ref, &len, EVP_sha256(), nullptr), 1);
    for (size_t split : {size_t(0), n / 3, n / 2, n}) {
      Sha256 h;
      h.update(m.data(), split);
      h.update(m.data() + split, n - split);
      const Sha256::Digest d = h.finish();
      ASSERT_EQ(std::memcmp(d.data(), ref, 32), 0) << "length " << n << ", split at " << split;
    }
  }
}

TEST(Sha256, HmacMatchesOpenSsl) {
  std::mt19937 rng(11);
  for (size_t n = 0; n < 300; n += 7) {
    Secret key;
    for (auto& b : key.bytes) b = static_cast<uint8_t>(rng());
    std::vector<uint8_t> m(n);
    for (auto& b : m) b = static_cast<uint8_t>(rng());
    uint8_t ref[32];
    unsigned len = 0;
    ASSERT_NE(HMAC(EVP_sha256(), key.bytes, kSecretBytes, m.data(), n, ref, &len), nullptr);
    const size_t cut = n / 2;
    const Mac ours = mac(key, {{m.data(), cut}, {m.data() + cut, n - cut}});
    ASSERT_EQ(std::memcmp(ours.data(), ref, 32), 0) << "length " << n;
  }
}

}  // namespace
}  // namespace strata::security
