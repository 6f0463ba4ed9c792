// What precedes every message on a tcp connection, and the check a receiver
// makes of it before it reads the payload: the header comes from the peer,
// and its length decides how many bytes land in a slot.
#pragma once

#include <cstddef>
#include <cstdint>

#include "status.h"

namespace strata::tcp {

struct WireHeader {
  uint64_t seq;    // SlotTag: checked against the receiver's own by the executor
  uint64_t desc;
  uint64_t bytes;  // the payload that follows
};
static_assert(sizeof(WireHeader) == 24, "the header's size is part of the wire format");

// A header from the peer that `peerName()` names, refused when its payload
// would not fit a slot of `slotBytes` (a peer with another STRATA_SLOT_BYTES,
// or a corrupted stream). The name is built only for the error.
template <class PeerName>
Status checkWireHeader(const WireHeader& h, size_t slotBytes, const PeerName& peerName) {
  if (h.bytes > slotBytes)
    return makeErrorQuiet(STRATA_ERR_INTERNAL, "%s sent a %llu-byte chunk for %zu-byte slots", peerName().c_str(),
                          static_cast<unsigned long long>(h.bytes), slotBytes);
  return Status::ok();
}

}  // namespace strata::tcp
