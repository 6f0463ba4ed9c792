// What each message of a conformance test holds, computed alike and
// independently by both ends: the receiver checks what arrived against this,
// never against anything the sender told it.
//
// A stream is one direction of one channel (its sender's rank and the
// channel); message m of a stream has its own tag and its own bytes, so a
// message delivered twice, out of order, from a stale slot or from another
// stream does not match.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "connector.h"

namespace strata::test {

struct Stream {
  int sender;
  int channel;
};

SlotTag tagOf(const Stream& s, uint64_t m);

// Writes message m's first `bytes` bytes to dst.
void fillMessage(void* dst, size_t bytes, const Stream& s, uint64_t m);

// Empty if (data, bytes, tag) is message m of `s`, `wantBytes` long; else
// what differs, for a failure message.
std::string checkMessage(const void* data, size_t bytes, const SlotTag& tag, const Stream& s, uint64_t m,
                         size_t wantBytes);

}  // namespace strata::test
