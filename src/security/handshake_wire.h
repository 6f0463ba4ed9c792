// The bytes of the handshake (handshake.h), as they cross the wire, and the
// checks that a message received from an unproven peer must pass before any
// field of it is used. Fixed-size messages: a peer cannot make us read more.
#pragma once

#include <cstddef>
#include <cstdint>

#include "secret.h"

namespace strata::security {

constexpr uint64_t kHandshakeMagic = 0x3148545541525453ull;  // "STRAUTH1"
constexpr uint32_t kHandshakeVersion = 1;
constexpr size_t kNonceBytes = 16;

// Bits of Claim::flags and ServerProof::flags.
constexpr uint32_t kFlagTls = 1;  // this side starts TLS right after the handshake

// Who the connecting side says it is. Both proofs cover it, so nobody on the
// path can change it, and a proof made for one purpose, communicator, rank
// or connection index is worth nothing for another.
struct Claim {
  uint64_t purpose;  // the bootstrap, or which transport's connection
  uint64_t commTag;  // the communicator (0 in the bootstrap, which names it)
  int32_t rank;      // the connecting rank
  int32_t peerRank;  // the rank it means to reach
  int32_t index;     // which of `count` connections to that rank
  int32_t count;     // connections per pair (the bootstrap: the world size)
  uint32_t flags;
  uint32_t reserved;
};

struct ClientHello {
  uint64_t magic;
  uint32_t version;
  uint32_t reserved;
  Claim claim;
  uint8_t nonce[kNonceBytes];
};

// The acceptor answers first, with its own nonce and a MAC over both, so a
// connector learns that it reached a holder of the secret before it proves
// anything itself.
struct ServerProof {
  uint64_t magic;
  uint32_t flags;
  uint32_t reserved;
  uint8_t nonce[kNonceBytes];
  Mac mac;
};

struct ClientProof {
  Mac mac;
};

// True when `bytes` is a hello this build understands. The claim's values are
// still the peer's word: the caller checks them against what it expects.
bool decodeClientHello(const void* data, size_t bytes, ClientHello* out);
bool decodeServerProof(const void* data, size_t bytes, ServerProof* out);

// The MACs both sides compute. The labels keep an acceptor's proof from ever
// serving as a connector's, so neither side can reflect the other's.
Mac serverMac(const Secret& secret, const ClientHello& hello, const ServerProof& proof);
Mac clientMac(const Secret& secret, const ClientHello& hello, const ServerProof& proof);

}  // namespace strata::security
