"""The census size guard belongs to the run, not to the command: a Python caller of
``runs.census.reconstruct_release`` is refused a tract too large before anything is solved or
written, with the messages ``census reconstruct`` prints."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import TRACT_A, write_persons

from statrecon.census.persons.cells import select_cells
from statrecon.census.persons.microdata import load_persons
from statrecon.census.persons.release import MAX_VALUE, read_release, write_release
from statrecon.census.persons.tabulate import tabulate_cells
from statrecon.db import open_connection
from statrecon.engines.census import MAX_TRACT_VARIABLES
from statrecon.errors import StatreconError
from statrecon.runs.census import check_model_sizes, reconstruct_release


def _p1_release(folder: Path) -> Path:
    """P1 alone prunes nothing: 8 blocks would be 8 x 27,972 CP-SAT variables."""
    persons = write_persons(folder / "p.csv", [f"{TRACT_A}{1000 + i}" for i in range(8)], 1)
    cells = select_cells("P1")
    con = open_connection()
    load_persons(persons, con)
    out = folder / "p1.parquet"
    write_release(tabulate_cells(con, cells), cells, "P1", out)
    return out


def test_a_model_too_big_is_refused_by_the_run_itself(tmp_path: Path) -> None:
    path = _p1_release(tmp_path)
    out = tmp_path / "r.parquet"
    with pytest.raises(StatreconError) as caught:
        reconstruct_release(read_release(path), out)
    assert str(caught.value) == (
        f"{path}: tract {TRACT_A}: the model would have 223,776 variables (at most "
        f"{MAX_TRACT_VARIABLES:,}); publish more tables (their zeros prune it) or split the "
        "tract")
    assert not out.exists() and not Path(f"{out}.parts").exists()


def test_a_tract_of_more_persons_than_a_tract_holds_is_refused(tmp_path: Path) -> None:
    real = read_release(_p1_release(tmp_path))
    tract = SimpleNamespace(tract=TRACT_A, persons=MAX_VALUE["tract"] + 1)
    huge = SimpleNamespace(path=real.path, cells=real.cells, noise=None, protection=None,
                           tract_tables=lambda: [tract])
    with pytest.raises(StatreconError, match=f"tract {TRACT_A}: its blocks hold 1,000,001 "
                                             "persons, more than a census tract holds "
                                             r"\(at most 1,000,000\)"):
        check_model_sizes(huge)  # type: ignore[arg-type]


def test_the_guard_counts_exactly_the_variables_the_model_gets(tmp_path: Path) -> None:
    """``model_variables`` counts without listing them; on the slice's SF1 tables (whose
    zeros prune most of each tract's grid) it equals the variables ``compile_tract`` makes."""
    from conftest import SLICE

    from statrecon.engines.census import CellMatrices
    from statrecon.engines.census.tract import compile_tract, model_variables

    cells = select_cells("sf1-persons")
    con = open_connection()
    load_persons(SLICE, con)
    out = tmp_path / "slice.parquet"
    write_release(tabulate_cells(con, cells), cells, "sf1-persons", out)
    release = read_release(out)
    mats = CellMatrices.build(release.cells)
    counted = [(model_variables(t, mats), len(compile_tract(t, mats).x))
               for t in release.tract_tables()]
    assert len(counted) == 3 and all(a == b > 0 for a, b in counted), counted
