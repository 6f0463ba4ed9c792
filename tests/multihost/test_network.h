// Hosts for multi-host tests: network namespaces on this machine, joined by
// veth pairs to a bridge that lives in a namespace of its own, so that every
// address exists only inside namespaces the test created. Everything is
// removed by the destructor, and leftovers of an earlier crashed run (same
// name prefix, dead pid) are removed by the constructor.
#pragma once

#include <string>
#include <vector>

namespace strata::test {

class TestNetwork {
 public:
  enum class Family { IPv4, IPv6 };
  // With IPv6, hosts get only IPv6 addresses (besides loopback).
  explicit TestNetwork(int hosts, Family family = Family::IPv4);
  ~TestNetwork();
  TestNetwork(const TestNetwork&) = delete;
  TestNetwork& operator=(const TestNetwork&) = delete;

  // Empty when the network is up; else why it could not be built.
  const std::string& error() const { return error_; }

  std::string nsName(int host) const;
  std::string address(int host) const;  // as MASTER_ADDR takes it
  std::string device(int host) const;   // the host's interface name

  // Runs a shell command inside host's namespace; returns its exit status.
  int exec(int host, const std::string& command) const;

  // Moves the calling process into host's network namespace, with that
  // namespace's /sys (as `ip netns exec`).
  bool enter(int host) const;

  // Why a multi-host test cannot run here, or "" if it can.
  static std::string unsupportedReason();

 private:
  bool run(const std::string& command);

  int hosts_;
  std::string prefix_;
  Family family_;
  std::string subnet_;  // "10.213.N." or "fd42:0:N::": addresses exist only inside our namespaces
  std::string error_;
};

}  // namespace strata::test
