// The ucx transport's address exchange (ucx_address.h): every rank's
// announced length, then its record of one entry per channel. Input:
// nranks (1 byte, 1 to 8), nchannels (1 byte, 0 to 4), nranks announced
// lengths (uint64_t each), then the allgathered records back to back; a rank
// whose record the input cuts short sent only what is left.
#include <algorithm>
#include <memory>
#include <vector>

#include "fuzz_support.h"
#include "ucx_address.h"

using namespace strata;
using namespace strata::ucx;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const int nranks = 1 + in.take<uint8_t>() % 8;
  const int nchannels = in.take<uint8_t>() % 5;
  std::vector<uint64_t> lens(static_cast<size_t>(nranks));
  for (uint64_t& l : lens) l = in.take<uint64_t>();

  size_t entry = 12345;
  if (!addressEntryBytes(lens, &entry).isOk()) {
    FUZZ_CHECK(entry == 12345);  // untouched on failure
    FUZZ_CHECK(*std::max_element(lens.begin(), lens.end()) > kMaxAddressBytes);
    return 0;
  }
  const uint64_t longest = *std::max_element(lens.begin(), lens.end());
  FUZZ_CHECK(longest <= kMaxAddressBytes);
  FUZZ_CHECK(entry == (longest == 0 ? 0 : sizeof(uint64_t) + longest));
  if (entry == 0) return 0;  // nobody uses ucx

  const size_t record = entry * static_cast<size_t>(nchannels);
  const uint8_t* all = in.rest();
  const size_t arrived = in.left();
  for (int peer = 0; peer < nranks; ++peer) {
    const size_t from = static_cast<size_t>(peer) * record;
    const size_t got = from < arrived ? std::min(record, arrived - from) : 0;
    // Exactly what arrived, so that a read past it is a heap overflow.
    std::unique_ptr<char[]> bytes(new char[got + 1]);
    if (got) std::memcpy(bytes.get(), all + from, got);
    std::vector<AddressView> views(1, AddressView{nullptr, 777});
    const Status s = parseAddressRecord(bytes.get(), got, entry, nchannels, lens[peer], peer, &views);
    if (!s.isOk()) {
      FUZZ_CHECK(s.code() == STRATA_ERR_REMOTE);
      FUZZ_CHECK(views.size() == 1 && views[0].len == 777);  // untouched on failure
      continue;
    }
    // Accepted: every address within its own entry and within what arrived,
    // no longer than its rank announced.
    FUZZ_CHECK(got == record);
    FUZZ_CHECK(views.size() == static_cast<size_t>(nchannels));
    for (int ch = 0; ch < nchannels; ++ch) {
      const AddressView& v = views[ch];
      const char* entryStart = bytes.get() + static_cast<size_t>(ch) * entry;
      FUZZ_CHECK(v.data == entryStart + sizeof(uint64_t));
      FUZZ_CHECK(v.len <= lens[peer] && v.len <= entry - sizeof(uint64_t));
      FUZZ_CHECK(v.data + v.len <= entryStart + entry && v.data + v.len <= bytes.get() + got);
      uint8_t sum = 0;  // what UCX would read
      for (size_t i = 0; i < v.len; ++i) sum += static_cast<uint8_t>(v.data[i]);
      (void)sum;
    }
  }
  return 0;
}
