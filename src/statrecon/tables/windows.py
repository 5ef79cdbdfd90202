"""Windows of linked tables: sets of cells that trade among themselves, for the interval
audit's moves (``engines/intervals/settle``).

When every cell is hidden (a perturbed or rounded release), linked tables are one
component, and a least-change LP over all of it takes about 0.4 s at 100,000 cells. A
change that moves one cell usually stays within one branch of a hierarchy (a district's
cells trade with its region's and the totals above), so the audit moves cells inside a
window first, every other cell held: the same move, on an LP twenty times smaller. Windows
are a hint: a move found in one is checked over every equation, so a poor choice costs
time, never a wrong answer.
"""

from __future__ import annotations

from statrecon.tables.model import Hierarchy, TableSet

MIN_GROUPS = 3  # fewer branches than this: one window would hold nearly everything


def windows(tables: TableSet) -> tuple[tuple[int, ...], ...]:
    """Windows over the branches under the root of the variable that splits the tables most
    (a hierarchy with subtotals first, then the most codes), each with every cell at the
    variable's total or in a table without it: one window per branch where branches have
    subtotals (a district's cells trade within their region), then consecutive pairs of
    branches, cyclically (a region's own cells trade with another region's: the totals
    above them are in every window, so they move only with a partner). Empty when no
    variable has at least ``MIN_GROUPS`` branches."""
    best = _splitting(tables)
    if best is None:
        return ()
    singles = [_subtree(best, c) for c in best.children[best.total]]
    pairs = [singles[i] | singles[(i + 1) % len(singles)] for i in range(len(singles))]
    nested = any(c in best.children for c in best.children[best.total])
    groups = singles + pairs if nested else pairs
    cells = tables.keys()  # cell identities, in the audit's order
    codes = [dict(key).get(best.variable) for key in cells]
    return tuple(tuple(i for i, code in enumerate(codes) if code is None or code in group)
                 for group in groups)


def _splitting(tables: TableSet) -> Hierarchy | None:
    found: dict[str, Hierarchy] = {}
    for table in tables.tables:
        for variable, hierarchy in table.hierarchies.items():
            found.setdefault(variable, hierarchy)

    def rank(h: Hierarchy) -> tuple[bool, int]:
        tops = h.children.get(h.total, ())
        return any(c in h.children for c in tops), len(tops)

    ranked = sorted(found.values(), key=rank, reverse=True)
    if not ranked or len(ranked[0].children.get(ranked[0].total, ())) < MIN_GROUPS:
        return None
    return ranked[0]


def _subtree(h: Hierarchy, code: str) -> set[str]:
    out, todo = set(), [code]
    while todo:
        c = todo.pop()
        out.add(c)
        todo.extend(h.children.get(c, ()))
    return out
