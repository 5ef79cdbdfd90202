"""Certain cells of identifiable public rows, checked against brute force on the clinic example.

Both paths are checked: facts read off a complete enumeration, and facts proven by CP-SAT
one cell at a time when the enumeration is cut short by --limit.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
import pytest

import statrecon
from statrecon.engines.exact import ExactOptions

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def brute_force_clinic() -> list[list[tuple[str, str]]]:
    """Every (diagnosis, smoker) assignment to the 6 roster rows that fits clinic.yaml."""
    roster = pd.read_csv(EXAMPLES / "clinic_public.csv", dtype={"zip": str})
    ids, zips, sexes = list(roster["id"]), list(roster["zip"]), list(roster["sex"])
    fits = []
    for values in itertools.product(itertools.product(["no", "yes"], repeat=2), repeat=6):
        ill = [d == "yes" for d, _ in values]
        smoker = [s == "yes" for _, s in values]
        if any(ill[i] and not smoker[i] and sexes[i] == "M" for i in range(6)):
            continue
        checks = [
            sum(ill[i] for i in range(6) if ids[i] < 4) == 1,
            sum(ill[i] for i in range(6) if ids[i] < 5) == 2,
            sum(ill) == 3,
            len({zips[i] for i in range(6) if ill[i]}) == 3,
            sum(ill[i] for i in range(6) if ids[i] % 2 == 0) == 1,
            sum(ill[i] and smoker[i] for i in range(6)) == 2,
            sum(smoker[i] for i in range(6) if sexes[i] == "F") == 1,
            sum(smoker) == 3,
        ]
        if all(checks):
            fits.append(list(values))
    return fits


@pytest.mark.parametrize("limit", [10_000, 2])
def test_certain_cells_match_brute_force(limit: int) -> None:
    fits = brute_force_clinic()
    expected = {}
    for i in range(6):
        for j, column in enumerate(["diagnosis", "smoker"]):
            seen = {fit[i][j] for fit in fits}
            if len(seen) == 1:
                expected[(i + 1, column)] = seen.pop()
    result = statrecon.reconstruct(EXAMPLES / "clinic.yaml", options=ExactOptions(limit=limit))
    got = {(c.row["id"], c.column): c.value for c in result.certain_cells}
    assert got == expected
    assert result.certain_complete
    assert result.complete == (limit > len(fits))
    if result.complete:
        assert result.solution_count == len(fits)


def test_rows_with_equal_known_values_get_no_cells(tmp_path: Path) -> None:
    """Two roster rows that look alike cannot be told apart, so no cell is claimed for them."""
    (tmp_path / "roster.csv").write_text("g\n1\n1\n2\n")
    (tmp_path / "r.yaml").write_text(
        "version: 1\ntable: t\npublic: roster.csv\n"
        "columns:\n  g: {type: integer, known: true}\n  x: {type: integer, min: 0, max: 1}\n"
        "statistics:\n"
        "  - {id: a, sql: \"SELECT SUM(x) FROM t WHERE g = 1\", value: 2}\n"
        "  - {id: b, sql: \"SELECT SUM(x) FROM t WHERE g = 2\", value: 0}\n"
    )
    result = statrecon.reconstruct(tmp_path / "r.yaml")
    assert result.status == "unique"
    assert [(c.row, c.column, c.value) for c in result.certain_cells] == [({"g": 2}, "x", 0)]
    assert [(c.row, c.multiplicity) for c in result.certain_rows] == [
        ({"g": 1, "x": 1}, 2), ({"g": 2, "x": 0}, 1)]
