"""strata from Python: collective communication between CPU processes.

    import numpy as np
    import strata

    # In every process of the job (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set):
    with strata.Comm.init_env() as comm:
        grad = np.full(4, comm.rank, dtype=np.float32)
        comm.allreduce(grad, op=strata.AVG)    # in place: every rank gets the mean

Buffers are any C-contiguous object with the buffer protocol (numpy arrays,
bytearray, array.array, memoryview); their element type chooses strata's
datatype. A collective writes into `out=` when given, else in place.
`async_op=True` returns a Request instead of waiting.

This is plain Python over libstrata's C API (strata.h) through ctypes, not a
compiled extension: nothing to compile, no coupling to one Python version's
ABI (the same files serve any interpreter that can load libstrata.so.0), and
every behaviour stays defined in one place, the C library. ctypes releases the
GIL around each call, so a blocking collective leaves other threads running.
"""
import contextlib
import ctypes
import json
import threading

from ._arguments import as_c_int, as_count, as_enum, as_text, buffer, datatype_or_none, pair, same_count
from ._capi import (DEVICE_CURRENT, Config, Memory, UniqueId, Datatype, Op, Result, StrataError, c_int, c_ptr, check,
                    lib, version)

__all__ = [
    "Comm", "Request", "StrataError", "Datatype", "Op", "Result", "get_unique_id", "group",
    "INT8", "UINT8", "INT32", "UINT32", "INT64", "UINT64", "FLOAT16", "BFLOAT16", "FLOAT32",
    "FLOAT64", "SUM", "PROD", "MIN", "MAX", "AVG", "SPLIT_NOCOLOR", "UNIQUE_ID_BYTES",
]
__version__ = version()

# Tracebacks and reprs name the module users import.
for _cls in (Datatype, Op, Result, StrataError):
    _cls.__module__ = __name__
del _cls

INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64 = Datatype
SUM, PROD, MIN, MAX, AVG = Op
SPLIT_NOCOLOR = -1
UNIQUE_ID_BYTES = ctypes.sizeof(UniqueId)


class _GroupState(threading.local):
    depth = 0

    def __init__(self):
        self.held = []


_group_state = _GroupState()


@contextlib.contextmanager
def group():
    """strata_group_start/end as a context manager (per thread, nestable).

    Blocking calls inside only queue their work and return at once; leaving
    the outermost group issues everything and waits for it, so sends and
    receives between many ranks progress together. async_op is not allowed
    inside. The buffers of queued calls are kept alive until then.
    """
    check(lib.strata_group_start(), "strata_group_start")
    state = _group_state
    state.depth += 1
    try:
        yield
    finally:
        state.depth -= 1
        rc = lib.strata_group_end()
        if state.depth == 0:
            state.held.clear()
    check(rc, "strata_group_end")


class Request:
    """A non-blocking operation (async_op=True). It keeps its buffers and
    communicator alive until it completes; wait() or test() reports its
    failure as StrataError. A request dropped unfinished is waited for, since
    strata may still be writing into its buffers."""

    def __init__(self, handle, keep, call):
        self._handle = handle  # None once complete (strata gives NULL when nothing is to do)
        self._keep = keep
        self._call = call

    def test(self):
        """True once complete (raising StrataError if it failed); never blocks."""
        if self._handle is None:
            return True
        done = c_int()
        rc = lib.strata_test(self._handle, ctypes.byref(done))
        if not done.value:
            return False
        self._complete(rc)
        return True

    def wait(self):
        """Blocks until complete; raises StrataError if it failed."""
        if self._handle is not None:
            self._complete(lib.strata_wait(self._handle))

    def _complete(self, rc):
        # strata has freed the request by now, whatever rc says.
        self._handle = None
        self._keep = None
        check(rc, self._call)

    def __del__(self):
        if self._handle is not None:
            lib.strata_wait(self._handle)

    def __repr__(self):
        return f"<strata.Request {self._call} {'pending' if self._handle else 'complete'}>"


def get_unique_id():
    """A new communicator's id (UNIQUE_ID_BYTES bytes), to hand to every rank
    out of band. It holds the socket rank 0 listens on: rank 0 may be this
    process, one it forks or spawns, or any process on this host, and this
    process must stay alive until rank 0 has joined."""
    uid = UniqueId()
    check(lib.strata_get_unique_id(ctypes.byref(uid)), "strata_get_unique_id")
    return bytes(uid)  # all of it: the field itself would stop at the first NUL


def _unique_id(uid):
    """A UniqueId from the bytes of get_unique_id() or Comm.grow_id()."""
    try:
        raw = bytes(uid)
    except TypeError:
        raise TypeError(f"uid must be the bytes of strata.get_unique_id(), "
                        f"got {type(uid).__name__}") from None
    if len(raw) != UNIQUE_ID_BYTES:
        raise ValueError(f"uid has {len(raw)} bytes; strata.get_unique_id() gives "
                         f"{UNIQUE_ID_BYTES}")
    return UniqueId.from_buffer_copy(raw)


class Comm:
    """A communicator. Make one with Comm.init_rank, Comm.init_env or
    Comm.init_world (or split/dup); free it with destroy(), abort(), or a
    with-block, which destroys it on a normal exit and aborts it when an
    exception leaves (so the other ranks fail at once instead of timing out).

    Calls on one communicator must come in the same order on every rank, from
    one thread at a time. Collectives return None, or a Request with
    async_op=True. Argument mistakes the module can see raise TypeError or
    ValueError naming the argument before anything reaches strata.
    """

    def __init__(self):
        raise TypeError("use Comm.init_rank, Comm.init_env, Comm.init_world, split or dup")

    @classmethod
    def _adopt(cls, handle):
        comm = cls.__new__(cls)
        comm._comm = handle
        rank, size = c_int(), c_int()
        check(lib.strata_comm_rank(handle, ctypes.byref(rank)), "strata_comm_rank")
        check(lib.strata_comm_size(handle, ctypes.byref(size)), "strata_comm_size")
        comm._rank, comm._size = rank.value, size.value
        return comm

    @classmethod
    def _create(cls, call, fn, *args):
        handle = c_ptr()
        check(fn(ctypes.byref(handle), *args), call)
        return cls._adopt(handle.value)

    @classmethod
    def init_rank(cls, nranks, uid, rank, timeout=None, *, reproducible=None, algorithm=None,
                  nchannels=None, memory_budget=None):
        """Joins rank `rank` of an nranks communicator named by uid (the bytes
        of get_unique_id). Blocks until every rank has joined. Its own
        settings, each None for its STRATA_* variable, inherited by its splits
        and dups: `timeout` (seconds), how long its operations may go without
        progress before they fail with Result.TIMEOUT (STRATA_TIMEOUT);
        `reproducible` (bool), results whose bits do not depend on the
        algorithm, channels or layout (STRATA_REPRODUCIBLE); `algorithm`, the
        allreduce algorithm (STRATA_ALGO); `nchannels` (STRATA_NCHANNELS);
        `memory_budget`, the bytes its slots may take on this rank
        (STRATA_MEM_BUDGET; memory() says what it holds)."""
        nranks, rank = as_c_int(nranks, "nranks"), as_c_int(rank, "rank")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))):
            raise TypeError(f"timeout must be a number of seconds, got {type(timeout).__name__}")
        if timeout is not None and not 0 < timeout <= 1e9:
            raise ValueError(f"timeout={timeout} must be a number of seconds in (0, 1e9]")
        if reproducible is not None and not isinstance(reproducible, bool):
            raise TypeError(f"reproducible must be True, False or None, got {type(reproducible).__name__}")
        config = Config(ctypes.sizeof(Config), float(timeout or 0),
                        0 if reproducible is None else 1 if reproducible else -1,
                        None if algorithm is None else as_text(algorithm, "algorithm"),
                        0 if nchannels is None else as_c_int(nchannels, "nchannels"), DEVICE_CURRENT,
                        0 if memory_budget is None else as_count(memory_budget, "memory_budget"))
        return cls._create("strata_comm_init_rank_config", lib.strata_comm_init_rank_config, nranks,
                           _unique_id(uid), rank, ctypes.byref(config))

    @classmethod
    def init_env(cls):
        """From torchrun's variables: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT."""
        return cls._create("strata_comm_init_env", lib.strata_comm_init_env)

    @classmethod
    def init_world(cls):
        """Over every process of the job, from its launcher: PMIx under mpirun
        or srun --mpi=pmix, else torchrun's variables."""
        return cls._create("strata_comm_init_world", lib.strata_comm_init_world)

    @property
    def rank(self):
        return self._rank

    @property
    def size(self):
        return self._size

    def _handle(self):
        if self._comm is None:
            raise ValueError("the communicator has been destroyed")
        return self._comm

    def destroy(self):
        """Frees the communicator (after every operation on it is done); does
        nothing if it is already freed."""
        if self._comm is not None:
            handle, self._comm = self._comm, None
            check(lib.strata_comm_destroy(handle), "strata_comm_destroy")

    def abort(self):
        """Fails every pending and future operation on the communicator, here
        and on the ranks that depend on this one, then frees it."""
        handle, self._comm = self._handle(), None
        check(lib.strata_comm_abort(handle), "strata_comm_abort")

    def split(self, color, key=0):
        """Collective: ranks passing the same color form a new communicator,
        ranked by key, then by rank here. color None (or SPLIT_NOCOLOR) joins
        none and returns None."""
        color = SPLIT_NOCOLOR if color is None else as_c_int(color, "color")
        key = as_c_int(key, "key")
        handle = c_ptr()
        check(lib.strata_comm_split(self._handle(), color, key, ctypes.byref(handle)),
               "strata_comm_split")
        return None if handle.value is None else type(self)._adopt(handle.value)

    def dup(self):
        """Collective: the same ranks in a communicator whose operations never
        mix with this one's."""
        handle = c_ptr()
        check(lib.strata_comm_dup(self._handle(), ctypes.byref(handle)), "strata_comm_dup")
        return type(self)._adopt(handle.value)

    def revoke(self):
        """Fails every pending and later operation on this communicator with
        Result.REVOKED, here and on every other live rank. Any one rank may
        call it; the communicator stays for shrink() and destroy()."""
        check(lib.strata_comm_revoke(self._handle()), "strata_comm_revoke")

    def shrink(self, exclude=(), abort=False):
        """Collective over the live ranks: a new communicator of those alive
        that call it, without the ranks in `exclude` (the same list on every
        caller), in their order here. abort=True revokes this communicator
        first. A rank in `exclude` that calls gets None."""
        ranks = [as_c_int(r, "exclude[%d]" % i) for i, r in enumerate(exclude)]
        array = (c_int * max(1, len(ranks)))(*ranks)
        handle = c_ptr()
        check(lib.strata_comm_shrink(self._handle(), array, len(ranks), 1 if abort else 0,
                                     ctypes.byref(handle)), "strata_comm_shrink")
        return None if handle.value is None else type(self)._adopt(handle.value)

    @property
    def reproducible(self):
        """Whether reductions give the same bits whatever the algorithm,
        channels, transports and layout (strata_comm_is_reproducible)."""
        value = c_int()
        check(lib.strata_comm_is_reproducible(self._handle(), ctypes.byref(value)),
              "strata_comm_is_reproducible")
        return bool(value.value)

    def memory(self):
        """What the communicator holds for its transfers so far, in bytes by
        kind (strata_comm_memory): a dict of "shared" (its shared-memory
        slots), "host", "pinned" and "device"."""
        m = Memory(ctypes.sizeof(Memory), 0, 0, 0, 0)
        check(lib.strata_comm_memory(self._handle(), ctypes.byref(m)), "strata_comm_memory")
        return {"shared": m.shared_bytes, "host": m.host_bytes, "pinned": m.pinned_bytes, "device": m.device_bytes}

    def algorithm(self, collective, count, datatype=Datatype.FLOAT32):
        """(algorithm, channels) that `collective` ("allreduce", "broadcast",
        ...) of `count` elements would use (strata_comm_algorithm); local."""
        name, channels = ctypes.create_string_buffer(16), c_int()
        check(lib.strata_comm_algorithm(self._handle(), as_text(collective, "collective"),
                                        as_count(count, "count"), as_enum(Datatype, datatype, "datatype"),
                                        name, len(name), ctypes.byref(channels)), "strata_comm_algorithm")
        return name.value.decode(), channels.value

    def explain(self, collective, count, datatype=Datatype.FLOAT32):
        """What `collective` of `count` elements would do and why, as a dict
        (strata_comm_explain's JSON record): algorithm, channels, decided_by,
        every candidate's estimate, the transport to each rank; local."""
        args = (self._handle(), as_text(collective, "collective"), as_count(count, "count"),
                as_enum(Datatype, datatype, "datatype"))
        needed = ctypes.c_size_t()
        record = ctypes.create_string_buffer(1 << 14)
        rc = lib.strata_comm_explain(*args, record, len(record), ctypes.byref(needed))
        if rc == Result.INVALID_ARGUMENT and needed.value > len(record):
            record = ctypes.create_string_buffer(needed.value)
            rc = lib.strata_comm_explain(*args, record, len(record), None)
        check(rc, "strata_comm_explain")
        return json.loads(record.value.decode())

    def dump(self):
        """A stall report (str): where every rank stands, asked for over the
        control plane from this rank alone (strata_comm_dump)."""
        text = ctypes.create_string_buffer(1 << 16)
        check(lib.strata_comm_dump(self._handle(), text, len(text)), "strata_comm_dump")
        return text.value.decode(errors="replace")

    def check(self):
        """Collective diagnostics (strata_comm_check): (report, findings),
        the same report on every rank."""
        text = ctypes.create_string_buffer(1 << 16)
        findings = c_int()
        check(lib.strata_comm_check(self._handle(), text, len(text), ctypes.byref(findings)),
              "strata_comm_check")
        return text.value.decode(errors="replace"), findings.value

    def grow_id(self):
        """On rank 0: the id (bytes) through which new processes join this
        communicator with Comm.join_grown."""
        uid = UniqueId()
        check(lib.strata_comm_grow_id(self._handle(), ctypes.byref(uid)), "strata_comm_grow_id")
        return bytes(uid)

    def grow(self, nranks, uid=None):
        """Collective over this communicator's ranks and the joining
        processes: the grown communicator of nranks ranks, where this one's
        ranks keep theirs. uid: grow_id()'s bytes on rank 0, None elsewhere."""
        nranks = as_c_int(nranks, "nranks")
        uid_p = None if uid is None else ctypes.byref(_unique_id(uid))
        handle = c_ptr()
        check(lib.strata_comm_grow(self._handle(), nranks, uid_p, -1, ctypes.byref(handle)),
              "strata_comm_grow")
        return type(self)._adopt(handle.value)

    @classmethod
    def join_grown(cls, nranks, uid, rank):
        """A new process joining a growing communicator as `rank` (from its
        old size up), with the uid its rank 0 handed out."""
        nranks, rank = as_c_int(nranks, "nranks"), as_c_int(rank, "rank")
        return cls._create("strata_comm_grow", lambda out: lib.strata_comm_grow(
            None, nranks, ctypes.byref(_unique_id(uid)), rank, out))

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._comm is None:
            return
        if exc_type is None:
            self.destroy()
        else:
            self.abort()

    def __del__(self):
        # A communicator dropped without destroy(); never one with work
        # pending, since each Request and open group() holds its Comm.
        if getattr(self, "_comm", None) is not None:
            lib.strata_comm_destroy(self._comm)

    def __repr__(self):
        state = "" if self._comm is not None else ", destroyed"
        return f"<strata.Comm rank {self._rank} of {self._size}{state}>"

    def _issue(self, name, args, buffers, async_op):
        """Calls strata_<name> (or strata_i<name> for async_op) with args then
        the communicator. buffers: what must outlive strata's use of them,
        with this Comm."""
        comm = self._handle()
        keep = [b.keep for b in buffers if b is not None] + [self]
        if async_op:
            request = c_ptr()
            call = "strata_i" + name
            check(getattr(lib, call)(*args, comm, ctypes.byref(request)), call)
            return Request(request.value, keep, call)
        check(getattr(lib, "strata_" + name)(*args, comm), "strata_" + name)
        if _group_state.depth:
            _group_state.held.append(keep)
        return None

    def _blocks(self, buf, name):
        """buf's elements as `size` equal blocks: the block length."""
        if buf.count % self._size:
            raise ValueError(f"{name} has {buf.count} elements, not a multiple of the "
                             f"{self._size} ranks")
        return buf.count // self._size

    def allreduce(self, buf, *, out=None, op=SUM, datatype=None, async_op=False):
        """Every rank gets op over the ranks' buf, element by element, in out
        (same size as buf) or, without out, in buf."""
        op = as_enum(Op, op, "op")
        buf, out = pair(buf, out, datatype)
        same_count(buf, out)
        target = buf if out is None else out
        return self._issue("allreduce", (buf.address, target.address, buf.count, buf.datatype, op),
                           (buf, out), async_op)

    def broadcast(self, buf, root, *, out=None, datatype=None, async_op=False):
        """The root's buf reaches every rank's out (same size) or, without
        out, buf. buf is read on the root only."""
        root = as_c_int(root, "root")
        buf, out = pair(buf, out, datatype)
        same_count(buf, out)
        target = buf if out is None else out
        return self._issue("broadcast", (buf.address, target.address, buf.count, buf.datatype, root),
                           (buf, out), async_op)

    def reduce(self, buf, root, *, out=None, op=SUM, datatype=None, async_op=False):
        """The root gets op over the ranks' buf in out (same size) or, without
        out, buf. Nothing is written on other ranks."""
        root = as_c_int(root, "root")
        op = as_enum(Op, op, "op")
        buf, out = pair(buf, out, datatype)
        same_count(buf, out)
        target = buf if out is None else out
        return self._issue("reduce",
                           (buf.address, target.address, buf.count, buf.datatype, op, root),
                           (buf, out), async_op)

    def allgather(self, buf, *, out=None, datatype=None, async_op=False):
        """out (size blocks of len(buf)) gets rank r's buf as block r. Without
        out, buf holds size blocks, this rank's own at index rank, and
        receives the others."""
        buf, out = pair(buf, out, datatype)
        if out is None:
            count = self._blocks(buf, "buf")
            args = (buf.block(self._rank, count), buf.address, count, buf.datatype)
        else:
            if out.count != buf.count * self._size:
                raise ValueError(f"out has {out.count} elements; gathering {buf.count} from "
                                 f"each of {self._size} ranks needs {buf.count * self._size}")
            args = (buf.address, out.address, buf.count, buf.datatype)
        return self._issue("allgather", args, (buf, out), async_op)

    def reduce_scatter(self, buf, *, out=None, op=SUM, datatype=None, async_op=False):
        """buf holds size blocks; out (one block) gets op over the ranks of
        their block number rank. Without out the result lands in buf's block
        number rank (its other blocks are then unspecified)."""
        op = as_enum(Op, op, "op")
        buf, out = pair(buf, out, datatype)
        if out is None:
            count = self._blocks(buf, "buf")
            target = buf.block(self._rank, count)
        else:
            if buf.count != out.count * self._size:
                raise ValueError(f"buf has {buf.count} elements; scattering {out.count} to "
                                 f"each of {self._size} ranks needs {out.count * self._size}")
            count, target = out.count, out.address
        return self._issue("reduce_scatter", (buf.address, target, count, buf.datatype, op),
                           (buf, out), async_op)

    def alltoall(self, buf, *, out=None, datatype=None, async_op=False):
        """buf and out hold size blocks each: block p of buf goes to rank p,
        landing there as block number rank of out. Without out, buf is
        replaced, at the cost of one copy (strata's alltoall is never in
        place)."""
        buf, out = pair(buf, out, datatype)
        if out is None:
            out, buf = buf, buf.copy()
        else:
            same_count(buf, out)
        count = self._blocks(buf, "buf")
        return self._issue("alltoall", (buf.address, out.address, count, buf.datatype),
                           (buf, out), async_op)

    def send(self, buf, dst, *, datatype=None, async_op=False):
        """Sends buf to rank dst, matched by dst's recv in posting order. A
        blocking send may wait for the receiver: post exchanges inside group()."""
        dst = as_c_int(dst, "dst")
        buf = buffer(buf, "buf", datatype_or_none(datatype), writable=False)
        return self._issue("send", (buf.address, buf.count, buf.datatype, dst), (buf,), async_op)

    def recv(self, buf, src, *, datatype=None, async_op=False):
        """Receives into buf from rank src; the send must have buf's size and
        datatype."""
        src = as_c_int(src, "src")
        buf = buffer(buf, "buf", datatype_or_none(datatype), writable=True)
        return self._issue("recv", (buf.address, buf.count, buf.datatype, src), (buf,), async_op)

    def barrier(self, *, async_op=False):
        """Returns once every rank has entered the barrier."""
        return self._issue("barrier", (), (), async_op)
