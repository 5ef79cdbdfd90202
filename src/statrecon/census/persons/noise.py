"""Noisy measurements of the SF1 person tables: a zCDP budget split over the tables and
discrete Gaussian noise on every cell, as the Bureau's noisy measurement files carry.

Each table is one query over all geographies of its level. Adding or removing one person
changes, in one geography, every cell of the table that counts that person's type: at most
``m`` cells (the table's largest column count over the attribute grid), so the table's L2
sensitivity is sqrt(m) and noise of scale sigma costs rho = m / (2 sigma^2). Given a share
of the budget rho_T, sigma_T = sqrt(m_T / (2 rho_T)); the shares add up to the budget
(zCDP composes by addition).

Default split: the 2020 production's person allocation between geographic levels, as the
Bureau published it for the redistricting data (tract 687/4099, block 165/4099 of
rho = 2.63), renormalised to the levels the release has, then equal between the tables of a
level. SF1's tables do not map onto the production's queries one by one, so within a level no
finer split is claimed. ``--allocation FILE`` gives any other split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import yaml

from statrecon import inputs
from statrecon.census.geography import TRACT_LENGTH
from statrecon.census.persons.cells import Sf1Cell, mask_matrix
from statrecon.discrete_gaussian import MAX_SIGMA, MIN_SIGMA, sample, scale_problem
from statrecon.errors import StatreconError

# The 2020 redistricting production's person budget by geographic level (parts of 4099).
PRODUCTION_LEVEL_SHARES = {"tract": 687, "block": 165}
PRODUCTION_RHO = 2.63
SHARE_TOLERANCE = 1e-9
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when installed


@dataclass(frozen=True)
class TableNoise:
    """One table's part of the budget and the noise it buys."""

    share: float
    rho: float
    sensitivity_squared: int  # most cells of the table one person counts in
    sigma: float  # 0 when rho is infinite


@dataclass(frozen=True)
class NoisePlan:
    """The budget and each table's noise scale: what a noisy release states about itself."""

    rho: float  # math.inf: no noise
    tables: dict[str, TableNoise]

    def as_json(self) -> dict[str, Any]:
        return {"mechanism": "discrete_gaussian",
                "rho": "inf" if math.isinf(self.rho) else self.rho,
                "tables": {t: {"share": n.share, "rho": "inf" if math.isinf(n.rho) else n.rho,
                               "sensitivity_squared": n.sensitivity_squared,
                               "sigma": n.sigma} for t, n in self.tables.items()}}


def count_tables(cells: tuple[Sf1Cell, ...]) -> dict[str, list[Sf1Cell]]:
    """The count cells of each table (medians are refused: they are not counts)."""
    medians = sorted({c.table for c in cells if c.is_median})
    if medians:
        raise StatreconError(f"noisy measurements are counts; table {medians[0]} publishes "
                             "medians (leave out --with-p13)")
    out: dict[str, list[Sf1Cell]] = {}
    for c in cells:
        out.setdefault(c.table, []).append(c)
    return out


def sensitivity_squared(cells: list[Sf1Cell]) -> int:
    """The most cells of ``cells`` any one person type falls in."""
    counts = np.asarray(mask_matrix(cells).sum(axis=0)).ravel()
    return int(counts.max(initial=0))


def default_allocation(cells: tuple[Sf1Cell, ...]) -> dict[str, float]:
    """The production's level split, equal between the tables of a level (module docs)."""
    by_table = count_tables(cells)
    level_of = {t: cs[0].level for t, cs in by_table.items()}
    levels = sorted(set(level_of.values()))
    weight = {lv: PRODUCTION_LEVEL_SHARES[lv] for lv in levels}
    total = sum(weight.values())
    per_level = {lv: sum(1 for t in by_table if level_of[t] == lv) for lv in levels}
    return {t: weight[level_of[t]] / total / per_level[level_of[t]] for t in by_table}


def read_allocation(path: Path, cells: tuple[Sf1Cell, ...]) -> dict[str, float]:
    """A YAML/JSON mapping ``table: share`` over every table of the release, summing to 1."""
    where = str(path)
    data = inputs.read_yaml(path, "allocation file")
    if not isinstance(data, dict) or not data:
        raise StatreconError(f"{where}: an allocation is a mapping of table names to shares "
                             "of rho (for example P1: 0.1)")
    tables = count_tables(cells)
    shares: dict[str, float] = {}
    for name, share in data.items():
        if str(name) not in tables:
            raise StatreconError(f"{where}: unknown table {str(name)[:40]!r} (the release "
                                 f"publishes {', '.join(sorted(tables)[:6])}, ...)")
        if isinstance(share, bool) or not isinstance(share, int | float) or not (
                math.isfinite(share) and share > 0):
            raise StatreconError(f"{where}: table {name}: a share must be a number > 0, got "
                                 f"{str(share)[:40]!r}")
        shares[str(name)] = float(share)
    missing = sorted(set(tables) - set(shares))
    if missing:
        raise StatreconError(f"{where}: no share for table {missing[0]}"
                             + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                             + "; every published table needs a part of the budget")
    total = sum(shares.values())
    if abs(total - 1) > SHARE_TOLERANCE:
        raise StatreconError(f"{where}: the shares add up to {total:.12g}, not 1")
    return shares


def plan_noise(cells: tuple[Sf1Cell, ...], rho: float,
               allocation: dict[str, float] | None = None) -> NoisePlan:
    """Each table's budget and noise scale for a total ``rho`` (inf: none); every scale
    one the samplers draw and the models weigh (``discrete_gaussian.scale_problem``)."""
    if math.isnan(rho) or rho <= 0:
        raise StatreconError(f"--dp-rho must be > 0 (or inf for no noise), got {rho}")
    tables = count_tables(cells)
    shares = allocation if allocation is not None else default_allocation(cells)
    plan = {}
    for name, members in tables.items():
        m = sensitivity_squared(members)
        part = rho * shares[name]
        plan[name] = TableNoise(shares[name], part, m, _scale(m, part))
    _check_scales(rho, plan)
    return NoisePlan(rho, plan)


def _scale(m: int, part: float) -> float:
    """sigma = sqrt(m / (2 rho_T)): 0 for rho_T = inf, inf where rho_T underflowed to 0."""
    if math.isinf(part):
        return 0.0
    return math.sqrt(m / (2 * part)) if part > 0 else math.inf


def _check_scales(rho: float, plan: dict[str, TableNoise]) -> None:
    """Refuse a budget whose scales no run can use, saying which budgets work."""
    for name, t in plan.items():
        problem = scale_problem(t.sigma)
        if problem is None:
            continue
        # sigma_T = sqrt(m / (2 share rho)): the budgets that keep every table in range
        least = max(n.sensitivity_squared / (2 * n.share * MAX_SIGMA ** 2)
                    for n in plan.values())
        most = min(n.sensitivity_squared / (2 * n.share * MIN_SIGMA ** 2)
                   for n in plan.values())
        fits = (f"--dp-rho must lie between {least:.3g} and {most:.3g}" if least <= most
                else "no --dp-rho gives every table a usable sigma")
        raise StatreconError(f"--dp-rho {rho:g}: table {name} would get sigma {t.sigma:.3g}, "
                             f"{problem}; with this allocation {fits} (or inf for exact "
                             "tables)")


def add_noise(values: np.ndarray, tables: np.ndarray, plan: NoisePlan, seed: int | None
              ) -> tuple[np.ndarray, str]:
    """``values`` (one per published cell, ``tables[i]`` its table) plus discrete Gaussian
    noise of each table's scale, and the sampler used (``discrete_gaussian.sample``)."""
    out = np.asarray(values, dtype=np.int64).copy()
    used = "none"
    for offset, name in enumerate(sorted(plan.tables)):
        where = np.flatnonzero(tables == name)
        if not len(where):
            continue
        part_seed = None if seed is None else seed * 1_000_003 + offset
        noise, sampler = sample(len(where), plan.tables[name].sigma, part_seed)
        out[where] += noise
        used = sampler if sampler != "none" else used
    return out, used


def noisy_table(table: pa.Table, plan: NoisePlan, seed: int | None,
                cells: tuple[Sf1Cell, ...] | None = None
                ) -> tuple[pa.Table, dict[str, Any]]:
    """The long table of ``census tabulate`` with noisy values, and what the release states
    about its noise (the plan, the sampler, the seed). With ``cells``, each tract's
    population is also published exactly (an invariant: outside the DP guarantee, as the
    2020 production kept each state's population exact)."""
    names = np.asarray(table.column("table").to_numpy(zero_copy_only=False), dtype=object)
    values, sampler = add_noise(table.column("value").to_numpy(), names, plan, seed)
    noisy = table.set_column(table.schema.get_field_index("value"), "value",
                             pa.array(values, pa.int64()))
    meta: dict[str, Any] = {**plan.as_json(), "sampler": sampler, "seed": seed}
    if cells is not None:
        meta["invariants"] = {"tract_population": tract_population(table, cells)}
    return noisy, meta


def tract_population(table: pa.Table, cells: tuple[Sf1Cell, ...]) -> dict[str, int]:
    """Each tract's persons, from the exact long table: its blocks' total cells (P1)."""
    total = next((c for c in cells if c.level == "block" and c.is_total), None)
    if total is None:
        raise StatreconError("an exact tract population needs P1 (the block total) in the "
                             "release")
    frame = table.select(["level", "geoid", "table", "cell", "value"]).to_pandas()
    rows = frame[(frame["level"] == "block") & (frame["table"] == total.table)
                 & (frame["cell"] == total.cell)]
    per_tract = rows.groupby(rows["geoid"].str[:TRACT_LENGTH])["value"].sum()
    return {str(t): int(n) for t, n in per_tract.items()}


def noise_summary(noise: dict[str, Any]) -> dict[str, Any]:
    """A noisy release's noise in a line: budget, sampler and the range of the scales."""
    sigmas = [t["sigma"] for t in noise["tables"].values()]
    return {"rho": noise["rho"], "sampler": noise["sampler"], "seed": noise["seed"],
            "tables": len(sigmas), "sigma_min": min(sigmas), "sigma_max": max(sigmas),
            "exact_tract_population": "invariants" in noise}
