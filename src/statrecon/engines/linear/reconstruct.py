"""One linear method on a compiled system: :func:`reconstruct_linear` runs exact
determinability or an estimator (:mod:`.estimators`) and adds the proven values, each record's
bound cut by its domain (:class:`RecordBound`); :class:`LinearResult` says which route gave it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from statrecon.engines.linear.determine import (
    Certificate,
    Determination,
    determine,
)
from statrecon.engines.linear.estimators import (
    ESTIMATORS,
    clipped_least_squares,
)
from statrecon.engines.linear.problem import (
    Problem,
    SolverIncomplete,
)
from statrecon.errors import check_choice, check_count, check_positive, check_time_limit
from statrecon.release.statistic import number_out
from statrecon.result import Route, html_note, html_table, html_view, plain

if TYPE_CHECKING:
    from statrecon.engines.linear.model import LinearSystem

__all__ = ["METHODS", "LinearOptions", "LinearResult", "LinearStatus", "RecordBound",
           "reconstruct_linear", "round_estimate"]

METHODS: tuple[str, ...] = ("determine", *ESTIMATORS)


@dataclass(frozen=True)
class LinearOptions:
    """One linear method and its budget. ``method``: ``determine`` or an estimator of
    ``ESTIMATORS`` (read when the options are made, so a registered one counts).
    ``time_limit``, like in every ``*Options``: seconds, None for no limit, the field's
    default (``LinearOptions.time_limit``) the engine's. A value out of range raises
    ``OptionError`` when the options are made."""

    method: str = "ls"
    time_limit: float | None = 60.0
    seed: int = 0
    epochs: float = 20.0
    # exact determinability: a connected component of more statistics x records than this is
    # not decided (a note names it); its dense matrix modulo a prime takes 8 bytes a cell
    determine_max_cells: int = 40_000_000
    # statistics x public rows of the query matrix, refused before any predicate is evaluated
    # (None: no limit); 400 million booleans is about 0.4 GiB, and a dense float copy 3.2 GiB
    max_cells: int | None = 400_000_000

    def __post_init__(self) -> None:
        check_choice(self, "method", ("determine", *ESTIMATORS))
        check_time_limit(self)
        check_count(self, "seed", 0)
        check_positive(self, "epochs")
        check_count(self, "determine_max_cells")
        check_count(self, "max_cells", optional=True)


# determined/partial/infeasible: exact arithmetic; optimal: HiGHS proved the ip optimum;
# estimated: no proof; unknown: a limit cut the proof short
LinearStatus = Literal["determined", "partial", "estimated", "optimal", "infeasible", "unknown"]


@dataclass(frozen=True)
class RecordBound:
    """What one certificate and the record's domain prove: x[index] lies in [low, high]
    (the certificate's exact interval cut by the record's bounds; None: no bound on that
    side), and ``value`` is set when that holds a single admissible value (for an integer or
    categorical secret: one integer), which is then proven."""

    certificate: Certificate
    low: Fraction | None
    high: Fraction | None
    value: Fraction | None = None

    @property
    def index(self) -> int:
        return self.certificate.index


@dataclass(frozen=True)
class LinearResult:
    """An estimate of the secret column plus the records proven exactly (``proven``) and
    those only proven to lie in an interval narrower than their domain (``intervals``)."""

    status: LinearStatus
    method: str
    estimate: np.ndarray  # raw (real-valued) estimate per record
    labels: list[Any]  # estimate in the secret column's own values
    determination: Determination | None
    residual: float
    system: LinearSystem
    elapsed_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    route: Route | None = None  # set by ``statrecon.reconstruct``: which engine and why
    proven: tuple[RecordBound, ...] = ()
    intervals: tuple[RecordBound, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The stable JSON contract of ``statrecon reconstruct --json`` on the linear engine:
        ``{"status", "method", "estimate", "determined", "residual", "elapsed_s", ...}``.

        ``determined``: records proven, each ``{"index", "value", "certificate", "interval",
        "proof"}``; ``value`` is the proven value, ``interval`` [low, high] what the
        certificate proves cut by the record's bounds (``low == high`` with exact statistics;
        wider when bounded statistics, e.g. rounded answers, widen it and the domain still
        leaves one integer), ``certificate`` the statistics' coefficients (the record equals
        Σ coefficient · answer, ± Σ |coefficient| · error), ``proof`` "combination" (the
        coefficients are listed and were checked exactly) or "block" (the coefficients of a
        large dense system are not listed: ``certificate`` is [] and ``proof_blocks[block]``
        names the exact statistics whose square, non-singular system pins the record).
        ``bounded_records``: records not pinned but proven to lie in an interval narrower than
        their domain, ``{"index", "interval", "certificate", "proof"}``. ``proof_blocks``:
        ``{"statistics", "records", "prime"}`` (the pivot block's determinant is non-zero
        modulo ``prime``; the exact solution is checked by exact multiplication)."""
        system = self.system
        public = system.public
        names = list(public.columns) if public is not None else []
        estimate = []
        for i, label in enumerate(self.labels):
            row = {name: plain(public.columns[name][i]) for name in names} if public else {}
            row[system.secret.name] = label
            estimate.append(row)
        det = self.determination
        ids = system.stat_ids
        determined = [{"index": r.index, "value": self._proven_value(r.value),
                       **self._bound_json(r)} for r in self.proven if r.value is not None]
        out: dict[str, Any] = {
            "status": self.status,
            "method": self.method,
            "secret": system.secret.name,
            "estimate": estimate,
            "determined": determined,
            "determined_checked": det is not None,
            "rank": det.rank if det is not None else None,
            "bounded_records": [{"index": r.index, **self._bound_json(r)}
                                for r in self.intervals],
            "residual": round(self.residual, 9),
            "records": system.n,
            "statistics": system.k,
            "ignored_statistics": list(system.ignored),
            "route": None if self.route is None else self.route.to_json(),
            "elapsed_s": round(self.elapsed_s, 4),
        }
        if det is not None and det.blocks:
            out["proof_blocks"] = [{"statistics": [ids[i] for i in p.rows],
                                    "records": list(p.records), "prime": p.prime}
                                   for p in det.blocks]
        if det is not None and not det.consistent:
            out["conflict"] = [ids[i] for i in det.conflict]
        if self.notes:
            out["notes"] = self.notes
        return out

    def _repr_html_(self) -> str:
        """Jupyter's view: every record with its public columns and the secret, proven values
        marked (each with the combination of statistics that proves it), bounded records
        with their proven interval, the rest an estimate."""
        data = self.to_json()
        secret = data["secret"]
        proofs: dict[int, tuple[Any, str]] = {}
        for d in data["determined"]:
            proofs[d["index"]] = (d["value"], _certificate_text(d))
        for b in data["bounded_records"]:
            low, high = b["interval"]
            proofs.setdefault(b["index"], (None, f"in [{_show(low)}, {_show(high)}]: "
                                                 + _certificate_text(b)))
        header = ["record", *[c for c in data["estimate"][0] if c != secret][:8], secret,
                  "proof"] if data["estimate"] else ["record", secret, "proof"]
        rows, marks = [], []
        # proven records first, then bounded ones, then the estimate alone, in record order
        order = sorted(range(len(data["estimate"])),
                       key=lambda i: (i not in proofs or proofs[i][0] is None, i not in proofs))
        for i in order:
            row = data["estimate"][i]
            value, proof = proofs.get(i, (None, ""))
            proven = value is not None
            shown = value if proven else _show(row.get(secret))
            rows.append([i, *[row.get(c) for c in header[1:-2]], shown, proof])
            marks.append([False] * (len(header) - 2) + [proven, False])
        title = (f"{self.status.upper()} ({self.method}): {len(data['determined'])} of "
                 f"{data['records']} records proven by linear algebra, "
                 f"{len(data['bounded_records'])} bounded")
        return html_view(title, html_table(header, rows, marks), html_note(
            "Marked values are proven: the same in every dataset the exact statistics allow "
            "(the proof column gives the combination of statistics). Unmarked values are "
            "an estimate, never a proof."))

    def _bound_json(self, r: RecordBound) -> dict[str, Any]:
        c = r.certificate
        ids = self.system.stat_ids
        return {
            "certificate": [{"statistic": ids[i], "coefficient": number_out(co)}
                            for i, co in c.terms],
            "interval": [None if r.low is None else number_out(r.low),
                         None if r.high is None else number_out(r.high)],
            "proof": "combination" if c.block is None else "block",
            **({} if c.block is None else {"block": c.block}),
        }

    def _proven_value(self, value: Fraction | None) -> Any:
        """A proven value in the column's own terms (indicator -> category)."""
        assert value is not None
        if self.system.secret.kind == "indicator" and value in (0, 1):
            return self.system.secret.label(float(value))
        return number_out(value)


def _show(value: Any) -> Any:
    """An estimate as a person reads it: floats to six significant digits."""
    return float(f"{value:.6g}") if isinstance(value, float) else value


def _certificate_text(record: dict[str, Any]) -> str:
    """``q1 - q2 - q3``: the combination of statistics of a record's certificate."""
    if record["proof"] == "block":
        return f"a full-rank block of statistics (block {record.get('block')})"
    terms = []
    for term in record["certificate"]:
        c, name = term["coefficient"], term["statistic"]
        sign = "-" if float(c) < 0 else "+"
        size = abs(float(c))
        text = name if size == 1 else f"{size:.6g}·{name}"
        terms.append(f"{sign} {text}")
    return " ".join(terms).removeprefix("+ ")


def round_estimate(x: np.ndarray, system: LinearSystem) -> np.ndarray:
    """Rounding for binary/integer secrets, clipped to each record's bounds."""
    if system.secret.kind == "real":
        return np.clip(x, system.lower, system.upper)
    return np.clip(np.round(x), np.ceil(system.lower - 1e-9), np.floor(system.upper + 1e-9))


def reconstruct_linear(system: LinearSystem, options: LinearOptions) -> LinearResult:
    """Run one method on a compiled system, with what the exact and bounded statistics prove
    (``determine``; noisy statistics carry no guarantee and are left out of it)."""
    start = time.perf_counter()
    F, a = system.matrix, system.answers
    lo, hi = system.lower, system.upper
    notes: list[str] = []
    weights = _weights(system)
    det: Determination | None = None
    guaranteed = np.array([i for i, kind in enumerate(system.kinds) if kind != "noisy"],
                          dtype=int)
    if guaranteed.size:
        det = determine(F[guaranteed], [system.exact_answers[i] for i in guaranteed],
                        [system.exact_errors[i] for i in guaranteed],
                        max_cells=options.determine_max_cells)
        det = _reindex(det, guaranteed)
        notes.extend(det.notes)
    proven: tuple[RecordBound, ...] = ()
    intervals: tuple[RecordBound, ...] = ()
    if det is not None and det.consistent:
        det, proven, intervals = _apply_domain(det, system)
    method = options.method
    status: LinearStatus = "estimated"
    # Least squares uses the box only when the user gave bounds as background knowledge;
    # otherwise it is the classic minimum-norm estimate, clipped to the domain afterwards.
    problem = Problem(F, a, lo, hi, user_bounds=system.user_bounds, weights=weights,
                      caps=np.where(np.isfinite(system.errors), system.errors, np.inf),
                      time_limit=options.time_limit, epochs=options.epochs,
                      rng=np.random.default_rng(options.seed), kind=system.secret.kind)
    if method == "determine":
        x = ESTIMATORS["ls"].estimate(problem).x
        if det is None:
            status = "unknown"
        else:  # "partial" claims nothing about the rest: bounds may still pin them
            status = "determined" if len(proven) == system.n else "partial"
    elif method in ESTIMATORS:
        try:
            estimate = ESTIMATORS[method].estimate(problem)
            x, status = estimate.x, estimate.status
            notes.extend(estimate.notes)
        except SolverIncomplete as e:
            status = "unknown"
            x = clipped_least_squares(problem)
            notes.append(f"{method}: {e}; the estimate is least squares")
    else:
        raise ValueError(f"unknown method {method!r} (choose from "
                         f"{', '.join(('determine', *ESTIMATORS))})")
    if det is not None and not det.consistent:
        status = "infeasible"  # whatever the method: the statistics cannot all hold
        proven, intervals = (), ()
    x = _use_proofs(x, proven, intervals)
    rounded = round_estimate(x, system)
    residual = float(np.linalg.norm(F @ rounded - a)) if system.k else 0.0
    labels = [system.secret.label(v) for v in rounded]
    return LinearResult(status, method, x, labels, det, residual, system,
                        time.perf_counter() - start, notes, proven=proven, intervals=intervals)


def _use_proofs(x: np.ndarray, proven: tuple[RecordBound, ...],
                intervals: tuple[RecordBound, ...]) -> np.ndarray:
    """A proven value beats any estimate; a proven interval clips it."""
    x = np.array(x, dtype=float)
    for r in proven:
        x[r.index] = float(r.value) if r.value is not None else x[r.index]
    for r in intervals:
        low = -np.inf if r.low is None else float(r.low)
        high = np.inf if r.high is None else float(r.high)
        x[r.index] = min(max(x[r.index], low), high)
    return x


def _apply_domain(det: Determination, system: LinearSystem
                  ) -> tuple[Determination, tuple[RecordBound, ...], tuple[RecordBound, ...]]:
    """Each certificate's exact interval cut by the record's bounds: one admissible value
    (one integer for a count or an integer column; the point itself for a real one) proves
    it; none means no dataset fits, so the release is inconsistent and the certificate's
    statistics are the conflict; a narrower interval than the domain is reported as such."""
    proven: list[RecordBound] = []
    intervals: list[RecordBound] = []
    for c in (*det.determined, *det.bounded):
        bound = _cut(c, system)
        if bound is None:
            rows = (det.blocks[c.block].rows if c.block is not None
                    else tuple(i for i, _ in c.terms))
            return replace(det, consistent=False, determined=(), bounded=(),
                           conflict=tuple(sorted(rows))), (), ()
        if bound.value is not None:
            proven.append(bound)
        elif _narrower(bound, system):
            intervals.append(bound)
    proven.sort(key=lambda r: r.index)
    intervals.sort(key=lambda r: r.index)
    return det, tuple(proven), tuple(intervals)


def _cut(c: Certificate, system: LinearSystem) -> RecordBound | None:
    """The certificate's interval within the record's bounds (None: empty)."""
    lo, hi = system.lower[c.index], system.upper[c.index]
    low = c.low if not np.isfinite(lo) else max(c.low, Fraction(float(lo)))
    high = c.high if not np.isfinite(hi) else min(c.high, Fraction(float(hi)))
    if system.secret.kind != "real":
        low, high = Fraction(math.ceil(low)), Fraction(math.floor(high))
    if low > high:
        return None
    return RecordBound(c, low, high, low if low == high else None)


def _narrower(bound: RecordBound, system: LinearSystem) -> bool:
    """The interval says more than the record's bounds alone."""
    lo, hi = system.lower[bound.index], system.upper[bound.index]
    if system.secret.kind != "real":
        lo, hi = math.ceil(lo - 1e-9) if np.isfinite(lo) else lo, (
            math.floor(hi + 1e-9) if np.isfinite(hi) else hi)
    return bool((bound.low is not None and (not np.isfinite(lo) or bound.low > lo)) or (
        bound.high is not None and (not np.isfinite(hi) or bound.high < hi)))


def _weights(system: LinearSystem) -> np.ndarray | None:
    """Exact statistics weigh most; bounded and noisy ones by the inverse of their scale."""
    if all(kind == "exact" for kind in system.kinds):
        return None
    scales = np.where(system.scales > 0, system.scales, 0.0)
    positive = scales[scales > 0]
    floor = positive.min() / 10 if positive.size else 1.0
    return np.asarray(1.0 / np.maximum(scales, floor) ** 2)


def _reindex(det: Determination, rows: np.ndarray) -> Determination:
    """Rows of the guaranteed statistics back to the system's rows."""
    def cert(c: Certificate) -> Certificate:
        return replace(c, terms=tuple((int(rows[i]), v) for i, v in c.terms))

    return replace(det, determined=tuple(cert(c) for c in det.determined),
                   bounded=tuple(cert(c) for c in det.bounded),
                   conflict=tuple(int(rows[i]) for i in det.conflict),
                   blocks=tuple(replace(p, rows=tuple(int(rows[i]) for i in p.rows))
                                for p in det.blocks))
