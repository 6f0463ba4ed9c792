#include "handshake_wire.h"

#include <cstring>

namespace strata::security {
namespace {

template <typename Message>
bool decode(const void* data, size_t bytes, Message* out) {
  if (bytes != sizeof(Message)) return false;
  std::memcpy(out, data, sizeof(Message));
  return out->magic == kHandshakeMagic;
}

// What both MACs cover of the acceptor's answer: all but the MAC itself.
constexpr size_t kProofCovered = offsetof(ServerProof, mac);

}  // namespace

bool decodeClientHello(const void* data, size_t bytes, ClientHello* out) {
  return decode(data, bytes, out) && out->version == kHandshakeVersion;
}

bool decodeServerProof(const void* data, size_t bytes, ServerProof* out) { return decode(data, bytes, out); }

Mac serverMac(const Secret& secret, const ClientHello& hello, const ServerProof& proof) {
  static const char kLabel[] = "strata acceptor proof";
  return mac(secret, {{kLabel, sizeof(kLabel)}, {&hello, sizeof(hello)}, {&proof, kProofCovered}});
}

Mac clientMac(const Secret& secret, const ClientHello& hello, const ServerProof& proof) {
  static const char kLabel[] = "strata connector proof";
  return mac(secret, {{kLabel, sizeof(kLabel)}, {&hello, sizeof(hello)}, {&proof, kProofCovered}});
}

}  // namespace strata::security
