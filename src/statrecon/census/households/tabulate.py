"""Block tables of housing units: tabulate them from microdata (DuckDB) or from type codes.

The DuckDB path evaluates each cell's SQL, as a publisher would; the numpy path counts unit
types through the cell chains (what the engine believes a cell means). A test keeps the two
equal on random units.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from statrecon.census.households import schema as hh
from statrecon.census.households import tables as hht
from statrecon.db import hardened


def tabulate_sql(units: pd.DataFrame) -> dict[str, np.ndarray]:
    """Every published cell for every block, by DuckDB (one query, zeros included)."""
    cells = hht.table_index().cells
    con = hardened({"units_df": units[["block", *hh.COLUMN_NAMES]]})
    con.execute(f"CREATE TEMP TABLE {hh.TABLE} AS SELECT * FROM units_df")
    # COUNT_IF: planning 873 of them takes DuckDB two thirds of the time SUM(CASE ...) does
    sums = ", ".join(f"COUNT_IF({c.sql()}) AS c{i}" for i, c in enumerate(cells))
    rows = con.execute(f"SELECT block, {sums} FROM {hh.TABLE} GROUP BY block "
                       "ORDER BY block").fetchall()
    con.close()
    return {str(r[0]): np.array(r[1:], dtype=np.int64) for r in rows}


def tabulate_types(type_ids: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
    """One block's cells from unit type indices (with multiplicities), through the chains."""
    index = hht.table_index()
    type_ids = np.asarray(type_ids, dtype=np.int64)
    weights = np.ones(len(type_ids), dtype=np.int64) if counts is None else np.asarray(counts)
    values = np.zeros(len(index.cells), dtype=np.int64)
    for j in range(index.deepest.shape[1]):
        cur = index.deepest[type_ids, j].astype(np.int64)
        w = weights
        while True:
            keep = cur >= 0
            if not keep.any():
                break
            cur, w = cur[keep], w[keep]
            np.add.at(values, cur, w)
            cur = index.parent[cur].astype(np.int64)
    return values


def _sql_condition(name: str, values: frozenset[str]) -> str:
    vals = sorted(values)
    if len(vals) == 1:
        return f"{name} = '{vals[0]}'"
    return f"{name} IN ({', '.join(repr(v) for v in vals)})"


def block_release_document(block: str, values: np.ndarray) -> dict[str, object]:
    """One block's published cells as a statrecon release (version 1), rules as constraints.

    Every cell becomes ``SELECT COUNT(*) FROM households WHERE ...``; every structural rule
    becomes ``NOT (...)``, background knowledge every row obeys. The general exact engine
    (`statrecon reconstruct`) can then enumerate a small block's datasets.
    """
    cells = hht.table_index().cells
    columns = {c.name: {"type": "categorical",
                        "values": list(c.values) + ([hh.NA] if c.name != "vacancy" else [])}
               for c in hh.COLUMNS}
    constraints = [
        "NOT (" + " AND ".join(_sql_condition(n, v) for n, v in rule.pattern.items()) + ")"
        for rule in hh.rules()]
    statistics = [{"id": c.cell, "sql": c.statistic_sql(), "value": int(v)}
                  for c, v in zip(cells, values, strict=True)]
    return {"version": 1, "name": f"sf1-households-{block}",
            "description": f"SF1 household block tables of block {block} "
                           "(the paper's tables, built from the 2010 cell descriptors).",
            "table": hh.TABLE, "records": int(values[hht.cell_position("H1_001")]),
            "columns": columns, "constraints": constraints, "statistics": statistics}
