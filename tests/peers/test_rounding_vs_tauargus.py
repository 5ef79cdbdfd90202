"""Controlled rounding side by side with tau-Argus's (pytauargus 0.6: ``<SUPPRESS> RND``, its
"Rounder", the CRP solver on HiGHS), on generated count tables. Skipped without pytauargus.

tau-Argus's rounder minimises the same thing statrecon's does, the total change
``sum |r - x|`` (unit costs, RND's default), over zero-restricted controlled roundings. So
where it finds one: its rounding adds up and every cell is next to its value, and its total
change is statrecon's proven least (the patterns may differ where several reach it).

What differs, pinned here:
- tau-Argus refuses a base below 10 ** (d - 1), d the digits of the largest cell
  (``computeMinRoundBase``): these tables stay at or under 100, base 10.
- pytauargus hands the rounder each cell's a-priori box as the table's smallest and largest
  cell (its audit's box), and the rounder keeps every rounded value inside it: the grand
  total cannot round up, a cell of 1 cannot round to 0, and it finds "NO OUTPUT PATTERN"
  where one exists. With tau-Argus 4.1's box (0 to 1.5 times the largest cell) it finds
  them; the comparison uses that box.
- On a three-way table with no zero-restricted controlled rounding (statrecon: CP-SAT's
  INFEASIBLE, exit 2), the rounder finds none either ("finding an output pattern of the
  zero-restricted CRP" ends without one) and goes on to the *extended* problem, where a
  multiple may move by a base: it publishes a true 0 as 10. statrecon keeps multiples as
  they are and says so instead.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import load_peer

from statrecon.runs.rounding import RoundOptions, round_tables
from statrecon.tables import TableSet
from statrecon.tables.frames import table_from_frame
from statrecon.tables.rounding import is_adjacent
from statrecon.tables.tauargus import write_tab

BASE = 10


def _tables(shape: tuple[int, ...], values: list[int]) -> TableSet:
    names = [f"v{i}" for i in range(len(shape))]
    rows = [dict(zip(names, (f"c{k}" for k in combo), strict=True)) | {"n": v}
            for combo, v in zip(itertools.product(*map(range, shape)), values, strict=True)]
    return TableSet((table_from_frame(pd.DataFrame(rows), names, "n", name="t"),))


def _tau_files(tables: TableSet, folder: Path) -> tuple[Path, Path]:
    """The table as tau-Argus reads it: codes; the count as a numeric response; the count
    again as the frequency (statrecon's .tab of a count table declares it a frequency only,
    which pytauargus takes for no response)."""
    tab = folder / "t.tab"
    write_tab(tables.tables[0], tab)
    lines = [line.split(";") for line in tab.read_text().splitlines()]
    width = len(tables.tables[0].variables)
    tab.write_text("".join(";".join(f[:width]) + f";{f[width]};{f[width]}\n" for f in lines))
    rda = tab.with_suffix(".rda")
    text = rda.read_text()
    rda.write_text(text[:text.index("n\n")] + "n\n    <NUMERIC>\nf\n    <FREQUENCY>\n")
    return tab, rda


def _round_in_tau_argus(tab: str, rda: str, explanatory: list[str], base: int, box: str,
                        out: str) -> None:
    """In a process of its own (the native engine may crash): RND on the table, every cell's
    codes, value and rounded value, and the rounder's words, to ``out`` as JSON."""
    log = os.open(out + ".log", os.O_WRONLY | os.O_CREAT)
    os.dup2(log, 1)
    peer = load_peer("tauargus")
    table = peer.TauTable(tab=Path(tab), rda=Path(rda), explanatory=tuple(explanatory),
                          response="n", additivity=0)
    with peer._scratch() as tmp:
        arb = tmp / "round.arb"
        arb.write_text(table.batch_text(f"RND(1,{base})"))
        command = next(c for c in peer._batch_module().parse_batch(arb)
                       if type(c).__name__ == "Suppress")
        engine, _seconds = peer._read(table, tmp)
        if box == "tau-argus":  # tau-Argus 4.1's box; the base's minimum as tau-Argus's
            least = engine._min_round_base(0)
            _low, high = engine._table_cell_bounds(0)
            engine._min_round_base = lambda tab: least
            engine._table_cell_bounds = lambda tab: (0.0, 1.5 * high)
        engine.suppress(command)
        tau, meta = engine._tau, engine.metadata
        codes = peer._code_lists(tau, meta, [meta.index_of(v) for v in explanatory])
        cells = []
        for combo in itertools.product(*[range(len(c)) for c in codes]):
            got = tau.get_table_cell(0, list(combo), 0)
            cells.append([[codes[k][i][0] for k, i in enumerate(combo)], got[1], got[2]])
    os.fsync(1)
    Path(out).write_text(json.dumps(cells))


def _tau_argus(tables: TableSet, folder: Path, box: str = "tau-argus"
               ) -> tuple[dict[tuple[str, ...], tuple[float, float]], str]:
    """tau-Argus's rounding of ``tables`` by the codes of each cell, and its log."""
    pytest.importorskip("pytauargus", exc_type=ImportError)
    load_peer("tauargus")
    tab, rda = _tau_files(tables, folder)
    out = folder / "tau.json"
    process = multiprocessing.get_context("forkserver").Process(
        target=_round_in_tau_argus,
        args=(str(tab), str(rda), list(tables.tables[0].variables), BASE, box, str(out)))
    process.start()
    process.join(300)
    assert process.exitcode == 0, f"pytauargus ended with {process.exitcode}"
    cells = {tuple(codes): (value, rounded) for codes, value, rounded in
             json.loads(out.read_text())}
    return cells, Path(str(out) + ".log").read_text(errors="replace")


def _by_codes(tables: TableSet, rounded: tuple[Fraction, ...]) -> dict[tuple[str, ...],
                                                                      Fraction]:
    table = tables.tables[0]
    return {tuple(c for _, c in cell.codes): rounded[tables.column(table.key(cell))]
            for cell in table.cells}


def _generated(seed: int, shape: tuple[int, ...]) -> TableSet:
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    while True:
        values = [int(v) for v in rng.integers(0, 15, size)]
        if sum(values) <= 100:  # tau-Argus allows base 10 up to 100
            return _tables(shape, values)


@pytest.mark.parametrize(("seed", "shape"), [(1, (3, 4)), (3, (4, 5)), (4, (2, 2, 3)),
                                             (5, (2, 3, 3))])
def test_tau_argus_reaches_the_least_change_statrecon_proves(tmp_path: Path, seed: int,
                                                             shape: tuple[int, ...]) -> None:
    tables = _generated(seed, shape)
    ours = round_tables(tables, RoundOptions(BASE, "controlled"))
    theirs, log = _tau_argus(tables, tmp_path)
    if ours.status == "infeasible":
        assert "NO OUTPUT PATTERN EXISTS" in log
        return
    assert ours.status == "optimal" and ours.rounded is not None
    assert "SOLUTION" in log, log
    mine = _by_codes(tables, ours.rounded)
    assert set(mine) == set(theirs)
    values = {codes: Fraction(value) for codes, (value, _) in theirs.items()}
    rounded = [Fraction(theirs[codes][1]) for codes in sorted(theirs)]
    truth = [values[codes] for codes in sorted(theirs)]
    assert all(is_adjacent(v, r, BASE) for v, r in zip(truth, rounded, strict=True))
    by_key = {tables.tables[0].key(cell): Fraction(theirs[tuple(c for _, c in cell.codes)][1])
              for cell in tables.tables[0].cells}
    order = tables.keys()
    tables.equations().check([by_key[k] for k in order])
    assert sum(abs(r - v) for r, v in zip(rounded, truth, strict=True)) == sum(
        abs(mine[codes] - values[codes]) for codes in theirs)


def test_three_fives_have_no_zero_restricted_rounding_in_either(tmp_path: Path) -> None:
    """Three cells of 5 whose pairs make margins of 10 (which must stay 10): exactly one of
    each pair would round up, which three cells cannot do."""
    tables = _tables((2, 2, 2), [0, 0, 0, 5, 0, 5, 5, 0])
    assert round_tables(tables, RoundOptions(BASE, "controlled")).status == "infeasible"
    theirs, log = _tau_argus(tables, tmp_path)
    zero_restricted, extended = log.split("extended CRP", 1)
    assert "SOLUTION" not in zero_restricted and "SOLUTION" in extended
    moved = [codes for codes, (value, rounded) in theirs.items()
             if value % BASE == 0 and rounded != value]
    assert moved == [("c1", "c1", "c1")] and theirs[moved[0]] == (0.0, 10.0)


def test_pytauargus_own_box_keeps_the_rounder_from_a_rounding_that_exists(
        tmp_path: Path) -> None:
    """A 2-way table (always roundable: statrecon finds the optimum; the rounder too with
    tau-Argus 4.1's box, distance 48) for which the rounder, given pytauargus's box
    (smallest to largest cell), finds no pattern."""
    tables = _tables((3, 4), [6, 6, 9, 11, 1, 2, 10, 11, 3, 4, 10, 5])
    assert round_tables(tables, RoundOptions(BASE, "controlled")).status == "optimal"
    _, log = _tau_argus(tables, tmp_path, box="pytauargus")
    assert "NO OUTPUT PATTERN EXISTS" in log
