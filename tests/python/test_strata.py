#!/usr/bin/env python3
"""The Python bindings (bindings/python/strata) against the built libstrata,
as real processes: a 2-rank and a 4-rank job, each rank forked from this
process after it made the job's unique id (so rank 0 inherits the listener
the id names, as strata_get_unique_id intends).

Every rank derives every rank's input from (rank, index) alone, so it checks
each result against a reference computed here with numpy in float64 and then
wrapped or rounded to the element type; the inputs are small integers, which
makes every result exact (float16 included) and the uint8 products wrap.

    test_strata.py <b_sanitize>    # as meson runs it, with PYTHONPATH and LD_LIBRARY_PATH set
"""
import os
import signal
import sys
import tempfile
import time
import traceback

JOBS = (2, 4)
DEADLINE_SECONDS = 120
GRACE_SECONDS = 10  # how long the other ranks may take to fail once one has

# Imported by parent() once it knows they can load (not under a sanitizer);
# the ranks it forks inherit them.
np = strata = None


def parent(sanitize):
    if sanitize != "none":
        print(f"SKIP: the build uses -fsanitize={sanitize}; python cannot load an instrumented "
              f"libstrata without preloading the sanitizer runtime")
        return 77
    global np, strata
    try:
        import numpy as np
    except ImportError:
        print(f"SKIP: {sys.executable} has no numpy")
        return 77
    import strata

    os.environ["STRATA_TIMEOUT"] = "60"  # a stuck rank fails on its own before the deadline
    ranks = []  # [job size, rank, pid, output file, exit code or None]
    for nranks in JOBS:
        uid, short_uid, own_uid, budget_uid = (strata.get_unique_id() for _ in range(4))
        for rank in range(nranks):
            log = tempfile.TemporaryFile(mode="w+")
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                os.dup2(log.fileno(), 1)
                os.dup2(log.fileno(), 2)
                code = run_rank(nranks, rank, uid, short_uid, own_uid, budget_uid)
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
            ranks.append([nranks, rank, pid, log, None])

    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        for entry in ranks:
            if entry[4] is None:
                pid, status = os.waitpid(entry[2], os.WNOHANG)
                if pid:
                    entry[4] = os.waitstatus_to_exitcode(status)
        if all(entry[4] is not None for entry in ranks):
            break
        if any(entry[4] for entry in ranks):
            deadline = min(deadline, time.monotonic() + GRACE_SECONDS)
        time.sleep(0.05)
    failed = False
    for nranks, rank, pid, log, code in ranks:
        if code is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            status = "killed: still running at the deadline"
        else:
            status = f"exit {code}"
        log.seek(0)
        output = log.read()
        if code == 0:  # its summary; the whole log (strata's expected warnings too) on failure
            output = output.splitlines()[-1] + "\n"
        print(f"--- {nranks}-rank job, rank {rank}: {status}\n{output}", end="")
        failed |= code != 0
    print("FAILED" if failed else "all ranks passed")
    return 1 if failed else 0


def run_rank(nranks, rank, uid, short_uid, own_uid, budget_uid):
    try:
        rank_main(nranks, rank, uid, short_uid, own_uid, budget_uid)
        return 0
    except BaseException:
        traceback.print_exc()
        return 1


# ---------------------------------------------------------------- one rank

def rank_main(nranks, rank, uid, short_uid, own_uid, budget_uid):
    checks = Checks()
    with strata.Comm.init_rank(nranks, uid, rank) as comm:
        checks.ensure((comm.rank, comm.size) == (rank, nranks),
                      f"comm is rank {comm.rank} of {comm.size}")
        start = time.monotonic()
        for name in ("allreduce", "reduce", "reduce_scatter", "broadcast", "allgather",
                     "alltoall", "large", "send_recv", "buffer_types", "requests", "groups",
                     "split_dup", "revoke_shrink_grow", "bad_arguments"):
            getattr(checks, name)(comm)
        comm.barrier()
    checks.own_timeout(nranks, rank, short_uid)
    checks.own_choice(nranks, rank, own_uid)
    checks.own_budget(nranks, rank, budget_uid)
    print(f"rank {rank} of {nranks}: {checks.count} checks passed in "
          f"{time.monotonic() - start:.1f} s")


class Checks:
    COUNTS = (0, 1, 7, 1031)

    def __init__(self):
        self.dtypes = [np.float32, np.float64, np.int32, np.int64, np.float16, np.uint8]
        self.ops = [strata.SUM, strata.PROD, strata.MIN, strata.MAX, strata.AVG]
        self.count = 0

    # -- inputs and references

    def values(self, rank, n, dtype):
        """Rank `rank`'s n-element input: small integers that differ across
        ranks and indices, never 0 (products stay informative), negative where
        signed; unsigned ones are 3..8, so that a uint8 product over 4 ranks
        (at least 3*4*6*7) wraps."""
        i = np.arange(n)
        v = np.array([-2, -1, 1, 2, 3], dtype=np.float64)[(i * 7 + rank * 3 + 1) % 5]
        if np.issubdtype(dtype, np.unsignedinteger):
            v = v + 5
        return v

    def make(self, rank, n, dtype):
        return self.values(rank, n, dtype).astype(dtype)

    def reference(self, op, inputs, dtype):
        """op over the float64 inputs, as strata defines it for dtype."""
        stack = np.stack(inputs)
        if op == strata.SUM:
            r = stack.sum(axis=0)
        elif op == strata.PROD:
            r = stack.prod(axis=0)
        elif op == strata.MIN:
            r = stack.min(axis=0)
        elif op == strata.MAX:
            r = stack.max(axis=0)
        else:
            r = stack.sum(axis=0) / len(inputs)
            if np.issubdtype(dtype, np.integer):
                r = np.trunc(r)
        return self.cast(r, dtype)

    def cast(self, r, dtype):
        if np.issubdtype(dtype, np.integer):
            # Exact integers in float64; numpy's int64 -> narrower cast keeps
            # the low bits, which is strata's wrap modulo 2^bits.
            r = r.astype(np.int64)
        return r.astype(dtype)

    def expect(self, got, want, what):
        self.count += 1
        got = np.asarray(got)
        if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
            bad = np.flatnonzero(got != want) if got.shape == want.shape else []
            at = f"; first difference at {bad[0]}: got {got[bad[0]]}, want {want[bad[0]]}" \
                if len(bad) else ""
            raise AssertionError(f"{what}: got {got.dtype}{got.shape}, want "
                                 f"{want.dtype}{want.shape}{at}")

    def ensure(self, condition, what):
        self.count += 1
        if not condition:
            raise AssertionError(what)

    def raises(self, error, words, fn, what):
        """fn() must raise `error` whose text contains every one of `words`."""
        self.count += 1
        try:
            fn()
        except error as e:
            missing = [w for w in words if w not in str(e)]
            if missing:
                raise AssertionError(f"{what}: {error.__name__} {str(e)!r} lacks {missing}")
            return e
        raise AssertionError(f"{what}: no {error.__name__}")

    def sentinel(self, n, dtype):
        return np.full(n, 99, dtype)

    # -- collectives, every datatype, op and count, in place and not

    def allreduce(self, comm):
        for dtype in self.dtypes:
            for op in self.ops:
                for n in self.COUNTS:
                    what = f"allreduce {op.name} {np.dtype(dtype)} x{n}"
                    want = self.reference(op, [self.values(r, n, dtype) for r in range(comm.size)],
                                          dtype)
                    x = self.make(comm.rank, n, dtype)
                    out = self.sentinel(n, dtype)
                    comm.allreduce(x, out=out, op=op)
                    self.expect(out, want, what)
                    self.expect(x, self.make(comm.rank, n, dtype), what + " (input kept)")
                    comm.allreduce(x, op=op)
                    self.expect(x, want, what + " in place")

    def reduce(self, comm):
        for dtype in self.dtypes:
            for op in self.ops:
                for n in self.COUNTS:
                    root = (n + op) % comm.size
                    what = f"reduce {op.name} {np.dtype(dtype)} x{n} root {root}"
                    mine = self.make(comm.rank, n, dtype)
                    total = self.reference(op, [self.values(r, n, dtype)
                                                for r in range(comm.size)], dtype)
                    on_root = comm.rank == root  # nothing is written elsewhere
                    out = self.sentinel(n, dtype)
                    comm.reduce(mine, root, out=out, op=op)
                    self.expect(out, total if on_root else self.sentinel(n, dtype), what)
                    x = mine.copy()
                    comm.reduce(x, root, op=op)
                    self.expect(x, total if on_root else mine, what + " in place")

    def reduce_scatter(self, comm):
        size, rank = comm.size, comm.rank
        for dtype in self.dtypes:
            for op in self.ops:
                for n in self.COUNTS:
                    what = f"reduce_scatter {op.name} {np.dtype(dtype)} x{n}"
                    own = slice(rank * n, (rank + 1) * n)
                    want = self.reference(op, [self.values(r, size * n, dtype)[own]
                                               for r in range(size)], dtype)
                    x = self.make(rank, size * n, dtype)
                    out = self.sentinel(n, dtype)
                    comm.reduce_scatter(x, out=out, op=op)
                    self.expect(out, want, what)
                    comm.reduce_scatter(x, op=op)
                    self.expect(x[own], want, what + " in place")

    def broadcast(self, comm):
        for dtype in self.dtypes:
            for n in self.COUNTS:
                root = n % comm.size
                what = f"broadcast {np.dtype(dtype)} x{n} root {root}"
                want = self.make(root, n, dtype)
                out = self.sentinel(n, dtype)
                comm.broadcast(self.make(comm.rank, n, dtype), root, out=out)
                self.expect(out, want, what)
                x = self.make(comm.rank, n, dtype)
                comm.broadcast(x, root)
                self.expect(x, want, what + " in place")

    def allgather(self, comm):
        for dtype in self.dtypes:
            for n in self.COUNTS:
                what = f"allgather {np.dtype(dtype)} x{n}"
                want = np.concatenate([self.make(r, n, dtype) for r in range(comm.size)])
                out = self.sentinel(comm.size * n, dtype)
                comm.allgather(self.make(comm.rank, n, dtype), out=out)
                self.expect(out, want, what)
                x = self.sentinel(comm.size * n, dtype)
                x[comm.rank * n:(comm.rank + 1) * n] = self.make(comm.rank, n, dtype)
                comm.allgather(x)
                self.expect(x, want, what + " in place")

    def alltoall(self, comm):
        size, rank = comm.size, comm.rank
        for dtype in self.dtypes:
            for n in self.COUNTS:
                what = f"alltoall {np.dtype(dtype)} x{n}"
                want = np.concatenate([self.make(p, size * n, dtype)[rank * n:(rank + 1) * n]
                                       for p in range(size)])
                out = self.sentinel(size * n, dtype)
                comm.alltoall(self.make(rank, size * n, dtype), out=out)
                self.expect(out, want, what)
                x = self.make(rank, size * n, dtype)
                comm.alltoall(x)
                self.expect(x, want, what + " in place")

    def large(self, comm):
        """Past one 256 KiB connector slot, so the pipelined algorithms run."""
        n, dtype = 70001, np.float32
        inputs = [self.values(r, comm.size * n, dtype) for r in range(comm.size)]
        x = self.make(comm.rank, comm.size * n, dtype)
        comm.allreduce(x, op=strata.MAX)
        self.expect(x, self.reference(strata.MAX, inputs, dtype), "large allreduce MAX")
        own = slice(comm.rank * n, (comm.rank + 1) * n)
        out = np.empty(n, dtype)
        comm.reduce_scatter(self.make(comm.rank, comm.size * n, dtype), out=out)
        self.expect(out, self.reference(strata.SUM, [v[own] for v in inputs], dtype),
                    "large reduce_scatter SUM")
        out = np.empty(comm.size * n, dtype)
        comm.allgather(self.make(comm.rank, n, dtype), out=out)
        self.expect(out, np.concatenate([self.make(r, n, dtype) for r in range(comm.size)]),
                    "large allgather")

    # -- point to point

    def send_recv(self, comm):
        size, rank = comm.size, comm.rank
        # Blocking pairs (0,1), (2,3): the even rank sends first, so nobody
        # waits on a send that is not yet received.
        partner = rank ^ 1
        for dtype in (np.float64, np.int32):
            for n in (1, 1031):
                got = self.sentinel(n, dtype)
                if rank % 2 == 0:
                    comm.send(self.make(rank, n, dtype), partner)
                    comm.recv(got, partner)
                else:
                    comm.recv(got, partner)
                    comm.send(self.make(rank, n, dtype), partner)
                self.expect(got, self.make(partner, n, dtype), f"send/recv {np.dtype(dtype)} x{n}")
        # A ring with a message to self, in one group: inputs are temporaries
        # the group must keep alive until it ends.
        n = 517
        right, left = (rank + 1) % size, (rank - 1) % size
        from_left, from_self = self.sentinel(n, np.int64), self.sentinel(n, np.int64)
        with strata.group():
            comm.send(self.make(rank, n, np.int64), right)
            comm.send(self.make(rank + 100, n, np.int64), rank)
            comm.recv(from_left, left)
            comm.recv(from_self, rank)
        self.expect(from_left, self.make(left, n, np.int64), "group ring from the left")
        self.expect(from_self, self.make(rank + 100, n, np.int64), "group message to self")
        # Non-blocking: both posted before either is waited for.
        got = self.sentinel(n, np.float32)
        requests = [comm.recv(got, left, async_op=True),
                    comm.send(self.make(rank, n, np.float32), right, async_op=True)]
        while not requests[0].test():
            pass
        requests[1].wait()
        self.expect(got, self.make(left, n, np.float32), "isend/irecv ring")

    # -- what the Python layer adds: buffer types, requests, groups, comms

    def buffer_types(self, comm):
        import array
        size = comm.size
        n = 9
        # bytearray: uint8
        b = bytearray(self.make(comm.rank, n, np.uint8).tobytes())
        comm.allreduce(b, op=strata.MAX)
        want = self.reference(strata.MAX, [self.values(r, n, np.uint8) for r in range(size)],
                              np.uint8)
        self.expect(np.frombuffer(b, np.uint8), want, "bytearray allreduce MAX")
        # array.array: its typecode's width decides (here 'd': float64, 'i': int32)
        a = array.array("d", self.make(comm.rank, n, np.float64))
        comm.allreduce(a, op=strata.PROD)
        want = self.reference(strata.PROD, [self.values(r, n, np.float64) for r in range(size)],
                              np.float64)
        self.expect(np.array(a), want, "array.array('d') allreduce PROD")
        a = array.array("i", self.make(comm.rank, n, np.int32))
        comm.allreduce(a, op=strata.MIN)
        want = self.reference(strata.MIN, [self.values(r, n, np.int32) for r in range(size)],
                              np.int32)
        self.expect(np.array(a, np.int32), want, "array.array('i') allreduce MIN")
        # a memoryview reinterpreting raw bytes as float32
        raw = bytearray(self.make(comm.rank, n, np.float32).tobytes())
        comm.allreduce(memoryview(raw).cast("f"), op=strata.SUM)
        want = self.reference(strata.SUM, [self.values(r, n, np.float32) for r in range(size)],
                              np.float32)
        self.expect(np.frombuffer(raw, np.float32), want, "memoryview.cast('f') allreduce SUM")
        # a 2-D array counts all its elements
        x = self.make(comm.rank, 3 * n, np.int64).reshape(3, n)
        comm.allreduce(x, op=strata.SUM)
        want = self.reference(strata.SUM, [self.values(r, 3 * n, np.int64) for r in range(size)],
                              np.int64)
        self.expect(x.ravel(), want, "2-D allreduce SUM")
        # a read-only numpy input (numpy.frombuffer over bytes), out-of-place
        src = np.frombuffer(self.make(comm.rank, n, np.float64).tobytes(), np.float64)
        out = np.empty(n, np.float64)
        comm.allreduce(src, out=out, op=strata.MAX)
        want = self.reference(strata.MAX, [self.values(r, n, np.float64) for r in range(size)],
                              np.float64)
        self.expect(out, want, "read-only input allreduce MAX")
        # bfloat16: only by datatype=, on 2-byte elements holding the bits
        # (the top half of a float32; these small integers are exact)
        def bf16(v):
            return (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        x = bf16(self.values(comm.rank, n, np.float32))
        comm.allreduce(x, op=strata.SUM, datatype=strata.BFLOAT16)
        got = (x.astype(np.uint32) << 16).view(np.float32)
        want = self.reference(strata.SUM, [self.values(r, n, np.float32) for r in range(size)],
                              np.float32)
        self.expect(got, want, "bfloat16 allreduce SUM")

    def requests(self, comm):
        import gc
        size, rank = comm.size, comm.rank
        n = 1031
        every = [self.values(r, n, np.float64) for r in range(size)]
        sum_out, max_out = np.empty(n), np.empty(n)
        gathered = np.empty(size * n)
        swapped = self.make(rank, size * n, np.float64)
        # Inputs are temporaries: only the requests keep them alive.
        pending = [
            comm.allreduce(self.make(rank, n, np.float64), out=sum_out, async_op=True),
            comm.allreduce(self.make(rank, n, np.float64), out=max_out, op=strata.MAX,
                           async_op=True),
            comm.allgather(self.make(rank, n, np.float64), out=gathered, async_op=True),
            comm.alltoall(swapped, async_op=True),  # in place: the request holds the copy
            comm.barrier(async_op=True),
        ]
        gc.collect()
        while not pending[0].test():
            pass
        self.ensure(pending[0].test(), "test() of a completed request is not True")
        for request in reversed(pending):
            request.wait()
            request.wait()  # a second wait has nothing left to do
        self.expect(sum_out, self.reference(strata.SUM, every, np.float64), "iallreduce SUM")
        self.expect(max_out, self.reference(strata.MAX, every, np.float64), "iallreduce MAX")
        self.expect(gathered, np.concatenate([self.make(r, n, np.float64) for r in range(size)]),
                    "iallgather")
        want = np.concatenate([self.make(p, size * n, np.float64)[rank * n:(rank + 1) * n]
                               for p in range(size)])
        self.expect(swapped, want, "ialltoall in place")
        # Nothing to do: complete at once.
        self.ensure(comm.allreduce(np.empty(0), async_op=True).test(),
                    "a 0-element iallreduce is not complete at once")
        # Every other collective, non-blocking.
        root = size - 1
        x = self.make(rank, n, np.int32)
        comm.broadcast(x, root, async_op=True).wait()
        self.expect(x, self.make(root, n, np.int32), "ibroadcast")
        x = self.make(rank, n, np.int32)
        want = self.reference(strata.SUM, [self.values(r, n, np.int32) for r in range(size)],
                              np.int32) if rank == root else x.copy()
        comm.reduce(x, root, async_op=True).wait()
        self.expect(x, want, "ireduce")
        out = np.empty(n, np.int32)
        comm.reduce_scatter(self.make(rank, size * n, np.int32), out=out, async_op=True).wait()
        own = slice(rank * n, (rank + 1) * n)
        want = self.reference(strata.SUM, [self.values(r, size * n, np.int32)[own]
                                           for r in range(size)], np.int32)
        self.expect(out, want, "ireduce_scatter")

    def groups(self, comm):
        size, rank = comm.size, comm.rank
        n = 333
        outs = {}
        with strata.group():
            for dtype in (np.float32, np.int64):
                for op in (strata.SUM, strata.MAX):
                    outs[dtype, op] = np.empty(n, dtype)
                    comm.allreduce(self.make(rank, n, dtype), out=outs[dtype, op], op=op)
            with strata.group():  # nested: issued with the outer group
                gathered = np.empty(size * n, np.float64)
                comm.allgather(self.make(rank, n, np.float64), out=gathered)
        for (dtype, op), out in outs.items():
            want = self.reference(op, [self.values(r, n, dtype) for r in range(size)], dtype)
            self.expect(out, want, f"grouped allreduce {op.name} {np.dtype(dtype)}")
        self.expect(gathered, np.concatenate([self.make(r, n, np.float64) for r in range(size)]),
                    "allgather in a nested group")
        e = self.raises(strata.StrataError, ["strata_iallreduce", "group"],
                        lambda: self._async_in_group(comm), "async_op inside a group")
        self.ensure(e.code == strata.Result.INVALID_USAGE,
                    f"async_op inside a group gave {e.name}, not INVALID_USAGE")

    def _async_in_group(self, comm):
        with strata.group():
            comm.allreduce(np.ones(4), async_op=True)

    def split_dup(self, comm):
        size, rank = comm.size, comm.rank
        # Two halves by parity, ranked in reverse (key = -rank).
        members = sorted((r for r in range(size) if r % 2 == rank % 2), key=lambda r: -r)
        with comm.split(rank % 2, key=-rank) as half:
            self.ensure((half.rank, half.size) == (members.index(rank), len(members)),
                        f"split: rank {half.rank} of {half.size}, want "
                        f"{members.index(rank)} of {len(members)}")
            ranks = np.empty(half.size, np.int64)
            half.allgather(np.array([rank], np.int64), out=ranks)
            self.expect(ranks, np.array(members, np.int64), "allgather of world ranks in a split")
        # The last rank joins none.
        part = comm.split(None if rank == size - 1 else 0)
        if rank == size - 1:
            self.ensure(part is None, "split(None) gave a communicator")
        else:
            with part:
                x = self.make(rank, 7, np.int32)
                part.allreduce(x)
                want = self.reference(strata.SUM, [self.values(r, 7, np.int32)
                                                   for r in range(size - 1)], np.int32)
                self.expect(x, want, "allreduce over a split without the last rank")
        # A dup's operations never mix with the original's, even interleaved.
        with comm.dup() as twin:
            a, b = self.make(rank, 100, np.float64), self.make(rank + 1, 100, np.float64)
            request = comm.allreduce(a, async_op=True)
            twin.allreduce(b, op=strata.MAX)
            request.wait()
            self.expect(a, self.reference(strata.SUM, [self.values(r, 100, np.float64)
                                                       for r in range(size)], np.float64), "comm")
            self.expect(b, self.reference(strata.MAX, [self.values(r + 1, 100, np.float64)
                                                       for r in range(size)], np.float64), "dup")
        # An abort on rank 0 fails the others' operations on that communicator
        # with strata's error, instead of leaving them to time out.
        doomed = comm.dup()
        if rank == 0:
            doomed.abort()
        else:
            e = self.raises(strata.StrataError, ["strata_allreduce", "abort"],
                            lambda: doomed.allreduce(np.ones(5)), "allreduce after a peer's abort")
            self.ensure(e.code in (strata.Result.REMOTE, strata.Result.INVALID_USAGE),
                        f"allreduce after a peer's abort gave {e.name}")
            doomed.destroy()

    def revoke_shrink_grow(self, comm):
        """The last rank revokes a dup: every rank's call on it fails with
        REVOKED. Shrinking it without rank 0 renumbers the others (rank 0
        gets None); rank 0 then joins the shrunk communicator again, at its
        end, through grow_id (handed over on comm). The grown communicator's
        stall report lists every rank, and its check tests every pair."""
        rank, size = comm.rank, comm.size
        doomed = comm.dup()
        if rank == size - 1:
            doomed.revoke()
        e = self.raises(strata.StrataError, ["strata_allreduce", "revoked"],
                        lambda: doomed.allreduce(np.ones(5)), "allreduce on a revoked communicator")
        self.ensure(e.code == strata.Result.REVOKED, f"allreduce after a revoke gave {e.name}")
        smaller = doomed.shrink(exclude=[0])
        self.ensure((smaller is None) == (rank == 0), f"rank {rank}: shrink gave {smaller}")
        uid = np.zeros(strata.UNIQUE_ID_BYTES, np.uint8)
        if smaller is not None:
            self.ensure((smaller.rank, smaller.size) == (rank - 1, size - 1),
                        f"shrunk: rank {smaller.rank} of {smaller.size}")
            got = self.values(rank, 64, np.float64)
            smaller.allreduce(got)
            self.expect(got, self.reference(strata.SUM, [self.values(r, 64, np.float64)
                                                         for r in range(1, size)], np.float64), "shrunk")
            if smaller.rank == 0:
                uid[:] = np.frombuffer(smaller.grow_id(), np.uint8)
                comm.send(uid, 0)
            grown = smaller.grow(size, bytes(uid) if smaller.rank == 0 else None)
            smaller.destroy()
        else:
            comm.recv(uid, 1)
            grown = strata.Comm.join_grown(size, bytes(uid), size - 1)
        self.ensure((grown.rank, grown.size) == ((rank - 1) % size, size),
                    f"grown: rank {grown.rank} of {grown.size}")
        got = self.values(rank, 64, np.float64)
        grown.allreduce(got)
        self.expect(got, self.reference(strata.SUM, [self.values(r, 64, np.float64)
                                                     for r in range(size)], np.float64), "grown")
        report = grown.dump()
        self.ensure(f"rank {size - 1}: #1 allreduce" in report, f"dump: {report}")
        text, findings = grown.check()
        self.ensure(f"{size * (size - 1) // 2} pairs tested" in text and findings >= 0, f"check: {text}")
        grown.destroy()
        doomed.destroy()

    def own_budget(self, nranks, rank, uid):
        """A communicator's own memory budget: what it holds stays within it
        (the default slots take several MiB), and its results are exact."""
        budget = 1 << 20
        with strata.Comm.init_rank(nranks, uid, rank, memory_budget=budget) as small:
            held = small.memory()
            self.ensure(0 < held["shared"] + held["host"] + held["pinned"] <= budget,
                        f"memory() with memory_budget={budget}: {held}")
            got = self.make(rank, 50021, np.float32)
            small.allreduce(got)
            self.expect(got, self.reference(strata.SUM, [self.values(r, 50021, np.float32) for r in range(nranks)],
                                            np.float32), "allreduce under a memory budget")
        self.raises(ValueError, ["memory_budget"],
                    lambda: strata.Comm.init_rank(2, bytes(strata.UNIQUE_ID_BYTES), 0, memory_budget=-1),
                    "a negative budget")

    def own_timeout(self, nranks, rank, uid):
        """A communicator's own timeout (1 s, under STRATA_TIMEOUT=60): rank
        0 calls alone while the others stay away 3 s; it gets TIMEOUT in
        about 1 s."""
        with strata.Comm.init_rank(nranks, uid, rank, timeout=1.0) as short:
            if rank != 0:
                time.sleep(3)
                return
            start = time.monotonic()
            e = self.raises(strata.StrataError, ["strata_allreduce"],
                            lambda: short.allreduce(np.ones(4, np.float32)), "a call past its timeout")
            took = time.monotonic() - start
            self.ensure(e.code == strata.Result.TIMEOUT and 0.9 < took < 3,
                        f"own timeout: {e.name} after {took:.2f} s, expected TIMEOUT after about 1 s")

    def own_choice(self, nranks, rank, uid):
        """A communicator's own reproducible mode, algorithm and channels:
        what explain() and algorithm() say of them, and its results; bad ones
        are refused before the bootstrap."""
        no_job = bytes(strata.UNIQUE_ID_BYTES)
        self.raises(strata.StrataError, ["config->algorithm='nope'"],
                    lambda: strata.Comm.init_rank(nranks, uid, rank, algorithm="nope"), "unknown algorithm")
        self.raises(TypeError, ["algorithm", "int"],
                    lambda: strata.Comm.init_rank(2, no_job, 0, algorithm=5), "algorithm as a number")
        self.raises(TypeError, ["reproducible", "str"],
                    lambda: strata.Comm.init_rank(2, no_job, 0, reproducible="yes"), "reproducible as text")
        with strata.Comm.init_rank(nranks, uid, rank, reproducible=True, algorithm="ordered",
                                   nchannels=2) as own:
            self.ensure(own.reproducible, "reproducible=True, but the communicator says it is not")
            held = own.memory()
            self.ensure(sorted(held) == ["device", "host", "pinned", "shared"] and held["shared"] > 0
                        and held["device"] == 0, f"memory(): {held} (local ranks: shared slots, no GPU memory)")
            record = own.explain("allreduce", 1 << 20)
            name, channels = own.algorithm("allreduce", 1 << 20)
            self.ensure(record["algorithm"] == name == "ordered" and record["channels"] == channels
                        and 1 <= channels <= 2 and "config->algorithm=ordered" in record["decided_by"],
                        f"explain: {record}; algorithm(): {name} on {channels}")
            self.raises(strata.StrataError, ["collective"],
                        lambda: own.explain("allreduse", 8), "unknown collective")
            self.raises(ValueError, ["count=-1"], lambda: own.algorithm("allreduce", -1), "negative count")
            got = self.make(rank, 1031, np.float32)
            own.allreduce(got)
            self.expect(got, self.reference(strata.SUM, [self.values(r, 1031, np.float32)
                                                         for r in range(nranks)], np.float32),
                        "allreduce, reproducible")

    def bad_arguments(self, comm):
        x = np.ones(8, np.float32)
        readonly = np.ones(8, np.float32)
        readonly.flags.writeable = False
        self.raises(TypeError, ["buf", "int16"], lambda: comm.allreduce(np.ones(8, np.int16)),
                    "int16 buffer")
        self.raises(TypeError, ["buf", "bool"], lambda: comm.allreduce(np.ones(8, np.bool_)),
                    "bool buffer")
        self.raises(TypeError, ["buf", "buffer protocol", "list"], lambda: comm.allreduce([1.0]),
                    "a list")
        self.raises(TypeError, ["out", "read-only"],
                    lambda: comm.allreduce(x, out=readonly), "read-only out")
        self.raises(TypeError, ["buf", "read-only"], lambda: comm.allreduce(readonly),
                    "read-only in-place buffer")
        self.raises(TypeError, ["buf", "read-only", "bytes"],
                    lambda: comm.send(b"12345678", 0), "bytes (read-only, no address)")
        self.raises(TypeError, ["out", "float64", "float32"],
                    lambda: comm.allreduce(x, out=np.ones(8, np.float64)), "mixed element types")
        self.raises(TypeError, ["buf", "datatype=BFLOAT16"],
                    lambda: comm.allreduce(x, datatype=strata.BFLOAT16), "bfloat16 on 4 bytes")
        self.raises(ValueError, ["datatype"], lambda: comm.allreduce(x, datatype=42),
                    "unknown datatype")
        self.raises(ValueError, ["op", "strata.SUM"], lambda: comm.allreduce(x, op=9),
                    "unknown op")
        self.raises(ValueError, ["buf", "C-contiguous"],
                    lambda: comm.allreduce(np.ones(16, np.float32)[::2]), "strided buffer")
        self.raises(ValueError, ["out", "7", "8"],
                    lambda: comm.allreduce(x, out=np.ones(7, np.float32)), "allreduce size")
        self.raises(ValueError, ["out", str(comm.size * 8 + 1)],
                    lambda: comm.allgather(x, out=np.ones(comm.size * 8 + 1, np.float32)),
                    "allgather size")
        self.raises(ValueError, ["buf", "not a multiple"],
                    lambda: comm.reduce_scatter(np.ones(comm.size * 3 + 1, np.float32)),
                    "in-place reduce_scatter of a partial block")
        self.raises(TypeError, ["root", "int"], lambda: comm.broadcast(x, 0.5), "float root")
        self.raises(ValueError, ["root", "C int"], lambda: comm.broadcast(x, 2**32),
                    "root beyond a C int")
        self.raises(ValueError, ["uid", "128"],
                    lambda: strata.Comm.init_rank(2, b"short", 0), "short uid")
        self.raises(ValueError, ["timeout=-1"],
                    lambda: strata.Comm.init_rank(2, bytes(strata.UNIQUE_ID_BYTES), 0, timeout=-1), "negative timeout")
        self.raises(TypeError, ["timeout", "str"],
                    lambda: strata.Comm.init_rank(2, bytes(strata.UNIQUE_ID_BYTES), 0, timeout="5"), "timeout as text")
        # strata's own check: its code and message come through.
        e = self.raises(strata.StrataError, ["strata_broadcast", f"root={comm.size}"],
                        lambda: comm.broadcast(x, comm.size), "root out of range")
        self.ensure((e.code, e.name) == (strata.Result.INVALID_ARGUMENT, "INVALID_ARGUMENT")
                    and f"root={comm.size} is outside" in e.message,
                    f"root out of range: {e.code!r} {e.name!r} {e.message!r}")
        # ... and leaves the communicator usable.
        y = self.make(comm.rank, 8, np.float32)
        comm.allreduce(y)
        self.expect(y, self.reference(strata.SUM, [self.values(r, 8, np.float32)
                                                   for r in range(comm.size)], np.float32),
                    "allreduce after an argument error")
        # A destroyed communicator is refused before strata sees it.
        gone = comm.dup()
        gone.destroy()
        gone.destroy()  # a second destroy is harmless
        self.raises(ValueError, ["destroyed"], lambda: gone.allreduce(x), "destroyed comm")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(parent(sys.argv[1]))
