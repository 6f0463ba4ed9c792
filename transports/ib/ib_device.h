// The RDMA device, port and GID a rank's ib transport uses. STRATA_IB_HCA
// chooses among devices like NCCL_IB_HCA ("mlx5_0:1,mlx5_1", "^mlx5_2",
// "=rxe0"); otherwise the first device with an active port wins. On Ethernet
// (RoCE) ports the GID is a RoCE v2 one, IPv4-mapped first, unless
// STRATA_IB_GID_INDEX names one; on InfiniBand ports the LID routes and
// GID 0 is carried along.
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>

#include "status.h"

namespace strata::ib {

// True if device `dev`, port `port`, passes an NCCL_IB_HCA-style spec: a
// comma list of name prefixes with optional ":port", the whole list exact
// with a leading '=', excluded with a leading '^'. Empty passes everything.
bool hcaMatches(const std::string& spec, const std::string& dev, int port);

class Device {
 public:
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // The device this process should use, or null (and why, for the log) when
  // there is none: no RDMA device, none matching STRATA_IB_HCA, no active port.
  static std::unique_ptr<Device> open(const std::string& hcaSpec, int64_t gidIndex, std::string* why);

  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  int port() const { return port_; }
  int gidIndex() const { return gidIndex_; }
  const ibv_gid& gid() const { return gid_; }
  uint16_t lid() const { return lid_; }
  ibv_mtu mtu() const { return mtu_; }
  bool roce() const { return roce_; }
  // "rxe0:1", as HostInfo carries it.
  const std::string& label() const { return label_; }
  // Capabilities the queue pairs are sized by.
  int maxQpWr() const { return maxQpWr_; }

 private:
  Device() = default;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  int port_ = 0;
  int gidIndex_ = 0;
  ibv_gid gid_{};
  uint16_t lid_ = 0;
  ibv_mtu mtu_ = IBV_MTU_1024;
  bool roce_ = false;
  int maxQpWr_ = 0;
  std::string label_;
};

}  // namespace strata::ib
