"""The singleton problem: a respondent alone in a suppressed cell knows that cell's value (it
is their own contribution), and can use it against the other suppressed cells. Two primary
cells that protect only each other are disclosed to each other's single contributor.

Each singleton is one attacker, who knows everything a stranger knows and its own cell's
value. Their knowledge changes only the a-priori bounds of their cell (pinned to its value),
so the prepared problem keeps its components and only the singleton's component is rebuilt:
``pin`` makes the attacker's problem, ``audit_singletons`` audits every primary cell of the
singleton's component in it. The verdicts are those of ``audit_cell``: proven or unknown.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from statrecon.engines.intervals.audit_cells import AuditOptions, audit_cell
from statrecon.engines.intervals.problem import Prepared
from statrecon.engines.intervals.results import CellAudit


@dataclass(frozen=True)
class SingletonAudit:
    """The audit of one primary cell (``audit``) by the single contributor of ``singleton``
    (a cell index), who knows its value."""

    singleton: int
    singleton_name: str
    audit: CellAudit

    def to_json(self, certificates: bool = False) -> dict[str, Any]:
        return {"singleton": self.singleton, "singleton_name": self.singleton_name,
                **self.audit.to_json(certificates)}


def pin(prepared: Prepared, cell: int) -> Prepared:
    """``prepared`` as seen by an attacker who knows the value of the suppressed ``cell``:
    its a-priori bounds become [value, value]. Only its component changes."""
    p = prepared.problem
    value = p.values[cell]
    lower = list(p.lower)
    upper = list(p.upper)
    lower[cell] = upper[cell] = value
    problem = replace(p, lower=tuple(lower), upper=tuple(upper))
    c = prepared.component_of[cell]
    comp = prepared.components[c]
    i = comp.local[cell]
    lo = list(comp.lo)
    hi = list(comp.hi)
    lo[i] = hi[i] = value
    bounds = np.array(comp.bounds_float, copy=True)
    bounds[i] = (float(value), float(value))
    components = list(prepared.components)
    components[c] = replace(comp, lo=tuple(lo), hi=tuple(hi), bounds_float=bounds)
    return Prepared(problem, tuple(components), prepared.component_of)


def audit_singletons(prepared: Prepared, singletons: Iterable[int], primaries: Sequence[int],
                     options: AuditOptions | None = None) -> tuple[SingletonAudit, ...]:
    """For each suppressed cell of ``singletons``, the audit of every cell of ``primaries``
    in its component (itself excepted) with its value known, in the order given."""
    options = options or AuditOptions()
    names = prepared.problem.cell_names
    out: list[SingletonAudit] = []
    for s in singletons:
        if s not in prepared.component_of:
            continue  # published: everyone knows it already
        c = prepared.component_of[s]
        targets = [p for p in primaries if p != s and prepared.component_of.get(p) == c]
        if not targets:
            continue
        seen = pin(prepared, s)
        out += [SingletonAudit(s, names[s], audit_cell(seen, p, options)) for p in targets]
    return tuple(out)


def worst_by_cell(audits: Iterable[SingletonAudit]) -> dict[int, SingletonAudit]:
    """For each attacked cell, the singleton audit with the worst verdict (disclosed, then
    under-protected, then unknown; the first of equals)."""
    rank = {"disclosed": 0, "under-protected": 1, "unknown": 2, "protected": 3}
    worst: dict[int, SingletonAudit] = {}
    for a in audits:
        kept = worst.get(a.audit.cell)
        if kept is None or rank[a.audit.verdict] < rank[kept.audit.verdict]:
            worst[a.audit.cell] = a
    return worst
