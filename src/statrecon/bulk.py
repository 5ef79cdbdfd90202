"""Building many small objects at once without the cyclic garbage collector's pauses.

Reading a release of 10^5 statistics creates millions of small objects (queries, predicates,
fractions), none of them in reference cycles. Python's collector still walks the whole young
heap every few hundred allocations and, now and then, every object alive: about a fifth of the
time of a 100,000-statistic load and compile (``benchmarks/bench_front_door.py``). Objects are
still freed by reference counting while it is paused.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block (nested blocks are fine); restores its state."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
