#!/usr/bin/env python3
"""PyTorch's NCCL backend over strata's libnccl.so.2, several processes on one GPU.

Run with strata's library preloaded, e.g.
    LD_PRELOAD=build/bindings/nccl/libnccl.so.2 python3 scripts/gpu/torch_nccl_check.py --nprocs 2 \\
        --expect-lib build/bindings/nccl/libnccl.so.2

Every rank runs each collective on tensors in GPU memory and compares the
result with a float64 reference computed on the host from every rank's input
(each rank can rebuild any rank's input from its seed). Prints one line per
check and exits 0 only when every check passed on every rank.

--backend gloo --device cpu runs the same checks without a GPU (to try the
script itself); no library is expected then.
"""
import argparse
import ctypes
import datetime
import inspect
import json
import os
import socket
import sys
import tempfile
import traceback

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

COUNT = 4099  # odd, and more than one chunk of anything small


def rank_input(rank, n=COUNT, dtype=torch.float64, salt=0):
    """Rank `rank`'s input: the same on every process that asks."""
    g = torch.Generator().manual_seed(1000 + 17 * rank + salt)
    return torch.rand(n, generator=g, dtype=torch.float64).mul_(2).sub_(1).to(dtype)


def close(got, want, rtol, atol, what):
    """Raises with the worst element when got (any device) is not want (float64, host)."""
    got64 = got.detach().to("cpu", torch.float64)
    if got64.shape != want.shape:
        raise AssertionError(f"{what}: shape {tuple(got64.shape)}, want {tuple(want.shape)}")
    err = (got64 - want).abs()
    bound = atol + rtol * want.abs()
    if not bool((err <= bound).all()):
        i = int((err - bound).argmax())
        raise AssertionError(f"{what}: element {i} is {got64.flatten()[i].item()!r}, "
                             f"want {want.flatten()[i].item()!r} (|err| {err.flatten()[i].item():.3g})")


def check_library(expect):
    """The NCCL in this process must be strata's: its file, and the version it reports."""
    maps = open("/proc/self/maps").read().split("\n")
    loaded = sorted({line.split()[-1] for line in maps if "libnccl" in line and "/" in line})
    want = os.path.realpath(expect)
    if want not in {os.path.realpath(p) for p in loaded}:
        raise AssertionError(f"libnccl loaded from {loaded}, not {want}: is LD_PRELOAD set?")
    # torch may load its wheel's libnccl by path as well (it preloads its
    # CUDA dependencies); what matters is where its NCCL calls resolve, which
    # LD_PRELOAD puts first: to strata's.
    others = [p for p in loaded if os.path.realpath(p) != want]
    def owner(addr):
        for fields in (line.split() for line in maps):
            low, high = (int(x, 16) for x in fields[0].split("-")) if fields else (0, 0)
            if len(fields) >= 6 and low <= addr < high:
                return fields[5]
        return "?"

    for name in ("ncclAllReduce", "ncclGetVersion", "ncclCommInitRankConfig"):
        where = owner(ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value)
        if os.path.realpath(where) != want:
            raise AssertionError(f"{name} resolves to {where}, not strata's {want} (libnccl loaded: {loaded})")
    # torch.cuda.nccl.version() is the nccl.h torch was compiled with; the
    # library's own answer comes from calling it.
    version = ctypes.c_int(0)
    ctypes.CDLL(None).ncclGetVersion(ctypes.byref(version))
    return (f"{want}, ncclGetVersion {version.value} (torch built against NCCL {torch.cuda.nccl.version()})" +
            (f"; also loaded, unused: {others}" if others else ""))


def checks(rank, world, device, backend):
    """(name, function) pairs; each function raises on a wrong result."""
    f32 = dict(dtype=torch.float32, device=device)

    def inputs(dtype=torch.float64, salt=0, n=COUNT):
        return [rank_input(r, n, dtype, salt) for r in range(world)]

    def all_reduce_sum():
        x = rank_input(rank).to(**f32)
        dist.all_reduce(x, op=dist.ReduceOp.SUM)
        want = sum(v.to(torch.float32).double() for v in inputs())
        close(x, want, 1e-6 * world, 1e-6 * world, "all_reduce sum float32")

    def all_reduce_types():
        types = ((torch.float16, 2e-3), (torch.bfloat16, 1.6e-2), (torch.float64, 1e-12))
        for dtype, tol in types if backend == "nccl" else types[2:]:  # gloo: no 16-bit floats
            x = rank_input(rank, dtype=dtype, salt=1).to(device)
            dist.all_reduce(x, op=dist.ReduceOp.SUM)
            want = sum(v.to(dtype).double() for v in inputs(salt=1))
            close(x, want, tol * world, tol * world, f"all_reduce sum {dtype}")
        x = torch.arange(COUNT, dtype=torch.int32, device=device) * (rank + 1)
        dist.all_reduce(x, op=dist.ReduceOp.MAX)
        close(x, torch.arange(COUNT, dtype=torch.float64) * world, 0, 0, "all_reduce max int32")

    def all_reduce_avg_and_premul():
        if backend != "nccl":
            return  # gloo has neither
        x = rank_input(rank, salt=2).to(**f32)
        dist.all_reduce(x, op=dist.ReduceOp.AVG)
        want = sum(v.to(torch.float32).double() for v in inputs(salt=2)) / world
        close(x, want, 1e-6 * world, 1e-6, "all_reduce avg float32")
        # A Python factor is a host scalar (ncclScalarHostImmediate); a tensor
        # factor stays on the GPU (ncclScalarDevice).
        for factor in (0.375, [torch.tensor([0.375], dtype=torch.float32, device=device)]):
            x = rank_input(rank, salt=3).to(**f32)
            dist.all_reduce(x, op=dist._make_nccl_premul_sum(factor))
            want = sum(v.to(torch.float32).double() * 0.375 for v in inputs(salt=3))
            kind = "tensor" if isinstance(factor, list) else "scalar"
            close(x, want, 1e-6 * world, 1e-6 * world, f"all_reduce premul_sum ({kind} factor)")

    def broadcast():
        src = 1 % world
        x = (rank_input(rank, salt=4) if rank == src else torch.full((COUNT,), -1.0, dtype=torch.float64)).to(**f32)
        dist.broadcast(x, src=src)
        close(x, rank_input(src, salt=4).to(torch.float32).double(), 0, 0, "broadcast from rank 1")

    def reduce():
        x = rank_input(rank, salt=5).to(**f32)
        dist.reduce(x, dst=0, op=dist.ReduceOp.SUM)
        if rank == 0:
            want = sum(v.to(torch.float32).double() for v in inputs(salt=5))
            close(x, want, 1e-6 * world, 1e-6 * world, "reduce to rank 0")

    def all_gather():
        x = rank_input(rank, salt=6).to(**f32)
        out = torch.empty(world * COUNT, **f32)
        dist.all_gather_into_tensor(out, x)
        want = torch.cat([v.to(torch.float32).double() for v in inputs(salt=6)])
        close(out, want, 0, 0, "all_gather_into_tensor")
        parts = [torch.empty(COUNT, **f32) for _ in range(world)]
        dist.all_gather(parts, x)
        close(torch.cat(parts), want, 0, 0, "all_gather (list)")

    def reduce_scatter():
        x = rank_input(rank, n=COUNT * world, salt=7).to(**f32)
        out = torch.empty(COUNT, **f32)
        dist.reduce_scatter_tensor(out, x, op=dist.ReduceOp.SUM)
        full = sum(v.to(torch.float32).double() for v in inputs(salt=7, n=COUNT * world))
        close(out, full[rank * COUNT:(rank + 1) * COUNT], 1e-6 * world, 1e-6 * world, "reduce_scatter_tensor")

    def all_to_all():
        x = rank_input(rank, n=COUNT * world, salt=8).to(**f32)
        out = torch.empty(COUNT * world, **f32)
        dist.all_to_all_single(out, x)
        want = torch.cat([v.to(torch.float32).double()[rank * COUNT:(rank + 1) * COUNT]
                          for v in inputs(salt=8, n=COUNT * world)])
        close(out, want, 0, 0, "all_to_all_single")
        outs = [torch.empty(COUNT, **f32) for _ in range(world)]
        dist.all_to_all(outs, list(x.chunk(world)))
        close(torch.cat(outs), want, 0, 0, "all_to_all (list)")

    def send_recv():
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        x = rank_input(rank, salt=9).to(**f32)
        got = torch.empty(COUNT, **f32)
        ops = [dist.P2POp(dist.isend, x, nxt), dist.P2POp(dist.irecv, got, prv)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        close(got, rank_input(prv, salt=9).to(torch.float32).double(), 0, 0, "batch_isend_irecv ring")
        # Plain blocking send/recv between ranks 0 and 1.
        if rank == 0:
            dist.send(x, dst=1)
        elif rank == 1:
            y = torch.empty(COUNT, **f32)
            dist.recv(y, src=0)
            close(y, rank_input(0, salt=9).to(torch.float32).double(), 0, 0, "send/recv 0 -> 1")

    def gather_scatter():
        x = rank_input(rank, salt=10).to(**f32)
        parts = [torch.empty(COUNT, **f32) for _ in range(world)] if rank == 0 else None
        dist.gather(x, gather_list=parts, dst=0)
        if rank == 0:
            want = torch.cat([v.to(torch.float32).double() for v in inputs(salt=10)])
            close(torch.cat(parts), want, 0, 0, "gather to rank 0")
        src = world - 1
        pieces = list(rank_input(src, n=COUNT * world, salt=11).to(**f32).chunk(world)) if rank == src else None
        y = torch.empty(COUNT, **f32)
        dist.scatter(y, scatter_list=pieces, src=src)
        want = rank_input(src, n=COUNT * world, salt=11).to(torch.float32).double()[rank * COUNT:(rank + 1) * COUNT]
        close(y, want, 0, 0, "scatter from the last rank")

    def ddp_steps():
        torch.manual_seed(7)  # the same initial weights on every rank
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
        ref = [p.detach().double().clone() for p in model.parameters()]
        ddp = torch.nn.parallel.DistributedDataParallel(
            model.to(device), device_ids=[torch.device(device).index] if device != "cpu" else None)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)

        def batch(r, step):
            g = torch.Generator().manual_seed(50 + 31 * r + step)
            return torch.randn(8, 16, generator=g, dtype=torch.float64), torch.randn(8, 4, generator=g, dtype=torch.float64)

        def forward(params, x):
            w1, b1, w2, b2 = params
            return torch.tanh(x @ w1.T + b1) @ w2.T + b2

        for step in range(3):
            x, y = batch(rank, step)
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(ddp(x.to(**f32)), y.to(**f32))
            loss.backward()
            opt.step()
            # DDP averages the ranks' gradients: the float64 reference does too.
            grads = [torch.zeros_like(p) for p in ref]
            for r in range(world):
                params = [p.clone().requires_grad_(True) for p in ref]
                xr, yr = batch(r, step)
                torch.nn.functional.mse_loss(forward(params, xr), yr).backward()
                for g_sum, p in zip(grads, params):
                    g_sum += p.grad / world
            ref = [p - 0.1 * g for p, g in zip(ref, grads)]
        for i, (p, want) in enumerate(zip(ddp.parameters(), ref)):
            close(p, want, 1e-4, 1e-5, f"DDP parameter {i} after 3 steps")
        flat = torch.cat([p.detach().flatten() for p in ddp.parameters()])
        every = torch.empty(world * flat.numel(), dtype=flat.dtype, device=flat.device)
        dist.all_gather_into_tensor(every, flat)
        for r in range(world):
            close(every[r * flat.numel():(r + 1) * flat.numel()], flat.detach().cpu().double(), 0, 0,
                  f"DDP parameters of rank {r} equal rank {rank}'s")

    def barrier():
        dist.barrier()

    return [("all_reduce sum", all_reduce_sum), ("all_reduce half/bf16/double/int32", all_reduce_types),
            ("all_reduce avg, premul_sum", all_reduce_avg_and_premul), ("broadcast", broadcast),
            ("reduce", reduce), ("all_gather", all_gather), ("reduce_scatter", reduce_scatter),
            ("all_to_all", all_to_all), ("send/recv", send_recv), ("gather/scatter", gather_scatter),
            ("DDP 3 steps", ddp_steps), ("barrier", barrier)]


def run_rank(rank, args, port, results_dir):
    results = []
    try:
        device = "cpu"
        if args.device == "cuda":
            torch.cuda.set_device(0)  # every rank on GPU 0
            device = "cuda:0"
        if args.expect_lib:
            results.append(("library", True, check_library(args.expect_lib)))
        kwargs = {}
        if device != "cpu" and "device_id" in inspect.signature(dist.init_process_group).parameters:
            kwargs["device_id"] = torch.device(device)  # eager init: the communicator is made now
        dist.init_process_group(args.backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=args.nprocs, timeout=datetime.timedelta(seconds=args.timeout), **kwargs)
        for name, fn in checks(rank, args.nprocs, device, args.backend):
            try:
                fn()
                if device != "cpu":
                    torch.cuda.synchronize()
                results.append((name, True, ""))
            except Exception as e:  # one check's failure must not hide the others'
                results.append((name, False, f"{type(e).__name__}: {e}"))
                if args.backend == "nccl" and not isinstance(e, AssertionError):
                    break  # the communicator may be unusable: stop rather than hang
        dist.destroy_process_group()
    except Exception as e:
        results.append(("setup", False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    with open(os.path.join(results_dir, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--backend", default="nccl")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--expect-lib", default="", help="the libnccl.so.2 that must be the one loaded")
    ap.add_argument("--timeout", type=int, default=120, help="seconds for any one collective")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch sees no CUDA device", file=sys.stderr)
        return 1
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as results_dir:
        try:
            mp.spawn(run_rank, args=(args, port, results_dir), nprocs=args.nprocs, join=True)
        except Exception as e:  # a rank died: report what the others wrote
            print(f"FAIL {args.nprocs} ranks: a process ended abnormally: {e}")
        per_rank = []
        for r in range(args.nprocs):
            path = os.path.join(results_dir, f"rank{r}.json")
            per_rank.append(json.load(open(path)) if os.path.exists(path) else [("results", False, "none written")])
    ok = True
    names = [name for name, _, _ in per_rank[0]]
    for name in names:
        failed = [(r, detail) for r in range(args.nprocs) for n, passed, detail in per_rank[r]
                  if n == name and not passed]
        detail = next((d for n, p, d in per_rank[0] if n == name and d), "")
        print(f"{'FAIL' if failed else 'ok  '} {args.nprocs} ranks: {name}" + (f" ({detail})" if detail and not failed else ""))
        for r, why in failed:
            print(f"       rank {r}: {why}")
        ok = ok and not failed
    for r in range(1, args.nprocs):
        extra = [n for n, p, d in per_rank[r] if n not in names and not p]
        for n in extra:
            print(f"FAIL {args.nprocs} ranks: {n} on rank {r}")
            ok = False
    print(f"torch {torch.__version__}, {args.nprocs} processes, backend {args.backend}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
