"""The fast method against GaussSuppression on easySdcTable's z3 rows (the 800- and 900-cell
tables; the sosialFiktiv rows take 2-22 s each and live in ``make bench``): on every row it
suppresses no more cells than GaussSuppression did in easySdcTable's comparison, and every
primary cell of the returned pattern is protected under the integer audit. Among them is the
row (unlinked, protectZeros, maxN = 2) that needed the Gaussian pass to guard sums of zeros.
Times are not asserted: the R ones come from another machine (BENCHMARKS.md)."""

from __future__ import annotations

import itertools

import pytest
from conftest import load_peer

from statrecon.engines.intervals.tables import problem_from_tables
from statrecon.engines.suppression import ProtectOptions, protect
from statrecon.tables import CellStatus

peer = load_peer("easysdctable")


@pytest.mark.parametrize(("linked", "zeros", "max_n"),
                         list(itertools.product((False, True), (False, True), (2, 10))))
def test_fast_protect_suppresses_no_more_than_gausssuppression_on_z3(
        linked: bool, zeros: bool, max_n: int) -> None:
    rows = peer.load_comparison()
    gauss = rows[(rows["table"] == "z3") & (rows["linked"] == linked)
                 & (rows["protectZeros"] == zeros) & (rows["maxN"] == max_n)
                 & (rows["method"] == "Gauss")].iloc[0]
    tables = peer.table_set("z3", linked, zeros, max_n)
    cells = tables.cells()
    candidates = tuple(c.status is CellStatus.SAFE for c in cells)  # zeros included
    result = protect(problem_from_tables(tables), candidates=candidates,
                     options=ProtectOptions(time_limit=None))
    primaries = {j for j, c in enumerate(cells) if c.status is CellStatus.PRIMARY}
    assert result.status == "feasible"
    assert {a.cell for a in result.audit.cells} == primaries
    assert all(a.verdict == "protected" for a in result.audit.cells)
    assert sum(result.hidden) <= int(gauss["suppressed"])
