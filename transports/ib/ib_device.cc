#include "ib_device.h"

#include <arpa/inet.h>

#include <cstdlib>
#include <cstring>

#include "log.h"
#include "name_list.h"

namespace strata::ib {
namespace {

// RoCE v2 GIDs are routable over IP; an IPv4-mapped one (::ffff:a.b.c.d) is
// what every RoCE setup has, so it is the first choice, then any other
// RoCE v2 GID that is not link-local.
int pickRoceGid(ibv_context* ctx, int port, int tableLength) {
  int fallback = -1;
  for (int i = 0; i < tableLength; ++i) {
    ibv_gid_entry entry;
    if (ibv_query_gid_ex(ctx, port, i, &entry, 0) != 0) continue;
    if (entry.gid_type != IBV_GID_TYPE_ROCE_V2) continue;
    const uint8_t* raw = entry.gid.raw;
    static const uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(raw, kV4Mapped, sizeof(kV4Mapped)) == 0) return i;
    const bool linkLocal = raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80;
    if (!linkLocal && fallback < 0) fallback = i;
  }
  return fallback;
}

std::string gidText(const ibv_gid& gid) {
  char text[INET6_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET6, gid.raw, text, sizeof(text));
  return text;
}

}  // namespace

bool hcaMatches(const std::string& spec, const std::string& dev, int port) {
  if (spec.empty()) return true;
  // '=' (after any '^') makes every item an exact name.
  const size_t at = spec[0] == '^' ? 1 : 0;
  const bool exact = at < spec.size() && spec[at] == '=';
  const std::string list = exact ? spec.substr(0, at) + spec.substr(at + 1) : spec;
  return listMatches(list, [&](const std::string& item) {
    const size_t colon = item.find(':');
    const std::string name = item.substr(0, colon);
    const int wantPort = colon == std::string::npos ? -1 : std::atoi(item.c_str() + colon + 1);
    return (exact ? dev == name : startsWith(dev, name)) && (wantPort < 0 || wantPort == port);
  });
}

Device::~Device() {
  if (pd_) ibv_dealloc_pd(pd_);
  if (context_) ibv_close_device(context_);
}

std::unique_ptr<Device> Device::open(const std::string& hcaSpec, int64_t gidIndex, std::string* why) {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (!list || count == 0) {
    if (list) ibv_free_device_list(list);
    *why = "no RDMA device";
    return nullptr;
  }
  std::unique_ptr<Device> chosen;
  std::string seen;
  for (int d = 0; d < count && !chosen; ++d) {
    const std::string name = ibv_get_device_name(list[d]);
    ibv_context* ctx = ibv_open_device(list[d]);
    if (!ctx) continue;
    ibv_device_attr dev{};
    if (ibv_query_device(ctx, &dev) != 0) {
      ibv_close_device(ctx);
      continue;
    }
    for (int port = 1; port <= dev.phys_port_cnt && !chosen; ++port) {
      ibv_port_attr attr{};
      if (ibv_query_port(ctx, port, &attr) != 0) continue;
      seen += (seen.empty() ? "" : ", ") + name + ":" + std::to_string(port) +
              (attr.state == IBV_PORT_ACTIVE ? "" : " (down)");
      if (attr.state != IBV_PORT_ACTIVE || !hcaMatches(hcaSpec, name, port)) continue;
      auto device = std::unique_ptr<Device>(new Device);
      device->roce_ = attr.link_layer == IBV_LINK_LAYER_ETHERNET;
      int gid = static_cast<int>(gidIndex);
      if (gid < 0) gid = device->roce_ ? pickRoceGid(ctx, port, attr.gid_tbl_len) : 0;
      if (gid < 0 || gid >= attr.gid_tbl_len || ibv_query_gid(ctx, port, gid, &device->gid_) != 0) {
        STRATA_WARN(NET, "ib: %s:%d has no usable GID%s; skipped", name.c_str(), port,
                    gidIndex >= 0 ? " at STRATA_IB_GID_INDEX" : " (RoCE v2)");
        continue;
      }
      device->context_ = ctx;
      device->pd_ = ibv_alloc_pd(ctx);
      if (!device->pd_) {
        device->context_ = nullptr;  // closed below with the others
        STRATA_WARN(NET, "ib: ibv_alloc_pd on %s failed: %s", name.c_str(), errnoText(errno).c_str());
        break;
      }
      device->port_ = port;
      device->gidIndex_ = gid;
      device->lid_ = attr.lid;
      device->mtu_ = attr.active_mtu;
      device->maxQpWr_ = dev.max_qp_wr;
      device->label_ = name + ":" + std::to_string(port);
      chosen = std::move(device);
    }
    if (!chosen) ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
  if (!chosen) {
    *why = "no active port" + std::string(hcaSpec.empty() ? "" : " matching STRATA_IB_HCA='" + hcaSpec + "'") +
           " among " + seen;
    return nullptr;
  }
  STRATA_INFO(NET, "ib: using %s (%s), GID index %d (%s)%s", chosen->label_.c_str(),
              chosen->roce_ ? "RoCE" : "InfiniBand", chosen->gidIndex_, gidText(chosen->gid_).c_str(),
              hcaSpec.empty() ? "" : " per STRATA_IB_HCA");
  return chosen;
}

}  // namespace strata::ib
