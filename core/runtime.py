"""Process-wide runtime tuning shared by the server and the benchmarks (so a benchmark measures what production runs)."""

from __future__ import annotations

import gc

# A young generation this size is collected in well under a millisecond; the default (700) collects so often
# under event bursts that collections pile into the ack path.
GC_GEN0_THRESHOLD = 50_000


def tune_gc() -> None:
    """Freeze the startup heap and collect the young generation less often. Call once, after start-up.

    Modules, settings, compiled schemas and clients built at startup live for the whole process; left in the
    collected generations, every full collection rescans them, which bench/bench_ack.py measured as ~40 ms
    stalls in the ack path with hundreds of runs in flight. Frozen, collections only see request garbage.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_GEN0_THRESHOLD, 20, 20)
