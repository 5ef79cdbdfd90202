"""Aggregation on a table's grid: every total computed from the cells below it.

Shared by the readers that complete a table (tau-Argus's ``<READTABLE> 1``, a data frame of
bottom cells) so that "a total is the sum of its children" is computed one way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np

from statrecon.tables.model import Hierarchy


def objects(items: Sequence[object], shape: tuple[int, ...]) -> np.ndarray:
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array.reshape(shape)


def largest(k: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Merge two arrays of largest-contribution tuples, keeping the ``k`` largest."""
    def merge(a: tuple[Fraction, ...], b: tuple[Fraction, ...]) -> tuple[Fraction, ...]:
        return tuple(sorted(a + b, reverse=True)[:k])
    merged = np.frompyfunc(merge, 2, 1)
    return lambda a, b: merged(a, b)


Combine = Callable[[np.ndarray, np.ndarray], np.ndarray]


def aggregate(array: np.ndarray, hierarchies: Sequence[Hierarchy],
               combine: Combine) -> np.ndarray:
    """Each non-leaf position recomputed from its children, axis by axis: after axis i,
    every cell whose codes on axes > i are leaves holds its aggregate (so after the last
    axis, every cell)."""
    array = array.copy()
    for axis, hierarchy in enumerate(hierarchies):

        def at(code: str, axis: int = axis, hierarchy: Hierarchy = hierarchy) -> tuple[slice, ...]:
            """The slab of ``code`` on this axis, kept as an array (even a 1-d table's)."""
            i = hierarchy.index(code)
            return tuple(slice(i, i + 1) if a == axis else slice(None)
                         for a in range(array.ndim))

        for parent in reversed(hierarchy.codes()):
            kids = hierarchy.children.get(parent)
            if not kids:
                continue
            total = array[at(kids[0])].copy()
            for kid in kids[1:]:
                total = combine(total, array[at(kid)])
            array[at(parent)] = total
    return array
