"""The households CSV format and the published block tables file: reading, validating, writing.

A households file has one housing unit per line (block, tract, state and the ten columns of
``households.COLUMN_NAMES``); a tables file has one published cell per line (block, cell,
value). Readers check every value against the schema and the structural rules, and every
mistake names the file and the line, so a user can fix it without reading code.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from statrecon import inputs
from statrecon.census.geography import BLOCK_GEOID, GEOID_LENGTH, STATE_LENGTH, TRACT_LENGTH
from statrecon.census.households import schema as hh
from statrecon.census.households import tables as hht
from statrecon.errors import StatreconError

GEO_COLUMNS = ("block", "tract", "state")
OUTPUT_COLUMNS = (*GEO_COLUMNS, *hh.COLUMN_NAMES)
REQUIRED_COLUMNS = ("block", *hh.COLUMN_NAMES)  # tract and state follow from the block id

# The claims engine packs a multiplicity in 12 bits, and no census block has 4,096 or more
# housing units (the largest have a few thousand): more is a mistake or an attack.
MAX_BLOCK_UNITS = 4095


# --- structural rules -----------------------------------------------------------------------


def incoherent(codes: np.ndarray) -> np.ndarray:
    """Which rows of unit codes break a structural rule (``households.broken_rule``).

    Vectorised: each rule's forbidden pattern is matched (``households.pattern_mask``) once
    against the distinct rows. Same answer as ``households.type_index(codes) < 0`` for valid
    codes, without enumerating ``unit_types()`` (a second or two on a cold start).
    """
    codes = np.asarray(codes, dtype=np.uint8).reshape(-1, hh.N_COLUMNS)
    _, first, inverse = np.unique(hh.pack(codes), return_index=True, return_inverse=True)
    distinct = codes[first]
    bad = np.zeros(len(distinct), dtype=bool)
    for rule in hh.rules():
        bad |= hh.pattern_mask(distinct, rule.pattern)
    return np.asarray(bad[inverse.reshape(-1)])


# --- codes ----------------------------------------------------------------------------------

def _column_codes(values: pd.Series | np.ndarray, column: hh.Column) -> np.ndarray:
    """Codes of one column (NA -> households.NA_CODE), -1 where the value is unknown."""
    known = {v: i for i, v in enumerate(column.values)}
    if column.name != "vacancy":  # every unit is occupied or vacant for a reason
        known[hh.NA] = hh.NA_CODE
    uniq, inverse = _factorize(values)
    table = np.array([known.get(u, -1) for u in uniq], dtype=np.int16)
    return table[inverse] if len(uniq) else np.zeros(0, dtype=np.int16)


def encode(df: pd.DataFrame) -> np.ndarray:
    """Unit codes (uint8, shape (n, 10), columns in ``households.COLUMN_NAMES`` order).

    NA is ``households.NA_CODE``. Raises StatreconError for a missing column or an unknown
    value (``read_households`` gives the same with file and line).
    """
    missing = [n for n in hh.COLUMN_NAMES if n not in df.columns]
    if missing:
        raise StatreconError(f"missing column(s) {', '.join(missing)}")
    out = np.empty((len(df), hh.N_COLUMNS), dtype=np.uint8)
    for j, column in enumerate(hh.COLUMNS):
        codes = _column_codes(df[column.name], column)
        bad = np.flatnonzero(codes < 0)
        if len(bad):
            raise StatreconError(_unknown_value(column, df[column.name].iloc[bad[0]]))
        out[:, j] = codes
    return out


def _unknown_value(column: hh.Column, value: object) -> str:
    allowed = [*column.values] + ([hh.NA] if column.name != "vacancy" else [])
    return f"unknown {column.name} value {value!r} (allowed: {', '.join(allowed)})"


# --- households files -----------------------------------------------------------------------

def write_households_csv(df: pd.DataFrame, path: Path | str) -> None:
    """Write housing units as CSV: block, tract, state and the ten columns, a header line."""
    path = Path(path)
    missing = [c for c in OUTPUT_COLUMNS if c not in df.columns]
    if missing:
        raise StatreconError(f"{path}: cannot write households without column(s) "
                             f"{', '.join(missing)}")
    columns = []
    plain = True
    for c in OUTPUT_COLUMNS:
        col = df[c].to_numpy(dtype=object)
        uniq = pd.unique(col)
        if not all(isinstance(v, str) for v in uniq):
            col = np.array([str(v) for v in col], dtype=object)
            uniq = pd.unique(col)
        plain = plain and not any(re.search(r'[,"\r\n]', v) for v in uniq)
        columns.append(col)
    try:
        with path.open("w", encoding="utf-8", newline="") as f:
            if plain:  # nothing to quote: join, twice as fast as csv.writer
                f.write(",".join(OUTPUT_COLUMNS) + "\n")
                f.writelines(",".join(row) + "\n"
                             for row in zip(*columns, strict=True))
            else:
                writer = csv.writer(f, lineterminator="\n")
                writer.writerow(OUTPUT_COLUMNS)
                writer.writerows(zip(*columns, strict=True))
    except OSError as e:
        raise StatreconError(f"{path}: cannot write: {e.strerror or e}") from None


def _factorize(values: pd.Series | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    return np.asarray(uniques, dtype=object), np.asarray(codes)


def _stripped(values: pd.Series) -> np.ndarray:
    """Values without surrounding blanks (stripping each distinct value once)."""
    uniq, inverse = _factorize(values)
    return np.array([str(u).strip() for u in uniq], dtype=object)[inverse] if len(uniq) \
        else np.array([], dtype=object)


def read_households(path: Path | str) -> pd.DataFrame:
    """Read and validate a households CSV (the format ``write_households_csv`` writes).

    Needs a header line with ``block`` and the ten columns of ``households.COLUMN_NAMES``;
    ``tract`` and ``state`` are optional (they follow from the 15-digit block id) but must
    agree with it when present. Other columns are ignored; blank lines are skipped. Every
    value is a string; vacant units have ``NA`` in the household columns. Every mistake
    names the file and the line (the header is line 1). Returns the columns block, tract,
    state and the ten columns, as strings.
    """
    path = Path(path)
    raw = _read_csv(path)
    raw.columns = [str(c).strip() for c in raw.columns]
    missing = [c for c in REQUIRED_COLUMNS if c not in raw.columns]
    if missing:
        raise StatreconError(f"{path}: line 1: missing column(s) {', '.join(missing)}; a "
                             f"households file needs {', '.join(OUTPUT_COLUMNS)} (tract "
                             "and state may be left out)")
    blank = np.ones(len(raw), dtype=bool)
    for j in range(raw.shape[1]):
        blank &= raw.iloc[:, j].to_numpy(dtype=object) == ""
    keep = ~blank
    lines = (np.arange(len(raw)) + 2)[keep]  # the header is line 1; blank lines are skipped
    cols = {c: _stripped(raw[c])[keep] for c in OUTPUT_COLUMNS if c in raw.columns}
    if len(lines) == 0:
        raise StatreconError(f"{path}: no housing units (the file has only a header line)")
    where = _Lines(path, lines)
    uniq, inverse = _check_blocks(cols["block"], where)
    _tract_and_state(cols, uniq, inverse, where)
    _check_rules(_unit_codes(cols, where), where)
    return pd.DataFrame({c: cols[c] for c in OUTPUT_COLUMNS}, columns=list(OUTPUT_COLUMNS))


def _read_csv(path: Path) -> pd.DataFrame:
    """Every cell of a households file as text, or a one-line error naming the file."""
    inputs.admit(path, "households file")
    inputs.check_csv_header(path, "households file")
    try:
        return pd.read_csv(path, dtype=object, keep_default_na=False, na_filter=False,
                           skip_blank_lines=False, encoding="utf-8")
    except pd.errors.EmptyDataError:
        raise StatreconError(f"{path}: empty file; a households file needs a header line "
                             f"with {', '.join(OUTPUT_COLUMNS)}") from None
    except pd.errors.ParserError as e:
        first = str(e).strip().splitlines()[0]
        raise StatreconError(f"{path}: not a valid CSV file: {first}") from None
    except UnicodeDecodeError:
        raise StatreconError(f"{path}: not UTF-8 text") from None
    except OSError as e:
        raise StatreconError(f"{path}: cannot read: {e.strerror or e}") from None


@dataclass(frozen=True)
class _Lines:
    """The file line of each housing unit read, to name the first bad one."""

    path: Path
    lines: np.ndarray  # line of each unit (the header is line 1; blank lines are skipped)

    def first(self, bad: np.ndarray) -> tuple[int, str, str]:
        """(row, 'PATH: line N', ' (k more such rows)') of the first bad row."""
        i, n = int(np.argmax(bad)), int(bad.sum())
        return i, f"{self.path}: line {self.lines[i]}", (f" ({n - 1} more such rows)"
                                                         if n > 1 else "")


def _check_blocks(block: np.ndarray, where: _Lines) -> tuple[np.ndarray, np.ndarray]:
    """Block ids are 15-digit GEOIDs, no block holds too many units; returns the distinct
    ids and the index of each unit's block among them."""
    uniq, inverse = _factorize(block)
    bad = np.array([BLOCK_GEOID.fullmatch(b) is None for b in uniq], dtype=bool)[inverse]
    if bad.any():
        i, at, more = where.first(bad)
        raise StatreconError(f"{at}: block id {block[i]!r} is not {GEOID_LENGTH} digits "
                             f"(state 2, county 3, tract 6, block 4){more}")
    units_in = np.bincount(inverse)
    if len(units_in) and units_in.max() > MAX_BLOCK_UNITS:
        big = int(np.argmax(units_in))
        i, at, _ = where.first(np.cumsum(inverse == big) == MAX_BLOCK_UNITS + 1)
        raise StatreconError(f"{at}: block {uniq[big]} has {int(units_in[big]):,} housing "
                             f"units, more than a census block holds (at most "
                             f"{MAX_BLOCK_UNITS:,})")
    return uniq, inverse


def _tract_and_state(cols: dict[str, np.ndarray], uniq: np.ndarray, inverse: np.ndarray,
                     where: _Lines) -> None:
    """Fill in tract and state from the block ids, or check that the given ones agree."""
    block = cols["block"]
    for name, length in (("tract", TRACT_LENGTH), ("state", STATE_LENGTH)):
        derived = np.array([b[:length] for b in uniq], dtype=object)[inverse]
        if name not in cols:
            cols[name] = derived
            continue
        bad = cols[name] != derived
        if bad.any():
            i, at, more = where.first(bad)
            raise StatreconError(f"{at}: {name} {cols[name][i]!r} disagrees with block "
                                 f"{block[i]} (whose {name} is {derived[i]}){more}")


def _unit_codes(cols: dict[str, np.ndarray], where: _Lines) -> np.ndarray:
    """Unit codes of the ten columns; the first unknown value is an error."""
    codes = np.empty((len(where.lines), hh.N_COLUMNS), dtype=np.uint8)
    for j, column in enumerate(hh.COLUMNS):
        col_codes = _column_codes(cols[column.name], column)
        bad = col_codes < 0
        if bad.any():
            i, at, more = where.first(bad)
            raise StatreconError(f"{at}: {_unknown_value(column, cols[column.name][i])}{more}")
        codes[:, j] = col_codes
    return codes


def _check_rules(codes: np.ndarray, where: _Lines) -> None:
    """Every unit passes the structural rules; the first that breaks one is an error."""
    bad = incoherent(codes)
    if bad.any():
        i, at, more = where.first(bad)
        rule = hh.broken_rule(hh.decode(codes[i]))
        why = rule.message if rule is not None else "not a coherent housing unit"
        raise StatreconError(f"{at} breaks a structural rule: {why}{more}")


# --- published block tables -----------------------------------------------------------------

COUNT = re.compile(r"[0-9]+")


def _count(path: Path, line: int, cell: str, value: str | None) -> int:
    """A published count as written: digits only (no sign, fraction, exponent or blanks)."""
    text = (value or "").strip()
    if not COUNT.fullmatch(text):
        raise StatreconError(f"{path}: line {line}: cell {cell} has value {text[:40]!r}, not a "
                             "count (a whole number >= 0)")
    if len(text) > 9 or int(text) > MAX_BLOCK_UNITS:
        shown = f"{int(text):,}" if len(text) <= 9 else text[:40] + ("..." * (len(text) > 40))
        raise StatreconError(f"{path}: line {line}: cell {cell} has value {shown}, more housing "
                             f"units than a census block holds (at most {MAX_BLOCK_UNITS:,})")
    return int(text)


def read_tables(path: Path) -> dict[str, np.ndarray]:
    """Published block tables in long form (block, cell, value), every cell of every block.

    Every cell must appear exactly once per block: a second value for the same cell is an
    error (never "the last one wins"), as is a missing one.
    """
    position = {c.cell: i for i, c in enumerate(hht.table_index().cells)}
    inputs.admit(path, "tables file")
    inputs.check_csv_header(path, "tables file")
    out: dict[str, np.ndarray] = {}
    first_line: dict[str, np.ndarray] = {}  # block -> line of each cell (0: not yet seen)
    try:
        f = path.open(encoding="utf-8", newline="")
    except OSError as e:
        raise StatreconError(f"{path}: cannot read ({e.strerror})") from None
    line = 1
    try:
        with f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None or \
                    not {"block", "cell", "value"} <= set(reader.fieldnames):
                raise StatreconError(f"{path}: expected the columns block, cell, value")
            for line, row in enumerate(reader, start=2):
                block, cell, v = _table_row(path, line, row, position)
                if block not in out:
                    out[block] = np.zeros(len(position), dtype=np.int64)
                    first_line[block] = np.zeros(len(position), dtype=np.int64)
                seen = int(first_line[block][position[cell]])
                if seen:
                    raise StatreconError(f"{path}: line {line}: block {block} cell {cell} "
                                         f"appears again (first at line {seen}); publish "
                                         "each cell once")
                out[block][position[cell]] = v
                first_line[block][position[cell]] = line
    except csv.Error as e:
        raise StatreconError(f"{path}: line {line}: not a valid CSV file: {e}") from None
    except UnicodeDecodeError:
        raise StatreconError(f"{path}: not UTF-8 text") from None
    if not out:
        raise StatreconError(f"{path}: no rows")
    _check_every_cell(path, first_line)
    return out


def _table_row(path: Path, line: int, row: dict[str, str | None], position: dict[str, int]
               ) -> tuple[str, str, int]:
    """(block, cell, count) of one line of a tables file, each checked."""
    block, cell = (row["block"] or "").strip(), (row["cell"] or "").strip()
    if not BLOCK_GEOID.fullmatch(block):
        raise StatreconError(f"{path}: line {line}: block id {block[:30]!r} is not "
                             "15 digits (state 2, county 3, tract 6, block 4)")
    if cell not in position:
        raise StatreconError(f"{path}: line {line}: unknown cell {cell[:30]!r} "
                             "(cells look like H13A_004; see `statrecon claims "
                             "tabulate`)")
    return block, cell, _count(path, line, cell, row["value"])


def _check_every_cell(path: Path, first_line: dict[str, np.ndarray]) -> None:
    """Every block publishes every cell (zeros too): the first gap is an error."""
    for block, lines in first_line.items():
        mask = lines > 0
        if not mask.all():
            missing = hht.table_index().cells[int(np.flatnonzero(~mask)[0])].cell
            raise StatreconError(f"{path}: block {block} lacks {int((~mask).sum())} of the "
                                 f"{len(mask)} cells (for example {missing}); publish zeros too")


def write_tables(tables: dict[str, np.ndarray], path: Path) -> None:
    """Every cell (zeros included) of every block, in long form: block, cell, value."""
    cells = hht.table_index().cells
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["block", "cell", "value"])
        for b in sorted(tables):
            for c, v in zip(cells, tables[b], strict=True):
                w.writerow([b, c.cell, int(v)])
