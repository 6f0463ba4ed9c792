// The handshake's messages as an acceptor and a connector receive them from a
// peer that has proven nothing yet (security/handshake_wire.h): the connector's
// hello, the acceptor's answer. Input: one byte choosing which, then the
// message's bytes exactly as they arrived (any length).
#include "fuzz_support.h"
#include "handshake_wire.h"

using namespace strata;
using namespace strata::security;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t* message = data + 1;
  const size_t bytes = size - 1;
  Secret secret;
  std::memset(secret.bytes, 0x42, sizeof(secret.bytes));
  if (data[0] & 1) {
    ServerProof proof;
    if (!decodeServerProof(message, bytes, &proof)) return 0;
    // Accepted: exactly one answer's bytes, with the magic, copied unchanged.
    FUZZ_CHECK(bytes == sizeof(ServerProof));
    FUZZ_CHECK(proof.magic == kHandshakeMagic);
    FUZZ_CHECK(std::memcmp(&proof, message, sizeof(proof)) == 0);
    // Whatever it holds, the connector's check of it is a pure function of
    // its bytes: the same answer to the same hello checks out alike.
    ClientHello hello;
    std::memset(&hello, 0, sizeof(hello));
    FUZZ_CHECK(serverMac(secret, hello, proof) == serverMac(secret, hello, proof));
    return 0;
  }
  ClientHello hello;
  if (!decodeClientHello(message, bytes, &hello)) return 0;
  FUZZ_CHECK(bytes == sizeof(ClientHello));
  FUZZ_CHECK(hello.magic == kHandshakeMagic && hello.version == kHandshakeVersion);
  FUZZ_CHECK(std::memcmp(&hello, message, sizeof(hello)) == 0);
  // The two MACs over one exchange never coincide: an acceptor's answer can
  // never serve as a connector's proof.
  ServerProof proof;
  std::memset(&proof, 0, sizeof(proof));
  FUZZ_CHECK(serverMac(secret, hello, proof) != clientMac(secret, hello, proof));
  return 0;
}
