#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target under corpus/<target>/: real,
valid records as strata's ranks send them, and the edge cases around them.
Run from anywhere; it rewrites only the files it names (inputs libFuzzer
merged in with scripts/fuzz.sh --merge, named by their SHA-1, stay). The
layouts are x86-64 Linux's, as the C++ structs have them (the targets read
whatever they are given, so a wrong layout costs coverage, not safety)."""
import os
import socket
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
AF_INET, AF_INET6, AF_UNIX = 2, 10, 1


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def sockaddr_in(ip, port):
    return struct.pack("<H", AF_INET) + struct.pack(">H", port) + socket.inet_pton(AF_INET, ip) + bytes(8)


def sockaddr_in6(ip, port, scope=0):
    return (struct.pack("<H", AF_INET6) + struct.pack(">H", port) + bytes(4) + socket.inet_pton(AF_INET6, ip)
            + struct.pack("<I", scope))


# --- listen_record: sockaddr_storage (128 bytes), socklen_t len, 4 bytes of padding
def listen_record(addr, length):
    return addr.ljust(128, b"\0") + struct.pack("<I", length) + bytes(4)


def listen_records():
    t = "listen_record"
    write(t, "ipv4-loopback", listen_record(sockaddr_in("127.0.0.1", 29500), 16))
    write(t, "ipv4-lan", listen_record(sockaddr_in("10.0.0.2", 41873), 16))
    write(t, "ipv6-loopback", listen_record(sockaddr_in6("::1", 29500), 28))
    write(t, "ipv6-link-local-scope", listen_record(sockaddr_in6("fe80::1", 40001, scope=3), 28))
    write(t, "no-peers", listen_record(b"", 0))
    write(t, "ipv4-forged-length", listen_record(sockaddr_in("127.0.0.1", 29500), 128))
    write(t, "ipv4-length-of-ipv6", listen_record(sockaddr_in("127.0.0.1", 29500), 28))
    write(t, "ipv6-length-of-ipv4", listen_record(sockaddr_in6("::1", 29500), 16))
    write(t, "unix-family", listen_record(struct.pack("<H", AF_UNIX) + b"/tmp/strata.sock", 110))
    write(t, "huge-length", listen_record(sockaddr_in("127.0.0.1", 1), 0xFFFFFFFF))
    write(t, "truncated", sockaddr_in("127.0.0.1", 29500)[:6])


# --- unique_id: a mode byte (even: the id's 128 bytes; odd: fields to seal)
def fnv1a(b):
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def unique_id(root, root_len=None, version=2, magic=0x4449415441525453, secret=bytes(range(16)),
              pid=4242, fd=7, pidns=4026531836, good_checksum=True):
    # Wire: magic, version, rootLen, root[28], secret[16], creatorPid, creatorFd,
    # 4 bytes of padding, creatorPidNamespace, checksum (88 bytes of the 128).
    root_len = len(root) if root_len is None else root_len
    w = struct.pack("<QII", magic, version, root_len) + root.ljust(28, b"\0")[:28] + secret
    w += struct.pack("<ii", pid, fd) + bytes(4) + struct.pack("<Q", pidns)
    checksum = fnv1a(w) if good_checksum else fnv1a(w) ^ 1
    return bytes([0]) + (w + struct.pack("<Q", checksum)).ljust(128, b"\0")


def sealed(root_len, root=b"", secret=bytes(16), pid=1, fd=3, pidns=4026531836):
    return bytes([1, root_len]) + root[:root_len].ljust(root_len, b"\0") + secret + struct.pack("<iiQ", pid, fd, pidns)


def unique_ids():
    t = "unique_id"
    v4, v6 = sockaddr_in("127.0.0.1", 29500), sockaddr_in6("::1", 29500)
    write(t, "ipv4", unique_id(v4))
    write(t, "ipv6", unique_id(v6))
    write(t, "no-handoff", unique_id(sockaddr_in("10.0.0.1", 29500), pid=0, fd=-1, pidns=0))
    write(t, "bad-checksum", unique_id(v4, good_checksum=False))
    write(t, "old-version", unique_id(v4, version=1))
    write(t, "bad-magic", unique_id(v4, magic=0))
    write(t, "root-length-0", unique_id(v4, root_len=0))
    write(t, "root-length-29", unique_id(v6 + b"\0", root_len=29))
    write(t, "root-length-huge", unique_id(v4, root_len=0xFFFFFFFF))
    write(t, "all-zero", bytes(129))
    write(t, "sealed-ipv4", sealed(16, v4))
    write(t, "sealed-ipv6", sealed(28, v6, secret=bytes(range(16, 32))))
    write(t, "sealed-no-address", sealed(0))


# --- host_info: k HostInfo records (416 bytes each), then one byte per rank
def host_info(host, boot="8f14e45f-ceea-467f-a8f5-4a1e3b2c9d01", netns=4026531840, pid=1000, cpus=(0, 1),
              package=0, numa=0, packages=1, numa_nodes=1, cores=2, pus=2, nic=b"eth0", rdma=b"",
              host_id=None, machine_id=None, hostname=None, cpus_allowed=None):
    hostname = host.encode() if hostname is None else hostname
    host_id = ("%s|%s|%d" % (host, boot[:20], netns)).encode() if host_id is None else host_id
    machine_id = ("%s|%s" % (host, boot[:20])).encode() if machine_id is None else machine_id
    mask = [0] * 16
    for c in cpus:
        mask[c // 64] |= 1 << (c % 64)
    b = host_id.ljust(64, b"\0")[:64] + machine_id.ljust(64, b"\0")[:64] + hostname.ljust(64, b"\0")[:64]
    b += struct.pack("<i4xQi4x", pid, 4026531836, len(cpus) if cpus_allowed is None else cpus_allowed)
    b += struct.pack("<16Q", *mask)
    b += struct.pack("<6i", package, numa, packages, numa_nodes, cores, pus)
    b += nic.ljust(16, b"\0")[:16] + rdma.ljust(32, b"\0")[:32]
    assert len(b) == 416, len(b)
    return b


def host_infos():
    t = "host_info"
    a0 = host_info("node-a", pid=100, cpus=(0,))
    a1 = host_info("node-a", pid=101, cpus=(1,))
    b0 = host_info("node-b", boot="0cc175b9-c0f1-b6a8-31c3-99e269772661", pid=200, cpus=(0,), nic=b"ens3",
                   rdma=b"rxe0:1")
    write(t, "one-rank", host_info("localhost"))
    write(t, "two-hosts-two-ranks-each", a0 + b0 + bytes([0, 0, 1, 1]))
    write(t, "two-hosts-interleaved", a0 + b0 + bytes([0, 1, 0, 1]))
    # One host, two packages (and a rank spanning both: package -1, last).
    p0 = host_info("big", cpus=range(0, 8), packages=2, numa_nodes=2, cores=16, pus=32)
    p1 = host_info("big", cpus=range(8, 16), package=1, numa=1, packages=2, numa_nodes=2, cores=16, pus=32)
    span = host_info("big", cpus=range(0, 16), package=-1, numa=-1, packages=2, numa_nodes=2, cores=16, pus=32)
    write(t, "one-host-two-packages", p0 + p1 + span + bytes([0, 1, 0, 1, 2]))
    # Namespaces of one machine: other host ids, the same machine id.
    write(t, "namespaces-one-machine",
          host_info("node-a", netns=4026532001) + host_info("node-a", netns=4026532002) + bytes([0, 0, 1, 1]))
    write(t, "sixty-four-ranks", a0 + a1 + b0 + bytes(i % 3 for i in range(64)))
    # What a peer that is not strata (or is hostile) may send.
    write(t, "unterminated-strings", host_info("x", host_id=b"h" * 64, machine_id=b"m" * 64, hostname=b"n" * 64,
                                               nic=b"e" * 16, rdma=b"r" * 32))
    write(t, "json-escapes", host_info("q", hostname=b'a"b\\c\n\t\x01\x7f', nic=b"e\"th0"))
    write(t, "not-utf8", host_info("u", hostname=b"\xff\xfe", nic=b"\xc3"))
    write(t, "utf8-multibyte", host_info("m", hostname="nœud-ünïcode-ノード".encode()))
    write(t, "overlong-and-surrogates", host_info("o", hostname=b"\xc0\x80|\xe0\x80\x80|\xed\xa0\x80|\xf5\x80\x80\x80",
                                                  nic=b"\xf4\x90\x80\x80"))
    write(t, "negative-and-huge-counts", host_info("neg", package=-7, numa=-1, packages=-1, numa_nodes=0x7FFFFFFF,
                                                   cores=-2147483648, pus=0, cpus=range(0, 1024),
                                                   cpus_allowed=-5) + bytes([0, 0]))
    write(t, "same-hostname-other-ids", host_info("dup", netns=1) + host_info("dup", netns=2) + bytes([0, 1]))
    write(t, "all-zero", bytes(416 * 2 + 3))
    write(t, "short", b"node-a")


# --- ucx_address: nranks-1, nchannels, nranks x uint64 announced length, records
def ucx(lens, nchannels, records):
    return bytes([len(lens) - 1, nchannels]) + b"".join(struct.pack("<Q", l) for l in lens) + b"".join(records)


def ucx_record(entry_bytes, addrs):
    out = b""
    for a in addrs:
        out += (struct.pack("<Q", len(a)) + a).ljust(entry_bytes, b"\0")
    return out


def fake_address(n, seed):
    return bytes((seed * 31 + i * 7) & 0xFF for i in range(n))


def ucx_addresses():
    t = "ucx_address"
    e = 8 + 200
    write(t, "two-ranks-two-channels",
          ucx([180, 200], 2, [ucx_record(e, [fake_address(180, 1), fake_address(172, 2)]),
                              ucx_record(e, [fake_address(200, 3), fake_address(150, 4)])]))
    e = 8 + 120
    write(t, "four-ranks-one-channel",
          ucx([120, 118, 120, 96], 1, [ucx_record(e, [fake_address(l, r)]) for r, l in enumerate([120, 118, 120, 96])]))
    write(t, "nobody-uses-ucx", ucx([0, 0], 2, []))
    e = 8 + 100
    write(t, "rank-without-worker", ucx([0, 100], 1, [ucx_record(e, [b""]), ucx_record(e, [fake_address(100, 5)])]))
    write(t, "longer-than-announced",
          ucx([100, 50], 1, [ucx_record(e, [fake_address(100, 6)]), ucx_record(e, [fake_address(80, 7)])]))
    write(t, "longer-than-entry",
          ucx([64, 64], 1, [ucx_record(72, [fake_address(64, 8)]), struct.pack("<Q", 4096) + fake_address(64, 9)]))
    write(t, "record-cut-short",
          ucx([64, 64], 2, [ucx_record(72, [fake_address(64, 1), fake_address(64, 2)]), ucx_record(72, [fake_address(64, 3)])]))
    write(t, "announced-huge", ucx([2 ** 63, 64], 1, [ucx_record(72, [fake_address(64, 1)])]))
    write(t, "announced-limit", ucx([65536], 1, [struct.pack("<Q", 65536) + fake_address(64, 2)]))
    write(t, "no-channels", ucx([64, 64], 0, []))


# --- tcp_frame: slot size (uint16), then 24-byte headers (seq, desc, bytes) and payloads
def op_desc(coll, datatype, op, count):
    return (coll << 56) | (datatype << 52) | (op << 48) | count


ALLREDUCE_F32_SUM_1024 = op_desc(1, 8, 0, 1024)  # the target's own call


def frame(seq, desc, payload, length=None):
    return struct.pack("<QQQ", seq, desc, len(payload) if length is None else length) + payload


def tcp_frames():
    t = "tcp_frame"
    d = ALLREDUCE_F32_SUM_1024
    write(t, "three-messages", struct.pack("<H", 64) + frame(1, d, bytes(16)) + frame(1, d, b"") + frame(2, d, bytes(range(64))))
    write(t, "other-collective", struct.pack("<H", 64) + frame(1, op_desc(2, 8, 0, 1024), bytes(8)))
    write(t, "send-recv", struct.pack("<H", 4096) + frame(7, op_desc(10, 1, 0, 300), bytes(300)))
    write(t, "barrier", struct.pack("<H", 64) + frame(3, op_desc(9, 0, 0, 0), b""))
    write(t, "payload-past-slot", struct.pack("<H", 64) + frame(1, d, bytes(65)))
    write(t, "length-huge", struct.pack("<H", 64) + frame(1, d, b"", length=2 ** 64 - 1))
    write(t, "payload-cut-short", struct.pack("<H", 64) + frame(1, d, bytes(10), length=40))
    write(t, "zero-slots", struct.pack("<H", 0) + frame(1, d, b"") + frame(2, d, b""))
    write(t, "garbage-tag", struct.pack("<H", 16) + frame(2 ** 64 - 1, 2 ** 64 - 1, bytes(16)))
    # A tag whose op and datatype fields lie past their enums (found by this target).
    write(t, "op-past-enum", struct.pack("<H", 64) + frame(1, op_desc(1, 15, 15, 8), bytes(8)))
    write(t, "header-cut-short", struct.pack("<H", 64) + frame(1, d, b"")[:13])


# --- split_members: this rank (1 byte), then (color, key, rank) as 3 x int64 per rank
def split(me, members):
    return bytes([me]) + b"".join(struct.pack("<qqq", c, k, r) for c, k, r in members)


def splits():
    t = "split_members"
    write(t, "two-colors", split(1, [(0, 0, 0), (1, 0, 1), (0, 1, 2), (1, 1, 3)]))
    write(t, "dup", split(2, [(0, r, r) for r in range(4)]))
    write(t, "keys-reversed-and-tied", split(0, [(5, 9, 0), (5, 3, 1), (5, 3, 2), (5, -4, 3), (6, 0, 4)]))
    write(t, "nocolor", split(1, [(0, 0, 0), (-1, 0, 1), (0, 0, 2)]))
    write(t, "one-rank", split(0, [(0, 0, 0)]))
    write(t, "sixty-four-ranks", split(17, [(r % 3, 64 - r, r) for r in range(64)]))
    write(t, "rank-mismatch", split(0, [(0, 0, 0), (0, 0, 5)]))
    write(t, "rank-negative", split(0, [(0, 0, 0), (0, 0, -1)]))
    write(t, "color-negative", split(0, [(0, 0, 0), (-2, 0, 1)]))
    write(t, "color-past-int", split(0, [(0, 0, 0), (2 ** 31, 0, 1)]))
    write(t, "key-past-int", split(0, [(0, 0, 0), (0, -(2 ** 31) - 1, 1)]))
    write(t, "own-entry-past-int", split(0, [(2 ** 32, 0, 0), (0, 0, 1)]))


def main():
    listen_records()
    unique_ids()
    host_infos()
    ucx_addresses()
    tcp_frames()
    splits()
    return 0


if __name__ == "__main__":
    sys.exit(main())
