"""Moves that keep every sum of a table: +1 and -1 on the corners of a box of leaves.

Take two sibling leaves (two leaf children of the same parent) in each variable of a table:
the 2 x ... x 2 cells they span, +1 where an even number of the second codes is taken and
-1 where an odd number is, keep every sum of the table over any variable at any level of its
hierarchy (each line through the box meets two of its corners, of opposite signs, and so
does every subtotal of siblings). Boxes on neighbouring siblings are small (2^k cells) and
each leaf is in few of them (at most 2^k), so many are disjoint: a Markov chain over the
tables that add up can propose thousands at once (``engines/ckm/chain``), where the moves an
elimination finds share a few cells widely. Linked tables can bind a box's cells in another
table's sums (a leaf here, a margin there): the chain keeps only the moves every equation
allows.

Boxes never change a total, so on their own the margins stay where the chain started.
``record_moves`` moves them: one record taken from a leaf code to a sibling leaf, seen by every
table at once (each cell holding the record changes by one, the margins the tables share
included), which keeps every equation of linked tables by construction. The chains propose
both (``runs/ckm.publication_posteriors``); BENCHMARKS.md, "record moves", for what they gave.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterable

import numpy as np

from statrecon.tables.model import Hierarchy, TableSet

Move = tuple[tuple[int, int], ...]  # (cell in TableSet.keys() order, change), sorted by cell
MAX_ENTRIES = 4_000_000  # cells of all boxes together, at most: tables past it offer none
MAX_RECORD_MOVES = 50_000  # record moves drawn, at most (a sample of all of them)


def box_moves(tables: TableSet, max_entries: int = MAX_ENTRIES) -> list[Move]:
    """Every box on neighbouring sibling leaves, in each table of ``tables`` (none in a table
    with a variable that has no two sibling leaves, nor in a table whose boxes would take
    the cells listed past ``max_entries``: a four-way table of 100 x 100 x 50 x 20 codes
    has 9 million boxes of 16 cells; fewer moves only mix more slowly)."""
    out: list[Move] = []
    entries = 0
    for t, table in enumerate(tables.tables):
        pairs = [[(h.index(a), h.index(b)) for a, b in _sibling_leaves(h)]
                 for h in (table.hierarchies[v] for v in table.variables)]
        size = math.prod(len(found) for found in pairs) * 2 ** len(pairs)
        if entries + size > max_entries:
            continue
        entries += size
        columns = tables.grid_columns(t)
        corners = list(itertools.product((0, 1), repeat=len(pairs)))
        for choice in itertools.product(*pairs):
            out.append(tuple(sorted(
                (int(columns[tuple(pair[bit] for pair, bit in
                                   zip(choice, corner, strict=True))]),
                 -1 if sum(corner) % 2 else 1)
                for corner in corners)))
    return out


def _sibling_leaves(hierarchy: Hierarchy) -> list[tuple[str, str]]:
    """Neighbouring leaf children of each parent, in file order."""
    return [pair for children in hierarchy.children.values()
            for pair in itertools.pairwise([c for c in children if hierarchy.is_leaf(c)])]


def record_moves(tables: TableSet, max_moves: int = MAX_RECORD_MOVES, seed: int = 0,
                 time_limit: float | None = None) -> list[Move]:
    """Moves of one record from a leaf code of a variable to a sibling leaf, as every table
    sees it: each table gets +1 on the cells holding the record with its new code and -1 on
    those holding it with the old (its leaf cell and every total above it, the margins shared
    with the other tables included). Boxes keep every total; these move the margins too,
    which a box never does. Every one of them where there are at most ``max_moves`` (pairs of
    sibling leaves x leaves of the other variables), else ``max_moves`` drawn with ``seed``;
    none where the linked tables give a variable two hierarchies. ``time_limit``: seconds
    after which the moves made so far are returned (fewer moves only mix more slowly; the
    draw on 102,786 cells took 1 s for 20,000)."""
    hierarchies: dict[str, Hierarchy] = {}
    for table in tables.tables:
        for variable in table.variables:
            if hierarchies.setdefault(variable, table.hierarchies[variable]) != \
                    table.hierarchies[variable]:
                return []
    names = sorted(hierarchies)
    leaves = {v: [c for c in hierarchies[v].codes() if hierarchies[v].is_leaf(c)]
              for v in names}
    pairs = [(v, a, b) for v in names for a, b in _sibling_leaves(hierarchies[v])]
    if not pairs or max_moves <= 0:
        return []
    # each leaf's grid positions up its hierarchy, and each table's columns by position
    up = {v: {c: [h.index(c)] + [h.index(p) for p in h.ancestors(c)] for c in leaves[v]}
          for v, h in hierarchies.items()}
    columns = [tables.grid_columns(t) for t in range(len(tables.tables))]
    others = {v: [u for u in names if u != v] for v in names}
    every = sum(math.prod(len(leaves[u]) for u in others[v]) for v, _, _ in pairs)
    if every <= max_moves:
        drawn: Iterable[tuple[tuple[str, str, str], dict[str, str]]] = (
            (pair, dict(zip(others[pair[0]], codes, strict=True))) for pair in pairs
            for codes in itertools.product(*(leaves[u] for u in others[pair[0]])))
    else:
        rng = np.random.default_rng(seed)
        drawn = ((pairs[int(rng.integers(len(pairs)))],
                  {u: leaves[u][int(rng.integers(len(leaves[u])))] for u in names})
                 for _ in range(2 * max_moves))
    out: dict[Move, None] = {}
    stop = None if time_limit is None else time.monotonic() + time_limit
    for k, ((variable, old, new), record) in enumerate(drawn):
        if stop is not None and k % 256 == 0 and time.monotonic() >= stop:
            break
        move = _record_move(tables, columns, up, record, variable, old, new)
        if move:
            out[move] = None
            if len(out) >= max_moves:
                break
    return list(out)


def _record_move(tables: TableSet, columns: list[np.ndarray],
                 up: dict[str, dict[str, list[int]]], record: dict[str, str], variable: str,
                 old: str, new: str) -> Move:
    """``record`` (a leaf code per variable) moved from ``old`` to ``new`` in ``variable``:
    +1 on every cell holding it after, -1 before; empty where two tables disagree on a
    shared cell's change (then no one move keeps both)."""
    change: dict[int, int] = {}
    for t, table in enumerate(tables.tables):
        own: dict[int, int] = {}
        for code, sign in ((new, 1), (old, -1)):
            paths = [up[u][code if u == variable else record[u]] for u in table.variables]
            for position in itertools.product(*paths):
                column = int(columns[t][position])
                own[column] = own.get(column, 0) + sign
        for column, d in own.items():  # a cell of two tables changes once, the same in both
            if d and change.setdefault(column, d) != d:
                return ()
    return tuple(sorted((c, d) for c, d in change.items() if d))
