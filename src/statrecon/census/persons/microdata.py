"""Read and validate a block-level persons file (CSV or Parquet) into DuckDB.

The schema is the Bureau's reconstructed-persons layout: ``block_geoid`` (15 digits: state 2,
county 3, tract 6, block 4), ``sex`` (male/female), ``age`` (0–110, 110 = 110 and over), six
race flags ``white, black, aian, asian, nhopi, sor`` (Y/N, at least one Y) and ``hispanic``
(Y/N). Other columns are ignored. Every mistake names the file, the line and the value.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from statrecon import inputs
from statrecon.census.geography import GEOID_LENGTH, TRACT_LENGTH
from statrecon.census.persons.cells import MAX_AGE, RACES
from statrecon.db import lock
from statrecon.errors import StatreconError

BLOCK_COLUMN = "block_geoid"
REQUIRED = (BLOCK_COLUMN, "sex", "age", *RACES, "hispanic")
FLAG_TRUE = ("Y", "y", "1", "true", "True", "TRUE")
FLAG_FALSE = ("N", "n", "0", "false", "False", "FALSE")


def _read(path: Path, con: duckdb.DuckDBPyConnection) -> None:
    """Table ``raw``: the file as read (CSV: every column as text), with its line numbers.

    The path is a bound parameter, never SQL text; the file passes the input gate first
    (a regular file within the size limit, recorded as this command's input).
    """
    inputs.admit(path, "persons file")
    if path.suffix.lower() == ".parquet":
        source = "read_parquet($p)"
    else:
        inputs.check_csv_header(path, "persons file")
        source = "read_csv($p, all_varchar = true, header = true)"
    con.execute(f"CREATE OR REPLACE TEMP TABLE raw AS SELECT *, "
                f"row_number() OVER () + 1 AS line FROM {source}", {"p": str(path)})


def _quote(values: tuple[str, ...]) -> str:
    return ", ".join("'" + v + "'" for v in values)


def load_persons(path: Path, con: duckdb.DuckDBPyConnection) -> int:
    """Create the validated table ``persons`` in ``con``; return the row count.

    ``con`` is locked afterwards (no file or network access; see ``statrecon.db``).

    Columns of ``persons``: block (15 chars), tract (11 chars), sex, age (INT), the race flags
    and hispanic (BOOLEAN). ``line`` is the file line (header = line 1) for messages.
    """
    if not path.exists():
        raise StatreconError(f"{path}: no such file")
    try:
        _read(path, con)
    except duckdb.Error as e:
        first = str(e).strip().splitlines()[0]
        raise StatreconError(f"{path}: cannot read as a persons file: {first}") from None
    columns = [r[0] for r in con.execute("DESCRIBE raw").fetchall()]
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise StatreconError(f"{path}: missing column(s) {', '.join(missing)}; a persons file "
                             f"needs {', '.join(REQUIRED)}")
    where = "line" if path.suffix.lower() != ".parquet" else "row"

    def first_bad(condition: str, what: str, column: str) -> None:
        rows = con.execute(f"SELECT line, CAST({column} AS VARCHAR) FROM raw "
                           f"WHERE {condition} ORDER BY line LIMIT 1").fetchall()
        if rows:
            row = rows[0]
            line = row[0] if where == "line" else row[0] - 1
            n = con.execute(f"SELECT count(*) FROM raw WHERE {condition}").fetchall()[0][0]
            more = f" ({n - 1} more such rows)" if n > 1 else ""
            raise StatreconError(f"{path}: {where} {line}: {what}, got {row[1]!r}{more}")

    block = f"CAST({BLOCK_COLUMN} AS VARCHAR)"
    first_bad(f"{block} IS NULL OR NOT regexp_full_match({block}, '[0-9]{{{GEOID_LENGTH}}}')",
              f"{BLOCK_COLUMN} must be {GEOID_LENGTH} digits (state 2, county 3, tract 6, "
              f"block 4)", BLOCK_COLUMN)
    first_bad("sex IS NULL OR CAST(sex AS VARCHAR) NOT IN ('male', 'female')",
              "sex must be male or female", "sex")
    # A whole number as written: TRY_CAST would round '12.5' to 13 without a word.
    first_bad("age IS NULL OR NOT regexp_full_match(trim(CAST(age AS VARCHAR)), '[0-9]{1,9}')",
              "age must be a whole number", "age")
    first_bad(f"CAST(trim(CAST(age AS VARCHAR)) AS INTEGER) NOT BETWEEN 0 AND {MAX_AGE}",
              f"age must be between 0 and {MAX_AGE} ({MAX_AGE} = {MAX_AGE} and over)", "age")
    ok = _quote(FLAG_TRUE + FLAG_FALSE)
    for flag in (*RACES, "hispanic"):
        first_bad(f"{flag} IS NULL OR CAST({flag} AS VARCHAR) NOT IN ({ok})",
                  f"{flag} must be Y or N", flag)
    truthy = _quote(FLAG_TRUE)
    flags = ", ".join(f"CAST({f} AS VARCHAR) IN ({truthy}) AS {f}" for f in (*RACES, "hispanic"))
    con.execute(f"""
        CREATE OR REPLACE TEMP TABLE persons AS
        SELECT {block} AS block, substr({block}, 1, {TRACT_LENGTH}) AS tract,
               CAST(sex AS VARCHAR) AS sex,
               CAST(trim(CAST(age AS VARCHAR)) AS INTEGER) AS age, {flags}, line
        FROM raw ORDER BY block, line""")
    con.execute("DROP TABLE raw")
    lock(con)  # the file is in: no SQL on this connection may touch another file
    no_race = " AND ".join(f"NOT {r}" for r in RACES)
    rows = con.execute(f"SELECT line FROM persons WHERE {no_race} ORDER BY line LIMIT 1"
                       ).fetchall()
    if rows:
        line = rows[0][0] if where == "line" else rows[0][0] - 1
        raise StatreconError(f"{path}: {where} {line}: a person needs at least one race flag "
                             f"set to Y ({', '.join(RACES)})")
    count = int(con.execute("SELECT count(*) FROM persons").fetchall()[0][0])
    if count == 0:
        raise StatreconError(f"{path}: no persons in the file")
    return count
