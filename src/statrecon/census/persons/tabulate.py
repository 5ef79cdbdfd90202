"""Persons -> every SF1 person-table cell for every block and tract (what the Bureau printed).

DuckDB does all of it in one query: it evaluates the cell definitions (as columns of a cells
table, joined on the conditions) against the distinct person attribute tuples, then sums the
person counts per geography and cell. The join conditions are independent of the
reconstruction's numpy attribute masks, so an encoding mistake on either side shows up as a
certified-unique block that does not match the truth.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from statrecon.census.persons.cells import MEDIAN_SCALE, RACES, Sf1Cell
from statrecon.errors import StatreconError


def _cells_table(cells: tuple[Sf1Cell, ...]) -> pa.Table:
    columns: dict[str, list[object]] = {
        "ci": list(range(len(cells))),
        "level": [c.level for c in cells],
        "table": [c.table for c in cells],
        "cell": [c.cell for c in cells],
        "two": [c.two_or_more for c in cells],
        "hispanic": [c.hispanic for c in cells],
        "sex": [c.sex for c in cells],
        "lo": [c.age_lo for c in cells],
        "hi": [c.age_hi for c in cells],
    }
    for i, race in enumerate(RACES):
        columns[race] = [c.race[i] for c in cells]
    return pa.table(columns)


KEY_COLUMN = "record_key"  # the persons' column ``tabulate_cells(keyed=True)`` sums


def tabulate_cells(con: duckdb.DuckDBPyConnection, cells: tuple[Sf1Cell, ...],
                   keyed: bool = False) -> pa.Table:
    """The long table (level, geoid, table, cell, value) over the ``persons`` table in ``con``.

    Every cell of every populated geography is present, zeros included: published zeros are
    what prunes the reconstruction. Rows are ordered by level, geoid and cell file order.
    ``keyed``: each value is the sum of the persons' whole-number ``record_key`` column
    (BIGINT) instead of their count, by the same join: cell key perturbation's key sums, so
    a cell's key sum and its count come from one definition of who is in it.
    """
    all_cells = cells
    medians = [c for c in cells if c.is_median]
    if keyed and medians:
        raise StatreconError("a median cell has no key sum: tabulate its keys without P13")
    weight, kind = ((f"sum({KEY_COLUMN})", "BIGINT") if keyed else ("count(*)", "INTEGER"))
    cells = tuple(c for c in cells if not c.is_median)
    con.register("cell_defs", _cells_table(cells))
    flags = ", ".join(RACES)
    race_match = " AND ".join(f"(c.{r} IS NULL OR c.{r} = k.{r})" for r in RACES)
    n_races = " + ".join(f"{r}::INT" for r in RACES)
    try:
        counts = con.sql(f"""
            WITH keys AS (
                SELECT sex, age, {flags}, hispanic, {n_races} AS n_races,
                       block, tract, {weight} AS n
                FROM persons GROUP BY ALL),
            hits AS (
                SELECT c.level, CASE c.level WHEN 'block' THEN k.block ELSE k.tract END
                       AS geoid, c.ci, sum(k.n) AS value
                FROM keys k JOIN cell_defs c
                  ON {race_match}
                 AND (c.two IS NULL OR c.two = (k.n_races >= 2))
                 AND (c.hispanic IS NULL OR c.hispanic = k.hispanic)
                 AND (c.sex IS NULL OR c.sex = k.sex)
                 AND k.age BETWEEN c.lo AND c.hi
                GROUP BY ALL),
            geos AS (
                SELECT DISTINCT 'block' AS level, block AS geoid FROM persons
                UNION ALL SELECT DISTINCT 'tract', tract FROM persons)
            SELECT g.level, g.geoid, c."table", c.cell,
                   CAST(coalesce(h.value, 0) AS {kind}) AS value
            FROM geos g JOIN cell_defs c ON c.level = g.level
            LEFT JOIN hits h ON h.level = g.level AND h.geoid = g.geoid AND h.ci = c.ci
            ORDER BY g.level, g.geoid, c.ci""").to_arrow_table()
    finally:
        con.unregister("cell_defs")
    if not medians:
        return counts
    # Keep the promised order (level, geoid, definition order) with the medians in place.
    both = pa.concat_tables([counts, _medians(con, medians)])
    order = {c.cell: i for i, c in enumerate(all_cells)}
    key = pa.array([order[c] for c in both["cell"].to_pylist()], pa.int32())
    both = both.append_column("ci", key).sort_by(
        [("level", "ascending"), ("geoid", "ascending"), ("ci", "ascending")])
    return both.drop_columns(["ci"])


def _medians(con: duckdb.DuckDBPyConnection, cells: list[Sf1Cell]) -> pa.Table:
    """Median age per block for each median cell, x MEDIAN_SCALE (0 for an empty group, as
    SF1 prints it)."""
    parts = []
    for c in cells:  # c.sql() is built from the cell's typed fields; names are parameters
        parts.append(con.sql(f"""
            SELECT 'block' AS level, block AS geoid, $table AS "table", $cell AS cell,
                   CAST(coalesce(round({MEDIAN_SCALE} * quantile_cont(age, 0.5)
                                       FILTER (WHERE {c.sql()})), 0) AS INTEGER) AS value
            FROM persons GROUP BY block ORDER BY block""",
                             params={"table": c.table, "cell": c.cell}).to_arrow_table())
    return pa.concat_tables(parts)
