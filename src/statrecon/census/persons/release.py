"""The census release file: one long Parquet table plus the cell definitions in its metadata.

Rows: ``level`` (block/tract), ``geoid``, ``table``, ``cell``, ``value``. The schema metadata
key ``statrecon.census`` holds the definitions (every cell's conditions), so a release reads
back and reconstructs without the microdata or this package's cell file; a noisy release
states its noise (``noise``), a protected one its protection (``protection``: the method and
its public parameters, never its seed; a withheld cell's value is null).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterator
from contextlib import closing
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from statrecon import inputs
from statrecon.census.geography import GEOID_LENGTH, TRACT_LENGTH, tract_of
from statrecon.census.persons.cells import (
    LEVELS,
    MAX_AGE,
    RACES,
    SEXES,
    Sf1Cell,
    definitions_digest,
    definitions_json,
)
from statrecon.census.persons.identities import check_identities
from statrecon.census.persons.swap_statement import check_statement
from statrecon.db import hardened
from statrecon.discrete_gaussian import sampler_reach, scale_problem
from statrecon.errors import StatreconError
from statrecon.number_reader import NumberError, parse_number
from statrecon.outputs import write_atomically

if TYPE_CHECKING:
    import duckdb

METADATA_KEY = b"statrecon.census"
FORMAT = 1
COLUMNS = ("level", "geoid", "table", "cell", "value")
# What one geography can hold: no 2010 block had more than a few thousand persons, no tract
# more than about 40,000. A larger published count is an error (or an attack on our memory).
MAX_VALUE = {"block": 100_000, "tract": 1_000_000}
# The chance that a true exact tract population is refused, per noisy measurement of it
# (``_check_population_fits``).
INVARIANT_ALPHA = 1e-12


def write_release(table: pa.Table, cells: tuple[Sf1Cell, ...], tables: str, path: Path,
                  noise: dict[str, object] | None = None,
                  swap: dict[str, Any] | None = None,
                  protection: ReleaseProtection | None = None) -> None:
    """Write the long table with its definitions (atomically: temp file, then rename);
    ``noise``: what a noisy release states about its noise (``NoisePlan.as_json`` and the
    sampler); ``swap``: the statement of the swap its persons went through
    (``swap_statement``); ``protection``: the protection its values went through."""
    meta: dict[str, object] = {"format": FORMAT, "tables": tables,
                               "digest": definitions_digest(cells),
                               "cells": definitions_json(cells)}
    if noise is not None and protection is not None:
        raise ValueError("a release is noisy or protected, not both")
    if noise is not None:
        meta["noise"] = noise
    if swap is not None:
        meta["swap"] = check_statement(swap)
    if protection is not None:
        meta["protection"] = protection.as_json()
    table = table.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()})
    write_atomically(path, lambda tmp: pq.write_table(table, tmp))


MAX_CELLS = 20_000  # SF1's person tables have 4,071 cells (with P13 4,074)
MAX_ROWS = 40_000_000  # (geography, cell) rows of one release file
NAME = re.compile(r"[A-Za-z0-9_.\-]{1,40}")
FIELDS = {"table", "cell", "level", "title", "race", "two_or_more", "hispanic", "sex",
          "age_lo", "age_hi", "statistic"}


def _flag(value: object, what: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise ValueError(f"{what} must be true, false or null, got {str(value)[:40]!r}")


def _cell_from_json(d: object) -> Sf1Cell:
    """One cell definition from the file's metadata, every field checked (it is user text:
    names end up in messages and conditions in SQL)."""
    if not isinstance(d, dict) or not FIELDS - {"statistic"} <= set(d) <= FIELDS:
        raise ValueError("a cell definition needs exactly the fields " + ", ".join(sorted(FIELDS)))
    for key in ("table", "cell"):
        if not isinstance(d[key], str) or not NAME.fullmatch(d[key]):
            raise ValueError(f"{key} {str(d[key])[:40]!r} is not a plain name")
    cell = d["cell"]
    if d["level"] not in LEVELS:
        raise ValueError(f"cell {cell}: level must be block or tract")
    if not isinstance(d["title"], str) or len(d["title"]) > 300:
        raise ValueError(f"cell {cell}: title must be text (at most 300 characters)")
    race = d["race"]
    if not isinstance(race, list) or len(race) != len(RACES):
        raise ValueError(f"cell {cell}: race must list {len(RACES)} flags")
    lo, hi = d["age_lo"], d["age_hi"]
    if not (type(lo) is int and type(hi) is int and 0 <= lo <= hi <= MAX_AGE):
        raise ValueError(f"cell {cell}: ages must be whole numbers 0 <= age_lo <= age_hi <= "
                         f"{MAX_AGE}")
    if d["sex"] not in (None, *SEXES):
        raise ValueError(f"cell {cell}: sex must be male, female or null")
    if d.get("statistic", "count") not in ("count", "median"):
        raise ValueError(f"cell {cell}: statistic must be count or median")
    return Sf1Cell(d["table"], cell, d["level"], d["title"],
                   tuple(_flag(r, f"cell {cell}: race flag") for r in race),
                   _flag(d["two_or_more"], f"cell {cell}: two_or_more"),
                   _flag(d["hispanic"], f"cell {cell}: hispanic"), d["sex"], lo, hi,
                   d.get("statistic", "count"))


def cells_from_json(cells: object) -> tuple[Sf1Cell, ...]:
    """Cell definitions stored as JSON by this package (a release's or a run's metadata),
    every field checked; StatreconError when they do not read."""
    try:
        return _cells_from_meta({"cells": cells})
    except (ValueError, KeyError, TypeError) as e:
        raise StatreconError(f"unreadable cell definitions ({e})") from None


@functools.lru_cache(maxsize=4)
def _cells_of(raw: bytes) -> tuple[Sf1Cell, ...]:
    """The cell definitions of a release's metadata, read once per process for each text:
    every release of the same tables holds the same 4,071 definitions, whose checks took a
    quarter of reading a 3-tract release (the cells are frozen, so callers share them)."""
    return _cells_from_meta(json.loads(raw))


def _cells_from_meta(meta: object) -> tuple[Sf1Cell, ...]:
    if not isinstance(meta, dict) or not isinstance(meta.get("cells"), list):
        raise ValueError("no list of cells")
    if not 0 < len(meta["cells"]) <= MAX_CELLS:
        raise ValueError(f"{len(meta['cells']):,} cells (expected 1 to {MAX_CELLS:,})")
    cells = tuple(_cell_from_json(c) for c in meta["cells"])
    seen: set[str] = set()
    for c in cells:
        if c.cell in seen:
            raise ValueError(f"cell {c.cell} is defined twice")
        seen.add(c.cell)
    return cells


@dataclass(frozen=True)
class TractTables:
    """What was published for one tract: its blocks' cells and its own cells."""

    tract: str
    blocks: tuple[str, ...]
    block_values: np.ndarray  # blocks x block cells
    tract_values: np.ndarray  # tract cells

    @property
    def persons(self) -> int:
        """Population, if the first block cell is the total (as in every SF1 release)."""
        return int(self.block_values[:, 0].sum()) if self.block_values.size else 0


@dataclass(frozen=True)
class ReleaseNoise:
    """What a noisy release states about its noise: discrete Gaussian of scale
    ``sigma[table]`` on every cell of the table, under a zCDP budget ``rho``."""

    rho: float
    sigma: dict[str, float]
    sampler: str
    # invariants: each tract's population published exactly beside the noisy cells (outside
    # the DP guarantee, as the 2020 production kept state totals); None when not published
    tract_population: dict[str, int] | None = None

    @property
    def noisy(self) -> bool:
        """Any noise at all (rho = inf publishes the exact tables)."""
        return any(s > 0 for s in self.sigma.values())


PROTECTIONS = ("ckm-ons", "ckm-abs", "round", "suppress")  # what a release file can state
_WHOLE = {"d", "js", "threshold", "base"}
_NAMES = {"method", "rounding", "knowledge"}
MAX_PARAMETER = 1_000_000  # no published parameter (D, js, a threshold, a base) is larger


@dataclass(frozen=True)
class ReleaseProtection:
    """What a protected release states about its protection (``census tabulate
    --protect``): the method and its public parameters, never its seed, and what the
    attacker is assumed to know; the true counts each published value allows follow from
    them (``runs/census_protect.release_bounds``, where they are checked as options)."""

    method: str
    d: int | None = None
    v: Fraction | None = None
    js: int | None = None
    threshold: int | None = None
    base: int | None = None
    rounding: str | None = None
    knowledge: str | None = None
    statement: str = ""

    @property
    def withholds(self) -> bool:
        """Whether a cell may be withheld (suppression; CKM below a threshold)."""
        return self.method == "suppress" or (self.method.startswith("ckm")
                                             and (self.threshold or 0) > 0)

    @property
    def slack(self) -> int:
        """How far above a true count its published value may lie."""
        return (self.d or 0) if self.method.startswith("ckm") else (self.base or 0)

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {k: v for k, v in asdict(self).items() if v is not None}
        if self.v is not None:
            out["v"] = str(self.v)
        return out


def _protection_from_meta(raw: object) -> ReleaseProtection | None:
    """The protection a release states, every field checked for its type and size (it is
    user text); what the values mean together is checked where the bounds are made."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError("protection: expected a mapping of the method and its parameters")
    unknown = sorted(str(k)[:40] for k in raw if k not in ReleaseProtection.__dataclass_fields__)
    if unknown:
        raise ValueError(f"protection: unknown field {unknown[0]!r}")
    if raw.get("method") not in PROTECTIONS:
        raise ValueError(f"protection: method must be one of {', '.join(PROTECTIONS)}, got "
                         f"{str(raw.get('method'))[:40]!r}")
    return ReleaseProtection(**{k: _protection_field(k, v) for k, v in raw.items()
                                if v is not None})


def _protection_field(key: str, value: object) -> Any:
    if key in _WHOLE:
        if isinstance(value, bool) or not isinstance(value, int) or not \
                0 <= value <= MAX_PARAMETER:
            raise ValueError(f"protection: {key} must be a whole number from 0 to "
                             f"{MAX_PARAMETER:,}, got {str(value)[:40]!r}")
    elif key in _NAMES:
        if not isinstance(value, str) or not NAME.fullmatch(value):
            raise ValueError(f"protection: {key} must be a plain name, got "
                             f"{str(value)[:40]!r}")
    elif key == "v":
        return _variance(value)
    elif not isinstance(value, str) or len(value) > 2000:
        raise ValueError("protection: statement must be text (at most 2,000 characters)")
    return value


def _variance(value: object) -> Fraction:
    """V as the exact fraction its text states ('27/25', '1.08')."""
    if not isinstance(value, str):
        raise ValueError(f"protection: v must be written as text ('27/25' or '1.08'), got "
                         f"{str(value)[:40]!r}")
    try:
        v = parse_number(value, fraction=True, exponent=False)
    except NumberError as e:
        raise ValueError(f"protection: v: {e}") from None
    if not 0 < v <= MAX_PARAMETER:
        raise ValueError(f"protection: v must be above 0, got {value[:40]!r}")
    return v


@dataclass(frozen=True)
class CensusRelease:
    """A validated release: cell definitions and the value matrices per level."""

    path: Path
    cells: tuple[Sf1Cell, ...]
    tables: str
    digest: str  # of the definitions and the values: identifies this release
    blocks: tuple[str, ...]  # sorted block geoids
    tracts: tuple[str, ...]  # sorted tract geoids
    block_values: np.ndarray  # blocks x block cells, in definition order
    tract_values: np.ndarray  # tracts x tract cells
    noise: ReleaseNoise | None = None  # None: exact tables
    swap: dict[str, Any] | None = None  # the swap statement its persons came with, if any
    # the protection its values went through (withheld cells: -1), None: exact or noisy
    protection: ReleaseProtection | None = None

    @property
    def block_cells(self) -> list[Sf1Cell]:
        return [c for c in self.cells if c.level == "block"]

    @property
    def tract_cells(self) -> list[Sf1Cell]:
        return [c for c in self.cells if c.level == "tract"]

    def tract_tables(self) -> Iterator[TractTables]:
        """One TractTables per tract, in tract order."""
        block_tract = np.array([tract_of(b) for b in self.blocks])
        starts = np.searchsorted(block_tract, np.array(self.tracts))
        ends = np.searchsorted(block_tract, np.array(self.tracts), side="right")
        for t, tract in enumerate(self.tracts):
            lo, hi = int(starts[t]), int(ends[t])
            yield TractTables(tract, self.blocks[lo:hi], self.block_values[lo:hi],
                              self.tract_values[t])

    def block_population(self) -> dict[str, int]:
        """P1 per block (the total cell, whose conditions are all open)."""
        total = _total_cell(self.block_cells)
        return dict(zip(self.blocks, self.block_values[:, total].tolist(), strict=True))


def _total_cell(cells: list[Sf1Cell]) -> int:
    for i, c in enumerate(cells):
        if (all(r is None for r in c.race) and c.two_or_more is None and c.hispanic is None
                and c.sex is None and c.age_lo == 0 and c.age_hi >= 110):
            return i
    raise StatreconError("the release has no block-level total cell (P1); tabulate with "
                         "--tables sf1-persons or include P1")


def read_release(path: Path) -> CensusRelease:
    """Read and validate a release written by ``statrecon census tabulate`` (or by hand)."""
    inputs.admit(path, "census release", limit=None)  # a regular file, recorded as input
    try:
        schema = pq.read_schema(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise StatreconError(f"{path}: not a Parquet file ({e})") from None
    raw = inputs.metadata_bytes(schema.metadata, METADATA_KEY, path, "census release")
    if raw is None:
        raise StatreconError(f"{path}: no census cell definitions in the file; make releases "
                             f"with `statrecon census tabulate`")
    try:
        meta = json.loads(raw)
        cells = _cells_of(raw)
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise StatreconError(f"{path}: unreadable cell definitions ({e})") from None
    try:
        noise = _noise_from_meta(meta.get("noise"), cells)
        swap = None if meta.get("swap") is None else check_statement(meta["swap"])
        protection = _protection_from_meta(meta.get("protection"))
        if protection is not None and noise is not None:
            raise ValueError("the release states both noise and a protection; a release "
                             "is noisy measurements or protected tables, not both")
    except (ValueError, TypeError) as e:
        raise StatreconError(f"{path}: {e}") from None
    missing = [c for c in COLUMNS if c not in schema.names]
    if missing:
        raise StatreconError(f"{path}: missing column(s) {', '.join(missing)}")
    noisy = noise is not None and noise.noisy
    reach = None if noise is None or not noisy else {
        t: sampler_reach(v) for t, v in noise.sigma.items()}
    block_values, tract_values, blocks, tracts = _values(path, cells, reach, protection)
    try:  # P1 gives each block's population
        _total_cell([c for c in cells if c.level == "block"])
    except StatreconError as e:
        raise StatreconError(f"{path}: {e}") from None
    h = definitions_digest(cells) + ":" + _hash_values(block_values, tract_values, blocks)
    if noise is not None and noise.tract_population is not None:
        _check_invariants(path, noise.tract_population, tracts)
        h += ":" + _hash_invariants(noise.tract_population)
    if protection is not None:
        h += ":" + _hash_text(json.dumps(protection.as_json(), sort_keys=True))
    release = CensusRelease(path, cells, str(meta.get("tables", "")), h, blocks, tracts,
                            block_values, tract_values, noise, swap, protection)
    if not noisy and protection is None:  # noisy or protected counts need not add up
        check_identities(release)
    if noise is not None and noise.tract_population is not None:
        _check_population_fits(release, noise, noise.tract_population)
    return release


def _noise_from_meta(raw: object, cells: tuple[Sf1Cell, ...]) -> ReleaseNoise | None:
    """The noise a release states (``census tabulate --dp-rho``), every field checked."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("mechanism") != "discrete_gaussian":
        raise ValueError("noise: only discrete_gaussian noise is understood")
    stated = raw.get("rho")
    rho = math.inf if stated == "inf" else _number(stated)
    if rho is None or not rho > 0:
        raise ValueError(f"noise: rho must be a number > 0 or 'inf', got {str(stated)[:40]!r}")
    sampler = raw.get("sampler")
    return ReleaseNoise(float(rho), _sigmas(raw.get("tables"), cells),
                        sampler if isinstance(sampler, str) else "unknown",
                        _invariants(raw.get("invariants")))


def _number(value: object) -> float | None:
    """A JSON number as a float (a huge integer becomes inf), or None when it is none."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _sigmas(tables: object, cells: tuple[Sf1Cell, ...]) -> dict[str, float]:
    """Every table's sigma, each one the samplers draw and the models weigh
    (``discrete_gaussian.scale_problem``), and all of them noisy or none (a table at sigma
    0 beside noisy ones is neither exact tables nor noisy measurements)."""
    if not isinstance(tables, dict):
        raise ValueError("noise: no noise scale per table (a noisy release must state the "
                         "sigma of every table)")
    names = {c.table for c in cells}
    sigma: dict[str, float] = {}
    for name, entry in tables.items():
        if name not in names:
            raise ValueError(f"noise: table {str(name)[:40]!r} is not a table of the release")
        value = _number(entry.get("sigma") if isinstance(entry, dict) else None)
        if value is None or not math.isfinite(value) or value < 0:
            raise ValueError(f"noise: table {name}: sigma must be a finite number >= 0, got "
                             f"{str(entry)[:60]!r}")
        problem = scale_problem(value)
        if problem is not None:
            raise ValueError(f"noise: table {name}: sigma {value:.3g}, {problem}")
        sigma[name] = value
    left = sorted(names - set(sigma))
    if left:
        raise ValueError(f"noise: no sigma for table {left[0]} (a noisy release must state "
                         "the noise scale of every table)")
    exact = sorted(n for n, v in sigma.items() if v == 0)
    if exact and len(exact) < len(sigma):
        raise ValueError(f"noise: table {exact[0]} states sigma 0 beside noisy tables; a "
                         "noisy release has noise on every table (rho = inf: on none)")
    return sigma


def _invariants(raw: object) -> dict[str, int] | None:
    """``{"tract_population": {tract: persons}}``, every entry checked (user text)."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) != {"tract_population"} or not isinstance(
            raw["tract_population"], dict):
        raise ValueError("noise: invariants must be {\"tract_population\": {tract: persons}}")
    out: dict[str, int] = {}
    for tract, n in raw["tract_population"].items():
        if not (isinstance(tract, str) and len(tract) == TRACT_LENGTH and tract.isdigit()):
            raise ValueError(f"noise: invariant tract {str(tract)[:40]!r} is not an "
                             f"{TRACT_LENGTH}-digit tract GEOID")
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_VALUE["tract"]:
            raise ValueError(f"noise: invariant population of tract {tract} must be a whole "
                             f"number from 0 to {MAX_VALUE['tract']:,}, got {str(n)[:40]!r}")
        out[tract] = n
    return out


def _hash_invariants(population: dict[str, int]) -> str:
    return _hash_text(json.dumps(sorted(population.items())))


def _hash_text(text: str) -> str:
    import hashlib  # lazy: stdlib, only for releases with invariants or a protection

    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _check_invariants(path: Path, population: dict[str, int], tracts: tuple[str, ...]
                      ) -> None:
    """An invariant per tract of the release, and none for a tract it lacks."""
    extra = sorted(set(population) - set(tracts))
    if extra:
        raise StatreconError(f"{path}: noise: invariant population for tract {extra[0]}, "
                             "which the release does not publish")
    missing = sorted(set(tracts) - set(population))
    if missing:
        raise StatreconError(f"{path}: noise: no invariant population for tract {missing[0]} "
                             "(an invariant covers every tract)")


def _check_population_fits(release: CensusRelease, noise: ReleaseNoise,
                           population: dict[str, int]) -> None:
    """Each tract's exact population lies within the noise of every measurement of it the
    release publishes: each total cell of the tract, and each block table's total cell
    summed over the tract's blocks. N_Z(0, sigma^2) is sigma-sub-Gaussian (Canonne, Kamath
    and Steinke 2020), so a sum of k draws strays beyond sigma sqrt(2 k ln(2 / alpha)) with
    probability at most alpha: a true invariant is refused with probability at most
    INVARIANT_ALPHA per measurement, a made-up one is not believed (exact tables: it must
    be their sum)."""
    slack = math.sqrt(2 * math.log(2 / INVARIANT_ALPHA))
    block = [(k, c.table) for k, c in enumerate(release.block_cells) if c.is_total]
    tract = [(k, c.table) for k, c in enumerate(release.tract_cells) if c.is_total]
    for tables in release.tract_tables():
        n = population[tables.tract]
        nb = len(tables.blocks)
        measured = [(int(tables.block_values[:, k].sum()), table, nb) for k, table in block]
        measured += [(int(tables.tract_values[k]), table, 1) for k, table in tract]
        for value, table, draws in measured:
            sigma = noise.sigma[table]
            room = math.ceil(sigma * math.sqrt(draws) * slack)
            if abs(n - value) > room:
                where = f"summed over its {nb:,} blocks " if draws > 1 else ""
                raise StatreconError(
                    f"{release.path}: noise: the invariant population of tract {tables.tract} "
                    f"is {n:,}, but the total cell of table {table} {where}measures {value:,}: "
                    f"more than {room:,} apart, which noise of sigma {sigma:g} strays with "
                    f"probability below {INVARIANT_ALPHA:g}; the invariant does not belong to "
                    "these tables")


def _hash_values(block_values: np.ndarray, tract_values: np.ndarray,
                 blocks: tuple[str, ...]) -> str:
    import hashlib

    h = hashlib.sha256()
    h.update("\n".join(blocks).encode())
    h.update(np.ascontiguousarray(block_values, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(tract_values, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


def _read_columns(path: Path) -> pa.Table:
    """The five columns, strings dictionary-encoded (a few bytes per row, not a string each),
    through the input gate's budget (a release of every SF1 cell of 40 million block and
    tract rows at most: the 28 bundled tracts hold 35 million)."""
    return inputs.read_columnar(path, "census release", columns=list(COLUMNS),
                                dictionary=["level", "geoid", "table", "cell"],
                                max_cells=len(COLUMNS) * MAX_ROWS)


_NUMBER = "TRY_CAST(value AS DOUBLE)"


def _first(con: duckdb.DuckDBPyConnection, condition: str,
           params: dict[str, object] | None = None) -> tuple[object, ...] | None:
    """The first release row matching ``condition``, or None."""
    rows = con.execute(f"SELECT level, geoid, \"table\", cell, value FROM release "
                       f"WHERE {condition} LIMIT 1", params or {}).fetchall()
    return rows[0] if rows else None


def _check_entries(path: Path, con: duckdb.DuckDBPyConnection,
                   reach: dict[str, int] | None,
                   protection: ReleaseProtection | None = None) -> None:
    """Every value is a whole count within what its level holds (a protected one within
    what its protection adds, a withheld one null where the protection withholds); every
    level is known. ``reach``: a noisy release's farthest draw per table
    (``_check_noisy_range``)."""
    number = _NUMBER
    withholds = protection is not None and protection.withholds
    if not withholds:
        bad = _first(con, "value IS NULL")
        if bad:
            hint = "" if protection is None else (
                f" (the release's protection, {protection.method}, withholds no cell)")
            raise StatreconError(f"{path}: {bad[0]} {bad[1]} {bad[2]} {bad[3]}: no value"
                                 + hint)
    floor = "" if reach is not None else f" OR {number} < 0"
    bad = _first(con, f"value IS NOT NULL AND ({number} IS NULL OR NOT isfinite({number}) "
                      f"OR {number} <> round({number}){floor})")
    if bad:
        hint = ("" if reach is not None else " (a noisy release states its noise: make it "
                "with census tabulate --dp-rho)")
        raise StatreconError(f"{path}: {bad[0]} {bad[1]} {bad[2]} {bad[3]}: a count must be "
                             f"a whole number{'' if reach is not None else ' >= 0'}, got "
                             f"{bad[4]!r}" + hint)
    bad = _first(con, "level NOT IN ('block', 'tract') OR level IS NULL")
    if bad:
        raise StatreconError(f"{path}: unknown level {bad[0]!r} (expected block or tract)")
    if reach is not None:
        _check_noisy_range(path, con, reach)
        return
    slack = 0 if protection is None else protection.slack
    for level, limit in MAX_VALUE.items():
        bad = _first(con, f"level = $level AND {number} > $limit",
                     {"level": level, "limit": limit + slack})
        if bad:
            added = "" if not slack else f", and {slack:,} more that its protection may add"
            raise StatreconError(f"{path}: {bad[0]} {bad[1]} {bad[2]} {bad[3]}: value {bad[4]} "
                                 f"is more than a census {level} holds (at most {limit:,} "
                                 f"persons{added})")


def _check_noisy_range(path: Path, con: duckdb.DuckDBPyConnection, reach: dict[str, int]
                       ) -> None:
    """A noisy value lies within its table's sampler reach (``sampler_reach`` of the stated
    sigma) of a count its level can hold: [-reach, MAX_VALUE + reach]. Anything further is
    not a draw of the noise the release states (and would overflow the models)."""
    con.register("reach", pa.table({"name": list(reach),
                                    "reach": pa.array(list(reach.values()), pa.int64())}))
    rows = con.execute(f"""
        SELECT r.level, r.geoid, r."table", r.cell, r.value, COALESCE(n.reach, 0)
        FROM release r LEFT JOIN reach n ON r."table" = n.name
        WHERE {_NUMBER} < -COALESCE(n.reach, 0) OR {_NUMBER} > COALESCE(n.reach, 0)
              + CASE r.level WHEN 'block' THEN $block ELSE $tract END
        LIMIT 1""", MAX_VALUE).fetchall()
    con.unregister("reach")
    if rows:
        level, geoid, table, cell, value, far = rows[0]
        raise StatreconError(f"{path}: {level} {geoid} {table} {cell}: value {value} is more "
                             f"than {far:,} (the farthest draw of table {table}'s stated "
                             f"noise) outside 0 to {MAX_VALUE[level]:,}, what a census "
                             f"{level} holds: not a noisy measurement of a count")


def _check_each_cell_once(path: Path, level: str, ids: tuple[str, ...],
                          level_cells: list[Sf1Cell], gi: np.ndarray, ci: np.ndarray) -> None:
    """Every (geography, cell) pair of the level appears exactly once."""
    n_cells = len(level_cells)
    flat = np.sort(gi.astype(np.int64) * n_cells + ci)  # one (geography, cell) key each
    twice = np.flatnonzero(flat[1:] == flat[:-1])
    if len(twice):
        g, c = divmod(int(flat[twice[0]]), n_cells)
        raise StatreconError(f"{path}: {level} {ids[g]} cell {level_cells[c].cell} "
                             f"appears more than once")
    if len(flat) < len(ids) * n_cells:
        present = np.zeros(len(ids) * n_cells, dtype=bool)
        present[flat] = True
        g, c = divmod(int(np.argmin(present)), n_cells)
        raise StatreconError(f"{path}: {level} {ids[g]}: cell {level_cells[c].table} "
                             f"{level_cells[c].cell} is missing")


def _level_matrix(path: Path, con: duckdb.DuckDBPyConnection, cells: tuple[Sf1Cell, ...],
                  level: str, length: int) -> tuple[np.ndarray, tuple[str, ...]]:
    """One level's (geographies x cells) matrix and its sorted geoids, checked."""
    number = _NUMBER
    level_cells = [c for c in cells if c.level == level]
    con.register("defs", pa.table({"ci": pa.array(range(len(level_cells)), pa.int64()),
                                   "cell": [c.cell for c in level_cells]}))
    ids = tuple(str(r[0]) for r in con.execute(
        "SELECT DISTINCT geoid FROM release WHERE level = $level ORDER BY geoid",
        {"level": level}).fetchall())
    wrong = [g for g in ids if len(g) != length or not g.isdigit()]
    if wrong:
        raise StatreconError(f"{path}: {level} geoid {wrong[0]!r} must be {length} digits")
    unknown = con.execute("SELECT r.geoid, r.cell FROM release r ANTI JOIN defs d "
                          "ON r.cell = d.cell WHERE r.level = $level LIMIT 1",
                          {"level": level}).fetchall()
    if unknown:
        raise StatreconError(f"{path}: {level} {unknown[0][0]}: cell {unknown[0][1]} is "
                             f"not a {level}-level cell of the release's definitions")
    # each geoid's rank in the sorted ids by a hash join (a window over the rows sorted
    # millions of strings: 0.75 s of a 28-tract release's 1.5 s read)
    con.register("geos", pa.table({"gi": pa.array(range(len(ids)), pa.int32()),
                                   "geoid": list(ids)}))
    arrays = con.execute(f"""
        SELECT g.gi, CAST(d.ci AS INTEGER) AS ci,
               COALESCE(CAST({number} AS INTEGER), -1) AS value
        FROM release r JOIN defs d ON r.cell = d.cell JOIN geos g ON r.geoid = g.geoid
        WHERE r.level = $level""", {"level": level}).fetchnumpy()
    con.unregister("defs")
    con.unregister("geos")
    gi = np.asarray(arrays["gi"])  # int32: values are bounded by MAX_VALUE
    ci = np.asarray(arrays["ci"])
    _check_each_cell_once(path, level, ids, level_cells, gi, ci)
    matrix = np.empty((len(ids), len(level_cells)), dtype=np.int64)
    matrix[gi, ci] = arrays["value"]
    return matrix, ids


def _values(path: Path, cells: tuple[Sf1Cell, ...], reach: dict[str, int] | None = None,
            protection: ReleaseProtection | None = None
            ) -> tuple[np.ndarray, np.ndarray, tuple[str, ...], tuple[str, ...]]:
    """Pivot the long table to (geographies x cells) per level, checking every entry.

    pyarrow reads the file (dictionary-encoded) and a locked DuckDB connection turns geoids
    and cells into integer codes, so memory stays at a few numbers per published value.
    """
    out: list[np.ndarray] = []
    geos: list[tuple[str, ...]] = []
    # closed here, not whenever the collector gets to it: a connection (and the Arrow table
    # it scans) torn down by the collector in the middle of another query crashed DuckDB
    with closing(hardened({"release": _read_columns(path)})) as con:
        _check_entries(path, con, reach, protection)
        for level, length in (("block", GEOID_LENGTH), ("tract", TRACT_LENGTH)):
            matrix, ids = _level_matrix(path, con, cells, level, length)
            out.append(matrix)
            geos.append(ids)
    blocks, tracts = geos
    if not blocks:
        raise StatreconError(f"{path}: no block-level cells; reconstruction needs the block "
                             f"tables (at least P1)")
    orphans = sorted({tract_of(b) for b in blocks} - set(tracts))
    if orphans and any(c.level == "tract" for c in cells):
        raise StatreconError(f"{path}: tract {orphans[0]} has blocks but no tract-level cells")
    if not any(c.level == "tract" for c in cells):  # block tables only: tracts from the ids
        tracts = tuple(sorted({tract_of(b) for b in blocks}))
        out[1] = np.zeros((len(tracts), 0), dtype=np.int64)
    return out[0], out[1], blocks, tracts
