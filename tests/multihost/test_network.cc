#include "test_network.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace strata::test {
namespace {

constexpr const char* kPrefix = "strt";  // namespace and device names start so

int shell(const std::string& command) {
  int status = std::system((command + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Deletes namespaces left by earlier runs whose process is gone.
void sweepLeftovers() {
  FILE* p = popen("ip netns list 2>/dev/null", "r");
  if (!p) return;
  char line[256];
  while (fgets(line, sizeof(line), p)) {
    std::string name = std::string(line).substr(0, std::string(line).find_first_of(" \n"));
    if (name.rfind(kPrefix, 0) != 0) continue;
    int pid = std::atoi(name.c_str() + std::string(kPrefix).size());
    if (pid > 0 && kill(pid, 0) != 0) shell("ip netns del " + name);
  }
  pclose(p);
}

}  // namespace

std::string TestNetwork::unsupportedReason() {
  if (geteuid() != 0) return "multi-host tests need root (network namespaces); skipped";
  if (shell("command -v ip") != 0) return "multi-host tests need iproute2's ip; skipped";
  return "";
}

TestNetwork::TestNetwork(int hosts, Family family)
    : hosts_(hosts),
      prefix_(kPrefix + std::to_string(getpid())),
      family_(family),
      subnet_(family == Family::IPv4 ? "10.213." + std::to_string(getpid() % 250) + "."
                                     : "fd42:0:" + std::to_string(getpid() % 9999) + "::") {
  sweepLeftovers();
  const std::string sw = prefix_ + "sw";
  if (!run("ip netns add " + sw) || !run("ip -n " + sw + " link add br0 type bridge") ||
      !run("ip -n " + sw + " link set br0 up")) {
    error_ = "could not create the bridge namespace";
    return;
  }
  for (int h = 0; h < hosts_; ++h) {
    const std::string ns = nsName(h);
    const std::string port = "p" + std::to_string(h);
    bool ok = run("ip netns add " + ns) && run("ip -n " + ns + " link set lo up") &&
              run("ip -n " + ns + " link add " + device(h) + " type veth peer name " + port + " netns " + sw) &&
              run("ip -n " + sw + " link set " + port + " master br0") && run("ip -n " + sw + " link set " + port + " up") &&
              // nodad: an IPv6 address is usable at once, not after duplicate detection.
              run("ip -n " + ns + " addr add " + address(h) +
                  (family_ == Family::IPv4 ? "/24 dev " + device(h) : "/64 dev " + device(h) + " nodad")) &&
              run("ip -n " + ns + " link set " + device(h) + " up");
    if (!ok) {
      error_ = "could not create host namespace " + ns;
      return;
    }
  }
}

TestNetwork::~TestNetwork() {
  for (int h = 0; h < hosts_; ++h) shell("ip netns del " + nsName(h));
  shell("ip netns del " + prefix_ + "sw");
}

bool TestNetwork::run(const std::string& command) { return shell(command) == 0; }

std::string TestNetwork::nsName(int host) const { return prefix_ + "h" + std::to_string(host); }

std::string TestNetwork::address(int host) const { return subnet_ + std::to_string(host + 1); }

std::string TestNetwork::device(int host) const { return "eth" + std::to_string(host); }

int TestNetwork::exec(int host, const std::string& command) const {
  return shell("ip netns exec " + nsName(host) + " " + command);
}

bool TestNetwork::enter(int host) const {
  int fd = open(("/var/run/netns/" + nsName(host)).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = setns(fd, CLONE_NEWNET) == 0;
  close(fd);
  // As `ip netns exec` does: a private /sys of this namespace, since
  // libraries list interfaces from /sys/class/net (UCX does, and would find
  // the root namespace's devices there and none of this host's).
  if (ok && unshare(CLONE_NEWNS) == 0 && mount(nullptr, "/", nullptr, MS_SLAVE | MS_REC, nullptr) == 0 &&
      umount2("/sys", MNT_DETACH) == 0)
    ok = mount("sysfs", "/sys", "sysfs", 0, nullptr) == 0;
  return ok;
}

}  // namespace strata::test
