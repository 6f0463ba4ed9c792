"""torch.distributed's send and recv with backend="strata": tags matched
whatever the sending order (against gloo's result for the same exchange),
receives from any source, a size mismatch as torch's error, a receive past
its group's timeout, and a receive from any source left waiting while the
group's collectives run."""
import datetime
import time

import ranks


def check(torch, dist, rank, n, gloo):
    failures = []

    def expect(what, got, want):
        if not torch.equal(got, want):
            failures.append("%s: got %s, expected %s" % (what, got.flatten()[:6].tolist(), want.flatten()[:6].tolist()))

    def payload(tag, count):
        return torch.arange(count, dtype=torch.float32) + 1000.0 * tag

    # Rank 0 sends tags 1, 2, 3 (3 is empty, 2 is 1 MiB) to rank 1, which
    # receives them as 3, 2, 1; gloo moves the same exchange as the reference.
    counts = {1: 5, 2: 262144, 3: 0}
    for group in (None, gloo):
        name = "gloo" if group is gloo else "strata"
        if rank == 0:
            works = [dist.isend(payload(tag, counts[tag]), 1, group=group, tag=tag) for tag in (1, 2, 3)]
            for w in works:
                w.wait()
        elif rank == 1:
            for tag in (3, 2, 1):
                got = torch.full((counts[tag],), -1.0)
                dist.recv(got, 0, group=group, tag=tag)
                expect("%s: tag %d received out of sending order" % (name, tag), got, payload(tag, counts[tag]))

    # Every other rank sends its rank to rank 0 with tag 7, which receives
    # them from any source: each sender exactly once, with its own value.
    if rank == 0:
        seen = []
        for _ in range(n - 1):
            got = torch.zeros(3)
            source = dist.recv(got, tag=7)
            seen.append(source)
            expect("recv from any source (rank %d)" % source, got, torch.full((3,), float(source)))
        if sorted(seen) != list(range(1, n)):
            failures.append("recv from any source heard from %s, expected each of 1..%d once" % (seen, n - 1))
    else:
        dist.send(torch.full((3,), float(rank)), 0, tag=7)

    # A receive whose tensor does not fit the message fails with both sizes;
    # the next message between the same ranks still arrives intact.
    if rank == 0:
        dist.send(torch.ones(4), 1, tag=9)
        dist.send(torch.full((2,), 5.0), 1, tag=10)
    elif rank == 1:
        ranks.expect_error(failures, "recv into a tensor of the wrong size",
                           lambda: dist.recv(torch.zeros(5), 0, tag=9), "sent 16 bytes with tag 9, the tensor holds 20")
        got = torch.zeros(2)
        dist.recv(got, 0, tag=10)
        expect("recv after a size mismatch", got, torch.full((2,), 5.0))

    # A receive nobody sends to fails with torch's error at the group's
    # timeout (2 s), and leaves the ranks' later messages intact.
    short = dist.new_group(backend="strata", timeout=datetime.timedelta(seconds=2))
    if rank == 0:
        start = time.time()
        ranks.expect_error(failures, "recv past the group's timeout", lambda: dist.recv(torch.zeros(2), 1, group=short,
                                                                                        tag=11), "timeout")
        took = time.time() - start
        if not 1.5 < took < 8:
            failures.append("the group's 2 s timeout ended the recv after %.1f s" % took)
    dist.barrier(group=gloo)
    if rank == 1:
        dist.send(torch.full((2,), 12.0), 0, group=short, tag=12)
    elif rank == 0:
        got = torch.zeros(2)
        dist.recv(got, 1, group=short, tag=12)
        expect("recv after a timed-out recv", got, torch.full((2,), 12.0))

    # A receive from any source stays posted while the group's collectives
    # run (they must not wait behind it), then takes the late message.
    if rank == 0:
        late = dist.irecv(torch.zeros(1), tag=13)
    t = torch.full((4,), float(rank))
    dist.all_reduce(t)
    expect("all_reduce with a receive from any source pending", t, torch.full((4,), float(n * (n - 1) / 2)))
    if rank == n - 1:
        dist.send(torch.ones(1), 0, tag=13)
    if rank == 0:
        late.wait()
        if late._source_rank() != n - 1:
            failures.append("the late message came from rank %d, expected %d" % (late._source_rank(), n - 1))
    dist.barrier(group=gloo)
    return failures
