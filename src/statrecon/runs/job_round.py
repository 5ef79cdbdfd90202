"""A job's ``<SUPPRESS> RND(table, base, ...)`` carried out: tau-Argus's controlled rounding of
one table, by statrecon's (``engines/suppression/rounding.py``: every cell to a multiple of
the base next to it, the table still adding up, the least total change), so that a later
``<WRITETABLE>`` writes the rounded values.

What tau-Argus's batch reader does (sdcTools/tauargus ``batch.suppressBatch``) and what is
done here:

- the base must be at least tau-Argus's minimum (``computeMinRoundBase``): for a frequency
  table the minimum frequency of its ``FREQ`` rule (the holding rule's where the rules read
  holdings), otherwise the largest lower + upper protection level of a primary cell, whole
  (truncated), at least 1; below it the job stops with one line naming the ``RND``;
- the time, in minutes (tau-Argus's rounder takes minutes), bounds the integer programme,
  within what is left of ``--time-limit``;
- the stopping rule: 2 the least total change (CP-SAT's OPTIMAL), 1 the first rounding
  found (CP-SAT stops at its first solution: a rounding, not proven the least change);
- steps above 0, partitions and unit cost are not applied (the notes of
  ``tables/suppress_args.py`` say so and why).

A rounding found is checked exactly (it adds up, each cell next to its value) before it is
kept; none found (infeasible, or none within the time) stops the job: nothing is written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from statrecon.engines.suppression import ControlledRounding, RoundingProblem, controlled_round
from statrecon.errors import StatreconError
from statrecon.runs.rounding import DEFAULT_WORKERS
from statrecon.tables import CellStatus, TableSet
from statrecon.tables.job import JobTable, Suppress
from statrecon.tables.rounding import check_values


@dataclass(frozen=True)
class Rounded:
    """One table rounded by a job: its number, the base, the engine's answer (its status,
    the rounded values by cell position, the total change) and the seconds allowed."""

    table: int
    base: int
    answer: ControlledRounding
    time_limit: float

    @property
    def found(self) -> bool:
        return self.answer.rounded is not None


def min_base(jt: JobTable) -> int:
    """tau-Argus's least rounding base of a table (module docstring)."""
    rules = jt.spec.rules
    if jt.table.kind == "frequency":
        if rules is None:
            return 1
        level = rules.holding if rules.needs_holding else rules.individual
        return max(1, level.frequency.n if level.frequency is not None else 0)
    widest = max((c.protection[0] + c.protection[1] for c in jt.table.cells
                  if c.status is CellStatus.PRIMARY), default=Fraction(0))
    return max(1, math.floor(widest))


def round_job_table(jt: JobTable, step: Suppress, where: str, left: float | None
                    ) -> Rounded:
    """Table ``jt`` rounded as ``step`` (an ``RND``) says, within ``left`` seconds of the
    job's time limit (None: none)."""
    assert step.rounding is not None
    args = step.rounding
    least = min_base(jt)
    if args.base < least:
        why = ("its FREQ rule's minimum frequency" if jt.table.kind == "frequency" else
               "the largest lower + upper protection level of a primary cell")
        raise StatreconError(f"{where}: <SUPPRESS> RND: the rounding base {args.base} is too "
                             f"small for table {step.table}: tau-Argus requires at least "
                             f"{least} ({why})", where=where)
    table = jt.table
    tables = TableSet((table,))  # one table: its distinct cells are its cells, in order
    values = tables.values()
    assert len(values) == len(table.cells)
    try:
        check_values(values, tables.cell_names())
    except StatreconError as e:
        raise StatreconError(f"{where}: <SUPPRESS> RND of table {step.table}: {e}",
                             where=where) from None
    additivity = tables.equations()
    problem = RoundingProblem(additivity.matrix.tocsr(), values, args.base,
                              10 ** table.decimals, additivity.names)
    limit = args.minutes * 60.0
    if left is not None:
        limit = min(limit, left)
    answer = controlled_round(problem, limit, workers=DEFAULT_WORKERS,
                              first=args.stopping_rule == 1)
    return Rounded(step.table, args.base, answer, limit)

