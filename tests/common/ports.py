"""A free port for a test job's rank-0 bootstrap listener: the Python
twin of freePort() in process_tools.h, which says why it picks below the
kernel's ephemeral range (a port the kernel picks can be handed to any
process's outgoing connection before rank 0 listens on it).

    sys.path.insert(0, <tests/common>); from ports import free_port
"""
import random
import socket


def free_port():
    """A port nobody has bound right now, picked at random below
    ip_local_port_range; None if 1000 picks were all taken."""
    try:
        ephemeral = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral = 32768
    first = 10000 if ephemeral > 11024 else 1024
    for _ in range(1000):
        port = random.randrange(first, ephemeral)
        with socket.socket() as s:
            try:
                s.bind(("", port))
            except OSError:
                continue
        return port
    return None
