"""The human view of a reconstruction result (Rich)."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from statrecon.report import safe_text
from statrecon.result import ReconstructionResult, Row

_STYLE = {"unique": "bold red", "multiple": "bold yellow", "infeasible": "bold magenta",
          "unknown": "bold blue", "estimated": "bold cyan"}


def compress(values: list[Any]) -> str:
    """[1, 2, 3, 7, 9, 10] -> '1–3, 7, 9–10'; categoricals are listed as they are."""
    if not values or not all(isinstance(v, int) for v in values):
        return ", ".join(map(str, values))
    parts, start, prev = [], values[0], values[0]
    for v in [*values[1:], None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        parts.append(str(start) if start == prev else f"{start}–{prev}")
        if v is not None:
            start = prev = v
    return ", ".join(parts)


def headline(result: ReconstructionResult, n_stats: int) -> Text:
    if result.noise.mode == "ml":
        return _ml_headline(result)
    s = result.status
    if s == "unique":
        msg = f"UNIQUE: exactly one dataset is consistent with the {n_stats} statistics."
    elif s == "multiple" and result.complete:
        msg = f"MULTIPLE: exactly {result.solution_count} datasets are consistent."
    elif s == "multiple":
        msg = (f"MULTIPLE: at least {result.solution_count} datasets are consistent "
               "(enumeration stopped at the limit or the time limit).")
    elif s == "infeasible":
        msg = "INFEASIBLE: no dataset is consistent with these statistics."
    else:
        msg = ("UNKNOWN: the time limit ran out before the solver could decide; "
               "nothing is claimed.")
    return Text(msg, style=_STYLE[s])


def _ml_headline(result: ReconstructionResult) -> Text:
    s = result.status
    if s == "estimated":
        msg = ("ESTIMATED: a most likely dataset given the noisy answers (CP-SAT proved none is "
               "more likely; another may be as likely, and the truth may differ).")
    elif s == "infeasible":
        msg = "INFEASIBLE: no dataset fits the exact statistics (and bounded noise)."
    elif result.solutions:
        msg = ("UNKNOWN: the time limit ran out before the most likely dataset was proven; the "
               "best found so far is shown, an estimate.")
    else:
        msg = "UNKNOWN: the time limit ran out before any dataset was found; nothing is claimed."
    return Text(msg, style=_STYLE[s])


def condition_text(result: ReconstructionResult) -> Text | None:
    """The event every claim rests on when noisy answers are read as bounds."""
    noise = result.noise
    if noise.condition is None:
        return None
    chance = ("" if noise.event_probability is None else
              f" (probability {noise.event_probability:.3g} if the noises are independent)")
    return Text(f"Every claim here holds only for the event that {noise.condition}{chance}; "
                f"noisy statistics read as bounds: {safe_text(', '.join(noise.statistics))}.",
                style="yellow")


def rows_table(title: str, columns: tuple[str, ...], rows: list[Row],
               counts: list[int] | None = None) -> Group:
    table = Table(show_edge=False)
    for c in columns:
        table.add_column(Text(safe_text(c)), justify="right")
    if counts is not None:
        table.add_column("times", justify="right")
    for i, row in enumerate(rows):
        cells = [Text(safe_text(row[c])) for c in columns]  # never markup, no escapes
        if counts is not None:
            cells.append(Text(str(counts[i])))
        table.add_row(*cells)
    return Group(Text(title, style="bold"), table)


def cells_table(result: ReconstructionResult) -> Group:
    """Per identifiable public row: the unknown values every consistent dataset agrees on."""
    by_row: dict[tuple[Any, ...], dict[str, Any]] = {}
    known: list[str] = list(result.certain_cells[0].row)
    for cell in result.certain_cells:
        key = tuple(cell.row.values())
        by_row.setdefault(key, {}).update(cell.row)
        by_row[key][cell.column] = cell.value
    unknown = [c for c in result.columns if c not in known]
    table = Table(show_edge=False)
    for c in [*known, *unknown]:
        table.add_column(Text(safe_text(c)), justify="right")
    for row in by_row.values():
        table.add_row(*(Text(safe_text(row.get(c, "·"))) for c in [*known, *unknown]))
    return Group(Text("Values proven for individual public rows (· = not determined)",
                      style="bold"), table)


def render(result: ReconstructionResult, console: Console, *, n_stats: int,
           show_all: bool = False) -> None:
    console.print(headline(result, n_stats))
    condition = condition_text(result)
    if condition is not None:
        console.print(condition)
    if result.noise.mode == "ml":
        _render_ml(result, console)
        return
    if result.status == "infeasible":
        label = "A smallest conflicting set" if result.conflict_minimal else "A conflicting set"
        console.print(Panel(Text(safe_text(", ".join(result.conflict)) or "(none found)"),
                            title=f"{label}: these cannot all hold", expand=False))
        return
    if result.status == "unknown" and not result.solutions:
        return
    _print_datasets(result, console, show_all)
    if result.status != "unique" and result.certain_cells:
        console.print(cells_table(result))
    if result.status != "unique":
        _print_proven(result, console)
    _print_notes(result, console)


def _render_ml(result: ReconstructionResult, console: Console) -> None:
    """A most likely dataset, its score, and that it is an estimate."""
    noise = result.noise
    if result.status == "infeasible":
        label = "A smallest conflicting set" if result.conflict_minimal else "A conflicting set"
        console.print(Panel(Text(safe_text(", ".join(result.conflict)) or "(none found)"),
                            title=f"{label}: these cannot all hold", expand=False))
        return
    if result.solutions:
        console.print(rows_table("A most likely dataset (an estimate, not a proof)",
                                 result.columns, result.solutions[0]))
    notes = [f"noisy statistics weighed by their likelihood: "
             f"{safe_text(', '.join(noise.statistics)) or '(none)'}"]
    if noise.objective is not None:
        proven = ("proven optimal" if noise.optimal else
                  f"best proven lower bound {noise.objective_bound:.6g}")
        notes.append(f"negative log-likelihood {noise.objective:.6g} (up to a constant; "
                     f"{proven})")
    notes.append(f"{result.elapsed_s:.2f} s")
    console.print(Group(*(Text(n, style="dim") for n in notes)))


def _print_datasets(result: ReconstructionResult, console: Console, show_all: bool) -> None:
    """The unique table, every dataset found (``show_all``), or one of several."""
    if result.status == "unique":
        console.print(rows_table("The reconstructed table", result.columns,
                                 result.solutions[0]))
    elif show_all:
        for i, sol in enumerate(result.solutions, 1):
            console.print(rows_table(f"Dataset {i}", result.columns, sol))
    elif result.solutions:
        console.print(rows_table("One consistent dataset (of several)", result.columns,
                                 result.solutions[0]))


def _print_proven(result: ReconstructionResult, console: Console) -> None:
    """What holds in every consistent dataset when there are several: rows and values."""
    if result.certain_rows:
        console.print(rows_table(
            "Rows present in every consistent dataset (proven)", result.columns,
            [c.row for c in result.certain_rows],
            [c.multiplicity for c in result.certain_rows]))
    else:
        console.print("No row is present in every consistent dataset.")
    console.print(Text("Values each unknown column can take (each proven possible)",
                       style="bold"))
    console.print(values_table(result))
    if not result.certain_complete:
        console.print(Text("The time limit cut the proofs short: more rows may be certain "
                           "and more values possible than listed.", style="yellow"))


def values_table(result: ReconstructionResult) -> Table:
    """Each unknown column's proven possible values (a range when too many to list)."""
    values = Table(show_edge=False)
    values.add_column("column")
    values.add_column("possible values")
    for c, vs in result.column_values.items():
        if c in result.column_ranges:
            lo, hi = result.column_ranges[c]
            shown = f"{lo}..{hi} (smallest and largest proven; too many values to list)"
        else:
            shown = compress(vs)
        values.add_row(Text(safe_text(c)), Text(safe_text(shown)))
    return values


def _print_notes(result: ReconstructionResult, console: Console) -> None:
    notes = []
    if result.ignored:
        notes.append("noisy statistics ignored by the exact engine: "
                     + safe_text(", ".join(result.ignored)))
    notes.append(f"{result.elapsed_s:.2f} s")
    console.print(Group(*(Text(n, style="dim") for n in notes)))
