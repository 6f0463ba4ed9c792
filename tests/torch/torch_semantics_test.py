#!/usr/bin/env python3
"""torch.distributed's semantics around the collectives, with backend="strata":
complex and int16 reductions, PREMUL_SUM, sparse allreduce, all_gather_coalesced, futures
chained with then(), Work.wait(timeout), a group's timeout turning into
torch's error, subgroups, send and recv with tags and from any source
(p2p_checks.py), and DDP's communication hooks (fp16 and bf16
compression), each checked against a float64 reference computed here, gloo's
result, or a single-process run.

    torch_semantics_test.py NRANKS SANITIZE   (the parent: spawns NRANKS ranks)
"""
import datetime
import time

import p2p_checks
import ranks
from ranks import finish, main


def child():
    import torch
    import torch.distributed as dist
    import strata.torch  # noqa: F401  (registers the backend)

    torch.set_num_threads(1)
    dist.init_process_group("strata")
    rank, n = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    failures = []

    def expect(what, got, want, exact=True, tol=1e-5):
        want = want.to(got.dtype)
        ok = torch.equal(got, want) if exact else torch.allclose(got, want, rtol=tol, atol=tol)
        if not ok:
            failures.append("%s: got %s, expected %s" % (what, got.flatten()[:6].tolist(), want.flatten()[:6].tolist()))

    def expect_error(what, call, needle):
        ranks.expect_error(failures, what, call, needle)

    def ints(r, count, dtype):
        i = torch.arange(count, dtype=torch.int64)
        return ((i * 7919 + r * 104729) % 65536 - 32768).to(dtype)  # spans int16, so sums wrap

    # int16 (strata reduces it as int32): every op wraps like int16 would.
    for count in (1, 1000, 70001):
        inputs = [ints(r, count, torch.int16) for r in range(n)]
        wide = torch.stack([x.long() for x in inputs])
        for opname, want in (("SUM", wide.sum(0)), ("MIN", wide.min(0).values), ("MAX", wide.max(0).values),
                             ("PRODUCT", wide.prod(0))):
            t = inputs[rank].clone()
            dist.all_reduce(t, op=getattr(dist.ReduceOp, opname))
            # int64 to int16 keeps the low 16 bits, which is what wrapping means
            expect("int16 all_reduce %s count %d" % (opname, count), t, want)
        out = torch.empty(count, dtype=torch.int16)
        dist.reduce_scatter_tensor(out, torch.cat([ints(rank * n + b, count, torch.int16) for b in range(n)]))
        expect("int16 reduce_scatter_tensor count %d" % count, out,
               torch.stack([ints(r * n + rank, count, torch.int16).long() for r in range(n)]).sum(0))
        for root in range(n):
            t = inputs[rank].clone()
            dist.reduce(t, dst=root)
            expect("int16 reduce to %d count %d" % (root, count), t, wide.sum(0) if rank == root else inputs[rank])

    # complex: sum and average as real pairs; everything else is torch's error.
    for dtype in (torch.complex64, torch.complex128):
        for count in (1, 1000, 70001):
            inputs = [torch.complex(ints(r, count, torch.float64), ints(r + 7, count, torch.float64)).to(dtype)
                      for r in range(n)]
            want = torch.stack([x.to(torch.complex128) for x in inputs]).sum(0)
            t = inputs[rank].clone()
            dist.all_reduce(t)
            expect("%s all_reduce SUM count %d" % (dtype, count), t, want)
            t = inputs[rank].clone()
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            expect("%s all_reduce AVG count %d" % (dtype, count), t, want / n, exact=False)
            t = inputs[rank].clone()
            dist.reduce(t, dst=n - 1)
            if rank == n - 1:
                expect("%s reduce SUM count %d" % (dtype, count), t, want)
            blocks = [torch.complex(ints(rank * n + b, count, torch.float64), ints(b, count, torch.float64)).to(dtype)
                      for b in range(n)]
            out = torch.empty(count, dtype=dtype)
            dist.reduce_scatter_tensor(out, torch.cat(blocks))
            expect("%s reduce_scatter_tensor count %d" % (dtype, count), out, torch.stack(
                [torch.complex(ints(r * n + rank, count, torch.float64), ints(rank, count, torch.float64))
                 for r in range(n)]).sum(0))
            if count == 1000:
                g = inputs[rank].clone()
                dist.all_reduce(g, group=gloo)
                t = inputs[rank].clone()
                dist.all_reduce(t)
                expect("%s all_reduce vs gloo" % dtype, t, g)
    expect_error("complex MAX", lambda: dist.all_reduce(torch.zeros(3, dtype=torch.complex64), op=dist.ReduceOp.MAX),
                 "complex")
    expect_error("complex reduce PRODUCT", lambda: dist.reduce(torch.zeros(3, dtype=torch.complex64), dst=0,
                                                                op=dist.ReduceOp.PRODUCT), "complex")

    # PREMUL_SUM: sum of input * factor (a number or a one-element tensor);
    # the caller's input is not scaled in place for reduce's non-roots.
    for dtype, tol in ((torch.float32, 1e-6), (torch.float64, 1e-12), (torch.bfloat16, 2e-2)):
        for factor in (0.5, [torch.tensor([0.25], dtype=torch.float64)]):
            f = factor if isinstance(factor, float) else factor[0].item()
            x = (torch.arange(1000, dtype=torch.float64) / 7 + rank).to(dtype)
            want = torch.stack([(torch.arange(1000, dtype=torch.float64) / 7 + r).to(dtype).double() * f
                                for r in range(n)]).sum(0)
            t = x.clone()
            dist.all_reduce(t, op=dist._make_nccl_premul_sum(factor))
            expect("premul_sum %s factor %g" % (dtype, f), t.double(), want, exact=False, tol=tol)
            t = x.clone()
            dist.reduce(t, dst=0, op=dist._make_nccl_premul_sum(factor))
            if rank != 0:
                expect("premul_sum reduce leaves a non-root's input", t, x)

    # Sparse COO allreduce (SUM, as gloo): each rank's own entries, some
    # shared, one rank with none; the result is coalesced, and equals the
    # dense sum and gloo's.
    for dense_cols in (None, 3):
        def sparse_of(r):
            nnz = 0 if r == n - 1 and n > 2 else 5 + r
            idx = torch.stack([torch.arange(nnz) * (r + 1) % 17, torch.arange(nnz) % 4])
            shape = (17, 4) if dense_cols is None else (17, 4, dense_cols)
            vals = torch.arange(nnz * (dense_cols or 1), dtype=torch.float64).reshape(
                (nnz,) if dense_cols is None else (nnz, dense_cols)) + r
            return torch.sparse_coo_tensor(idx, vals, shape)
        t = sparse_of(rank)
        dist.all_reduce(t)
        want = sum(sparse_of(r).to_dense() for r in range(n))
        if not t.is_sparse or not t.is_coalesced():
            failures.append("sparse all_reduce: the result is not a coalesced sparse tensor")
        expect("sparse all_reduce (dense dims %s)" % dense_cols, t.to_dense(), want)
        g = sparse_of(rank)
        dist.all_reduce(g, group=gloo)
        expect("sparse all_reduce vs gloo", t.to_dense(), g.to_dense())
    expect_error("sparse MAX", lambda: dist.all_reduce(sparse_of(rank), op=dist.ReduceOp.MAX), "SUM only")

    # all_gather_coalesced: several tensors of one dtype (torch's rule), of
    # several shapes, for a float and an integer dtype, vs gloo.
    for dtype in (torch.float32, torch.int64):
        ins = [torch.arange(5, dtype=dtype) + rank, torch.full((2, 3), rank, dtype=dtype),
               torch.arange(100000, dtype=dtype) * (rank + 1)]
        outs = [[torch.empty_like(t) for t in ins] for _ in range(n)]
        dist.all_gather_coalesced(outs, ins)
        gouts = [[torch.empty_like(t) for t in ins] for _ in range(n)]
        dist.all_gather_coalesced(gouts, ins, group=gloo)
        for r in range(n):
            wants = [torch.arange(5, dtype=dtype) + r, torch.full((2, 3), r, dtype=dtype),
                     torch.arange(100000, dtype=dtype) * (r + 1)]
            for i in range(3):
                expect("all_gather_coalesced %s %d from %d" % (dtype, i, r), outs[r][i], wants[i])
                expect("all_gather_coalesced %s %d from %d vs gloo" % (dtype, i, r), outs[r][i], gouts[r][i])
    expect_error("all_gather_coalesced with a short list",
                 lambda: dist.all_gather_coalesced([[torch.empty(5)] for _ in range(n)], [torch.ones(5), torch.ones(2)]),
                 "input_tensor_list")

    # Results land in the caller's tensors outside autograd, as gloo's raw
    # copies do: an inference tensor (int16: copied back from strata's int32
    # buffer on the completion thread) and outputs that require grad.
    with torch.inference_mode():
        t = torch.full((5,), rank + 1, dtype=torch.int16)
        dist.all_reduce(t)
    expect("int16 all_reduce of an inference tensor", t, torch.full((5,), n * (n + 1) // 2))
    outs = [[torch.zeros(3, requires_grad=True)] for _ in range(n)]
    with torch.no_grad():
        dist.all_gather_coalesced(outs, [torch.full((3,), float(rank))])
    for r in range(n):
        expect("all_gather_coalesced into a tensor requiring grad, from %d" % r, outs[r][0].detach(),
               torch.full((3,), float(r)))

    # Futures: then() chains run once the allreduce is done, on its values.
    t = torch.arange(6, dtype=torch.float32) + rank
    fut = dist.all_reduce(t, async_op=True).get_future()
    chained = fut.then(lambda f: f.value()[0] * 2).then(lambda f: f.value() + 1)
    want = (torch.arange(6, dtype=torch.float64) * n + n * (n - 1) / 2) * 2 + 1
    expect("future chain", chained.wait(), want)

    # Subgroups: the even ranks, and every rank but 0, each its own strata communicator.
    evens = dist.new_group(ranks=list(range(0, n, 2)), backend="strata")
    rest = dist.new_group(ranks=list(range(1, n)), backend="strata")
    if rank % 2 == 0:
        t = torch.full((1000,), float(rank))
        dist.all_reduce(t, group=evens)
        expect("all_reduce in the even ranks' group", t, torch.full((1000,), float(sum(range(0, n, 2)))))
    if rank != 0 and n > 2:
        t = torch.full((10,), float(rank))
        dist.broadcast(t, src=n - 1, group=rest)  # src is a global rank
        expect("broadcast in group of ranks 1..n-1", t, torch.full((10,), float(n - 1)))

    # Work.wait(timeout): rank 1 calls 1.5 s late; rank 0's wait of 0.3 s
    # raises, and the work still completes with the right values.
    late = dist.new_group(backend="strata")
    t = torch.full((8,), float(rank))
    if rank == 1:
        time.sleep(1.5)
    work = dist.all_reduce(t, group=late, async_op=True)
    if rank == 0:
        expect_error("wait(timeout) on a late peer", lambda: work.wait(timeout=datetime.timedelta(seconds=0.3)),
                     "timed out")
    work.wait()
    expect("all_reduce after a wait timed out", t, torch.full((8,), float(n * (n - 1) / 2)))

    # A group's timeout: rank 0 calls alone; torch's error after about 2 s.
    short = dist.new_group(backend="strata", timeout=datetime.timedelta(seconds=2))
    dist.barrier(group=gloo)
    if rank == 0:
        start = time.time()
        expect_error("all_reduce past the group's timeout", lambda: dist.all_reduce(torch.ones(4), group=short),
                     "timeout")
        took = time.time() - start
        if not 1.5 < took < 8:
            failures.append("the group's 2 s timeout ended the call after %.1f s" % took)
    dist.barrier(group=gloo)

    failures += p2p_checks.check(torch, dist, rank, n, gloo)
    failures += ddp_hooks_match_single_process(torch, dist, rank, n)
    finish(dist, rank, failures)


def ddp_hooks_match_single_process(torch, dist, rank, n):
    """DDP with each default communication hook against one process on the
    whole batch: exact hooks to float tolerance, compressed ones to the
    compressed type's."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    def model():
        torch.manual_seed(4321)
        return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))

    gen = torch.Generator().manual_seed(7)
    steps = [(torch.randn(8 * n, 16, generator=gen), torch.randn(8 * n, 4, generator=gen)) for _ in range(3)]
    single = model()
    opt = torch.optim.SGD(single.parameters(), lr=0.05)
    for x, y in steps:
        opt.zero_grad()
        torch.nn.functional.mse_loss(single(x), y).backward()
        opt.step()

    def bf16_compress(group, bucket):
        """default_hooks.bf16_compress_hook's work: torch's own refuses to run
        without NCCL, although strata reduces bfloat16 (gloo cannot)."""
        compressed = bucket.buffer().to(torch.bfloat16).div_(n)
        fut = dist.all_reduce(compressed, group=group, async_op=True).get_future()

        def decompress(f):
            out = bucket.buffer()
            out.copy_(f.value()[0])
            return out
        return fut.then(decompress)

    failures = []
    for hook, tol in ((default_hooks.allreduce_hook, 1e-6), (default_hooks.fp16_compress_hook, 2e-3),
                      (bf16_compress, 2e-2)):
        ddp = DDP(model(), bucket_cap_mb=0.001)
        ddp.register_comm_hook(dist.group.WORLD, hook)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
        shard = slice(rank * 8, (rank + 1) * 8)
        for x, y in steps:
            opt.zero_grad()
            torch.nn.functional.mse_loss(ddp(x[shard]), y[shard]).backward()
            opt.step()
        for (name, p), q in zip(ddp.module.named_parameters(), single.parameters()):
            if not torch.allclose(p, q, rtol=tol, atol=tol):
                failures.append("DDP with %s: %s differs from one process by %g" %
                                (hook.__name__, name, (p - q).abs().max().item()))
    return failures


if __name__ == "__main__":
    main(__file__, child)
