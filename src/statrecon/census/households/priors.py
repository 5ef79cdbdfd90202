"""The tract and state populations a claim is measured against (the baselines' prior P).

A claim "m units of this block have attributes a" is only news if a unit of the block's tract
(or state) is unlikely to have them; ``Prior`` holds the distinct unit types of such a
population with their counts, so the probability of any claim is one pass over the types.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from statrecon.census.households import schema as hh
from statrecon.census.households.files import encode


@dataclass(frozen=True)
class Prior:
    """The unit types of a population (tract or state) with their counts: the baseline's P."""

    types: np.ndarray  # (n, 10) codes of the distinct unit types
    counts: np.ndarray  # units of each

    @classmethod
    def of(cls, codes: np.ndarray) -> Prior:
        if len(codes) == 0:
            return cls(np.zeros((0, hh.N_COLUMNS), dtype=np.uint8), np.zeros(0, dtype=np.int64))
        uniq, counts = np.unique(codes, axis=0, return_counts=True)
        return cls(uniq.astype(np.uint8), counts.astype(np.int64))

    def probability(self, claim: hh.Claim) -> float:
        total = int(self.counts.sum())
        return float(self.counts[claim.matches(self.types)].sum()) / total if total else 0.0


def tract_and_state_priors(units: pd.DataFrame) -> tuple[dict[str, Prior], dict[str, Prior]]:
    """Tract and state priors (the baselines' P) from a households table."""
    codes = encode(units)
    tracts = {str(t): Prior.of(codes[idx]) for t, idx in units.groupby("tract").indices.items()}
    states = {str(s): Prior.of(codes[idx]) for s, idx in units.groupby("state").indices.items()}
    return tracts, states
