"""Synthetic census blocks of housing units (the households CSV format: ``files``).

No real 2010 household microdata (PPMF) is available offline, so the Generate-then-Verify
experiment (reference 003, section 4) attacks *generated* blocks. ``generate_blocks`` draws a
few states, one tract per attack target in them, and every block of those tracts; every unit
is coherent (it passes ``households.broken_rule``) and the attribute frequencies follow the
published national 2010 shares, perturbed per state, tract and block so that places differ
the way real ones do (blocks more alike inside than tracts, tracts more than states).

The national shares drawn from (2010 Census, SF1 and the Census Briefs) and the modelling
choices for geography and block sizes are listed, with their sources, in
``docs/derivations/synthetic_blocks.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd

from statrecon.census.geography import state_of, tract_of
from statrecon.census.households import schema as hh
from statrecon.census.households.files import MAX_BLOCK_UNITS, OUTPUT_COLUMNS, incoherent
from statrecon.errors import StatreconError

MIN_TARGET_UNITS = 2
MAX_TARGET_UNITS = 60
MAX_TARGETS = 10_000
BLOCK_UNITS_MEDIAN = 10.0
BLOCK_UNITS_SIGMA = 1.1
BLOCKS_PER_TRACT = (30, 45)
# (state FIPS, county FIPS, name): the counties of the paper's Table 1 examples
STATES = (("01", "003", "Baldwin County, AL"), ("24", "510", "Baltimore city, MD"),
          ("26", "163", "Wayne County, MI"), ("32", "003", "Clark County, NV"),
          ("38", "053", "McKenzie County, ND"))

# --- published national shares (see the module docstring for the sources) ------------------

HOUSING_UNITS = 131_704_730
VACANT_UNITS = 14_988_438
VACANCY_RATE = VACANT_UNITS / HOUSING_UNITS
VACANT_STATUS_COUNTS = {"for_rent": 4_137_567, "rented_not_occupied": 206_825,
                        "for_sale": 1_896_796, "sold_not_occupied": 421_032,
                        "seasonal": 4_649_298, "migrant_workers": 24_161,
                        "other_vacant": 3_652_759}
OWNED_MORTGAGE, OWNED_FREE, RENTER_OCCUPIED = 52_979_430, 23_006_644, 40_730_218
OCCUPIED_UNITS = OWNED_MORTGAGE + OWNED_FREE + RENTER_OCCUPIED  # 116,716,292
OWNER_SHARE = (OWNED_MORTGAGE + OWNED_FREE) / OCCUPIED_UNITS
MORTGAGE_SHARE_OF_OWNERS = OWNED_MORTGAGE / (OWNED_MORTGAGE + OWNED_FREE)
NO_CASH_RENT_SHARE_OF_RENTERS = 0.055  # approximate (2010 ACS)
HH_TYPE_COUNTS = {"married": 56_510_377, "family_male": 5_777_570,
                  "family_female": 15_250_349, "nonfamily_male_alone": 13_906_294,
                  "nonfamily_male_not_alone": 4_552_959, "nonfamily_female_alone": 17_298_615,
                  "nonfamily_female_not_alone": 3_420_128}
SIZE_SHARES = (0.267, 0.336, 0.158, 0.132, 0.062, 0.025, 0.020)  # approximate, for checks
AGE_SHARES = (0.046, 0.151, 0.183, 0.213, 0.096, 0.083, 0.113, 0.079, 0.029)  # approximate
RACE_SHARES = (0.775, 0.121, 0.008, 0.040, 0.001, 0.036, 0.019)  # approximate
HISPANIC_SHARE = 0.116  # approximate
UNDER18_SHARE = 0.334  # approximate
OVER65_SHARE = 0.249  # approximate

# --- conditional tables (modelling choices) -------------------------------------------------

# P(detailed type | household type): own children 20.2/48.4 of husband-wife families,
# 2.4/5.0 of male and 7.2/13.1 of female family householders; cohabiting couples 6.6% overall.
DETAIL_GIVEN_TYPE: dict[str, dict[str, float]] = {
    "married": {"married_children": 0.417, "married_no_children": 0.583},
    "family_male": {"cohabiting_children": 0.20, "cohabiting_no_children": 0.10,
                    "male_children": 0.28, "male_relatives": 0.42},
    "family_female": {"cohabiting_children": 0.11, "cohabiting_no_children": 0.04,
                      "female_children": 0.44, "female_relatives": 0.41},
    "nonfamily_male_alone": {"male_alone": 1.0},
    "nonfamily_male_not_alone": {"cohabiting_no_children": 0.45, "male_nonrelatives": 0.55},
    "nonfamily_female_alone": {"female_alone": 1.0},
    "nonfamily_female_not_alone": {"cohabiting_no_children": 0.45,
                                   "female_nonrelatives": 0.55},
}
# P(size | detailed type), sizes 1..6, 7+
_SIZE_CHILDREN = (0, 0.40, 0.30, 0.17, 0.08, 0.03, 0.02)
_SIZE_RELATIVES = (0, 0.60, 0.23, 0.10, 0.04, 0.015, 0.015)
_SIZE_NONRELATIVES = (0, 0.75, 0.16, 0.06, 0.02, 0.006, 0.004)
SIZE_GIVEN_DETAIL: dict[str, tuple[float, ...]] = {
    "married_children": (0, 0, 0.25, 0.39, 0.20, 0.09, 0.07),
    "married_no_children": (0, 0.72, 0.17, 0.07, 0.025, 0.01, 0.005),
    "cohabiting_children": (0, 0, 0.38, 0.32, 0.17, 0.08, 0.05),
    "cohabiting_no_children": (0, 0.85, 0.10, 0.04, 0.01, 0, 0),
    "male_children": _SIZE_CHILDREN, "female_children": _SIZE_CHILDREN,
    "male_relatives": _SIZE_RELATIVES, "female_relatives": _SIZE_RELATIVES,
    "male_nonrelatives": _SIZE_NONRELATIVES, "female_nonrelatives": _SIZE_NONRELATIVES,
    "male_alone": (1, 0, 0, 0, 0, 0, 0), "female_alone": (1, 0, 0, 0, 0, 0, 0),
}
# household type factors by tenure (owner, renter): renters are more often alone/nonfamily
TYPE_FACTOR_BY_OWNER = {
    True: {"married": 1.3, "family_male": 0.85, "family_female": 0.75,
           "nonfamily_male_alone": 0.85, "nonfamily_male_not_alone": 0.6,
           "nonfamily_female_alone": 0.85, "nonfamily_female_not_alone": 0.6},
    False: {"married": 0.45, "family_male": 1.3, "family_female": 1.45,
            "nonfamily_male_alone": 1.3, "nonfamily_male_not_alone": 1.8,
            "nonfamily_female_alone": 1.3, "nonfamily_female_not_alone": 1.8},
}
# householder age factors (15-24 ... 85+) by tenure and by detailed-type group
AGE_FACTOR_BY_TENURE = {
    "owned_mortgage": (0.3, 0.8, 1.1, 1.2, 1.1, 1.0, 0.7, 0.4, 0.3),
    "owned_free": (0.2, 0.3, 0.4, 0.6, 1.0, 1.3, 2.0, 2.5, 2.5),
    "rented": (3.0, 1.8, 1.1, 0.8, 0.6, 0.6, 0.5, 0.5, 0.6),
    "no_cash_rent": (2.5, 1.5, 1.0, 0.9, 0.8, 0.8, 0.8, 0.8, 0.9),
}
_AGE_CHILDREN = (0.8, 1.6, 2.0, 1.3, 0.4, 0.2, 0.05, 0.02, 0.01)
_AGE_YOUNG = (3.0, 2.0, 1.0, 0.8, 0.6, 0.5, 0.3, 0.2, 0.1)
_AGE_ALONE = (1.0, 0.9, 0.6, 0.8, 1.0, 1.1, 1.3, 1.7, 2.3)
_AGE_RELATIVES = (1.0, 0.8, 0.8, 1.0, 1.1, 1.1, 1.1, 1.1, 1.2)
AGE_FACTOR_BY_DETAIL: dict[str, tuple[float, ...]] = {
    "married_children": _AGE_CHILDREN, "cohabiting_children": _AGE_CHILDREN,
    "male_children": _AGE_CHILDREN, "female_children": _AGE_CHILDREN,
    "married_no_children": (0.3, 0.7, 0.5, 0.9, 1.4, 1.6, 1.7, 1.4, 0.8),
    "cohabiting_no_children": _AGE_YOUNG, "male_nonrelatives": _AGE_YOUNG,
    "female_nonrelatives": _AGE_YOUNG,
    "male_relatives": _AGE_RELATIVES, "female_relatives": _AGE_RELATIVES,
    "male_alone": _AGE_ALONE, "female_alone": _AGE_ALONE,
}
# P(someone under 18 besides own children | detailed type, room for them): grandchildren,
# a partner's children, other relatives. Own children force yes; living alone forces no.
UNDER18_GIVEN_DETAIL = {"married_no_children": 0.3, "cohabiting_no_children": 0.5,
                        "male_relatives": 0.2, "female_relatives": 0.2,
                        "male_nonrelatives": 0.08, "female_nonrelatives": 0.08}
# P(someone 65+ | householder under 65, not alone), by householder age group
OVER65_GIVEN_AGE = (0.02, 0.02, 0.03, 0.04, 0.10, 0.15)
# P(Hispanic householder | race of householder)
HISPANIC_GIVEN_RACE = (0.095, 0.02, 0.15, 0.01, 0.10, 0.95, 0.30)

# --- concentrations: larger = closer to the level above -------------------------------------
CONC = {
    "vacancy": (60.0, 20.0, 8.0),  # state, tract, block
    "vacant_status": (60.0, 20.0),  # state, tract
    "owner": (80.0, 6.0, 3.0),  # state, tract, block: blocks are mostly owners or renters
    "mortgage": (80.0, 20.0), "no_cash_rent": (80.0, 20.0),
    "hh_type": (300.0, 60.0), "age": (300.0, 60.0),
    "race": (15.0, 3.0, 8.0),  # state, tract, block: segregation is mostly between tracts
    "hispanic": (30.0, 10.0),
}


@dataclass(frozen=True)
class GeneratedBlocks:
    """Synthetic attack targets and the tracts around them.

    ``targets``: every housing unit of the target blocks. ``population``: every housing unit
    of the tracts the targets lie in (targets included), for tract and state baselines.
    Columns of both: block, tract, state and ``households.COLUMN_NAMES``, all strings.
    """

    targets: pd.DataFrame
    population: pd.DataFrame
    seed: int

    @property
    def target_blocks(self) -> list[str]:
        return sorted(self.targets["block"].unique())


# --- helpers --------------------------------------------------------------------------------

def _vector(shares: Mapping[str, float] | Sequence[float], values: Sequence[str]) -> np.ndarray:
    if isinstance(shares, Mapping):
        v = np.array([float(shares.get(x, 0.0)) for x in values])
    else:
        v = np.asarray(shares, dtype=float)
    return v / v.sum()


def _dirichlet(rng: np.random.Generator, mean: np.ndarray, conc: float) -> np.ndarray:
    """Dirichlet draws with the given mean rows (gamma construction, safe for tiny shares)."""
    mean = np.atleast_2d(mean)
    alpha = np.where(mean > 0, np.maximum(mean * conc, 1e-3), 0.0)
    g = rng.gamma(np.where(alpha > 0, alpha, 1.0)) * (alpha > 0)
    total = g.sum(axis=1, keepdims=True)
    out = np.where(total > 0, g / np.where(total > 0, total, 1.0), mean)
    return np.asarray(out)


def _beta(rng: np.random.Generator, mean: np.ndarray | float, conc: float) -> np.ndarray:
    m = np.clip(np.asarray(mean, dtype=float), 1e-4, 1 - 1e-4)
    return np.asarray(rng.beta(m * conc, (1 - m) * conc))


def _choice_rows(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One categorical draw per row of ``probs`` (rows need not be normalised)."""
    cum = np.cumsum(probs, axis=1)
    u = rng.random(len(probs)) * cum[:, -1]
    return np.minimum((cum < u[:, None]).sum(axis=1), probs.shape[1] - 1)


def _calibrate(target: np.ndarray, factors: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Base shares b with sum_g weights[g] * normalise(b * factors[g]) = target."""
    b = target.copy()
    for _ in range(500):
        cond = b * factors
        cond /= cond.sum(axis=1, keepdims=True)
        marg = weights @ cond
        if np.abs(marg - target).max() < 1e-10:
            break
        b = b * np.where(marg > 0, target / np.where(marg > 0, marg, 1.0), 1.0)
        b /= b.sum()
    return np.asarray(b)


def _lognormal_units(rng: np.random.Generator, n: int, lo: int, hi: int) -> np.ndarray:
    units = np.rint(rng.lognormal(np.log(BLOCK_UNITS_MEDIAN), BLOCK_UNITS_SIGMA, n))
    return np.clip(units, lo, hi).astype(np.int64)


def _truncated_units(rng: np.random.Generator, n: int, lo: int, hi: int) -> np.ndarray:
    """Block sizes from the lognormal, conditioned on lo <= size <= hi (by rejection)."""
    out = np.zeros(n, dtype=np.int64)
    todo = np.arange(n)
    while len(todo):
        units = np.rint(rng.lognormal(np.log(BLOCK_UNITS_MEDIAN), BLOCK_UNITS_SIGMA,
                                      len(todo))).astype(np.int64)
        ok = (units >= lo) & (units <= hi)
        out[todo[ok]] = units[ok]
        todo = todo[~ok]
    return out


@dataclass(frozen=True)
class _Model:
    """The national model: shares and conditional tables as arrays over code positions."""

    vacant_status: np.ndarray  # (7,)
    type_by_owner: np.ndarray  # (2, 7) base shares per (renter, owner), before tract noise
    type_base: np.ndarray  # (7,) calibrated so the owner/renter mix gives the national shares
    type_factor: np.ndarray  # (2, 7)
    detail_given_type: np.ndarray  # (7, 12)
    size_given_detail: np.ndarray  # (12, 7)
    age_base: np.ndarray  # (9,)
    age_factor: np.ndarray  # (4, 12, 9) tenure x detail
    race: np.ndarray  # (7,)


@cache
def _model() -> _Model:
    col = {c.name: c for c in hh.COLUMNS}
    types, details = col["hh_type"].values, col["hh_type_detail"].values
    type_target = _vector(HH_TYPE_COUNTS, types)
    type_factor = np.array([[TYPE_FACTOR_BY_OWNER[owner][t] for t in types]
                            for owner in (False, True)])
    owner_w = np.array([1 - OWNER_SHARE, OWNER_SHARE])
    type_base = _calibrate(type_target, type_factor, owner_w)
    by_owner = type_base * type_factor
    by_owner /= by_owner.sum(axis=1, keepdims=True)
    detail_given_type = np.array([_vector(DETAIL_GIVEN_TYPE[t], details) for t in types])
    size_given_detail = np.array([_vector(SIZE_GIVEN_DETAIL[d], hh.SIZES) for d in details])
    tenures = col["tenure"].values
    tenure_w = np.array([OWNED_MORTGAGE, OWNED_FREE,
                         RENTER_OCCUPIED * (1 - NO_CASH_RENT_SHARE_OF_RENTERS),
                         RENTER_OCCUPIED * NO_CASH_RENT_SHARE_OF_RENTERS]) / OCCUPIED_UNITS
    owner_of = np.array([t.startswith("owned") for t in tenures])
    detail_by_tenure = by_owner[owner_of.astype(int)] @ detail_given_type  # (4, 12)
    age_factor = np.array([[np.multiply(AGE_FACTOR_BY_TENURE[t], AGE_FACTOR_BY_DETAIL[d])
                            for d in details] for t in tenures])
    weights = (tenure_w[:, None] * detail_by_tenure).reshape(-1)
    age_target = _vector(AGE_SHARES, hh.AGES)
    age_base = _calibrate(age_target, age_factor.reshape(-1, len(hh.AGES)), weights)
    return _Model(_vector(VACANT_STATUS_COUNTS, hh.VACANT_STATUSES), by_owner, type_base,
                  type_factor, detail_given_type, size_given_detail, age_base, age_factor,
                  _vector(RACE_SHARES, hh.RACES))


# --- generation -----------------------------------------------------------------------------

def generate_blocks(n_blocks: int, seed: int) -> GeneratedBlocks:
    """``n_blocks`` synthetic target blocks (2..60 units) and every unit of their tracts.

    Same seed, same output. Every unit is coherent (``households.broken_rule`` is None).
    """
    if isinstance(n_blocks, bool) or not isinstance(n_blocks, int | np.integer) \
            or not 1 <= n_blocks <= MAX_TARGETS:
        raise StatreconError(f"number of blocks must be between 1 and {MAX_TARGETS:,}, "
                             f"got {n_blocks!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise StatreconError(f"seed must be a whole number >= 0, got {seed!r}")
    rng = np.random.default_rng(int(seed))
    model = _model()
    n_tracts = int(n_blocks)
    n_states = min(len(STATES), n_tracts)
    tract_state = np.sort(np.arange(n_tracts) % n_states)
    states = _state_shares(rng, model, n_states)  # drawn first: the draws are seeded
    tracts = _tract_shares(rng, states, tract_state)
    tract_ids = _tract_ids(rng, tract_state)

    # blocks
    c = CONC
    n_per_tract = rng.integers(BLOCKS_PER_TRACT[0], BLOCKS_PER_TRACT[1] + 1, size=n_tracts)
    block_tract = np.repeat(np.arange(n_tracts), n_per_tract)
    first_block = np.concatenate([[0], np.cumsum(n_per_tract)[:-1]])
    target_block = first_block + rng.integers(0, n_per_tract)
    units = _lognormal_units(rng, len(block_tract), 1, MAX_BLOCK_UNITS)
    units[target_block] = _truncated_units(rng, n_tracts, MIN_TARGET_UNITS, MAX_TARGET_UNITS)
    t = block_tract
    bl_vac = _beta(rng, tracts.vacancy[t], c["vacancy"][2])
    bl_owner = _beta(rng, tracts.owner[t], c["owner"][2])
    bl_race = _dirichlet(rng, tracts.race[t], c["race"][2])
    block_ids = np.array([f"{tract_ids[tr]}{_block_number(i - first_block[tr])}"
                          for i, tr in enumerate(block_tract)])

    # units
    ub = np.repeat(np.arange(len(block_tract)), units)  # block of each unit
    ut = block_tract[ub]  # tract of each unit
    codes = _draw_units(rng, model, ub, ut, _UnitShares(bl_vac, bl_owner, bl_race, tracts))
    _check_coherent(codes)
    population = _frame(codes, ub, block_ids)
    is_target = np.zeros(len(block_tract), dtype=bool)
    is_target[target_block] = True
    targets = population[is_target[ub]].reset_index(drop=True)
    return GeneratedBlocks(targets, population, int(seed))


@dataclass(frozen=True)
class _Shares:
    """The shares of one level of geography, one row per state (or per tract)."""

    vacancy: np.ndarray  # vacancy rate
    status: np.ndarray  # shares of the vacancy statuses, (places, 7)
    owner: np.ndarray  # owner share of the occupied units
    mortgage: np.ndarray  # share of owners with a mortgage
    no_cash: np.ndarray  # share of renters occupying without payment of rent
    hh_type: np.ndarray  # household type base shares, (places, 7)
    age: np.ndarray  # householder age base shares, (places, 9)
    race: np.ndarray  # race of householder, (places, 7)
    hispanic: np.ndarray  # P(Hispanic householder | race), (places, 7)


@dataclass(frozen=True)
class _UnitShares:
    """What each unit is drawn from: its block's vacancy rate, owner share and race shares,
    and the rest from its tract (``tract``, one row per tract)."""

    block_vacancy: np.ndarray  # (blocks,)
    block_owner: np.ndarray  # (blocks,)
    block_race: np.ndarray  # (blocks, 7)
    tract: _Shares


def _state_shares(rng: np.random.Generator, model: _Model, n_states: int) -> _Shares:
    """State shares drawn around the national ones (in this order: the draws are seeded)."""
    c = CONC
    st_vac = _beta(rng, np.full(n_states, VACANCY_RATE), c["vacancy"][0])
    st_status = _dirichlet(rng, np.tile(model.vacant_status, (n_states, 1)),
                           c["vacant_status"][0])
    st_owner = _beta(rng, np.full(n_states, OWNER_SHARE), c["owner"][0])
    st_mort = _beta(rng, np.full(n_states, MORTGAGE_SHARE_OF_OWNERS), c["mortgage"][0])
    st_nocash = _beta(rng, np.full(n_states, NO_CASH_RENT_SHARE_OF_RENTERS),
                      c["no_cash_rent"][0])
    st_type = _dirichlet(rng, np.tile(model.type_base, (n_states, 1)), c["hh_type"][0])
    st_age = _dirichlet(rng, np.tile(model.age_base, (n_states, 1)), c["age"][0])
    st_race = _dirichlet(rng, np.tile(model.race, (n_states, 1)), c["race"][0])
    hisp = np.array(HISPANIC_GIVEN_RACE)
    st_hisp = _beta(rng, np.tile(hisp, (n_states, 1)), c["hispanic"][0])
    return _Shares(st_vac, st_status, st_owner, st_mort, st_nocash, st_type, st_age, st_race,
                   st_hisp)


def _tract_shares(rng: np.random.Generator, states: _Shares, tract_state: np.ndarray
                  ) -> _Shares:
    """Tract shares drawn around their state's (in this order: the draws are seeded)."""
    c = CONC
    s = tract_state
    tr_vac = _beta(rng, states.vacancy[s], c["vacancy"][1])
    tr_status = _dirichlet(rng, states.status[s], c["vacant_status"][1])
    tr_owner = _beta(rng, states.owner[s], c["owner"][1])
    tr_mort = _beta(rng, states.mortgage[s], c["mortgage"][1])
    tr_nocash = _beta(rng, states.no_cash[s], c["no_cash_rent"][1])
    tr_type = _dirichlet(rng, states.hh_type[s], c["hh_type"][1])
    tr_age = _dirichlet(rng, states.age[s], c["age"][1])
    tr_race = _dirichlet(rng, states.race[s], c["race"][1])
    tr_hisp = _beta(rng, states.hispanic[s], c["hispanic"][1])
    return _Shares(tr_vac, tr_status, tr_owner, tr_mort, tr_nocash, tr_type, tr_age, tr_race,
                   tr_hisp)


def _tract_ids(rng: np.random.Generator, tract_state: np.ndarray) -> list[str]:
    """11-digit tract GEOIDs: state, county, then a 4-digit tract number and suffix 00."""
    out: list[str] = []
    for k, (state, county, _name) in enumerate(STATES):
        n = int((tract_state == k).sum())
        if n == 0:
            continue
        numbers = np.sort(rng.choice(np.arange(100, 9900), size=n, replace=False))
        out.extend(f"{state}{county}{int(num):04d}00" for num in numbers)
    return out


def _block_number(i: int) -> str:
    """Block numbers as the Bureau writes them: block group digit, then three digits."""
    group, seq = divmod(int(i), 100)
    return f"{group + 1}{seq:03d}"


def _draw_units(rng: np.random.Generator, model: _Model, ub: np.ndarray, ut: np.ndarray,
                shares: _UnitShares) -> np.ndarray:
    """Codes (n, 10) of every unit (``ub``/``ut``: its block and tract), drawn in the order
    vacancy, tenure, household type, detailed type, size, age, under18, over65, race,
    Hispanic origin."""
    tract = shares.tract
    n = len(ub)
    codes = np.full((n, hh.N_COLUMNS), hh.NA_CODE, dtype=np.uint8)
    col = hh.COL
    # vacancy status (0 = occupied)
    vacant = rng.random(n) < shares.block_vacancy[ub]
    status = _choice_rows(rng, tract.status[ut[vacant]]) + 1
    codes[:, col["vacancy"]] = 0
    codes[vacant, col["vacancy"]] = status
    occ = np.flatnonzero(~vacant)
    m = len(occ)
    ob, ot = ub[occ], ut[occ]
    # tenure: owner per block, then mortgage / no cash rent per tract
    owner = rng.random(m) < shares.block_owner[ob]
    split = rng.random(m)
    tenure = np.where(owner, np.where(split < tract.mortgage[ot], 0, 1),
                      np.where(split < tract.no_cash[ot], 3, 2))
    # household type given owner/renter: the tract's base times the tenure factor
    type_p = tract.hh_type[ot] * model.type_factor[owner.astype(int)]
    hh_type = _choice_rows(rng, type_p)
    detail = _choice_rows(rng, model.detail_given_type[hh_type])
    size = _choice_rows(rng, model.size_given_detail[detail])  # code 0 = 1 person
    age = _choice_rows(rng, tract.age[ot] * model.age_factor[tenure, detail])
    # under18 / over65, limited by the room the size leaves (households.min_size)
    details = np.array(hh.HH_DETAILS)
    own_children = np.isin(details[detail], sorted(hh.OWN_CHILDREN))
    alone = np.char.endswith(details[detail], "_alone")
    couple = np.isin(details[detail], sorted(hh.COUPLE))
    people = size + 1  # size code 6 = 7+, at least 7 people
    age65 = age >= hh.AGES.index("65-74")
    p_u18 = np.array([UNDER18_GIVEN_DETAIL.get(d, 0.0) for d in hh.HH_DETAILS])[detail]
    under18 = own_children | (~alone & (rng.random(m) < p_u18))
    under18 &= ~(couple & (people < 3))  # a couple has no room for a third person
    p_o65 = np.array([*OVER65_GIVEN_AGE, 1.0, 1.0, 1.0])[age]
    over65 = age65 | (~alone & (rng.random(m) < p_o65))
    # a householder under 65 with nobody 65+ as partner needs one more person for them
    need = np.where(alone, 1, np.where(couple, 2 + under18,
                                       1 + np.maximum(1, under18.astype(int)
                                                      + (over65 & ~age65))))
    over65 &= ~((need > people) & ~age65)
    race = _choice_rows(rng, shares.block_race[ob])
    hispanic = rng.random(m) < tract.hispanic[ot, race]
    rows = codes[occ]
    rows[:, col["tenure"]] = tenure
    rows[:, col["size"]] = size
    rows[:, col["hh_type"]] = hh_type
    rows[:, col["hh_type_detail"]] = detail
    rows[:, col["under18"]] = np.where(under18, 0, 1)  # YES_NO = ("yes", "no")
    rows[:, col["over65"]] = np.where(over65, 0, 1)
    rows[:, col["hispanic"]] = np.where(hispanic, 0, 1)
    rows[:, col["age"]] = age
    rows[:, col["race"]] = race
    codes[occ] = rows
    return codes


def _check_coherent(codes: np.ndarray) -> None:
    """Every generated unit passes ``households.broken_rule``; a failure is a bug."""
    bad = incoherent(codes)
    if bad.any():
        unit = hh.decode(codes[int(np.argmax(bad))])
        rule = hh.broken_rule(unit)
        raise RuntimeError(f"generated an incoherent unit {unit}: "
                           f"{rule.message if rule else '?'} (a bug in the generator)")


def _frame(codes: np.ndarray, unit_block: np.ndarray, block_ids: np.ndarray) -> pd.DataFrame:
    """Units as strings: block, tract, state and the ten columns (vacant units: NA)."""
    ids = block_ids.astype(object)
    tracts = np.array([tract_of(b) for b in ids], dtype=object)
    states = np.array([state_of(b) for b in ids], dtype=object)
    data: dict[str, np.ndarray] = {"block": ids[unit_block], "tract": tracts[unit_block],
                                   "state": states[unit_block]}
    for j, column in enumerate(hh.COLUMNS):
        lookup = np.array([*column.values] + [hh.NA] * (hh.NA_CODE + 1 - len(column.values)),
                          dtype=object)
        data[column.name] = lookup[codes[:, j]]
    return pd.DataFrame(data, columns=list(OUTPUT_COLUMNS))
