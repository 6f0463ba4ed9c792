// The worker addresses ranks exchange to connect over ucx, as they arrive
// over the out-of-band network: every rank first sends the length of its
// longest address (one uint64_t), then one record of `nchannels` entries,
// each [uint64_t length][address, zero-padded to the longest length any rank
// sent]. Both come from other processes, and UCX parses an address without
// being told its length, so the receiver checks every length against what it
// announced and what arrived before anything is allocated or handed to UCX.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "status.h"

namespace strata::ucx {

// UCX's worker addresses are a few hundred bytes (a few KiB with many
// devices); a rank that announces more is not a strata rank.
constexpr uint64_t kMaxAddressBytes = 64 * 1024;

// The size of one record entry, from every rank's announced length (lens[r]
// from rank r): 0 when no rank uses ucx. Refuses a length over
// kMaxAddressBytes, naming the rank. Sets *entryBytes only on success.
Status addressEntryBytes(const std::vector<uint64_t>& lens, size_t* entryBytes);

struct AddressView {
  const char* data;
  size_t len;  // 0: that rank has no worker (it connects to nobody over ucx)
};

// Rank `rank`'s record: the `recordBytes` bytes that arrived from it, which
// must hold `nchannels` entries of `entryBytes` (addressEntryBytes). An
// address may be no longer than `announced` (lens[rank]) nor than its entry.
// On success out[ch] points into `record`, inside its channel's entry.
Status parseAddressRecord(const char* record, size_t recordBytes, size_t entryBytes, int nchannels,
                          uint64_t announced, int rank, std::vector<AddressView>* out);

}  // namespace strata::ucx
