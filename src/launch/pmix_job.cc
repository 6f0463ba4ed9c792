#include "pmix_job.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#if STRATA_HAVE_PMIX
#include <pmix.h>
#endif

#include "log.h"

namespace strata::launch {

bool launchedByPmix() {
  const char* ns = std::getenv("PMIX_NAMESPACE");
  return ns && *ns;
}

#if STRATA_HAVE_PMIX
namespace {

std::mutex gMutex;
bool gJoined = false;
PmixJob gJob;
pmix_proc_t gSelf;

Status pmixError(const char* what, pmix_status_t rc) {
  return STRATA_ERROR(STRATA_ERR_SYSTEM, "PMIx %s failed: %s (%d)", what, PMIx_Error_string(rc), rc);
}

// One unsigned value about `proc` (a wildcard rank asks about the job).
Status getUint(const pmix_proc_t& proc, const char* key, int* out) {
  pmix_value_t* value = nullptr;
  pmix_status_t rc = PMIx_Get(&proc, key, nullptr, 0, &value);
  if (rc != PMIX_SUCCESS) return pmixError(key, rc);
  Status s = Status::ok();
  switch (value->type) {
    case PMIX_UINT32: *out = static_cast<int>(value->data.uint32); break;
    case PMIX_UINT16: *out = value->data.uint16; break;
    case PMIX_INT: *out = value->data.integer; break;
    default:
      s = STRATA_ERROR(STRATA_ERR_INVALID_USAGE, "PMIx %s has unexpected type %d", key, value->type);
  }
  PMIX_VALUE_RELEASE(value);
  return s;
}

void finalizeAtExit() { PMIx_Finalize(nullptr, 0); }

}  // namespace

Status joinPmixJob(PmixJob* job) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (!gJoined) {
    pmix_status_t rc = PMIx_Init(&gSelf, nullptr, 0);
    if (rc != PMIX_SUCCESS)
      return STRATA_ERROR(STRATA_ERR_SYSTEM,
                          "PMIX_NAMESPACE=%s says a PMIx launcher started this process, but PMIx_Init "
                          "failed: %s (%d); is its server (mpirun, srun) still running and reachable?",
                          std::getenv("PMIX_NAMESPACE"), PMIx_Error_string(rc), rc);
    // The launcher counts a process that initialised and exits without
    // finalising as failed, so finalise at exit (not earlier: later
    // communicators of this process use it again).
    std::atexit(finalizeAtExit);
    pmix_proc_t wildcard;
    PMIX_LOAD_PROCID(&wildcard, gSelf.nspace, PMIX_RANK_WILDCARD);
    PmixJob j;
    j.nspace = gSelf.nspace;
    j.rank = static_cast<int>(gSelf.rank);
    STRATA_CHECK(getUint(wildcard, PMIX_JOB_SIZE, &j.size));
    STRATA_CHECK(getUint(gSelf, PMIX_LOCAL_RANK, &j.localRank));
    if (j.size <= 0 || j.rank < 0 || j.rank >= j.size)
      return STRATA_ERROR(STRATA_ERR_INVALID_USAGE, "PMIx gave rank %d in a job of %d processes", j.rank,
                          j.size);
    gJob = j;
    gJoined = true;
    STRATA_INFO(INIT, "PMIx job %s: rank %d of %d, local rank %d", j.nspace.c_str(), j.rank, j.size,
                j.localRank);
  }
  *job = gJob;
  return Status::ok();
}

Status shareFromRankZero(const PmixJob& job, const std::string& key, void* value, size_t bytes,
                         double timeoutSeconds) {
  if (job.rank == 0) {
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = static_cast<char*>(value);
    v.data.bo.size = bytes;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &v);
    if (rc != PMIX_SUCCESS) return pmixError("PMIx_Put", rc);
  }
  pmix_status_t rc = PMIx_Commit();
  if (rc != PMIX_SUCCESS) return pmixError("PMIx_Commit", rc);

  int timeout = static_cast<int>(timeoutSeconds) > 0 ? static_cast<int>(timeoutSeconds) : 1;
  pmix_info_t info[2];
  PMIX_INFO_CONSTRUCT(&info[0]);
  PMIX_INFO_CONSTRUCT(&info[1]);
  bool collect = true;
  PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
  pmix_proc_t all;
  PMIX_LOAD_PROCID(&all, job.nspace.c_str(), PMIX_RANK_WILDCARD);
  rc = PMIx_Fence(&all, 1, info, 2);
  if (rc != PMIX_SUCCESS) {
    return rc == PMIX_ERR_TIMEOUT
               ? STRATA_ERROR(STRATA_ERR_TIMEOUT, "PMIx fence: not every rank of the job arrived within %d s",
                              timeout)
               : pmixError("PMIx_Fence", rc);
  }
  if (job.rank == 0) return Status::ok();

  pmix_proc_t root;
  PMIX_LOAD_PROCID(&root, job.nspace.c_str(), 0);
  pmix_value_t* got = nullptr;
  rc = PMIx_Get(&root, key.c_str(), &info[1], 1, &got);
  if (rc != PMIX_SUCCESS) return pmixError(("PMIx_Get of rank 0's " + key).c_str(), rc);
  Status s = Status::ok();
  if (got->type != PMIX_BYTE_OBJECT || got->data.bo.size != bytes)
    s = STRATA_ERROR(STRATA_ERR_INVALID_USAGE, "rank 0 published %s with type %d and %zu bytes, expected %zu",
                     key.c_str(), got->type, got->type == PMIX_BYTE_OBJECT ? got->data.bo.size : 0, bytes);
  else
    std::memcpy(value, got->data.bo.bytes, bytes);
  PMIX_VALUE_RELEASE(got);
  return s;
}

#else  // built without PMIx

namespace {
Status notBuilt() {
  return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                      "launched by a PMIx launcher (PMIX_NAMESPACE is set) but strata was built without "
                      "PMIx: install libpmix-dev and reconfigure (meson option pmix), or launch with "
                      "torchrun's variables");
}
}  // namespace

Status joinPmixJob(PmixJob*) { return notBuilt(); }
Status shareFromRankZero(const PmixJob&, const std::string&, void*, size_t, double) { return notBuilt(); }

#endif

}  // namespace strata::launch
