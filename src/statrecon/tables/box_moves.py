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
"""

from __future__ import annotations

import itertools
import math

from statrecon.tables.model import TableSet

Move = tuple[tuple[int, int], ...]  # (cell in TableSet.keys() order, change), sorted by cell
MAX_ENTRIES = 4_000_000  # cells of all boxes together, at most: tables past it offer none


def box_moves(tables: TableSet, max_entries: int = MAX_ENTRIES) -> list[Move]:
    """Every box on neighbouring sibling leaves, in each table of ``tables`` (none in a table
    with a variable that has no two sibling leaves, nor in a table whose boxes would take
    the cells listed past ``max_entries``: a four-way table of 100 x 100 x 50 x 20 codes
    has 9 million boxes of 16 cells; fewer moves only mix more slowly)."""
    out: list[Move] = []
    entries = 0
    for table in tables.tables:
        pairs = []
        for variable in table.variables:
            hierarchy = table.hierarchies[variable]
            found = []
            for children in hierarchy.children.values():
                leaves = [hierarchy.index(c) for c in children if hierarchy.is_leaf(c)]
                found += list(itertools.pairwise(leaves))
            pairs.append(found)
        size = math.prod(len(found) for found in pairs) * 2 ** len(pairs)
        if entries + size > max_entries:
            continue
        entries += size
        column = [tables.column(table.key(cell)) for cell in table.cells]
        corners = list(itertools.product((0, 1), repeat=len(pairs)))
        for choice in itertools.product(*pairs):
            out.append(tuple(sorted(
                (column[int(table.grid[tuple(pair[bit] for pair, bit in
                                             zip(choice, corner, strict=True))])],
                 -1 if sum(corner) % 2 else 1)
                for corner in corners)))
    return out
