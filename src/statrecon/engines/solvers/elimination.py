"""Incremental sparse elimination: a reduced basis of sparse vectors, kept one vector at a
time, over the integers modulo a prime or exactly over the rationals.

The basis holds, for each pivot column q, the row ``e_q + rows[q]`` (``rows[q]``, its rest,
has no pivot column), and for each column the pivots whose rest holds it (``holders``). A
vector reduced against the basis, ``v - Σ v[q] row_q`` over the pivots q in v, holds no pivot
column (one pass suffices: no row holds another's pivot), and v is in the span exactly when
nothing is left. Adding what is left, with a pivot of the caller's choice, normalises it and
removes the pivot from the rows that hold it: a rank-one update that touches only those rows.
``e_j`` is in the span exactly when j is a pivot with an empty rest.

A row can carry a *tag*, a second sparse vector every operation on the row applies to as
well (e.g. which inputs the row combines, and the same combination of their answers); tags
steer nothing. :meth:`SparseBasis.plan` says what adding a vector would do without doing it
(:meth:`SparseBasis.commit` then does it); :meth:`SparseBasis.add` does it in place.

Its users: the Gaussian pass of secondary suppression (modulo a prime: the null space of a
table's equations, then the span of the published cells) and the stream auditor's exact
arithmetic (rationals, FLINT ``fmpq``: each row tagged with its certificate). The dense
elimination of a whole component is FLINT's ``nmod_mat`` (:mod:`.modp`).

>>> b = SparseBasis(7)
>>> b.add(b.reduce({0: 1, 1: 2}), 0)
{1: 2}
>>> b.reduce({0: 3, 1: 6}), b.reduce({1: 1})
({}, {1: 1})
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

Vec = dict[int, Any]  # column -> non-zero entry (a residue mod p, or an exact rational)


def axpy(target: Vec, scale: Any, source: Vec, p: int | None) -> None:
    """target += scale * source, in place, modulo p (exactly when p is None); entries that
    cancel are dropped."""
    if p is None:
        for c, v in source.items():
            w = target.get(c, 0) + scale * v
            if w:
                target[c] = w
            else:
                target.pop(c, None)
        return
    for c, v in source.items():
        w = (target.get(c, 0) + scale * v) % p
        if w:
            target[c] = w
        else:
            target.pop(c, None)


def axpy_support(target: Vec, scale: Any, source: Vec, p: int | None) -> list[int]:
    """:func:`axpy`, returning the columns whose support changed: c where target gained an
    entry, ~c (negative) where it lost one, for the callers' indices (:func:`reindex`)."""
    changed = []
    if p is None:
        for c, v in source.items():
            w = target.get(c, 0) + scale * v
            if w:
                if c not in target:
                    changed.append(c)
                target[c] = w
            elif c in target:
                del target[c]
                changed.append(~c)
        return changed
    for c, v in source.items():
        w = (target.get(c, 0) + scale * v) % p
        if w:
            if c not in target:
                changed.append(c)
            target[c] = w
        elif c in target:
            del target[c]
            changed.append(~c)
    return changed


def reindex(changed: list[int], owner: int, index: defaultdict[int, set[int]]) -> None:
    """Keep ``index`` (column -> the vectors holding it) up to date with an
    :func:`axpy_support` on the vector ``owner``."""
    for c in changed:
        if c >= 0:
            index[c].add(owner)
        else:
            index[~c].discard(owner)


@dataclass
class Plan:
    """Adding one vector, not yet done: its row (``pivot``, ``rest``, ``tag``) and, by pivot,
    the new rest, tag and support changes of every row it changes."""

    pivot: int
    rest: Vec
    tag: Vec | None
    updates: dict[int, tuple[Vec, Vec | None, list[int]]]

    def units(self) -> list[int]:
        """The pivots j whose row would then be e_j (x_j pinned by the span), sorted."""
        out = [q for q, (rest, _, _) in self.updates.items() if not rest]
        if not self.rest:
            out.append(self.pivot)
        return sorted(out)


class SparseBasis:
    """A reduced basis of sparse vectors modulo the prime ``modulus`` (None: exact, in
    whatever numbers the vectors hold, e.g. FLINT ``fmpq``); ``tagged``: every row carries a
    tag (module docstring)."""

    def __init__(self, modulus: int | None = None, tagged: bool = False) -> None:
        self.p = modulus
        self.rows: dict[int, Vec] = {}  # pivot -> rest
        self.tags: dict[int, Vec] | None = {} if tagged else None
        self.holders: defaultdict[int, set[int]] = defaultdict(set)  # column -> pivots

    @property
    def rank(self) -> int:
        return len(self.rows)

    def reduce(self, v: Vec, tag: Vec | None = None) -> Vec:
        """v minus its combination of the basis rows: a new vector with no pivot column,
        empty exactly when v is in the span. ``tag`` (changed in place) gets the same
        combination of the rows' tags subtracted."""
        r = dict(v)
        rows, p = self.rows, self.p
        for c, a in v.items():
            if c in rows:
                del r[c]
                axpy(r, -a, rows[c], p)
                if tag is not None:
                    assert self.tags is not None
                    axpy(tag, -a, self.tags[c], p)
        return r

    def add(self, r: Vec, q: int, tag: Vec | None = None) -> Vec:
        """Adds the reduced vector r (from :meth:`reduce`, non-empty; consumed) with pivot
        q, one of its columns, in place. Returns the new row's rest."""
        new, new_tag = self._normalise(r, q, tag)
        rows, tags, holders = self.rows, self.tags, self.holders
        for h in holders.pop(q, ()):
            reindex(self._eliminate(rows[h], None if tags is None else tags[h], q, new,
                                    new_tag), h, holders)
        self._store(q, new, new_tag)
        return new

    def plan(self, r: Vec, q: int, tag: Vec | None = None) -> Plan:
        """What :meth:`add` would do, leaving the basis as it is (r is consumed)."""
        new, new_tag = self._normalise(r, q, tag)
        updates: dict[int, tuple[Vec, Vec | None, list[int]]] = {}
        for h in self.holders.get(q, ()):
            row = dict(self.rows[h])
            row_tag = None if self.tags is None else dict(self.tags[h])
            updates[h] = (row, row_tag, self._eliminate(row, row_tag, q, new, new_tag))
        return Plan(q, new, new_tag, updates)

    def commit(self, plan: Plan) -> None:
        """Does what :meth:`plan` planned (nothing else may change the basis in between)."""
        self.holders.pop(plan.pivot, None)
        for h, (row, row_tag, changed) in plan.updates.items():
            self.rows[h] = row
            if self.tags is not None:
                assert row_tag is not None
                self.tags[h] = row_tag
            reindex(changed, h, self.holders)
        self._store(plan.pivot, plan.rest, plan.tag)

    def _normalise(self, r: Vec, q: int, tag: Vec | None) -> tuple[Vec, Vec | None]:
        p = self.p
        if p is None:
            lead = r.pop(q)
            # never a float; a unit pivot keeps whole numbers whole (1/±1 is ±1)
            f = (lead if lead in (1, -1) else Fraction(1, lead)) if isinstance(lead, int) \
                else 1 / lead
            return ({c: a * f for c, a in r.items()},
                    None if tag is None else {c: a * f for c, a in tag.items()})
        f = pow(r.pop(q), -1, p)
        return ({c: a * f % p for c, a in r.items()},
                None if tag is None else {c: a * f % p for c, a in tag.items()})

    def _eliminate(self, row: Vec, row_tag: Vec | None, q: int, new: Vec,
                   new_tag: Vec | None) -> list[int]:
        """Removes column q from ``row`` with the new row (and from its tag), in place."""
        s = -row.pop(q)
        if row_tag is not None:
            axpy(row_tag, s, new_tag or {}, self.p)
        return axpy_support(row, s, new, self.p)

    def _store(self, q: int, new: Vec, new_tag: Vec | None) -> None:
        self.rows[q] = new
        if self.tags is not None:
            assert new_tag is not None
            self.tags[q] = new_tag
        for c in new:
            self.holders[c].add(q)
