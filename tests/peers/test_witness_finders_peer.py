"""The witness finders on a real linked table (easySdcTable's z3, two linked tables, zeros
protected, maxN = 10) under statrecon's Gaussian pattern: LP vertices there fall off the
lattice for some primary cells, the least-change moves prove those, and every witness
re-checks exactly as a completion of the table (``check_cell``)."""

from __future__ import annotations

from dataclasses import replace

from conftest import load_peer

from statrecon.engines.intervals import check_cell
from statrecon.engines.intervals.moves import move
from statrecon.engines.intervals.reach import protected_audit, reach
from statrecon.engines.intervals.tables import problem_from_tables
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.suppression import ProtectOptions, prepare_run
from statrecon.engines.suppression.fast import fast
from statrecon.engines.suppression.gauss import gauss_pattern
from statrecon.engines.suppression.run import suppress_order
from statrecon.tables import CellStatus

peer = load_peer("easysdctable")


def test_moves_prove_what_the_vertices_leave_and_every_witness_checks() -> None:
    tables = peer.table_set("z3", True, True, 10)
    p = problem_from_tables(tables)
    candidates = [c.status in (CellStatus.SAFE, CellStatus.SECONDARY) and c.value > 0
                  for c in tables.cells()]
    run = prepare_run(p, candidates, None, ProtectOptions(time_limit=None))
    fixed = [j for j in range(p.n_cells) if not p.hidden[j] and not run.candidates[j]]
    secondary, _ = gauss_pattern(p.matrix, run.primaries, fixed,
                                 list(reversed(suppress_order(run))))
    prep = run.oracle.prepared(frozenset((*run.primaries, *secondary)))
    reached = reach(prep, run.primaries, Deadline.after(None))
    by_vertices = {j for j, r in reached.items() if r.met()}
    move(prep, reached, Deadline.after(None))
    by_moves = {j for j, r in reached.items() if r.met()} - by_vertices
    assert len(by_moves) >= 10, (len(by_vertices), len(by_moves), len(reached))
    for j in sorted(by_vertices | by_moves):
        audit = protected_audit(prep, reached[j])
        assert check_cell(prep.problem, audit) == [], audit.name


def test_protect_prunes_its_own_pattern_on_z3_and_every_audit_checks() -> None:
    """easySdcTable's z3 (not linked, maxN = 2): the repair loop's pattern has cells no
    witness needs (with zeros as candidates, as in GaussSuppression); pruning publishes them
    and the pattern stays protected."""
    tables = peer.table_set("z3", False, False, 2)
    p = problem_from_tables(tables)
    candidates = [c.status is CellStatus.SAFE for c in tables.cells()]  # zeros too
    # the fast method itself: protect()'s portfolio may take another order when a run is
    # quick, which would compare two different patterns
    kept = fast(prepare_run(p, candidates, None, ProtectOptions(prune=False)))
    pruned = fast(prepare_run(p, candidates, None, ProtectOptions(prune=True)))
    assert kept.status == pruned.status == "feasible"
    assert "published again" not in kept.note
    assert set(pruned.secondary) < set(kept.secondary)
    gone = len(kept.secondary) - len(pruned.secondary)
    assert gone >= 10 and f"{gone} secondary cells were published again" in pruned.note
    final = replace(p, hidden=pruned.hidden)
    assert len(pruned.audit.cells) == sum(p.hidden)
    for a in pruned.audit.cells:
        assert a.verdict == "protected" and check_cell(final, a) == [], a.name
