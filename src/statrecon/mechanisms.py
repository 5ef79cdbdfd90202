"""How published answers are perturbed: the defences that reconstruction experiments attack.

Every mechanism answers linear statistics ``F @ s`` of a true secret vector ``s`` (one entry per
record) for a 0/1 query matrix ``F`` (k×n, numpy or scipy.sparse) and returns a
:class:`MechanismOutput` that keeps the true answers next to the published ones, so experiments
can measure error and reconstruction success without recomputing anything.

Mechanisms are small frozen dataclasses with one verb, ``answer``; parameters are validated in the
constructor. :func:`mechanism_from_spec` turns the CLI's short strings (``gaussian:2.5``) into
mechanisms.

>>> import numpy as np
>>> F = np.array([[1, 1, 0], [0, 1, 1]])
>>> out = Rounding(5).answer(F, np.array([3.0, 4.0, 9.0]), np.random.default_rng(0))
>>> out.true_answers.tolist(), out.answers.tolist()
([7.0, 13.0], [5.0, 15.0])
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from statrecon.errors import StatreconError

__all__ = [
    "SPEC_FORMS",
    "BoundedUniform",
    "DiffixLike",
    "ExactMechanism",
    "Gaussian",
    "Laplace",
    "Mechanism",
    "MechanismError",
    "MechanismOutput",
    "Rounding",
    "Subsampling",
    "ThresholdSuppression",
    "count_conditions",
    "mechanism_from_spec",
]


class MechanismError(StatreconError, ValueError):
    """A bad mechanism parameter or spec.

    Both a :class:`StatreconError` (the CLI prints it as a one-line user error) and a
    ``ValueError`` (what library callers expect from a bad argument).
    """


@dataclass(frozen=True)
class MechanismOutput:
    """Published answers next to the truth.

    ``noise_scale`` is the standard deviation of the error for random mechanisms (Gaussian σ,
    Laplace √2·b, Diffix and subsampling per answer) and the half-width of the error bound for
    bounded ones (rounding base/2, uniform E); 0 for exact answers. ``suppressed`` marks answers
    published as NaN; ``sample_mask``/``sample_counts`` say which records the answers depend on
    (subsampling only): an attacker can learn nothing about the others.
    """

    answers: np.ndarray
    true_answers: np.ndarray
    suppressed: np.ndarray | None
    sample_mask: np.ndarray | None
    noise_scale: np.ndarray | float
    name: str
    sample_counts: np.ndarray | None = None


@runtime_checkable
class Mechanism(Protocol):
    """Anything that answers a batch of linear statistics."""

    def answer(
        self,
        F: Any,
        s: np.ndarray,
        rng: np.random.Generator,
        queries: Sequence[str] | None = None,
    ) -> MechanismOutput: ...


def _secret(F: Any, s: np.ndarray) -> np.ndarray:
    """``s`` as a float vector, checked against the query matrix's width."""
    vec = np.asarray(s, dtype=np.float64)
    if vec.ndim != 1:
        raise MechanismError(f"the secret vector must be 1-D, got shape {vec.shape}")
    if len(F.shape) != 2 or F.shape[1] != vec.shape[0]:
        raise MechanismError(
            f"query matrix has shape {tuple(F.shape)} but the secret vector has "
            f"{vec.shape[0]} entries"
        )
    return vec


def _apply(F: Any, v: np.ndarray) -> np.ndarray:
    """``F @ v`` as a flat float array for dense and sparse ``F`` alike."""
    return np.asarray(F @ v, dtype=np.float64).reshape(-1)


def _true_answers(F: Any, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    vec = _secret(F, s)
    return vec, _apply(F, vec)


def _fmt(x: float) -> str:
    return f"{x:g}"


def _require_real(name: str, what: str, value: object) -> None:
    """A scale is a plain real number: not a boolean (True would read as 1), not a string."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise MechanismError(f"{name}: {what} must be a number, got {value!r}")


def _require_nonnegative(name: str, what: str, value: float) -> None:
    _require_real(name, what, value)
    if not math.isfinite(value) or value < 0:
        raise MechanismError(f"{name}: {what} must be a finite number >= 0, got {value!r}")


@dataclass(frozen=True)
class ExactMechanism:
    """Publish the true answers: the baseline every reconstruction attack wins against."""

    def answer(
        self,
        F: Any,
        s: np.ndarray,
        rng: np.random.Generator,
        queries: Sequence[str] | None = None,
    ) -> MechanismOutput:
        _, true = _true_answers(F, s)
        return MechanismOutput(true.copy(), true, None, None, 0.0, "exact")


@dataclass(frozen=True)
class Rounding:
    """Round every answer to the nearest multiple of ``base`` (ties to even).

    Deterministic error of at most base/2: the classic agency defence, and the bounded-error
    setting of the Dinur–Nissim attacks.
    """

    base: float

    def __post_init__(self) -> None:
        _require_real("rounding", "base", self.base)
        if not math.isfinite(self.base) or self.base <= 0:
            raise MechanismError(f"rounding: base must be a finite number > 0, got {self.base!r}")

    def answer(
        self,
        F: Any,
        s: np.ndarray,
        rng: np.random.Generator,
        queries: Sequence[str] | None = None,
    ) -> MechanismOutput:
        _, true = _true_answers(F, s)
        published = np.round(true / self.base) * self.base
        return MechanismOutput(
            published, true, None, None, self.base / 2, f"round(base={_fmt(self.base)})"
        )


@dataclass(frozen=True)
class BoundedUniform:
    """Add independent uniform noise in [-E, E]: error bounded by E, the attacker knows E."""

    E: float

    def __post_init__(self) -> None:
        _require_nonnegative("uniform", "E", self.E)

    def answer(
        self,
        F: Any,
        s: np.ndarray,
        rng: np.random.Generator,
        queries: Sequence[str] | None = None,
    ) -> MechanismOutput:
        _, true = _true_answers(F, s)
        noise = rng.uniform(-self.E, self.E, size=true.shape)
        return MechanismOutput(true + noise, true, None, None, self.E, f"uniform(E={_fmt(self.E)})")


@dataclass(frozen=True)
class Gaussian:
    """Add independent N(0, sigma²) noise: unbounded error, the least-squares attack's home."""

    sigma: float

    def __post_init__(self) -> None:
        _require_nonnegative("gaussian", "sigma", self.sigma)

    def answer(
        self,
        F: Any,
        s: np.ndarray,
        rng: np.random.Generator,
        queries: Sequence[str] | None = None,
    ) -> MechanismOutput:
        _, true = _true_answers(F, s)
        noise = rng.normal(0.0, self.sigma, size=true.shape)
        return MechanismOutput(
            true + noise, true, None, None, self.sigma, f"gaussian(sigma={_fmt(self.sigma)})"
        )


@dataclass(frozen=True)
class Laplace:
    """Add independent Laplace(0, b) noise (std √2·b), the differential-privacy mechanism.

    With the optional extra ``statrecon[dp]`` installed and ``use_opendp=True``, OpenDP's
    vetted sampler draws the noise; it uses its own secure randomness, so ``rng`` is ignored and
    runs are not reproducible from a seed. Otherwise numpy's ``rng.laplace`` draws it: fine for
    experiments, but it is NOT a DP-hardened sampler (floating-point attacks on naive Laplace
    sampling apply), so never use the fallback to protect real data. ``name`` says which ran.
    """

    b: float
    use_opendp: bool = True

    def __post_init__(self) -> None:
        _require_nonnegative("laplace", "b", self.b)

    def answer(
        self,
        F: Any,
        s: np.ndarray,
        rng: np.random.Generator,
        queries: Sequence[str] | None = None,
    ) -> MechanismOutput:
        _, true = _true_answers(F, s)
        noisy = self._opendp(true) if self.use_opendp and self.b > 0 else None
        backend = "opendp"
        if noisy is None:
            noisy = true + rng.laplace(0.0, self.b, size=true.shape)
            backend = "numpy"
        return MechanismOutput(
            noisy, true, None, None, math.sqrt(2) * self.b, f"laplace(b={_fmt(self.b)}, {backend})"
        )

    def _opendp(self, true: np.ndarray) -> np.ndarray | None:
        """Noisy answers from OpenDP, or None when the extra is not installed."""
        try:
            import opendp.prelude as dp
        except ImportError:
            return None
        dp.enable_features("contrib")
        try:
            atom = dp.atom_domain(T=float, nan=False)
        except TypeError:  # OpenDP releases before the ``nan`` flag: floats are non-NaN already
            atom = dp.atom_domain(T=float)
        meas = dp.m.make_laplace(dp.vector_domain(atom), dp.l1_distance(T=float), scale=self.b)
        return np.asarray(meas([float(x) for x in true]), dtype=np.float64)


@dataclass(frozen=True)
class Subsampling:
    """Answer from a random subsample, rescaled by 1/rate (CS208 notes §2.4.2).

    Defeats reconstruction without any privacy guarantee: answers depend only on sampled
    records, so an attacker can at best learn those exactly and guess the rest. Bernoulli
    sampling keeps each record with probability ``rate``; ``with_replacement=True`` draws
    m = round(rate·n) records uniformly with replacement as in the lecture notes and rescales by
    n/m. Both are unbiased. ``noise_scale`` is each answer's true standard deviation.
    """

    rate: float
    with_replacement: bool = False

    def __post_init__(self) -> None:
        _require_real("subsample", "rate", self.rate)
        if not math.isfinite(self.rate) or not 0 < self.rate <= 1:
            raise MechanismError(f"subsample: rate must be in (0, 1], got {self.rate!r}")

    def answer(
        self,
        F: Any,
        s: np.ndarray,
        rng: np.random.Generator,
        queries: Sequence[str] | None = None,
    ) -> MechanismOutput:
        vec, true = _true_answers(F, s)
        n = vec.shape[0]
        kind = "with replacement" if self.with_replacement else "bernoulli"
        name = f"subsample(rate={_fmt(self.rate)}, {kind})"
        sq = _apply(F, vec * vec)
        if self.with_replacement:
            m = round(self.rate * n)
            if m == 0:
                raise MechanismError(
                    f"subsample: rate {self.rate!r} of {n} records draws no record at all"
                )
            counts = np.bincount(rng.integers(0, n, size=m), minlength=n)
            published = _apply(F, vec * counts) * (n / m)
            # m i.i.d. draws of v_j = F_ij s_j with j uniform: var = mean(v²) - mean(v)²
            var = np.maximum(sq / n - (true / n) ** 2, 0.0)
            scale = n / math.sqrt(m) * np.sqrt(var)
            return MechanismOutput(
                published, true, None, counts > 0, scale, name, sample_counts=counts
            )
        mask = np.asarray(rng.random(n) < self.rate)
        published = _apply(F, vec * mask) / self.rate
        scale = np.sqrt(sq * (1 - self.rate) / self.rate)
        return MechanismOutput(
            published, true, None, mask, scale, name, sample_counts=mask.astype(np.int64)
        )


@dataclass(frozen=True)
class ThresholdSuppression:
    """Suppress every answer whose true value is below ``threshold`` (published as NaN).

    Small-cell suppression: the rest are exact, and the pattern of suppressions itself leaks
    that a count is small.
    """

    threshold: int

    def __post_init__(self) -> None:
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int | np.integer):
            raise MechanismError(f"suppress: threshold must be an integer, got {self.threshold!r}")
        if self.threshold < 0:
            raise MechanismError(f"suppress: threshold must be >= 0, got {self.threshold}")

    def answer(
        self,
        F: Any,
        s: np.ndarray,
        rng: np.random.Generator,
        queries: Sequence[str] | None = None,
    ) -> MechanismOutput:
        _, true = _true_answers(F, s)
        suppressed = true < self.threshold
        published = np.where(suppressed, np.nan, true)
        return MechanismOutput(
            published, true, suppressed, None, 0.0, f"suppress(threshold={self.threshold})"
        )


def _condition_count(tree: Any) -> int:
    from sqlglot import exp

    count = 0
    kinds = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Between, exp.In)
    for node in tree.find_all(*kinds):
        if isinstance(node, exp.In):
            count += len(node.expressions) if node.expressions else 1
        else:
            count += 1
    return count


def count_conditions(sql: str) -> int:
    """Leaf comparison predicates in a statement, as Diffix counts query terms.

    EQ, NEQ, LT, LTE, GT, GTE and BETWEEN count one each; an IN list counts one per item (an IN
    subquery counts one); OR'ed equalities count one each.
    """
    return _condition_count(_parse(sql, 0))


def _parse(sql: str, index: int) -> Any:
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except SqlglotError as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise MechanismError(f"diffix: query {index} is not valid SQL: {first}") from None
    if tree is None:
        raise MechanismError(f"diffix: query {index} is empty")
    return tree


@dataclass(frozen=True)
class DiffixLike:
    """Sticky noise with standard deviation base_sigma·√(conditions), after Aircloak's Diffix.

    Noise scales with the number of conditions in the SQL text, so a random-subset query with
    Θ(n) ``id`` terms gets Θ(√n) noise, while the syntactically short Cohen–Nissim queries get
    O(1) noise and fall to reconstruction (CS208 notes §3). The noise is "sticky": it is a
    function of (seed, normalized query text), drawn from a SHA-256 seeded generator and never
    from ``rng``, so repeating a query cannot average it away. A query with no condition still
    gets one layer of noise. Needs the SQL text of every query (``queries``).
    """

    base_sigma: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        _require_nonnegative("diffix", "base_sigma", self.base_sigma)

    def noise_for(self, sql: str, index: int = 0) -> tuple[float, float]:
        """(noise, std) for one query text; the same text always gives the same noise."""
        tree = _parse(sql, index)
        conditions = max(_condition_count(tree), 1)
        normalized = tree.sql(dialect="duckdb", copy=False)  # ours, then dropped: no copy
        digest = hashlib.sha256(f"{self.seed}\x00{normalized}".encode()).digest()
        z = float(np.random.default_rng(int.from_bytes(digest[:16], "big")).standard_normal())
        std = self.base_sigma * math.sqrt(conditions)
        return std * z, std

    def answer(
        self,
        F: Any,
        s: np.ndarray,
        rng: np.random.Generator,
        queries: Sequence[str] | None = None,
    ) -> MechanismOutput:
        _, true = _true_answers(F, s)
        if queries is None:
            raise MechanismError(
                "diffix: the SQL text of every query is needed (queries=...) to count its "
                "conditions and to make the noise sticky"
            )
        if isinstance(queries, str) or len(queries) != true.shape[0]:
            got = "a single string" if isinstance(queries, str) else f"{len(queries)} texts"
            raise MechanismError(
                f"diffix: queries must hold one SQL text per matrix row ({true.shape[0]}), "
                f"got {got}"
            )
        noise = np.empty_like(true)
        scale = np.empty_like(true)
        for i, sql in enumerate(queries):
            noise[i], scale[i] = self.noise_for(sql, i)
        return MechanismOutput(
            true + noise,
            true,
            None,
            None,
            scale,
            f"diffix(base_sigma={_fmt(self.base_sigma)}, seed={self.seed})",
        )


SPEC_FORMS = (
    "exact, round:BASE, uniform:E, gaussian:SIGMA, laplace:B, subsample:RATE, "
    "suppress:THRESHOLD, diffix:SIGMA[:SEED]"
)


def _spec_error(spec: str, why: str) -> MechanismError:
    """The one-line message naming the spec, what is wrong and the accepted forms."""
    return MechanismError(f"bad mechanism spec {spec!r}: {why}; accepted forms: {SPEC_FORMS}")


def _spec_number(spec: str, value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise _spec_error(spec, f"{value!r} is not a number") from None
    if not math.isfinite(x):
        raise _spec_error(spec, f"{value!r} is not a finite number")
    return x


def _spec_integer(spec: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise _spec_error(spec, f"{value!r} is not an integer") from None


def _mechanism_of(spec: str, kind: str, args: list[str]) -> Mechanism:
    """The mechanism of a known kind with the right number of parameters."""
    if kind == "exact":
        return ExactMechanism()
    if kind == "round":
        return Rounding(_spec_number(spec, args[0]))
    if kind == "uniform":
        return BoundedUniform(_spec_number(spec, args[0]))
    if kind == "gaussian":
        return Gaussian(_spec_number(spec, args[0]))
    if kind == "laplace":
        return Laplace(_spec_number(spec, args[0]))
    if kind == "subsample":
        return Subsampling(_spec_number(spec, args[0]))
    if kind == "suppress":
        return ThresholdSuppression(_spec_integer(spec, args[0]))
    seed = _spec_integer(spec, args[1]) if len(args) > 1 else 0
    return DiffixLike(_spec_number(spec, args[0]), seed)


def mechanism_from_spec(spec: str) -> Mechanism:
    """Parse a CLI mechanism spec such as ``gaussian:2.5`` or ``suppress:5``.

    Raises :class:`MechanismError` (a StatreconError) with a one-line message naming the spec and
    the accepted forms.
    """
    text = spec.strip().lower()
    kind, _, rest = text.partition(":")
    args = rest.split(":") if rest else []
    arity = {"exact": (0, 0), "diffix": (1, 2)}.get(kind, (1, 1))
    known = {"exact", "round", "uniform", "gaussian", "laplace", "subsample", "suppress", "diffix"}
    if kind not in known:
        raise _spec_error(spec, f"unknown mechanism {kind!r}")
    if not arity[0] <= len(args) <= arity[1]:
        raise _spec_error(spec, f"{kind} takes "
                                f"{'no parameter' if arity[1] == 0 else 'a parameter'}")
    try:
        return _mechanism_of(spec, kind, args)
    except MechanismError as err:
        if str(err).startswith("bad mechanism spec"):
            raise
        raise _spec_error(spec, str(err)) from None
