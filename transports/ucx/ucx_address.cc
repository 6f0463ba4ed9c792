#include "ucx_address.h"

#include <cstring>

namespace strata::ucx {

Status addressEntryBytes(const std::vector<uint64_t>& lens, size_t* entryBytes) {
  uint64_t longest = 0;
  for (size_t r = 0; r < lens.size(); ++r) {
    if (lens[r] > kMaxAddressBytes)
      return STRATA_ERROR(STRATA_ERR_REMOTE,
                          "rank %zu announced a %llu-byte ucx worker address (at most %llu expected): a rank "
                          "of another strata build, or corrupted out-of-band data",
                          r, static_cast<unsigned long long>(lens[r]),
                          static_cast<unsigned long long>(kMaxAddressBytes));
    if (lens[r] > longest) longest = lens[r];
  }
  *entryBytes = longest == 0 ? 0 : sizeof(uint64_t) + static_cast<size_t>(longest);
  return Status::ok();
}

Status parseAddressRecord(const char* record, size_t recordBytes, size_t entryBytes, int nchannels,
                          uint64_t announced, int rank, std::vector<AddressView>* out) {
  if (nchannels < 0 || entryBytes < sizeof(uint64_t) ||
      static_cast<size_t>(nchannels) > recordBytes / entryBytes)
    return STRATA_ERROR(STRATA_ERR_REMOTE,
                        "rank %d's ucx address record is %zu bytes, too short for %d channel(s) of %zu bytes",
                        rank, recordBytes, nchannels, entryBytes);
  std::vector<AddressView> views(static_cast<size_t>(nchannels));
  for (int ch = 0; ch < nchannels; ++ch) {
    const char* e = record + static_cast<size_t>(ch) * entryBytes;
    uint64_t len;
    std::memcpy(&len, e, sizeof(len));
    if (len > announced || len > entryBytes - sizeof(uint64_t))
      return STRATA_ERROR(STRATA_ERR_REMOTE,
                          "rank %d sent a %llu-byte ucx worker address for channel %d after announcing at most "
                          "%llu bytes (entries hold %zu): a rank of another strata build, or corrupted "
                          "out-of-band data",
                          rank, static_cast<unsigned long long>(len), ch,
                          static_cast<unsigned long long>(announced), entryBytes - sizeof(uint64_t));
    views[static_cast<size_t>(ch)] = AddressView{e + sizeof(uint64_t), static_cast<size_t>(len)};
  }
  *out = std::move(views);
  return Status::ok();
}

}  // namespace strata::ucx
