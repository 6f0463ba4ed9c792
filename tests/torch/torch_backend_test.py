#!/usr/bin/env python3
"""torch.distributed with backend="strata", in real processes started the way
torchrun starts them (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).

Each rank checks every collective against a reference computed here in
float64 from the known inputs of all ranks, and against torch's own gloo
backend (a second process group over the same processes) where gloo has the
collective; then trains a small model with DistributedDataParallel and checks
its parameters against a single-process run on the whole batch.

    torch_backend_test.py NRANKS SANITIZE   (the parent: spawns NRANKS ranks)
"""
import os

from ranks import expect_error, finish, main


def child():
    import torch
    import torch.distributed as dist
    import strata.torch  # noqa: F401  (registers the backend)

    torch.set_num_threads(1)
    dist.init_process_group("strata")
    rank, n = dist.get_rank(), dist.get_world_size()
    assert rank == int(os.environ["RANK"]) and n == int(os.environ["WORLD_SIZE"])
    gloo = dist.new_group(backend="gloo")
    failures = []

    def expect(what, got, want, exact):
        want = want.to(got.dtype) if want.dtype != got.dtype else want
        ok = torch.equal(got, want) if exact else torch.allclose(got.double(), want.double(), rtol=1e-5, atol=1e-5)
        if not ok:
            failures.append("%s: got %s, expected %s" % (what, got.flatten()[:8].tolist(), want.flatten()[:8].tolist()))

    def value(r, count, dtype, op=None):
        """Rank r's input: small values, so integer products stay exact and
        float sums carry no rounding that depends on the order."""
        i = torch.arange(count, dtype=torch.float64)
        if op is not None and op == dist.ReduceOp.PRODUCT:
            v = 1 + ((i + r) % 3 == 0).double()
        elif dtype == torch.bool:
            v = ((i + r) % 3 == 0).double()
        else:
            v = (i * 7 + r * 13) % 17 - (0 if dtype == torch.uint8 else 8)
        return v.to(dtype)

    exact_types = (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool)
    float_types = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
    counts = (0, 1, 7, 1000, 70001)

    # allreduce: every op, dtype and count, blocking and async, vs float64
    # reference; vs gloo where gloo has the op and dtype.
    for dtype in exact_types + float_types:
        for opname in ("SUM", "PRODUCT", "MIN", "MAX", "AVG", "BAND", "BOR", "BXOR"):
            op = getattr(dist.ReduceOp, opname)
            bitwise = op in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR)
            if bitwise and dtype in float_types:
                continue
            if op == dist.ReduceOp.AVG and dtype == torch.bool:
                continue
            for count in counts:
                inputs = [value(r, count, dtype, op) for r in range(n)]
                ref = torch.stack([x.double() for x in inputs])
                if op == dist.ReduceOp.SUM:
                    want = ref.max(0).values if dtype == torch.bool else ref.sum(0)
                    if dtype in exact_types and dtype != torch.bool:
                        want = torch.stack([x.long() for x in inputs]).sum(0)  # wraps like the dtype
                elif op == dist.ReduceOp.PRODUCT:
                    want = ref.min(0).values if dtype == torch.bool else ref.prod(0)
                elif op == dist.ReduceOp.MIN:
                    want = ref.min(0).values
                elif op == dist.ReduceOp.MAX:
                    want = ref.max(0).values
                elif op == dist.ReduceOp.AVG:
                    want = ref.sum(0) / n
                    if dtype in exact_types:
                        want = torch.trunc(want)
                else:
                    want = inputs[0].long()
                    for x in inputs[1:]:
                        if op == dist.ReduceOp.BAND:
                            want = want & x.long()
                        elif op == dist.ReduceOp.BOR:
                            want = want | x.long()
                        else:
                            want = want ^ x.long()
                if dtype in exact_types:
                    want = want.long().to(dtype) if dtype != torch.bool else want.bool()
                t = inputs[rank].clone()
                if count % 2:
                    dist.all_reduce(t, op=op)
                else:
                    w = dist.all_reduce(t, op=op, async_op=True)
                    fut = w.get_future()
                    w.wait()
                    if not w.is_completed() or not torch.equal(fut.wait()[0], t):
                        failures.append("async all_reduce: work or future incomplete")
                what = "all_reduce %s %s count %d" % (dtype, opname, count)
                expect(what, t, want, dtype in exact_types or dtype in (torch.float32, torch.float64))
                gloo_has = op != dist.ReduceOp.AVG and count == 1000 \
                    and dtype not in (torch.bool, torch.int16, torch.bfloat16, torch.float16)
                if gloo_has:
                    g = inputs[rank].clone()
                    dist.all_reduce(g, op=op, group=gloo)
                    expect(what + " vs gloo", t, g, True)

    for dtype in (torch.float32, torch.int64, torch.bool, torch.complex64):
        for count in (1, 1000, 70001):
            inputs = [value(r, count, dtype if dtype != torch.complex64 else torch.float32).to(dtype)
                      for r in range(n)]
            for root in range(n):
                t = inputs[rank].clone()
                dist.broadcast(t, src=root)
                expect("broadcast %s root %d" % (dtype, root), t, inputs[root], True)
                t = inputs[rank].clone()
                if dtype != torch.complex64:
                    dist.reduce(t, dst=root, op=dist.ReduceOp.MAX)
                    if rank == root:
                        expect("reduce max %s root %d" % (dtype, root), t,
                               torch.stack([x.double() for x in inputs]).max(0).values.to(dtype), True)
                gathered = [torch.empty_like(inputs[0]) for _ in range(n)] if rank == root else None
                dist.gather(inputs[rank], gathered, dst=root)
                if rank == root:
                    for r in range(n):
                        expect("gather %s root %d from %d" % (dtype, root, r), gathered[r], inputs[r], True)
                out = torch.empty_like(inputs[0])
                dist.scatter(out, [x.clone() for x in inputs] if rank == root else None, src=root)
                expect("scatter %s root %d" % (dtype, root), out, inputs[rank], True)
            outs = [torch.empty_like(inputs[0]) for _ in range(n)]
            dist.all_gather(outs, inputs[rank])
            for r in range(n):
                expect("all_gather %s block %d" % (dtype, r), outs[r], inputs[r], True)
            if dtype not in (torch.complex64, torch.bool):  # gloo gathers neither
                gouts = [torch.empty_like(inputs[0]) for _ in range(n)]
                dist.all_gather(gouts, inputs[rank], group=gloo)
                for r in range(n):
                    expect("all_gather %s vs gloo" % dtype, outs[r], gouts[r], True)
            flat = torch.empty(n * count, dtype=dtype)
            dist.all_gather_into_tensor(flat, inputs[rank])
            expect("all_gather_into_tensor %s" % dtype, flat, torch.cat(inputs), True)

    # all_reduce_coalesced: many small tensors in one strata group (fused).
    small = [value(rank, c, torch.float32) for c in (1, 5, 300, 2000)]
    want = [torch.stack([value(r, t.numel(), torch.float32).double() for r in range(n)]).sum(0) for t in small]
    dist.all_reduce_coalesced(small)
    for t, w in zip(small, want):
        expect("all_reduce_coalesced count %d" % t.numel(), t, w, True)

    # reduce_scatter (list and tensor forms): block `rank` of the sum.
    for dtype in (torch.float32, torch.int32):
        for count in (1, 333, 40000):
            blocks = [[value(r * n + b, count, dtype) for b in range(n)] for r in range(n)]
            want = torch.stack([blocks[r][rank].double() for r in range(n)]).sum(0).to(dtype)
            out = torch.empty(count, dtype=dtype)
            dist.reduce_scatter(out, [b.clone() for b in blocks[rank]])
            expect("reduce_scatter %s count %d" % (dtype, count), out, want, True)
            out2 = torch.empty(count, dtype=dtype)
            dist.reduce_scatter_tensor(out2, torch.cat(blocks[rank]))
            expect("reduce_scatter_tensor %s count %d" % (dtype, count), out2, want, True)

    # alltoall: equal splits (vs gloo), uneven splits, list form.
    for count in (1, 5000):
        send = torch.cat([value(rank * n + p, count, torch.float32) for p in range(n)])
        recv = torch.empty_like(send)
        dist.all_to_all_single(recv, send)
        want = torch.cat([value(p * n + rank, count, torch.float32) for p in range(n)])
        expect("all_to_all_single count %d" % count, recv, want, True)
        grecv = torch.empty_like(send)
        dist.all_to_all_single(grecv, send, group=gloo)
        expect("all_to_all_single vs gloo", recv, grecv, True)
    # rank r sends (r + p + 1) rows of 3 to rank p
    rows = lambda src, dst: src + dst + 1  # noqa: E731
    send = torch.cat([torch.full((rows(rank, p), 3), float(rank * 100 + p)) for p in range(n)])
    recv = torch.empty(sum(rows(p, rank) for p in range(n)), 3)
    dist.all_to_all_single(recv, send, output_split_sizes=[rows(p, rank) for p in range(n)],
                           input_split_sizes=[rows(rank, p) for p in range(n)])
    want = torch.cat([torch.full((rows(p, rank), 3), float(p * 100 + rank)) for p in range(n)])
    expect("all_to_all_single uneven", recv, want, True)
    outs = [torch.empty(4, dtype=torch.int64) for _ in range(n)]
    dist.all_to_all(outs, [torch.full((4,), rank * 10 + p, dtype=torch.int64) for p in range(n)])
    for p in range(n):
        expect("all_to_all list from %d" % p, outs[p], torch.full((4,), p * 10 + rank, dtype=torch.int64), True)

    # send/recv: a ring both ways, posted receive-first, non-blocking.
    right, left = (rank + 1) % n, (rank - 1) % n
    got_l, got_r = torch.empty(100000), torch.empty(100000)
    works = [dist.irecv(got_l, left), dist.irecv(got_r, right),
             dist.isend(value(rank, 100000, torch.float32), right),
             dist.isend(value(rank + 50, 100000, torch.float32), left)]
    for w in works:
        w.wait()
    expect("irecv from left", got_l, value(left, 100000, torch.float32), True)
    expect("irecv from right", got_r, value(right + 50, 100000, torch.float32), True)
    if rank == 0:
        dist.send(torch.arange(9.0), 1 % n)
    if rank == 1 % n:
        t = torch.empty(9)
        dist.recv(t, 0)
        expect("blocking send/recv", t, torch.arange(9.0), True)
    dist.barrier()

    # Bad input: an error naming the argument, and the group still works.
    for what, call, needle in [
            ("non-contiguous", lambda: dist.all_reduce(torch.zeros(4, 4).t()), "contiguous"),
            ("root out of range", lambda: dist.broadcast(torch.zeros(4), src=n + 3), "rank"),
            ("premul_sum on integers", lambda: dist.all_reduce(torch.zeros(4, dtype=torch.int32),
                                                               op=dist._make_nccl_premul_sum(2.0)), "floating-point"),
            ("a bad tensor in a coalesced call",
             lambda: dist.all_reduce_coalesced([torch.ones(2), torch.zeros(2, 2).t()]), "contiguous")]:
        expect_error(failures, what, call, needle)
    t = torch.ones(3)
    dist.all_reduce(t)
    expect("all_reduce after errors", t, torch.full((3,), float(n)), True)

    failures += ddp_matches_single_process(torch, dist, rank, n)
    finish(dist, rank, failures)


def ddp_matches_single_process(torch, dist, rank, n):
    """A few SGD steps of an MLP under DDP, each rank on its slice of the
    batch, against the same steps in one process on the whole batch."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    def model():
        torch.manual_seed(1234)
        return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                                   torch.nn.ReLU(), torch.nn.Linear(64, 4))

    gen = torch.Generator().manual_seed(99)
    batch = 16 * n
    steps = [(torch.randn(batch, 32, generator=gen), torch.randn(batch, 4, generator=gen)) for _ in range(4)]

    single = model()
    opt = torch.optim.SGD(single.parameters(), lr=0.1, momentum=0.9)
    for x, y in steps:
        opt.zero_grad()
        torch.nn.functional.mse_loss(single(x), y).backward()
        opt.step()

    # Small buckets, so several allreduces overlap the backward pass.
    ddp = DDP(model(), bucket_cap_mb=0.01)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    shard = slice(rank * 16, (rank + 1) * 16)
    for x, y in steps:
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x[shard]), y[shard]).backward()
        opt.step()

    failures = []
    for (name, p), q in zip(ddp.module.named_parameters(), single.parameters()):
        if not torch.allclose(p, q, rtol=1e-5, atol=1e-6):
            failures.append("DDP parameter %s differs from the single-process run by %g" %
                            (name, (p - q).abs().max().item()))
    return failures


if __name__ == "__main__":
    main(__file__, child)
