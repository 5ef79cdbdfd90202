"""Rounding of tables to a base (``tables round``): every cell of the tables (linked: a cell
in two tables is one cell, rounded once) to a multiple of the base next to it, by one of
``tables/rounding.METHODS`` (nearest and random there; controlled, which keeps the tables
adding up, by the integer programme of ``engines/suppression/rounding.py``); and the audit
of the rounded release (``audit_rounded``): what the published multiples and the true
tables' additivity prove about every true value, through the same audit of cells known
within sets as cell key perturbation (``runs/known_cells.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from statrecon.engines.intervals import AuditOptions
from statrecon.engines.suppression import ControlledRounding, RoundingProblem, controlled_round
from statrecon.errors import check_count, check_option, check_time_limit
from statrecon.runs.known_cells import KnownCellsAudit, audit_known_cells
from statrecon.tables import TableSet
from statrecon.tables.rounding import (
    KNOWLEDGE,
    METHODS,
    Knowledge,
    Method,
    check_values,
    possible,
    round_nearest,
    round_random,
)

DEFAULT_TIME_LIMIT = 60.0  # seconds for the controlled rounding's integer programme
# CP-SAT's search workers for it: a 40 x 40 x 40 table (68,921 cells) gets a rounding within
# 120 s on two cores with 8, none with 1 (nor 30 x 30 x 30)
DEFAULT_WORKERS = 8
RoundStatus = Literal["rounded", "optimal", "feasible", "infeasible", "unknown"]


@dataclass(frozen=True)
class RoundOptions:
    """``base``: a whole number >= 2 (default 5, as ONS rounds); ``method``:
    :data:`tables.rounding.METHODS`; ``seed``: random rounding's draws (required there,
    refused elsewhere); ``time_limit``: seconds for the controlled rounding's integer
    programme (None: no limit); ``knowledge``: what the attacker is assumed to know of the
    rounding (:data:`tables.rounding.KNOWLEDGE`), which the audit uses and every output
    states; ``workers``: CP-SAT's search workers for controlled rounding (8, its portfolio:
    large three-way tables get a rounding one worker does not find; 1: the same rounding on
    every run)."""

    base: int = 5
    method: Method = "nearest"
    seed: int | None = None
    time_limit: float | None = DEFAULT_TIME_LIMIT
    knowledge: Knowledge = "method"
    workers: int = DEFAULT_WORKERS

    def __post_init__(self) -> None:
        check_option(self, "base", isinstance(self.base, int) and not isinstance(
            self.base, bool) and self.base >= 2, "a whole number of at least 2")
        check_option(self, "method", self.method in METHODS, f"one of {', '.join(METHODS)}")
        check_option(self, "knowledge", self.knowledge in KNOWLEDGE,
                     f"one of {', '.join(KNOWLEDGE)}")
        check_time_limit(self)
        check_count(self, "workers")
        seeded = self.seed is not None and not isinstance(self.seed, bool) and isinstance(
            self.seed, int) and self.seed >= 0
        check_option(self, "seed", seeded if self.method == "random" else self.seed is None,
                     "random rounding needs a seed (a whole number >= 0), the other methods "
                     "none")


@dataclass(frozen=True)
class RoundRun:
    """The true tables, each cell's rounded value in ``tables.keys()`` order (None when
    controlled rounding found none: ``status`` infeasible or unknown), and for controlled
    rounding the engine's answer (its status, change, and the equations that admit no
    rounding when infeasible)."""

    tables: TableSet
    options: RoundOptions
    status: RoundStatus
    rounded: tuple[Fraction, ...] | None
    controlled: ControlledRounding | None
    elapsed_s: float

    @property
    def written(self) -> bool:
        return self.rounded is not None

    @property
    def change(self) -> Fraction | None:
        """The total change ``sum |r - x|`` over the distinct cells."""
        if self.rounded is None:
            return None
        return sum((abs(r - v) for r, v in zip(self.rounded, self.tables.values(),
                                              strict=True)), Fraction(0))

    @property
    def scale(self) -> int:
        """Values times this are whole numbers: the table's lattice."""
        return 10 ** self.tables.decimals


def round_tables(tables: TableSet, options: RoundOptions) -> RoundRun:
    """Every distinct cell of ``tables`` rounded by ``options.method`` (module docstring)."""
    start = time.perf_counter()
    values = tables.values()
    check_values(values, tables.cell_names())
    scale = 10 ** tables.decimals
    if options.method == "nearest":
        rounded: tuple[Fraction, ...] | None = round_nearest(values, options.base)
        return RoundRun(tables, options, "rounded", rounded, None, time.perf_counter() - start)
    if options.method == "random":
        assert options.seed is not None
        rounded = round_random(values, options.base, options.seed, scale)
        return RoundRun(tables, options, "rounded", rounded, None, time.perf_counter() - start)
    additivity = tables.equations()
    problem = RoundingProblem(additivity.matrix.tocsr(), values, options.base, scale,
                              additivity.names)
    answer = controlled_round(problem, options.time_limit, workers=options.workers)
    return RoundRun(tables, options, answer.status, answer.rounded, answer,
                    time.perf_counter() - start)


def cell_bounds(run: RoundRun, knowledge: Knowledge) -> tuple[tuple[Fraction, Fraction], ...]:
    """Each cell's a-priori interval: the true values its method could round to the
    published multiple, under what the attacker knows."""
    assert run.rounded is not None
    return tuple(possible(r, run.options.base, run.options.method, knowledge, run.scale)
                 for r in run.rounded)


def audit_rounded(run: RoundRun, options: AuditOptions | None = None,
                  knowledge: Knowledge | None = None) -> KnownCellsAudit:
    """The proven intervals of every true value of a rounded release, the attacker knowing
    ``knowledge`` (default: the run's): every cell within its rounded value's set, the true
    tables adding up (``runs/known_cells.py``)."""
    if run.rounded is None:
        raise ValueError("nothing was rounded: no release to audit")
    knows = knowledge or run.options.knowledge
    return audit_known_cells(run.tables, cell_bounds(run, knows), knows, options)
