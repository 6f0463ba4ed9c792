// The tcp receiver's frames (tcp_wire.h): a stream of 24-byte headers, each
// followed by its payload, read into slots whose size the receiver chose;
// each header's tag is what the executor then compares with its own and,
// when they differ, describes in its error. Input: the slot size (uint16_t),
// then the stream as it arrives.
#include <memory>
#include <string>

#include "fuzz_support.h"
#include "op_desc.h"
#include "tcp_wire.h"

using namespace strata;
using strata::tcp::WireHeader;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const size_t slotBytes = in.take<uint16_t>();
  // Exactly one slot, so that a payload the check let through past it is a
  // heap overflow.
  std::unique_ptr<char[]> slot(new char[slotBytes + 1]);
  const OpDesc mine{Coll::Allreduce, STRATA_FLOAT32, STRATA_SUM, 1024};
  while (in.left() >= sizeof(WireHeader)) {
    const WireHeader h = in.take<WireHeader>();
    const Status s = tcp::checkWireHeader(h, slotBytes, [] { return std::string("rank 1 on peer-host"); });
    if (!s.isOk()) {  // the link fails; nothing more is read from it
      FUZZ_CHECK(h.bytes > slotBytes);
      FUZZ_CHECK(s.message().find("rank 1 on peer-host") != std::string::npos);
      return 0;
    }
    FUZZ_CHECK(h.bytes <= slotBytes);
    const size_t payload = h.bytes < in.left() ? static_cast<size_t>(h.bytes) : in.left();
    in.bytes(slot.get(), payload);
    if (payload < h.bytes) return 0;  // the rest has not arrived
    // The executor's view of the message: its tag against this rank's own.
    if (h.desc != mine.pack()) {
      const std::string theirs = OpDesc::unpack(h.desc).describe();
      FUZZ_CHECK(!theirs.empty() && theirs.size() < 128);
    }
  }
  return 0;
}
