"""Hosts made of network namespaces, for the bench/compare-* scripts, and
running one rank in each of two of them.

Each host is a namespace joined by a veth pair to a bridge in one more
namespace; addresses exist only inside them, and close() removes them all.
"""
import os
import shlex
import subprocess


def sh(cmd, check=True):
    return subprocess.run(cmd, shell=True, check=check, capture_output=True, text=True)


class Hosts:
    def __init__(self, count=2, tag="strcn", rate=None):
        tag = "%s%d" % (tag, os.getpid())
        self.sw = tag + "sw"
        self.ns = [tag + "h%d" % h for h in range(count)]
        subnet = "10.214.%d." % (os.getpid() % 250)
        self.addr = [subnet + str(h + 1) for h in range(count)]
        self.dev = ["eth%d" % h for h in range(count)]
        sh("ip netns add %s && ip -n %s link add br0 type bridge && ip -n %s link set br0 up" % (self.sw, self.sw, self.sw))
        try:
            for h in range(count):
                sh("ip netns add {ns} && ip -n {ns} link set lo up && "
                   "ip -n {ns} link add {dev} type veth peer name p{h} netns {sw} && "
                   "ip -n {sw} link set p{h} master br0 && ip -n {sw} link set p{h} up && "
                   "ip -n {ns} addr add {a}/24 dev {dev} && ip -n {ns} link set {dev} up"
                   .format(ns=self.ns[h], dev=self.dev[h], sw=self.sw, h=h, a=self.addr[h]))
            if rate:
                self.cap(rate)
        except Exception:
            self.close()
            raise

    def cap(self, rate):
        """Caps what each host sends at `rate` (tc's syntax, e.g. 10gbit) with a token bucket."""
        for h in range(len(self.ns)):
            sh("ip netns exec %s tc qdisc replace dev %s root tbf rate %s burst 4mb latency 50ms"
               % (self.ns[h], self.dev[h], shlex.quote(rate)))

    def congestion(self, name=None):
        """Sets the namespaces' default congestion control to `name`, if
        given; returns the first namespace's."""
        for ns in self.ns if name else []:
            sh("ip netns exec %s sysctl -qw net.ipv4.tcp_congestion_control=%s" % (ns, shlex.quote(name)))
        return sh("ip netns exec %s sysctl -n net.ipv4.tcp_congestion_control" % self.ns[0]).stdout.strip()

    def close(self):
        for ns in self.ns + [self.sw]:
            sh("ip netns del " + ns, check=False)

    def popen(self, h, cmd, env):
        full = ["ip", "netns", "exec", self.ns[h], "env"] + ["%s=%s" % kv for kv in env.items()] + cmd
        return subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_pair(hosts, cmd, env_of, timeout=900):
    procs = [hosts.popen(h, cmd, env_of(h)) for h in range(2)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        outs.append((p.returncode, out, err))
    for rc, out, err in outs:
        if rc != 0:
            raise RuntimeError("%s failed (%d): %s%s" % (" ".join(cmd), rc, out[-2000:], err[-2000:]))
    return outs[0][1]


def parse_rows(text):
    rows = {}
    for line in text.splitlines():
        f = line.split()
        if line.startswith("#") or len(f) < 12:
            continue
        off = len(f) - 12  # strata-perf and mpi-perf have a root column, gloo's program not
        try:
            rows[int(f[0])] = (float(f[4 + off]), float(f[6 + off]))
        except ValueError:
            pass
    return rows
