"""Audit of suppressed cells in statistical tables: for each suppressed cell, the least and
greatest value it can take given the published cells, the equations of the table and the
a-priori bounds, by LP (HiGHS) and over integer completions (CP-SAT), each bound proven in
exact rationals or reported unknown.

A pure engine over plain arrays (``IntervalProblem``); the table model that builds them is
``statrecon.tables``, and ``problem_from_tables`` (:mod:`.tables`) turns a ``TableSet`` into
one. ``prepare`` once, then ``audit`` or, in parallel, ``audit_cell`` per cell
(:mod:`.audit_cells`). ``check_cell`` re-checks a cell's certificates from the problem alone.
"""

from statrecon.engines.intervals.audit_cells import (
    DEFAULT_TIME_LIMIT,
    AuditOptions,
    audit,
    audit_cell,
)
from statrecon.engines.intervals.check import check_bound, check_cell
from statrecon.engines.intervals.problem import IntervalProblem, Prepared, check_problem, prepare
from statrecon.engines.intervals.results import (
    Attack,
    AuditResult,
    Bound,
    CellAudit,
    Interval,
    Verdict,
    verdict,
)
from statrecon.engines.intervals.tables import APRIORI, Apriori, problem_from_tables

__all__ = ["APRIORI", "DEFAULT_TIME_LIMIT", "Apriori", "Attack", "AuditOptions", "AuditResult",
           "Bound", "CellAudit", "Interval", "IntervalProblem", "Prepared", "Verdict", "audit",
           "audit_cell", "check_bound", "check_cell", "check_problem", "prepare",
           "problem_from_tables", "verdict"]
