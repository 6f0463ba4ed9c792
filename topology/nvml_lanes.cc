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
      failure = "no libnvidia-ml.so.1: no NVIDIA driver here";
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
  std::vector<int> toSwitches(n, 0);  // lanes ending at something that is not one of these GPUs: NVSwitches
  for (int a = 0; a < n; ++a) {
    NvmlDevice dev = nullptr;
    if (nvml->byBusId(busIds[a].c_str(), &dev) != kNvmlSuccess) continue;  // not NVIDIA's, or hidden from us
    for (unsigned link = 0; link < kMaxLinks; ++link) {
      unsigned active = 0;
      if (nvml->linkState(dev, link, &active) != kNvmlSuccess || active != kFeatureEnabled) continue;
      NvmlPciInfo remote{};
      if (nvml->remotePci(dev, link, &remote) != kNvmlSuccess) continue;
      const std::string peer = normalizeBusId(std::string(remote.busId, strnlen(remote.busId, sizeof(remote.busId))));
      const auto at = std::find(busIds.begin(), busIds.end(), peer);
      if (at == busIds.end()) ++toSwitches[a];
      else if (at - busIds.begin() != a) ++(*lanes)[size_t(a) * n + (at - busIds.begin())];
    }
  }
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b && toSwitches[a] > 0 && toSwitches[b] > 0)
        (*lanes)[size_t(a) * n + b] += std::min(toSwitches[a], toSwitches[b]);
  nvml->shutdown();
  return true;
}

}  // namespace strata::topo
