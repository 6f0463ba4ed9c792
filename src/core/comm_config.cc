#include "comm_config.h"

#include <algorithm>

#include "params.h"
#include "tcp_congestion.h"

namespace strata {
namespace {

bool isPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

Status CommConfig::fromParams(const CommOverrides& overrides, CommConfig* out) {
  CommConfig c;
  c.timeoutSeconds = overrides.timeoutSeconds > 0 ? overrides.timeoutSeconds : params::timeout();
  if (!(c.timeoutSeconds > 0))
    return STRATA_INVALID_ARG("STRATA_TIMEOUT=%g must be a positive number of seconds", c.timeoutSeconds);
  const int64_t nslots = params::nslots();
  const int64_t slotBytes = params::slotBytes();
  if (!isPowerOfTwo(nslots) || nslots < 2 || nslots > 64)
    return STRATA_INVALID_ARG("STRATA_NSLOTS=%lld must be a power of two in 2..64", (long long)nslots);
  if (slotBytes < 4096 || slotBytes > (64 << 20))
    return STRATA_INVALID_ARG("STRATA_SLOT_BYTES=%lld must be in 4096..67108864", (long long)slotBytes);
  if (params::nthreads() < 0 || params::nthreads() > 64)
    return STRATA_INVALID_ARG("STRATA_NTHREADS=%lld must be in 0..64", (long long)params::nthreads());
  if (params::nchannels() < 0 || params::nchannels() > 32)
    return STRATA_INVALID_ARG("STRATA_NCHANNELS=%lld must be in 0..32", (long long)params::nchannels());
  c.nslots = static_cast<int>(nslots);
  if (params::memBudget() < 0)
    return STRATA_INVALID_ARG("STRATA_MEM_BUDGET=%lld must be a number of bytes, or 0 (no budget)",
                              (long long)params::memBudget());
  c.memBudget = overrides.memBudget != 0 ? overrides.memBudget : static_cast<uint64_t>(params::memBudget());
  c.slotBytes = static_cast<size_t>(slotBytes);
  c.nthreads = static_cast<int>(params::nthreads());
  c.nchannels = overrides.nchannels > 0 ? overrides.nchannels : static_cast<int>(params::nchannels());
  c.spin = params::spinCount();
  c.algo = overrides.algo.empty() ? params::algo() : overrides.algo;
  if (!overrides.algo.empty()) c.algoBy = "config->algorithm";
  c.tunerFile = params::tunerFile();
  if (params::reproducible() != 0 && params::reproducible() != 1)
    return STRATA_INVALID_ARG("STRATA_REPRODUCIBLE=%lld must be 0 or 1", (long long)params::reproducible());
  c.reproducible = overrides.reproducible != 0 ? overrides.reproducible > 0 : params::reproducible() == 1;
  c.oneshotBytes = static_cast<size_t>(std::max<int64_t>(0, params::oneshotBytes()));
  STRATA_CHECK(parseLinkCost(params::costShm(), "STRATA_COST_SHM", &c.cost.shm));
  STRATA_CHECK(parseLinkCost(params::costNet(), "STRATA_COST_NET", &c.cost.net));
  c.ntBytes = static_cast<size_t>(std::max<int64_t>(0, params::ntBytes()));
  c.transport = params::transport();
  if (!params::tcpCongestion().empty()) STRATA_CHECK(net::checkCongestion(params::tcpCongestion()));
  if (params::connect() != "lazy" && params::connect() != "eager")
    return STRATA_INVALID_ARG("STRATA_CONNECT='%s' must be lazy (connect each pair at the first call that needs it) or "
                              "eager (every pair at init)", params::connect().c_str());
  c.lazyConnect = params::connect() == "lazy";
  if (params::gpuChunkBytes() < 4096 || params::gpuChunkBytes() > (int64_t(1) << 30))
    return STRATA_INVALID_ARG("STRATA_GPU_CHUNK_BYTES=%lld must be in 4096..1073741824",
                              (long long)params::gpuChunkBytes());
  c.gpuChunkBytes = static_cast<size_t>(params::gpuChunkBytes());
  c.gpuStagingCacheBytes = static_cast<size_t>(std::max<int64_t>(0, params::gpuStagingCacheBytes()));
  if (params::gpuDirect() < 0 || params::gpuDirect() > 2)
    return STRATA_INVALID_ARG("STRATA_GPU_DIRECT=%lld must be 0 (stage GPU buffers through host memory), 1 (move "
                              "them GPU to GPU where possible) or 2 (required)", (long long)params::gpuDirect());
  c.gpuDirect = static_cast<int>(params::gpuDirect());
  if (params::gpuSlotBytes() < 4096 || params::gpuSlotBytes() > (int64_t(1) << 30))
    return STRATA_INVALID_ARG("STRATA_GPU_SLOT_BYTES=%lld must be in 4096..1073741824",
                              (long long)params::gpuSlotBytes());
  c.gpuSlotBytes = static_cast<size_t>(params::gpuSlotBytes());
  *out = std::move(c);
  return Status::ok();
}

}  // namespace strata
