"""Publish again the secondary cells a protecting pattern does not need.

The fast method grows its pattern until every primary cell is proven protected, and cells
chosen early may be redundant once later ones are in. Every proof of protection rests on
witness tables (completions of the table that take the cell far enough each way, checked
exactly); a witness that leaves a suppressed cell at its true value stays a completion when
that cell is published. So a secondary cell that no witness moves can be published for free,
and one that some witnesses move can be published once new witnesses that hold it still are
found (least-change moves with the cell fixed, :class:`.intervals.moves.Mover`). Nothing is
published on a guess: a cell stays suppressed unless every primary cell keeps a checked
witness on each side it needs.

A primary cell whose proof is a full audit keeps it when pruning leaves its witnesses alone:
its integer bounds stay exact (a witness still attains each; publishing a cell only removes
completions, so nothing lies beyond), and its LP interval is then reported by the values
those witnesses reach (the LP optimum may have moved inward, not past them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from statrecon.engines.intervals import Bound, CellAudit, Interval
from statrecon.engines.intervals.moves import Mover
from statrecon.engines.intervals.problem import Prepared
from statrecon.engines.intervals.reach import Board, Reached, protected_audit, targets
from statrecon.engines.intervals.results import Pairs, ScaledPairs, cells_of
from statrecon.engines.solvers.cpsat import Deadline


@dataclass
class Proof:
    """What keeps one primary cell protected: its audit, and its witnesses as a Reached
    (``fresh``: found here, so the audit is rebuilt from them; None: the audit rests on a
    ray or on bounds without witnesses). ``uses``: the cells the witnesses (and rays) move
    (None: not known, so any change to its component asks for new witnesses)."""

    audit: CellAudit
    reached: Reached | None
    uses: frozenset[int] | None
    fresh: bool = False
    touched: bool = False


@dataclass(frozen=True)
class Pruned:
    """The pattern after pruning, the audits of its primary cells and the cells published
    again (in the order they were)."""

    suppressed: frozenset[int]
    audits: dict[int, CellAudit]
    published: tuple[int, ...]


def prune(prep: Prepared, audits: dict[int, CellAudit], order: Sequence[int],
          deadline: Deadline) -> Pruned:
    """Try to publish each cell of ``order`` (secondary cells of ``prep``'s pattern, the
    most wanted first) while every primary cell of ``audits`` (all protected, under
    ``prep``'s pattern or a part of it) stays proven protected. Stops at ``deadline`` with
    what was published so far."""
    p = prep.problem
    pruner = Pruner(prep, audits, deadline)
    if not pruner.complete:  # the deadline came first: the pattern as it was
        return Pruned(frozenset(j for j in range(p.n_cells) if p.hidden[j]), dict(audits), ())
    published: list[int] = []
    for s in order:
        if deadline.expired:
            break
        if pruner.try_publish(s, deadline):
            published.append(s)
    gone = frozenset(published)
    suppressed = frozenset(j for j in range(p.n_cells) if p.hidden[j] and j not in gone)
    return Pruned(suppressed, pruner.audits(), tuple(published))


class Pruner:
    """Which primary cells each suppressed cell's publication would disturb, and one
    least-change mover per component, built when first needed. ``held``: suppressed cells
    of ``prep``'s pattern treated as published from the start (no witness moves them;
    :meth:`release` suppresses one after all, as :mod:`.improve` asks)."""

    def __init__(self, prep: Prepared, audits: dict[int, CellAudit], deadline: Deadline,
                 held: Iterable[int] = ()) -> None:
        self.prep = prep
        self.truth = Truth(prep.problem.values, prep.problem.scale)
        self.trial: int | None = None  # a cell released, neither held again nor needed yet
        self.users: dict[int, set[int]] = {}
        self.fragile: dict[int, set[int]] = {}  # component -> primaries with uses None
        self.movers: dict[int, Mover | None] = {}
        self.gone: dict[int, set[int]] = {}  # component -> local cells published
        for c in held:
            ci = prep.component_of[c]
            self.gone.setdefault(ci, set()).add(prep.components[ci].local[c])
        self.members: dict[int, list[int]] = {}  # component -> its primary cells
        for i in audits:
            self.members.setdefault(prep.component_of[i], []).append(i)
        proofs = self._proofs(audits, deadline)
        self.complete = proofs is not None  # False: the deadline came before every proof
        self.proofs = proofs or {}
        for i, pr in self.proofs.items():
            self._index(i, pr)

    def _proofs(self, audits: dict[int, CellAudit], deadline: Deadline
                ) -> dict[int, Proof] | None:
        """Each cell's proof as its audit gives it. Least-change witnesses are looked for
        only when a publication asks for them (:meth:`try_publish`, the dearest cells
        first), and those found replace the audit's, which move more cells: on issue 28's
        scale instance (17,254 primary cells), finding them for every cell first took 71 s
        and published nothing within the job's time; found as asked, 119 cells (7.8 M of
        the 35.9 M suppressed) are published in 50 s, and 743 (8.1 M) against 676 (6.8 M)
        given all the time. None once the deadline has passed: nothing could be published
        anyway."""
        proofs: dict[int, Proof] = {}
        for i, a in audits.items():
            if deadline.expired:
                return None
            proofs[i] = _proof_of(self.prep, a, self.truth)
        return proofs

    def _index(self, i: int, pr: Proof) -> None:
        if pr.uses is None:
            self.fragile.setdefault(self.prep.component_of[i], set()).add(i)
        else:
            for c in pr.uses:
                self.users.setdefault(c, set()).add(i)

    def _unindex(self, i: int, pr: Proof) -> None:
        if pr.uses is None:
            self.fragile[self.prep.component_of[i]].discard(i)
        else:
            for c in pr.uses:
                self.users[c].discard(i)

    def try_publish(self, s: int, deadline: Deadline) -> bool:
        """Publish cell ``s`` when every primary cell keeps a witness on each side it needs
        that holds ``s`` at its true value. When one does not, the witnesses found for the
        others are kept all the same (they are completions with ``s`` suppressed too, and
        move fewer cells than an audit's), unless they move the cell on trial."""
        if not self.complete:
            return False
        ci = self.prep.component_of[s]
        affected = self.users.get(s, set()) | self.fragile.get(ci, set())
        trials = {i: _without(self.prep, self.proofs[i], s) for i in sorted(affected)}
        need = {i: r for i, r in trials.items() if not r.met()}
        mover = self._mover(ci) if need else self.movers.get(ci)
        if need:
            if mover is None:
                return False
            local = self.prep.components[ci].local[s]
            mover.fix(local)
            mover.prove(list(need.values()), deadline)
            if not all(r.met() for r in need.values()):
                mover.free(local)
                self._renew({i: r for i, r in need.items()
                             if r.met() and self.trial not in _moved_by(r)})
                return False
        elif mover is not None:
            mover.fix(self.prep.components[ci].local[s])
        self.gone.setdefault(ci, set()).add(self.prep.components[ci].local[s])
        self.trial = None  # a publication keeps the cell released for it
        for i in self.members.get(ci, []):
            self.proofs[i].touched = True
        self._renew(trials)
        return True

    def _renew(self, found: dict[int, Reached]) -> None:
        """Witnesses found for these cells become their proofs."""
        for i, r in found.items():
            old = self.proofs[i]
            self._unindex(i, old)
            new = Proof(old.audit, r, _moved_by(r), fresh=True, touched=True)
            self.proofs[i] = new
            self._index(i, new)

    def release(self, c: int) -> bool:
        """Let witnesses move held cell ``c`` from now on (it is suppressed again). False:
        its component has no mover, so nothing would use it."""
        ci = self.prep.component_of[c]
        mover = self._mover(ci)
        if mover is None:
            return False
        local = self.prep.components[ci].local[c]
        mover.free(local)
        self.gone[ci].discard(local)
        self.trial = c
        return True

    def hold(self, c: int) -> None:
        """Undo :meth:`release` (only while no proof moves ``c``: a failed publication
        keeps the witnesses it found only when they leave ``c`` alone)."""
        ci = self.prep.component_of[c]
        local = self.prep.components[ci].local[c]
        mover = self.movers.get(ci)
        if mover is not None:
            mover.fix(local)
        self.gone.setdefault(ci, set()).add(local)
        self.trial = None

    def audits(self) -> dict[int, CellAudit]:
        """The audit of every primary cell under the pattern as it stands."""
        return {i: _final_audit(self.prep, pr, self.truth) for i, pr in self.proofs.items()}

    def _mover(self, ci: int) -> Mover | None:
        if ci not in self.movers:
            board = Board(self.prep, ci, [])
            mover = None if board.lattice is None else Mover(board, board.lattice)
            if mover is not None:
                for local in self.gone.get(ci, set()):
                    mover.fix(local)
            self.movers[ci] = mover
        return self.movers[ci]


class Truth:
    """The true values, to list the cells a witness moves: in bulk for a witness kept as
    int64 arrays (``ScaledPairs``) on a multiple of the problem's lattice, one Fraction at a
    time otherwise (listing 17,254 audits' witnesses pair by pair took 6 s of issue 28's
    scale run; its pruning then found its time gone)."""

    def __init__(self, values: Sequence[Fraction], scale: int) -> None:
        self.values, self.scale = values, scale
        scaled = [v * scale for v in values]
        safe = all(x.denominator == 1 and abs(x) < 2**53 for x in scaled)
        self.scaled = np.array([int(x) for x in scaled], dtype=np.int64) if safe else None

    def moved(self, pairs: Pairs) -> Pairs:
        """The pairs of ``pairs`` whose value is not the cell's true value."""
        if isinstance(pairs, ScaledPairs) and self.scaled is not None \
                and pairs.scale % self.scale == 0 and pairs.scale // self.scale < 2**10:
            truth = self.scaled[pairs.cells] * (pairs.scale // self.scale)
            keep = pairs.numerators != truth
            return ScaledPairs(pairs.cells[keep], pairs.numerators[keep], pairs.scale)
        return tuple((c, v) for c, v in pairs if v != self.values[c])


def _proof_of(prep: Prepared, audit: CellAudit, truth: Truth) -> Proof:
    """The proof of a protected cell as its audit gives it: the witnesses of its integer
    bounds (listing the cells they move) and the cells they and its rays move (None when
    some bound beyond the true value has neither)."""
    values = prep.problem.values
    assert audit.integer is not None
    r: Reached | None = targets(prep, [audit.cell])[audit.cell]
    uses: set[int] = set()
    for side in ("lower", "upper"):
        b: Bound = getattr(audit.integer, side)
        if b.proof == "ray":
            uses |= {c for c, v in b.ray if v != 0}
            r = None
            continue
        moved = truth.moved(b.witness)
        if not len(moved) and b.value is not None and b.value != values[audit.cell]:
            return Proof(audit, None, None)
        uses.update(cells_of(moved))
        if r is not None and b.value is not None:
            setattr(r, side, (b.value, moved))
    return Proof(audit, r, frozenset(uses))


def _without(prep: Prepared, pr: Proof, s: int) -> Reached:
    """The witnesses of ``pr`` that hold cell ``s`` at its true value, as a Reached (the
    sides whose witness moves s, or that rest on a ray, are left to be found again)."""
    r = targets(prep, [pr.audit.cell])[pr.audit.cell]
    if pr.reached is not None:
        for side in ("lower", "upper"):
            got = getattr(pr.reached, side)
            if got is not None and s not in cells_of(got[1]):
                setattr(r, side, got)
    return r


def _moved_by(r: Reached) -> frozenset[int]:
    return frozenset(c for got in (r.lower, r.upper) if got is not None
                     for c in cells_of(got[1]))


def _final_audit(prep: Prepared, pr: Proof, truth: Truth) -> CellAudit:
    """The audit of a primary cell under the pruned pattern (module docstring)."""
    if pr.fresh and pr.reached is not None:
        return protected_audit(prep, pr.reached)
    if not pr.touched:
        return pr.audit
    assert pr.audit.integer is not None
    integer = Interval(*(replace(b, witness=truth.moved(b.witness))
                         for b in (pr.audit.integer.lower, pr.audit.integer.upper)))
    lp = Interval(*(b if b.proof == "ray" else Bound(b.value, "reached", "witness",
                                                     witness=b.witness)
                    for b in (integer.lower, integer.upper)))
    return replace(pr.audit, lp=lp, integer=integer)

