"""Targeted record swapping of a persons file (``census swap``): the census side of
``census/swapping.py``.

The geography is the block GEOID's: a person's state, county, tract and block are its first
2, 5, 11 and 15 digits, and a swap exchanges whole ``block_geoid`` values, so every level
moves together and the file's other columns never change. The persons file has no household
id: each person is a unit, unless ``household`` names a column that groups persons into
households (all in one block), which then move together.

Besides the file's columns, three variables are derived: ``voting_age`` (Y when the person is
18 or over), and per unit ``household_size`` (its persons) and ``adults`` (its persons of
voting age); a column of the file with one of these names is used instead. The default risk
variables are voting age, Hispanic origin and the six race flags (what the Bureau's 2010
swapping targeted: households unique in their block by race, ethnicity and voting age); the
default similarity profile is household size and adults (what the Bureau matched partners on),
which for persons means voting age, so every block keeps its population and its persons
aged 18 and over.

The swapped file holds true records, only moved: a working file, never a publication (its
name says so, ``<stem>.working<suffix>``), and so does the record of the swaps beside it.
What is stated with the release (``<stem>.swap.json``) holds the method's parameters only,
never the seed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from statrecon.census.geography import GEOID_LENGTH, STATE_LENGTH, TRACT_LENGTH
from statrecon.census.persons.cells import RACES
from statrecon.census.persons.microdata import BLOCK_COLUMN, load_persons
from statrecon.census.persons.swap_statement import METHOD
from statrecon.census.swapping import SwapPlan, SwapResult, check_plan, record_swap
from statrecon.db import open_connection
from statrecon.errors import StatreconError
from statrecon.outputs import atomic_outputs

# the geographic levels of a block GEOID, highest first, and their lengths
LEVELS = {"state": STATE_LENGTH, "county": 5, "tract": TRACT_LENGTH, "block": GEOID_LENGTH}
DERIVED = ("voting_age", "household_size", "adults")
VOTING_AGE = 18
DEFAULT_RISK = ("voting_age", "hispanic", *RACES)
DEFAULT_SIMILAR = (("household_size", "adults"),)
CHECKED = ("sex", "age", *RACES, "hispanic")  # columns read as load_persons normalises them
FORMATS = (".csv", ".parquet")


@dataclass(frozen=True)
class PersonsSwap:
    """``census swap``'s choices: the swap rate, the k-anonymity threshold, the levels risk is
    counted at and units are swapped across (highest first), the level every pair stays
    within (None: anywhere), the risk variables, the similarity profiles (fallbacks in
    order), the household column (None: each person a unit) and the seed."""

    rate: float
    k: int = 3
    levels: tuple[str, ...] = ("block",)
    within: str | None = "tract"
    risk: tuple[str, ...] = DEFAULT_RISK
    similar: tuple[tuple[str, ...], ...] = DEFAULT_SIMILAR
    household: str | None = None
    seed: int = 0

    @property
    def unit_name(self) -> str:
        return "persons" if self.household is None else "households"


def check_options(options: PersonsSwap) -> None:
    """The choices that need no file: rate, k, levels and the level pairs stay within."""
    check_plan(SwapPlan(hierarchy=options.levels, risk=(), rate=options.rate, k=options.k,
                        seed=options.seed), options.levels)
    order = list(LEVELS)
    for level in (*options.levels, *([options.within] if options.within else [])):
        if level not in LEVELS:
            raise StatreconError(f"unknown geographic level {level!r}: choose from "
                                 f"{', '.join(order)}")
    ranks = [order.index(level) for level in options.levels]
    if ranks != sorted(set(ranks)):
        raise StatreconError(f"levels {','.join(options.levels)}: name each level once, "
                             f"from the highest down ({', '.join(order)})")
    if options.within is not None and order.index(options.within) >= ranks[0]:
        raise StatreconError(f"swaps within each {options.within} cannot move a person out "
                             f"of its {options.levels[0]}: the levels swapped across must "
                             f"lie below {options.within}")
    if not options.similar:
        raise StatreconError("give at least one similarity profile")


@dataclass(frozen=True)
class PersonsFile:
    """A persons file as read: ``raw``, every column as written (CSV: text), and
    ``persons``, the same with the checked columns as ``census tabulate`` reads them (sex,
    age a whole number, the flags true or false); rows in file order, indexed by their data
    row (1 = the first person)."""

    raw: pd.DataFrame
    persons: pd.DataFrame


def read_persons(path: Path) -> PersonsFile:
    """The persons file, checked as ``census tabulate`` checks it (one line naming the file,
    the line and the value)."""
    con = open_connection()
    count = load_persons(path, con)
    checked = con.execute(f"SELECT {', '.join(CHECKED)} FROM persons ORDER BY line").df()
    raw_con = open_connection()
    source = ("read_parquet($p)" if path.suffix.lower() == ".parquet"
              else "read_csv($p, all_varchar = true, header = true)")
    raw = raw_con.execute(f"SELECT * FROM {source}", {"p": str(path)}).df()
    raw_con.close()
    if len(raw) != count or len(checked) != count:  # the same file read twice
        raise StatreconError(f"{path}: the file changed while it was read")
    raw.index = checked.index = pd.RangeIndex(1, count + 1, name="row")
    persons = raw.copy()
    for column in CHECKED:
        persons[column] = checked[column]
    return PersonsFile(raw, persons)


def swap_persons(persons: pd.DataFrame, options: PersonsSwap) -> SwapResult:
    """Swap ``persons`` (one row per person: block_geoid, age and the columns named, their
    values compared as they are) under ``options``. The result's frame holds the variables
    the swap read, its units what happened to each; :func:`swapped_file` puts the new blocks
    into the file's own columns."""
    check_options(options)
    frame = _working_frame(persons, options)
    geo = {level: f"@{level}" for level in LEVELS}
    plan = SwapPlan(hierarchy=tuple(geo[lv] for lv in options.levels), names=options.levels,
                    risk=options.risk, rate=options.rate, k=options.k,
                    similar=options.similar,
                    within=geo[options.within] if options.within else None,
                    unit=options.household, move=(BLOCK_COLUMN,), seed=options.seed)
    return record_swap(frame, plan)


def _working_frame(persons: pd.DataFrame, options: PersonsSwap) -> pd.DataFrame:
    """The variables the swap reads: the geography's levels (``@state`` ... ``@block``), the
    named columns and the derived ones."""
    columns = [str(c) for c in persons.columns]
    if BLOCK_COLUMN not in columns:
        raise StatreconError(f"the persons have no column {BLOCK_COLUMN}")
    named = [*options.risk, *(c for p in options.similar for c in p),
             *([options.household] if options.household else [])]
    reserved = sorted({c for c in named if c.startswith("@")})
    if reserved:
        raise StatreconError(f"column name(s) {', '.join(reserved)}: names starting with @ "
                             "are the swap's own geography")
    known = set(columns) | set(DERIVED)
    unknown = sorted({c for c in named if c not in known})
    if unknown:
        raise StatreconError(f"unknown column(s) {', '.join(unknown)}: the persons file has "
                             f"{', '.join(columns)}; derived: {', '.join(DERIVED)}")
    blocks = persons[BLOCK_COLUMN].astype(str)
    frame = pd.DataFrame({f"@{level}": blocks.str[:n] for level, n in LEVELS.items()},
                         index=persons.index)
    frame[BLOCK_COLUMN] = persons[BLOCK_COLUMN]
    for name in dict.fromkeys(named):
        if name in columns:
            frame[name] = persons[name].to_numpy()
    if options.household is not None:
        _one_block_per_household(frame, options.household)
        unit = frame[options.household]
    else:
        unit = pd.Series(range(len(frame)), index=frame.index)
    ages = pd.to_numeric(persons["age"].astype(str).str.strip(), errors="coerce")
    if ages.isna().any():
        row = persons.index[int(ages.isna().to_numpy().argmax())]
        raise StatreconError(f"row {row}: age must be a whole number")
    adult = pd.Series(ages.to_numpy() >= VOTING_AGE, index=frame.index)
    derived = {"voting_age": adult.map({True: "Y", False: "N"}),
               "household_size": unit.groupby(unit).transform("size"),
               "adults": adult.groupby(unit).transform("sum")}
    for name, values in derived.items():
        if name in named and name not in columns:
            frame[name] = values.to_numpy()
    return frame


def _one_block_per_household(frame: pd.DataFrame, household: str) -> None:
    ids = frame[household]
    if ids.isna().any():
        row = frame.index[int(ids.isna().to_numpy().argmax())]
        raise StatreconError(f"row {row}: no household id in column {household}")
    blocks = frame.groupby(household, sort=False)[BLOCK_COLUMN].nunique()
    if (blocks > 1).any():
        hid = blocks.index[int((blocks > 1).to_numpy().argmax())]
        found = sorted(set(frame.loc[ids == hid, BLOCK_COLUMN].astype(str)))
        raise StatreconError(f"household {hid}: its persons live in blocks "
                             f"{' and '.join(found[:2])}; a household lives in one block")


# ---------------------------------------------------------------------- what is written


def check_out(out: Path) -> None:
    """``--out`` names a working file: ``<stem>.working.csv`` or ``.parquet``."""
    if out.suffix.lower() not in FORMATS:
        raise StatreconError(f"--out {out}: write a .csv or .parquet file")
    if not out.stem.endswith(".working"):
        named = out.with_name(f"{out.stem}.working{out.suffix}").name
        raise StatreconError(f"--out {out}: the swapped persons are true records moved "
                             f"between blocks, a working file never to publish: name it "
                             f"{named}")


def output_paths(out: Path) -> tuple[Path, Path, Path]:
    """The swapped persons, the record of the swaps (both working files) and the statement
    that goes with the release."""
    base = out.stem.removesuffix(".working")
    return (out, out.with_name(f"{base}.swaps.working{out.suffix}"),
            out.with_name(f"{base}.swap.json"))


def swapped_file(persons: pd.DataFrame, result: SwapResult) -> pd.DataFrame:
    """The persons file's own columns, in its order, with the swapped blocks."""
    swapped = persons.copy()
    swapped[BLOCK_COLUMN] = result.frame[BLOCK_COLUMN].to_numpy()
    return swapped


def swap_record(result: SwapResult, options: PersonsSwap) -> pd.DataFrame:
    """One row per unit swapped or at risk: which unit, its persons, its block before and
    after, its partner, the level it was swapped across and why, where it was at risk and
    whether the swap took it out of that area."""
    units = result.units
    kept = units[units["swapped"] | units["risk_level"].notna()]
    name = "row" if options.household is None else "household"
    return pd.DataFrame({
        name: kept["unit"].to_numpy(), "persons": kept["records"].to_numpy(),
        "from_block": kept["area"].to_numpy(), "to_block": kept["to"].to_numpy(),
        "partner": kept["partner"].to_numpy(), "level": kept["level"].to_numpy(),
        "reason": kept["reason"].to_numpy(), "at_risk_in": kept["risk_level"].to_numpy(),
        "protected": kept["protected"].to_numpy()})


def preserved(options: PersonsSwap) -> list[str]:
    """What the swapped file keeps, in words: the method's promise."""
    said = []
    if options.within is not None:
        said.append(f"every {options.within} keeps all its counts (and so every larger area)")
    common = set(options.similar[0]).intersection(*map(set, options.similar[1:]))
    shared = [c for c in options.similar[0] if c in common]
    persons_kept = options.household is None or "household_size" in shared
    by = f" by {', '.join(shared)}" if shared else ""
    said.append(f"every block keeps its number of {options.unit_name}{by}"
                + (", and so its persons" if persons_kept and options.household else ""))
    return said


def statement(result: SwapResult, options: PersonsSwap) -> dict[str, Any]:
    """What goes with the release: the method and its parameters, never the seed."""
    return {"method": METHOD,
            "units": options.unit_name, "swap_rate": options.rate, "k_anonymity": options.k,
            "levels": list(options.levels), "within": options.within,
            "risk_variables": list(options.risk),
            "similarity_profiles": [list(p) for p in options.similar],
            "preserved": preserved(options)}


def summary(result: SwapResult, options: PersonsSwap, paths: Sequence[Path]) -> dict[str, Any]:
    """The command's account: counts only, never a row."""
    units = result.units
    return {"units": len(units), "unit": options.unit_name,
            "persons": int(units["records"].sum()), "rate": options.rate, "k": options.k,
            "seed": options.seed, "levels": list(options.levels), "within": options.within,
            "target_pairs": result.target_pairs, "pairs": result.pairs,
            "swapped_units": 2 * result.pairs,
            "swapped_persons": int(units.loc[units["swapped"], "records"].sum()),
            "pairs_by_level": result.pairs_by_level(), "at_risk": result.at_risk,
            "at_risk_protected": result.protected, "preserved": preserved(options),
            "out": str(paths[0]), "record": str(paths[1]), "statement": str(paths[2])}


def write_swap(persons: pd.DataFrame, result: SwapResult, options: PersonsSwap,
               out: Path) -> tuple[Path, Path, Path]:
    """The swapped persons, the record and the statement, all written or none."""
    paths = output_paths(out)
    text = json.dumps(statement(result, options), indent=2) + "\n"
    with atomic_outputs(*paths) as (tmp_out, tmp_record, tmp_statement):
        for frame, tmp in ((swapped_file(persons, result), tmp_out),
                           (swap_record(result, options), tmp_record)):
            if out.suffix.lower() == ".parquet":
                frame.to_parquet(tmp, index=False)
            else:
                frame.to_csv(tmp, index=False)
        tmp_statement.write_text(text, encoding="utf-8")
    return paths
