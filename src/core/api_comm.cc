// C API: versions, errors, unique ids, communicator life cycle.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <thread>

#include "api_state.h"
#include "clock.h"
#include "cuda_seam.h"
#include "env_job.h"
#include "listener_handoff.h"
#include "log.h"
#include "params.h"
#include "pmix_job.h"
#include "selection.h"
#include "transport.h"

namespace strata::api {
namespace {

thread_local std::string tLastError;

}  // namespace

Status newUniqueId(strata_unique_id_t* id, const security::Secret* secret) {
  SockAddr addr;
  STRATA_CHECK(net::defaultAdvertisedAddress(&addr));
  int fd = -1;
  STRATA_CHECK(net::listenOn(&addr, &fd));
  boot::IdContents contents;
  std::memset(&contents, 0, sizeof(contents));
  Status random = secret ? Status::ok() : security::randomBytes(contents.secret.bytes, sizeof(contents.secret.bytes));
  if (secret) contents.secret = *secret;
  if (!random.isOk()) {
    close(fd);
    return random;
  }
  std::memcpy(&contents.root, &addr.storage, addr.len);
  contents.rootLen = addr.len;
  boot::rememberListener(&contents, fd);
  boot::encodeId(contents, id);
  STRATA_INFO(BOOT, "unique id for rank 0 at %s", toString(addr).c_str());
  return Status::ok();
}

namespace {

Status initComm(strata_comm_t* out, const boot::BootstrapConfig& config, const CommOverrides& overrides) {
  std::unique_ptr<Comm> impl;
  STRATA_CHECK(Comm::create(config, overrides, &impl));
  auto* comm = new strata_comm{std::move(impl), overrides.device};
  if (params::check() != 0) {
    std::string report;
    int findings = 0;
    Status checked = runCheck(comm, &report, &findings);
    if (!checked.isOk()) {
      releaseComm(comm);
      return STRATA_ERROR(checked.code(), "STRATA_CHECK: %s", checked.message().c_str());
    }
    if (comm->impl->rank() == 0 && findings > 0) STRATA_WARN(INIT, "STRATA_CHECK:\n%s", report.c_str());
    else STRATA_INFO(INIT, "STRATA_CHECK:\n%s", report.c_str());
  }
  *out = comm;
  return Status::ok();
}

// The bootstrap configuration of rank `rank` of a unique-id job.
Status rankConfig(strata_comm_t* comm, int nranks, const strata_unique_id_t& id, int rank,
                  boot::BootstrapConfig* config) {
  if (!comm) return STRATA_INVALID_ARG("comm (the output pointer) is NULL");
  if (nranks <= 0) return STRATA_INVALID_ARG("nranks=%d must be at least 1", nranks);
  if (rank < 0 || rank >= nranks)
    return STRATA_INVALID_ARG("rank=%d is outside 0..nranks-1 (nranks=%d)", rank, nranks);
  STRATA_CHECK(boot::decodeId(id, &config->id));
  config->rank = rank;
  config->nranks = nranks;
  config->fromUniqueId = true;
  return Status::ok();
}

// The config's device, else the calling thread's current one (NCCL's rule).
Status deviceOf(const strata_config_t* config, int* out) {
  *out = gpu::currentDevice();
  if (!config || config->size < offsetof(strata_config_t, device) + sizeof(config->device) ||
      config->device == STRATA_DEVICE_CURRENT)
    return Status::ok();
  const gpu::RuntimeInfo& cuda = gpu::runtime();
  const int count = static_cast<int>(cuda.devices.size());
  if (config->device < 0 || config->device > INT_MAX || (cuda.usable && config->device >= count))
    return STRATA_INVALID_ARG("config->device=%lld must be a CUDA device of this process (%d found) or "
                              "STRATA_DEVICE_CURRENT (%d)",
                              static_cast<long long>(config->device), cuda.usable ? count : 0, STRATA_DEVICE_CURRENT);
  *out = static_cast<int>(config->device);
  return Status::ok();
}

// A strata_config_t's fields, checked (config NULL: nothing set); the
// device is resolved here, on the calling thread: a non-blocking init runs
// on another.
Status overridesOf(const strata_config_t* config, CommOverrides* out) {
  STRATA_CHECK(deviceOf(config, &out->device));
  if (!config) return Status::ok();
  if (config->size < offsetof(strata_config_t, timeout_seconds) + sizeof(config->timeout_seconds))
    return STRATA_INVALID_ARG("config->size=%zu is too small for a strata_config_t (start from "
                              "STRATA_CONFIG_INITIALIZER)", config->size);
  if (!(config->timeout_seconds >= 0) || config->timeout_seconds > 1e9)
    return STRATA_INVALID_ARG("config->timeout_seconds=%g must be 0 (STRATA_TIMEOUT) or a positive number of seconds",
                              config->timeout_seconds);
  out->timeoutSeconds = config->timeout_seconds;
  // A program built against the first strata_config_t has no field for it.
  if (config->size >= offsetof(strata_config_t, reproducible) + sizeof(config->reproducible)) {
    if (config->reproducible < -1 || config->reproducible > 1)
      return STRATA_INVALID_ARG("config->reproducible=%d must be 1 (on), -1 (off) or 0 (STRATA_REPRODUCIBLE)",
                                config->reproducible);
    out->reproducible = config->reproducible;
  }
  if (config->size >= offsetof(strata_config_t, nchannels) + sizeof(config->nchannels)) {
    if (config->algorithm) {
      const AllreduceAlgorithm* algo = nullptr;
      const std::string name(config->algorithm, strnlen(config->algorithm, 64));
      STRATA_CHECK(parseForcedAlgo(name.empty() ? "(empty)" : name, "config->algorithm", &algo));
      out->algo = name;
    }
    if (config->nchannels < 0 || config->nchannels > 32)
      return STRATA_INVALID_ARG("config->nchannels=%d must be in 1..32, or 0 (STRATA_NCHANNELS)", config->nchannels);
    out->nchannels = config->nchannels;
  }
  if (config->size >= offsetof(strata_config_t, memory_budget) + sizeof(config->memory_budget))
    out->memBudget = config->memory_budget;
  return Status::ok();
}

Status initRank(strata_comm_t* comm, int nranks, const strata_unique_id_t& id, int rank,
                const strata_config_t* userConfig = nullptr) {
  boot::BootstrapConfig config;
  STRATA_CHECK(rankConfig(comm, nranks, id, rank, &config));
  CommOverrides overrides;
  STRATA_CHECK(overridesOf(userConfig, &overrides));
  return initComm(comm, config, overrides);
}

// Returns at once with a communicator whose bootstrap runs on its own thread.
Status initRankNonBlocking(strata_comm_t* comm, int nranks, const strata_unique_id_t& id, int rank,
                           const strata_config_t* userConfig) {
  boot::BootstrapConfig config;
  STRATA_CHECK(rankConfig(comm, nranks, id, rank, &config));
  CommOverrides overrides;
  STRATA_CHECK(overridesOf(userConfig, &overrides));
  auto* c = new strata_comm{};
  c->device = overrides.device;
  c->initDone.store(false, std::memory_order_relaxed);
  c->initJoined.store(false, std::memory_order_relaxed);
  c->initThread = std::thread([c, config, overrides] {
    log::setThreadRank(config.rank);
    std::unique_ptr<Comm> impl;
    Status s;
    // An exception here would end the process (std::terminate): make it the init's error.
    try {
      s = Comm::create(config, overrides, &impl);
    } catch (const std::exception& e) {
      s = makeErrorQuiet(STRATA_ERR_SYSTEM, "non-blocking init failed: %s", e.what());
    }
    if (!s.isOk()) STRATA_WARN(INIT, "non-blocking init failed: %s", s.message().c_str());
    c->impl = std::move(impl);
    c->initStatus = s;
    c->initDone.store(true, std::memory_order_release);
  });
  *comm = c;
  return Status::ok();
}

Status initEnv(strata_comm_t* comm) {
  if (!comm) return STRATA_INVALID_ARG("comm (the output pointer) is NULL");
  boot::BootstrapConfig config;
  STRATA_CHECK(launch::envJobConfig(&config));
  CommOverrides overrides;
  STRATA_CHECK(overridesOf(nullptr, &overrides));
  return initComm(comm, config, overrides);
}

// A launcher variable that, when set, must agree with what PMIx says.
Status checkAgrees(const char* name, long pmixValue, const char* what) {
  if (!std::getenv(name)) return Status::ok();
  long v = 0;
  STRATA_CHECK(launch::envInt(name, 0, INT_MAX, &v));
  if (v != pmixValue)
    return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                        "environment variable %s=%ld disagrees with PMIx's %s %ld: two launchers?", name, v,
                        what, pmixValue);
  return Status::ok();
}

Status initWorld(strata_comm_t* comm) {
  if (!comm) return STRATA_INVALID_ARG("comm (the output pointer) is NULL");
  if (!launch::launchedByPmix()) {
    if (std::getenv("RANK") || std::getenv("WORLD_SIZE")) return initEnv(comm);
    return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                        "no launcher found: neither PMIx's PMIX_NAMESPACE (mpirun, srun --mpi=pmix) nor "
                        "torchrun's RANK and WORLD_SIZE are set");
  }
  launch::PmixJob job;
  STRATA_CHECK(launch::joinPmixJob(&job));
  STRATA_CHECK(checkAgrees("WORLD_SIZE", job.size, "job size"));
  STRATA_CHECK(checkAgrees("RANK", job.rank, "rank"));
  log::setThreadRank(job.rank);
  // Every rank makes its calls in the same order, so a per-process count
  // names the same communicator on every rank.
  static std::atomic<int> worldCount{0};
  std::string key = "strata.world." + std::to_string(worldCount++);
  strata_unique_id_t id;
  std::memset(&id, 0, sizeof(id));
  if (job.rank == 0) STRATA_CHECK(newUniqueId(&id));
  STRATA_CHECK(launch::shareFromRankZero(job, key, &id, sizeof(id), params::timeout()));
  return initRank(comm, job.size, id, job.rank);
}

}  // namespace

strata_config_t inheritedConfig(const Comm& parent) {
  const CommOverrides& given = parent.overrides();
  strata_config_t config = STRATA_CONFIG_INITIALIZER;
  config.timeout_seconds = given.timeoutSeconds;
  config.reproducible = given.reproducible;
  config.algorithm = given.algo.empty() ? nullptr : given.algo.c_str();
  config.nchannels = given.nchannels;
  config.device = given.device;
  config.memory_budget = given.memBudget;
  return config;
}

Status ready(strata_comm* comm) {
  if (comm->initJoined.load(std::memory_order_acquire)) return comm->initStatus;
  std::lock_guard<std::mutex> lock(comm->initMutex);
  if (comm->initThread.joinable()) comm->initThread.join();
  comm->initJoined.store(true, std::memory_order_release);
  return comm->initStatus;
}

void freeRequest(strata_request* request) {
  strata_comm* comm = request->comm;
  delete request;
  if (comm->liveRequests.fetch_sub(1) == 1 && comm->released.load() && !comm->freed.exchange(true))
    delete comm;
}

void releaseComm(strata_comm* comm) {
  comm->released.store(true);
  if (comm->liveRequests.load() == 0 && !comm->freed.exchange(true)) delete comm;
}

strata_result_t finish(const Status& status, strata_comm* comm) {
  if (status.isOk()) return STRATA_SUCCESS;
  tLastError = status.message();
  if (comm && comm->initDone.load(std::memory_order_acquire) && comm->impl)
    comm->impl->setLastError(status.message());
  return status.code();
}

strata_result_t escaped() {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    tLastError.clear();  // assigning a message could throw again
    return STRATA_ERR_SYSTEM;
  } catch (const std::exception& e) {
    return finish(STRATA_ERROR(STRATA_ERR_INTERNAL, "unexpected C++ exception: %s", e.what()));
  } catch (...) {
    return finish(STRATA_ERROR(STRATA_ERR_INTERNAL, "unexpected C++ exception of unknown type"));
  }
}

void reloadSettings() {
  params::reload();
  log::reload();
}

}  // namespace strata::api

using namespace strata;
using strata::api::finish;

extern "C" {

STRATA_API strata_result_t strata_get_version(int* version) try {
  if (!version) return finish(STRATA_INVALID_ARG("version (the output pointer) is NULL"));
  *version = STRATA_VERSION_CODE;
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

STRATA_API const char* strata_last_error(void) { return api::tLastError.c_str(); }

STRATA_API const char* strata_comm_last_error(strata_comm_t comm) {
  if (!comm) return "comm is NULL";
  // The string lives in a thread-local so the pointer stays valid for the caller.
  thread_local std::string copy;
  if (!comm->initDone.load(std::memory_order_acquire)) return "";
  // The copy may throw, and no exception may unwind into a C caller.
  try {
    Status init = api::ready(comm);
    copy = init.isOk() ? comm->impl->lastError() : init.message();
  } catch (const std::exception&) {
    return "out of memory copying the communicator's last error";
  }
  return copy.c_str();
}

STRATA_API strata_result_t strata_get_transports(char* names, size_t len) try {
  if (!names || len == 0) return finish(STRATA_INVALID_ARG("names is NULL or len is 0"));
  api::reloadSettings();
  topo::HostInfo self = topo::probeHost(gpu::currentDevice());
  std::string list;
  for (const auto& t : makeTransports(&self)) list += (list.empty() ? "" : " ") + std::string(t->name());
  if (list.size() >= len) return finish(STRATA_INVALID_ARG("len %zu is too small for \"%s\"", len, list.c_str()));
  std::snprintf(names, len, "%s", list.c_str());
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_get_unique_id(strata_unique_id_t* id) try {
  if (!id) return finish(STRATA_INVALID_ARG("id (the output pointer) is NULL"));
  api::reloadSettings();
  return finish(api::newUniqueId(id));
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_init_rank(strata_comm_t* comm, int nranks,
                                                 strata_unique_id_t id, int rank) try {
  api::reloadSettings();
  log::setThreadRank(rank);
  return finish(api::initRank(comm, nranks, id, rank));
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_init_rank_config(strata_comm_t* comm, int nranks, strata_unique_id_t id,
                                                        int rank, const strata_config_t* config) try {
  api::reloadSettings();
  log::setThreadRank(rank);
  return finish(api::initRank(comm, nranks, id, rank, config));
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_init_rank_nonblocking(strata_comm_t* comm, int nranks,
                                                             strata_unique_id_t id, int rank) try {
  api::reloadSettings();
  return finish(api::initRankNonBlocking(comm, nranks, id, rank, nullptr));
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_init_rank_config_nonblocking(strata_comm_t* comm, int nranks,
                                                                    strata_unique_id_t id, int rank,
                                                                    const strata_config_t* config) try {
  api::reloadSettings();
  return finish(api::initRankNonBlocking(comm, nranks, id, rank, config));
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_init_env(strata_comm_t* comm) try {
  api::reloadSettings();
  return finish(api::initEnv(comm));
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_init_world(strata_comm_t* comm) try {
  api::reloadSettings();
  return finish(api::initWorld(comm));
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_destroy(strata_comm_t comm) try {
  if (!comm) return finish(STRATA_INVALID_ARG("comm is NULL"));
  if (!api::ready(comm).isOk()) {  // a failed non-blocking init: nothing was built
    delete comm;
    return STRATA_SUCCESS;
  }
  int pending = comm->liveRequests.load();
  if (pending > 0)
    comm->impl->fail(makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                                    "rank %d destroyed the communicator with %d requests outstanding",
                                    comm->impl->rank(), pending));
  api::releaseComm(comm);
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_abort(strata_comm_t comm) try {
  if (!comm) return finish(STRATA_INVALID_ARG("comm is NULL"));
  if (!api::ready(comm).isOk()) {
    delete comm;
    return STRATA_SUCCESS;
  }
  Comm& impl = *comm->impl;
  impl.fail(makeErrorQuiet(STRATA_ERR_INVALID_USAGE, "rank %d aborted the communicator (strata_comm_abort)",
                           impl.rank()));
  // Calls blocked in other threads now fail; let them leave before freeing.
  double deadline = nowSeconds() + impl.timeoutSeconds();
  while (impl.activeCalls.load() > 0 && nowSeconds() < deadline) std::this_thread::yield();
  if (impl.activeCalls.load() > 0) {
    return finish(STRATA_ERROR(STRATA_ERR_INTERNAL,
                               "calls on the communicator did not return after abort; not freed"),
                  comm);
  }
  api::releaseComm(comm);
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_memory(strata_comm_t comm, strata_memory_t* usage) try {
  if (!comm) return finish(STRATA_INVALID_ARG("comm is NULL"));
  if (!usage) return finish(STRATA_INVALID_ARG("usage (the output pointer) is NULL"), comm);
  if (usage->size < offsetof(strata_memory_t, shared_bytes) + sizeof(usage->shared_bytes))
    return finish(STRATA_INVALID_ARG("usage->size=%zu is too small for a strata_memory_t (start from "
                                     "STRATA_MEMORY_INITIALIZER)", usage->size),
                  comm);
  Status s = api::ready(comm);
  if (!s.isOk()) return finish(s, comm);
  const MemoryHeld held = comm->impl->memoryHeld();
  // A program built against a shorter struct gets the whole fields it has.
  strata_memory_t full{sizeof(strata_memory_t), held.shared, held.host, held.pinned, held.device};
  const size_t fields = (std::min(usage->size, sizeof(full)) - sizeof(full.size)) / sizeof(uint64_t);
  const size_t size = sizeof(full.size) + fields * sizeof(uint64_t);
  std::memcpy(reinterpret_cast<char*>(usage) + sizeof(usage->size),
              reinterpret_cast<const char*>(&full) + sizeof(full.size), size - sizeof(full.size));
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_device(strata_comm_t comm, int* device) try {
  if (!comm) return finish(STRATA_INVALID_ARG("comm is NULL"));
  if (!device) return finish(STRATA_INVALID_ARG("device (the output pointer) is NULL"), comm);
  *device = comm->device;
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_rank(strata_comm_t comm, int* rank) try {
  if (!comm) return finish(STRATA_INVALID_ARG("comm is NULL"));
  if (!rank) return finish(STRATA_INVALID_ARG("rank (the output pointer) is NULL"), comm);
  Status s = api::ready(comm);
  if (!s.isOk()) return finish(s, comm);
  *rank = comm->impl->rank();
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_peer_transport(strata_comm_t comm, int peer, char* name, size_t len) try {
  if (!comm) return finish(STRATA_INVALID_ARG("comm is NULL"));
  if (!name || len == 0) return finish(STRATA_INVALID_ARG("name is NULL or len is 0"), comm);
  Status s = api::ready(comm);
  if (!s.isOk()) return finish(s, comm);
  const int nranks = comm->impl->size();
  if (peer < 0 || peer >= nranks)
    return finish(STRATA_INVALID_ARG("peer %d is not a rank of this communicator (0..%d)", peer, nranks - 1), comm);
  const char* transport = comm->impl->transportTo(peer);
  if (std::strlen(transport) >= len)
    return finish(STRATA_INVALID_ARG("len %zu is too small for \"%s\"", len, transport), comm);
  std::snprintf(name, len, "%s", transport);
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_size(strata_comm_t comm, int* size) try {
  if (!comm) return finish(STRATA_INVALID_ARG("comm is NULL"));
  if (!size) return finish(STRATA_INVALID_ARG("size (the output pointer) is NULL"), comm);
  Status s = api::ready(comm);
  if (!s.isOk()) return finish(s, comm);
  *size = comm->impl->size();
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_is_reproducible(strata_comm_t comm, int* reproducible) try {
  if (!comm) return finish(STRATA_INVALID_ARG("comm is NULL"));
  if (!reproducible) return finish(STRATA_INVALID_ARG("reproducible (the output pointer) is NULL"), comm);
  Status s = api::ready(comm);
  if (!s.isOk()) return finish(s, comm);
  *reproducible = comm->impl->reproducible() ? 1 : 0;
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

}  // extern "C"
