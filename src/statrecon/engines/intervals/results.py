"""What an audit returns, as data: each bound with its status and proof, each cell's LP and
integer intervals, the attack in words, and the verdict.

JSON (``to_json``): every number is given twice, as a float for reading (``"lower"``) and as
an exact rational string ``"p/q"`` or ``"p"`` (``"lower_exact"``), which is the one to use
for comparisons. A missing upper bound is ``null``: +infinity when its status is ``proven``,
not known when ``unknown``. Cells and equations in certificates are their indices in the
problem (names are in ``attack``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
import scipy.sparse as sp

from statrecon.engines.intervals.integer import ProofKind
from statrecon.engines.intervals.lp import BoundStatus

if TYPE_CHECKING:  # the problem module imports what imports this one
    from statrecon.engines.intervals.problem import IntervalProblem

Verdict = Literal["protected", "under-protected", "disclosed", "unknown"]
Pairs = Sequence[tuple[int, Fraction]]  # (cell or equation index, exact value)


class ScaledPairs(Sequence[tuple[int, Fraction]]):
    """(cell, value) pairs kept as two int64 arrays and one denominator: a witness table
    found by an LP may move tens of thousands of cells, and a cell keeps its best witness
    on each side, so as Python pairs of Fractions (~170 bytes each) a large run's witnesses
    filled 24 GB (issue 28's scale run at 40 % primary cells); as arrays, 16 bytes a pair.
    Reads as the tuple of pairs it stands for (equal to it, same hash)."""

    __slots__ = ("cells", "numerators", "scale")

    def __init__(self, cells: np.ndarray, numerators: np.ndarray, scale: int) -> None:
        if cells.shape != numerators.shape or scale < 1:
            raise ValueError("cells and numerators differ in shape, or scale < 1")
        self.cells = np.asarray(cells, dtype=np.int64)
        self.numerators = np.asarray(numerators, dtype=np.int64)
        self.scale = int(scale)

    def __len__(self) -> int:
        return len(self.cells)

    @overload
    def __getitem__(self, k: int) -> tuple[int, Fraction]: ...
    @overload
    def __getitem__(self, k: slice) -> tuple[tuple[int, Fraction], ...]: ...
    def __getitem__(self, k: int | slice) -> Any:
        if isinstance(k, slice):
            return tuple(self)[k]
        return int(self.cells[k]), Fraction(int(self.numerators[k]), self.scale)

    def __iter__(self) -> Iterator[tuple[int, Fraction]]:
        s = self.scale
        for c, n in zip(self.cells.tolist(), self.numerators.tolist(), strict=True):
            yield c, Fraction(n, s)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ScaledPairs | tuple):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"ScaledPairs({len(self)} pairs, scale {self.scale})"


def cells_of(pairs: Pairs) -> list[int]:
    """The cells (or equations) of ``pairs``, without making their values."""
    return pairs.cells.tolist() if isinstance(pairs, ScaledPairs) else [c for c, _ in pairs]


def exact(v: Fraction | None) -> str | None:
    return None if v is None else str(v)


def approx(v: Fraction | None) -> float | None:
    return None if v is None else float(v)


def _pairs(pairs: Pairs) -> list[list[Any]]:
    return [[i, str(v)] for i, v in pairs]


@dataclass(frozen=True)
class Bound:
    """One end of an interval. ``value`` counts only when ``status`` is proven (an upper
    ``value`` None then means unbounded). ``proof`` says how (see ``ProofKind``):
    ``multipliers`` (equation, y) imply the bound by weak duality; ``witness`` (cell, value)
    is a completion of the suppressed cells of the component attaining it (the others keep
    their true values); ``ray`` (cell, r) an unbounded direction. ``note``: why unknown."""

    value: Fraction | None
    status: BoundStatus
    proof: ProofKind = "none"
    multipliers: Pairs = ()
    witness: Pairs = ()
    ray: Pairs = ()
    note: str = ""

    @property
    def proven(self) -> bool:
        return self.status == "proven"

    def to_json(self) -> dict[str, Any]:
        return {"value": approx(self.value), "exact": exact(self.value), "status": self.status,
                "proof": self.proof, "multipliers": _pairs(self.multipliers),
                "witness": _pairs(self.witness), "ray": _pairs(self.ray), "note": self.note}


@dataclass(frozen=True)
class Interval:
    lower: Bound
    upper: Bound

    @property
    def proven(self) -> bool:
        return self.lower.proven and self.upper.proven

    @property
    def width(self) -> Fraction | None:
        """The proven width (None: unbounded or not proven)."""
        if not self.proven or self.lower.value is None or self.upper.value is None:
            return None
        return self.upper.value - self.lower.value

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for side, b in (("lower", self.lower), ("upper", self.upper)):
            known = b.status in ("proven", "reached")
            out[side] = approx(b.value) if known else None
            out[f"{side}_exact"] = exact(b.value) if known else None
            out[f"{side}_status"] = b.status
        return out


@dataclass(frozen=True)
class Attack:
    """The published cells and equations an attacker combines: the equations with non-zero
    multipliers in the LP certificates, and the published cells in them (names)."""

    equations: tuple[str, ...]
    published: tuple[str, ...]

    def to_json(self) -> dict[str, list[str]]:
        return {"equations": list(self.equations), "published": list(self.published)}


def attack_of(p: IntervalProblem, equations: Iterable[int]) -> Attack:
    """The attack in words: the given equations (those a certificate weighs) and the
    published cells they hold, by name."""
    eqs = sorted(set(equations))
    A = p.matrix if isinstance(p.matrix, sp.csr_matrix) else sp.csr_matrix(p.matrix)
    published: set[int] = set()
    for i in eqs:
        s, e = A.indptr[i], A.indptr[i + 1]
        published.update(int(c) for c, a in zip(A.indices[s:e], A.data[s:e], strict=True)
                         if a and not p.hidden[c])
    return Attack(tuple(p.equation_names[i] for i in eqs),
                  tuple(p.cell_names[c] for c in sorted(published)))


@dataclass(frozen=True)
class CellAudit:
    """One suppressed cell: its LP interval, its integer interval (None when the integer
    audit was not asked for), the attack and the verdict (``verdict``)."""

    cell: int
    name: str
    value: Fraction
    protection: tuple[Fraction, Fraction]
    lp: Interval
    integer: Interval | None
    attack: Attack
    verdict: Verdict
    elapsed_s: float = 0.0
    sliding: Fraction = Fraction(0)  # the interval must be at least this wide

    @property
    def tighter(self) -> bool:
        """The proven integer interval is strictly inside the proven LP interval."""
        if self.integer is None or not (self.lp.proven and self.integer.proven):
            return False
        return (self.integer.lower.value != self.lp.lower.value
                or self.integer.upper.value != self.lp.upper.value)

    def to_json(self, certificates: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "cell": self.cell, "name": self.name, "value": float(self.value),
            "value_exact": str(self.value),
            "protection": {"lower": float(self.protection[0]),
                           "upper": float(self.protection[1]),
                           "sliding": float(self.sliding)},
            "lp": self.lp.to_json(),
            "integer": None if self.integer is None else self.integer.to_json(),
            "tighter": self.tighter, "verdict": self.verdict, "attack": self.attack.to_json(),
            "elapsed_s": round(self.elapsed_s, 6)}
        if certificates:
            out["certificates"] = {
                kind: {"lower": iv.lower.to_json(), "upper": iv.upper.to_json()}
                for kind, iv in (("lp", self.lp), ("integer", self.integer)) if iv is not None}
        return out


@dataclass(frozen=True)
class AuditResult:
    cells: tuple[CellAudit, ...]
    elapsed_s: float

    @property
    def tighter(self) -> tuple[CellAudit, ...]:
        """Cells whose integer interval is strictly tighter than their LP interval."""
        return tuple(c for c in self.cells if c.tighter)

    @property
    def all_protected(self) -> bool:
        return all(c.verdict == "protected" for c in self.cells)

    def to_json(self, certificates: bool = False) -> dict[str, Any]:
        return {"cells": [c.to_json(certificates) for c in self.cells],
                "tighter": [c.cell for c in self.tighter],
                "elapsed_s": round(self.elapsed_s, 6)}


def _best(lp: Bound, integer: Bound | None) -> Bound | None:
    """The tightest proven bound on one side (the integer one when proven)."""
    for b in (integer, lp):
        if b is not None and b.proven:
            return b
    return None


def verdict(value: Fraction, protection: tuple[Fraction, Fraction], lp: Interval,
            integer: Interval | None, sliding: Fraction = Fraction(0)) -> Verdict:
    """A pure function of proven bounds. Disclosed: the proven bounds meet. Under-protected:
    a proven bound cuts into [value - lower level, value + upper level], or the proven bounds
    are closer than the sliding level (both intervals are valid, so either proves it).
    Protected: the attacker's interval (the integer one when the integer audit ran, else the
    LP one) is proven on both sides and covers that range (and is that wide). Otherwise
    unknown (a time limit, or the integer audit could not finish)."""
    lo = _best(lp.lower, None if integer is None else integer.lower)
    hi = _best(lp.upper, None if integer is None else integer.upper)
    if lo is not None and hi is not None and hi.value is not None and lo.value == hi.value:
        return "disclosed"
    if lo is not None and lo.value is not None and lo.value > value - protection[0]:
        return "under-protected"
    if hi is not None and hi.value is not None and hi.value < value + protection[1]:
        return "under-protected"
    if lo is not None and hi is not None and lo.value is not None and hi.value is not None \
            and hi.value - lo.value < sliding:
        return "under-protected"
    attacker = integer if integer is not None else lp
    return "protected" if attacker.proven else "unknown"
