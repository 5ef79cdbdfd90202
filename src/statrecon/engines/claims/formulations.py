"""Claim formulations: how the candidate claims of one block are proven or refuted.

A formulation is one small class with a ``name``, a one-line ``summary`` (the CLI help is
generated from them) and one verb, ``verify``: status per candidate claim, 1 verified
(INFEASIBLE), 0 refuted (a consistent block breaks it), -1 unknown (a limit cut it short).
A new formulation is one class added to ``FORMULATIONS``. The module imports no solver, so
the CLI can list the formulations at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np

if TYPE_CHECKING:
    from statrecon.census.households.tables import BlockRelease
    from statrecon.engines.claims.model import BlockModel
    from statrecon.engines.claims.options import ClaimsOptions


class Formulation(Protocol):
    """Proves or refutes candidate claims (ids from ``model.solution_claims``)."""

    name: ClassVar[str]
    summary: ClassVar[str]

    def verify(self, release: BlockRelease, model: BlockModel, candidates: np.ndarray,
               members: np.ndarray, solutions: list[np.ndarray], *, end: float | None,
               options: ClaimsOptions) -> np.ndarray: ...


@dataclass(frozen=True)
class Fast:
    """Histogram model, claims grouped by type set, batched refutation (the default)."""

    name: ClassVar[str] = "fast"
    summary: ClassVar[str] = "histogram model with batched refutation (default)"

    def verify(self, release: BlockRelease, model: BlockModel, candidates: np.ndarray,
               members: np.ndarray, solutions: list[np.ndarray], *, end: float | None,
               options: ClaimsOptions) -> np.ndarray:
        # lazy: the CLI builds its --formulation help from this registry without CP-SAT
        from statrecon.engines.claims.fast import group_claims, refute
        from statrecon.engines.claims.model import MULT_BITS

        if not len(candidates):
            return np.zeros(0, dtype=np.int8)
        mult = candidates & ((1 << MULT_BITS) - 1)
        groups = group_claims(members, mult)
        status = refute(model, groups.members, groups.mult, end=end, workers=options.workers,
                        seed=options.seed, known=solutions)
        return status[groups.of_claim]


@dataclass(frozen=True)
class Paper:
    """The paper's one-hot rows and big-M constraints, one solve per claim (the baseline)."""

    name: ClassVar[str] = "paper"
    summary: ClassVar[str] = "the paper's big-M integer programme, one solve per claim"

    def verify(self, release: BlockRelease, model: BlockModel, candidates: np.ndarray,
               members: np.ndarray, solutions: list[np.ndarray], *, end: float | None,
               options: ClaimsOptions) -> np.ndarray:
        # lazy: the CLI builds its --formulation help from this registry without CP-SAT
        from statrecon.engines.claims.model import decode_claim
        from statrecon.engines.claims.paper import verify_paper

        claims = [decode_claim(int(c)) for c in candidates]
        return verify_paper(release, claims, end=end, workers=options.workers)


FORMULATIONS: dict[str, Formulation] = {f.name: f for f in (Fast(), Paper())}


def formulation(name: str) -> Formulation:
    """The registered formulation called ``name``; a ValueError lists the known ones."""
    try:
        return FORMULATIONS[name]
    except KeyError:
        raise ValueError(f"unknown claim formulation {name!r}: expected one of "
                         f"{', '.join(FORMULATIONS)}") from None


def formulations_help() -> str:
    """One line per formulation, for the CLI's --formulation help."""
    return "; ".join(f"{f.name}: {f.summary}" for f in FORMULATIONS.values())
