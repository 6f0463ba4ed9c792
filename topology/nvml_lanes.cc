// NVLink lanes from NVML, loaded at run time: libstrata never links
// libnvidia-ml, so it loads where no driver is installed. The few
// declarations below are NVML's stable C ABI (nvml.h), written out because
// the CUDA toolkit here does not ship that header.
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gpus.h"

namespace strata::topo {
namespace {

using NvmlReturn = int;  // nvmlReturn_t; 0 is NVML_SUCCESS
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr unsigned kMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS
constexpr unsigned kFeatureEnabled = 1;
constexpr unsigned kRemoteSwitch = 2;  // NVML_NVLINK_DEVICE_TYPE_SWITCH

struct NvmlPciInfo {  // nvmlPciInfo_t
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

struct Nvml {
  NvmlReturn (*init)();
  NvmlReturn (*shutdown)();
  const char* (*errorString)(NvmlReturn);
  NvmlReturn (*byBusId)(const char*, NvmlDevice*);
  NvmlReturn (*linkState)(NvmlDevice, unsigned, unsigned*);
  NvmlReturn (*remotePci)(NvmlDevice, unsigned, NvmlPciInfo*);
  // Null in drivers before R450: a far end that is no listed GPU then
  // counts as an NVSwitch.
  NvmlReturn (*remoteType)(NvmlDevice, unsigned, unsigned*);
};

template <typename F>
bool symbol(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

// Loaded once and kept: NVML is not made to be unloaded and reloaded.
const Nvml* loadNvml(std::string* why) {
  static std::string failure;
  static const Nvml* nvml = [] {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* err = dlerror();
      failure = std::string("libnvidia-ml.so.1 did not load (") + (err ? err : "no reason given") + ")";
      return static_cast<const Nvml*>(nullptr);
    }
    static Nvml n;
    if (!symbol(lib, "nvmlInit_v2", &n.init) || !symbol(lib, "nvmlShutdown", &n.shutdown) ||
        !symbol(lib, "nvmlErrorString", &n.errorString) ||
        !symbol(lib, "nvmlDeviceGetHandleByPciBusId_v2", &n.byBusId) ||
        !symbol(lib, "nvmlDeviceGetNvLinkState", &n.linkState) ||
        !symbol(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &n.remotePci)) {
      failure = "libnvidia-ml.so.1 lacks the NVLink queries (driver too old)";
      return static_cast<const Nvml*>(nullptr);
    }
    symbol(lib, "nvmlDeviceGetNvLinkRemoteDeviceType", &n.remoteType);
    return static_cast<const Nvml*>(&n);
  }();
  if (!nvml) *why = failure;
  return nvml;
}

}  // namespace

bool nvmlLanes(const std::vector<std::string>& busIds, std::vector<int>* lanes, std::string* why) {
  const Nvml* nvml = loadNvml(why);
  if (!nvml) return false;
  NvmlReturn rc = nvml->init();
  if (rc != kNvmlSuccess) {
    *why = std::string("nvmlInit: ") + nvml->errorString(rc);
    return false;
  }
  const int n = static_cast<int>(busIds.size());
  lanes->assign(size_t(n) * n, 0);
  std::vector<int> toSwitches(n, 0);
  int known = 0;  // GPUs NVML has a handle for
  for (int a = 0; a < n; ++a) {
    NvmlDevice dev = nullptr;
    if (nvml->byBusId(busIds[a].c_str(), &dev) != kNvmlSuccess) continue;  // not NVIDIA's, or hidden from us
    ++known;
    for (unsigned link = 0; link < kMaxLinks; ++link) {
      unsigned active = 0;
      if (nvml->linkState(dev, link, &active) != kNvmlSuccess || active != kFeatureEnabled) continue;
      NvmlPciInfo remote{};
      if (nvml->remotePci(dev, link, &remote) != kNvmlSuccess) continue;
      const std::string peer = normalizeBusId(std::string(remote.busId, strnlen(remote.busId, sizeof(remote.busId))));
      const auto at = std::find(busIds.begin(), busIds.end(), peer);
      if (at != busIds.end()) {
        if (at - busIds.begin() != a) ++(*lanes)[size_t(a) * n + (at - busIds.begin())];
        continue;
      }
      unsigned type = kRemoteSwitch;
      if (nvml->remoteType && nvml->remoteType(dev, link, &type) != kNvmlSuccess) continue;
      if (type == kRemoteSwitch) ++toSwitches[a];  // not a CPU's NVLink (POWER9)
    }
  }
  // Both ranks of a pair must read the same lanes, whichever end NVML
  // answered for (a container may show it only some of hwloc's GPUs).
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      int& ab = (*lanes)[size_t(a) * n + b];
      int& ba = (*lanes)[size_t(b) * n + a];
      ab = ba = std::max(ab, ba);
      if (toSwitches[a] > 0 && toSwitches[b] > 0) {
        ab += std::min(toSwitches[a], toSwitches[b]);
        ba = ab;
      }
    }
  nvml->shutdown();
  if (known == 0) {
    *why = "NVML knows none of these GPUs";
    return false;
  }
  return true;
}

}  // namespace strata::topo
