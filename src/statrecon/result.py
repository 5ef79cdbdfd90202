"""Results of a reconstruction: what is proven, kept apart from anything estimated."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# estimated: a most likely dataset (noisy answers weighed by their likelihood), never a proof
Status = Literal["unique", "multiple", "infeasible", "unknown", "estimated"]
Row = dict[str, Any]


def plain(value: Any) -> Any:
    """A value fit for JSON and Python callers: numpy scalars become Python ones, NaN None."""
    if value is None:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


# ------------------------------------------------------------ results drawn in a notebook

# Jupyter shows a result through its ``_repr_html_``; these draw the tables those views share.
# A proven cell is green and bold, and says so in its title; nothing else is coloured.
HTML_STYLE = """<style>
.statrecon-view table { border-collapse: collapse; font-size: 0.85rem; margin: 0.3rem 0; }
.statrecon-view th, .statrecon-view td { border: 1px solid #bbb; padding: 0.15rem 0.5rem;
                                         text-align: right; }
.statrecon-view th { background: #eee; }
.statrecon-view td.proven { background: #c8ecd0; font-weight: bold; }
.statrecon-view .note { color: #555; font-size: 0.85rem; }
</style>"""
MAX_HTML_ROWS = 200  # rows drawn; a note says how many more there are


def html_cell(value: Any) -> str:
    """A value as table text: None as an empty cell, numbers as Python prints them."""
    return "" if value is None else html.escape(str(plain(value)))


def html_table(header: Sequence[str], rows: Sequence[Sequence[Any]],
               proven: Sequence[Sequence[bool]] | None = None) -> str:
    """An HTML table of ``rows`` under ``header``; ``proven[i][j]`` marks cell (i, j) as
    proven (green, bold, titled so). At most ``MAX_HTML_ROWS`` rows, then a note."""
    e = html.escape
    head = "".join(f"<th>{e(str(h))}</th>" for h in header)
    body = []
    for i, row in enumerate(rows[:MAX_HTML_ROWS]):
        cells = []
        for j, value in enumerate(row):
            mark = proven is not None and proven[i][j]
            cells.append("<td class=proven title='proven: the same in every consistent "
                         f"dataset'>{html_cell(value)}</td>" if mark
                         else f"<td>{html_cell(value)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    more = len(rows) - MAX_HTML_ROWS
    note = f"<p class=note>{more:,} more rows not shown.</p>" if more > 0 else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{note}"


def html_view(title: str, *parts: str) -> str:
    """A result's view: its title (escaped), then the parts (HTML already)."""
    return (f"{HTML_STYLE}<div class=statrecon-view><p><b>{html.escape(title)}</b></p>"
            f"{''.join(parts)}</div>")


def html_note(text: str) -> str:
    return f"<p class=note>{html.escape(text)}</p>"


@dataclass(frozen=True)
class CertainRow:
    """A row present in every consistent dataset, at least ``multiplicity`` times (proven)."""

    row: Row
    multiplicity: int


@dataclass(frozen=True)
class CertainCell:
    """An unknown value of an identifiable public row (its known values are unique),
    equal in every consistent dataset (proven)."""

    row: Row  # the known columns that identify the row
    column: str
    value: Any


@dataclass(frozen=True)
class Route:
    """Which engine answered and why: ``statrecon.reconstruct`` chooses under ``auto``, and a
    reader must know whether a "proven" came from CP-SAT or from exact linear algebra."""

    engine: Literal["exact", "linear"]
    method: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"engine": self.engine, "method": self.method, "reason": self.reason}


@dataclass(frozen=True)
class NoiseUse:
    """What the exact engine did with the noisy statistics (``statistics``).

    ``ignore``: left out; the claims hold for every dataset the other statistics allow.
    ``bounds``: each answer read as ± ``k`` standard deviations: every claim holds *on the
    event that every noise lies within k sd* (``event_probability`` of it if the noises are
    independent), not unconditionally. ``ml``: the dataset maximising the likelihood of the
    noisy answers among those the exact statistics allow; ``objective`` is its negative
    log-likelihood (up to a constant), ``optimal`` True when CP-SAT proved no dataset scores
    lower (``objective_bound``: the best lower bound proven).
    """

    mode: Literal["ignore", "bounds", "ml"]
    statistics: tuple[str, ...] = ()
    k: float | None = None
    event_probability: float | None = None
    objective: float | None = None
    objective_bound: float | None = None
    optimal: bool = False

    @property
    def condition(self) -> str | None:
        """The event the claims are conditional on (None: no condition)."""
        if self.mode == "bounds" and self.statistics and (
                self.event_probability is None or self.event_probability < 1):
            return f"every noise lies within {self.k:g} standard deviations"
        return None

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "statistics": list(self.statistics), "k": self.k,
                "claims_hold": self.claims_hold(), "event_probability": self.event_probability,
                "objective": self.objective, "objective_bound": self.objective_bound,
                "optimal": self.optimal}

    def claims_hold(self) -> str:
        """In words: when what is called unique/certain is true."""
        if self.mode == "ml":
            return "never proven: the result is a most likely dataset, an estimate"
        condition = self.condition
        return "for the event that " + condition if condition else "always"


@dataclass(frozen=True)
class ReconstructionResult:
    """Everything the exact engine proved about the hidden table.

    ``solutions`` are datasets (lists of rows) consistent with the release. ``complete`` says
    the enumeration finished, so ``solution_count`` is exact. ``certain_rows`` and
    ``column_values`` are proven facts; ``certain_complete`` is False when a time limit cut the
    proofs short (then more rows may be certain and more values possible than listed proven).
    """

    status: Status
    columns: tuple[str, ...]
    solution_count: int = 0
    complete: bool = False
    solutions: list[list[Row]] = field(default_factory=list)
    certain_rows: list[CertainRow] = field(default_factory=list)
    certain_cells: list[CertainCell] = field(default_factory=list)
    column_values: dict[str, list[Any]] = field(default_factory=dict)
    # Columns whose domain is too wide to list every possible value: their proven smallest and
    # largest value (``column_values`` then lists only values seen in proofs).
    column_ranges: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    certain_complete: bool = False
    conflict: list[str] = field(default_factory=list)
    conflict_minimal: bool = False
    ignored: list[str] = field(default_factory=list)
    records: tuple[int, int] = (0, 0)
    elapsed_s: float = 0.0
    method: str = "exact"
    route: Route | None = None
    noise: NoiseUse = field(default_factory=lambda: NoiseUse("ignore"))

    def to_json(self) -> dict[str, Any]:
        """The stable JSON contract of ``statrecon reconstruct --json``."""
        return {
            "status": self.status,
            "method": self.method,
            "solution_count": self.solution_count,
            "complete": self.complete,
            "solutions": self.solutions,
            "certain_rows": [
                {"row": c.row, "multiplicity": c.multiplicity} for c in self.certain_rows
            ],
            "certain_cells": [
                {"row": c.row, "column": c.column, "value": c.value} for c in self.certain_cells
            ],
            "column_values": self.column_values,
            "column_ranges": {c: list(r) for c, r in self.column_ranges.items()},
            "certain_complete": self.certain_complete,
            "conflict": self.conflict,
            "conflict_minimal": self.conflict_minimal,
            "ignored_statistics": self.ignored,
            "route": None if self.route is None else self.route.to_json(),
            "noise": self.noise.to_json(),
            "elapsed_s": round(self.elapsed_s, 4),
        }

    def _repr_html_(self) -> str:
        """Jupyter's view: the status in words, then a consistent dataset with every proven
        cell marked (a row in every dataset, a cell of a public row every dataset agrees on,
        a column with one possible value), or the conflict of an infeasible release."""
        title = f"{self.status.upper()}: {self._status_words()}"
        if self.status == "infeasible":
            return html_view(title, html_note("Statistics that cannot hold together: "
                                              + ", ".join(self.conflict)))
        parts = []
        if self.solutions:
            rows = self.solutions[0]
            marks = self._proven_marks(rows)
            parts.append(html_table(self.columns,
                                    [[r.get(c) for c in self.columns] for r in rows], marks))
            parts.append(html_note(self._table_words()))
        if self.noise.condition:
            parts.append(html_note("Proven here means: for the event that "
                                   f"{self.noise.condition}."))
        if self.route is not None:
            parts.append(html_note(f"Engine: {self.route.engine} ({self.route.method}), "
                                   f"chosen by {self.route.reason}"))
        return html_view(title, *parts)

    def _status_words(self) -> str:
        count = f"{self.solution_count:,}" + ("" if self.complete else "+")
        return {
            "unique": "exactly one dataset is consistent with the release",
            "multiple": f"{count} datasets are consistent with the release",
            "infeasible": "no dataset is consistent with the release",
            "unknown": "the time limit ran out; only what is marked is proven",
            "estimated": "a most likely dataset (an estimate: nothing is proven)",
        }[self.status]

    def _table_words(self) -> str:
        if self.status == "unique":
            return "The only consistent dataset: every cell is proven."
        if self.status == "estimated":
            return "A most likely dataset; no cell is proven."
        return ("One consistent dataset; the marked cells are the same in every consistent "
                "dataset (proven), the others are not known.")

    def _proven_marks(self, rows: list[Row]) -> list[list[bool]]:
        """Which cells of ``rows`` (one consistent dataset) are proven."""
        if self.status == "estimated":
            return [[False] * len(self.columns) for _ in rows]
        if self.status == "unique" and self.complete:
            return [[True] * len(self.columns) for _ in rows]
        # a column with one possible value, once the possible values are all proven
        single = {c for c, values in self.column_values.items()
                  if len(values) == 1 and self.certain_complete}
        certain = [c.row for c in self.certain_rows]
        left = [c.multiplicity for c in self.certain_rows]  # each, as often as it is certain
        cells = {(tuple(sorted(c.row.items())), c.column) for c in self.certain_cells}
        marks = []
        for row in rows:
            proven = {c for c in self.columns if c in single}
            for i, known_row in enumerate(certain):  # a row in every consistent dataset
                if left[i] > 0 and all(row.get(k) == v for k, v in known_row.items()):
                    left[i] -= 1
                    proven |= set(known_row)
                    break
            for known, column in cells:  # a public row's cell every dataset agrees on
                if column in row and all(row.get(k) == v for k, v in known) \
                        and row[column] is not None:
                    proven.add(column)
            marks.append([c in proven for c in self.columns])
        return marks
