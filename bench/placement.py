"""Where the VM's two cores sit: strata-latency-floor's microseconds for a
cache line between them, about 0.07 near and 0.35-0.40 far apart
(bench/README.md, ../shared/reference/machine-limits.md); beyond 0.5 the
probe's two spinning processes were descheduled by other work."""


def placement(floor_us):
    return "near" if floor_us < 0.2 else "far" if floor_us < 0.5 else "unknown (cores busy)"
