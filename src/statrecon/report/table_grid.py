"""Each table of a table set drawn as a table: rows by columns of codes, nested by hierarchy,
each suppressed cell marked by its status and coloured by its audit verdict (colour and text,
with a legend). A table of more than two variables is one grid per combination of the codes
of the others (a *layer*); the page stays a reasonable size by a cap on the cells drawn, with a
note saying what was left out.

A grid shows the table as published: a suppressed cell's true value is never in it, only what
the audit proves an attacker can learn (the interval, which is the value itself when the cell
is disclosed). Pure HTML and CSS: no scripts, nothing loaded.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from statrecon.engines.intervals import CellAudit, Interval
from statrecon.tables import Cell, CellStatus, Hierarchy, Table, TableSet
from statrecon.tables.model import Key, show_code

MAX_GRID_CELLS = 10_000  # table cells drawn on one page, all grids together
MAX_COLUMNS = 60  # columns of one grid; the rest are left out with a note

# the background of a suppressed cell by its verdict; "not audited": a suppressed cell the
# audit did not look at (a protection's secondary cells). Each also says its verdict in words.
COLOURS: dict[str, str] = {
    "disclosed": "#f08080", "under-protected": "#f8c48a", "unknown": "#fbeb8c",
    "protected": "#a8ddb0", "not audited": "#d6d6d6",
}
MEANINGS: dict[str, str] = {
    "disclosed": "the attacker's interval is one value: the cell's value is known",
    "under-protected": "the interval does not cover the protection levels",
    "unknown": "an end of the interval was not proven within the time limit",
    "protected": "the proven interval covers the protection levels",
    "not audited": "suppressed, not audited here",
}
STATUS_MARK = {CellStatus.PRIMARY: "× primary", CellStatus.SECONDARY: "× secondary"}

CSS = """
.grid { overflow-x: auto; margin: 0.6rem 0 1.2rem; }
table.tg { border-collapse: collapse; font-size: 0.85rem; }
table.tg caption { text-align: left; font-weight: bold; padding: 0.2rem 0; }
table.tg th, table.tg td { border: 1px solid #bbb; padding: 0.15rem 0.45rem;
                           vertical-align: top; white-space: nowrap; }
table.tg thead th { background: #eaeaea; text-align: right; }
table.tg th.r { background: #f4f4f4; text-align: left; font-weight: normal; }
table.tg .tot, table.tg th.r.tot { font-weight: bold; }
table.tg td { text-align: right; background: #fff; }
table.tg td.e { color: #999; }
table.tg td.s { color: #111; font-weight: normal; }
table.tg td.s .st { display: block; font-size: 0.75rem; }
table.tg td.s .vd { display: block; font-weight: bold; }
table.tg td.s .iv { display: block; font-size: 0.75rem; }
.legend { display: flex; flex-wrap: wrap; gap: 0.3rem 1.2rem; font-size: 0.85rem;
          margin: 0.4rem 0; padding: 0; list-style: none; }
.legend .sw { display: inline-block; width: 1.1em; height: 1.1em; vertical-align: -0.2em;
              border: 1px solid #888; margin-right: 0.3em; }
""" + "".join(f"table.tg td.v-{_n.replace(' ', '-')}, .legend .v-{_n.replace(' ', '-')} "
              f"{{ background: {_c}; }}\n" for _n, _c in COLOURS.items())


def number_text(value: Fraction | None) -> str:
    """A number for reading: thousands separated, two decimals when not whole; ∞ for None."""
    if value is None:
        return "∞"
    if value.denominator == 1:
        return f"{int(value):,}"
    return f"{float(value):,.2f}"


def interval_text(interval: Interval | None) -> str:
    """``[a, b]`` with ``?`` for an end not proven (a time limit)."""
    if interval is None:
        return "–"
    ends = []
    for bound in (interval.lower, interval.upper):
        ends.append(number_text(bound.value) if bound.proven else "?")
    return f"[{ends[0]}, {ends[1]}]"


def verdict_class(name: str) -> str:
    """The CSS class of a verdict's colour (``v-disclosed``, ``v-not-audited``)."""
    return "v-" + name.replace(" ", "-")


@dataclass(frozen=True)
class Layout:
    """How a table is drawn: the codes of ``rows`` down, of ``columns`` across (None: one
    column of values), one grid per combination of the codes of ``layers``."""

    rows: str
    columns: str | None
    layers: tuple[str, ...]

    @classmethod
    def of(cls, table: Table) -> Layout:
        """Rows: the variable with the most codes (its hierarchy nests down the page);
        columns: the next; layers: the others, in the table's order. Ties keep the table's
        order."""
        by_size = sorted(table.variables, key=lambda v: -len(table.hierarchies[v]))
        rows = by_size[0]
        columns = by_size[1] if len(by_size) > 1 else None
        layers = tuple(v for v in table.variables if v not in (rows, columns))
        return cls(rows, columns, layers)


def legend_html() -> str:
    """The colours and marks, each said in words."""
    e = html.escape
    items = "".join(f"<li><span class='sw {verdict_class(name)}'></span><b>{e(name)}</b>: "
                    f"{e(meaning)}</li>" for name, meaning in MEANINGS.items())
    marks = ("<li>× primary / × secondary: the cell's status (suppressed); under it the "
             "verdict and the attacker's interval [least, greatest]</li>"
             "<li><b>bold</b>: a total or subtotal; rows indented by depth in the "
             "hierarchy</li><li>–: an empty cell (no contributors)</li>"
             "<li>P after a value: status protected (published, never suppressed)</li>")
    return f"<ul class=legend>{items}{marks}</ul>"


def grids_html(tables: TableSet, audits: Mapping[Key, CellAudit], *,
               max_cells: int = MAX_GRID_CELLS) -> str:
    """Every table of ``tables`` as grids; ``audits``: the audit of each suppressed cell by
    its key (a suppressed cell without one is drawn as not audited). At most ``max_cells``
    cells are drawn; what the cap leaves out is said where it was left out."""
    budget = max_cells
    parts = []
    for table in tables.tables:
        drawn, budget = _table_html(table, audits, budget, max_cells)
        parts.append(drawn)
    return "".join(parts)


def _table_html(table: Table, audits: Mapping[Key, CellAudit], budget: int,
                max_cells: int) -> tuple[str, int]:
    e = html.escape
    layout = Layout.of(table)
    h = table.hierarchies
    row_codes = h[layout.rows].codes()
    all_columns = h[layout.columns].codes() if layout.columns is not None else ("",)
    col_codes = all_columns[:MAX_COLUMNS]
    axes = (*[table.variables.index(v) for v in layout.layers],
            table.variables.index(layout.rows),
            *([table.variables.index(layout.columns)] if layout.columns is not None else []))
    grid = np.transpose(table.grid, axes)  # (layer codes..., rows[, columns])
    if layout.columns is None:
        grid = grid[..., None]
    hidden = np.array([c.status.suppressed for c in table.cells], dtype=bool)[grid]
    combos = list(itertools.product(*(h[v].codes() for v in layout.layers)))
    per_layer = len(row_codes) * len(col_codes)
    notes = []
    if len(col_codes) < len(all_columns):
        notes.append(f"only the first {len(col_codes)} of {len(all_columns)} columns are "
                     "drawn")
    chosen = list(range(len(combos)))
    if per_layer * len(combos) > budget and len(combos) > 1:
        chosen = [i for i in chosen if hidden[_layer_index(combos[i], layout, h)].any()]
        notes.append(f"{len(combos) - len(chosen)} of {len(combos)} layers hold no suppressed "
                     "cell and are not drawn")
    parts = []
    drawn_layers = 0
    for i in chosen:
        if budget < len(col_codes):
            break
        rows = min(len(row_codes), budget // len(col_codes))
        index = _layer_index(combos[i], layout, h)
        caption = ", ".join(f"{v} = {show_code(c)}" for v, c in zip(layout.layers, combos[i],
                                                                        strict=True))
        parts.append(_grid_html(table, layout, grid[index], row_codes[:rows], col_codes,
                                audits, caption))
        if rows < len(row_codes):
            parts.append(f"<p class=note>Only the first {rows} of {len(row_codes)} rows of "
                         f"this grid are drawn (the page draws at most {max_cells:,} cells; "
                         "every suppressed cell is in the list below).</p>")
        budget -= rows * len(col_codes)
        drawn_layers += 1
    if drawn_layers < len(chosen):
        notes.append(f"{len(chosen) - drawn_layers} more layers with suppressed cells are not "
                     "drawn" if layout.layers else "the grid is not drawn")
    if notes:
        notes.append(f"the page draws at most {max_cells:,} cells; every suppressed cell "
                     "is in the list below")
    shape = " × ".join(f"{len(h[v])} {v}" for v in table.variables)
    where = (f"rows: {e(layout.rows)}"
             + (f", columns: {e(layout.columns)}" if layout.columns is not None else "")
             + (f", one grid per code of {e(', '.join(layout.layers))}" if layout.layers
                else ""))
    note = f"<p class=note>Not all drawn: {e('; '.join(notes))}.</p>" if notes else ""
    head = (f"<h3>Table {e(table.name)}</h3><p class=note>{len(table.cells):,} cells "
            f"({e(shape)}); {where}.</p>")
    return head + note + "".join(parts), budget


def _layer_index(combo: Sequence[str], layout: Layout,
                 hierarchies: Mapping[str, Hierarchy]) -> tuple[int, ...]:
    return tuple(hierarchies[v].index(c) for v, c in zip(layout.layers, combo, strict=True))


def _depth(hierarchy: Hierarchy, code: str) -> int:
    return len(hierarchy.ancestors(code))


def _grid_html(table: Table, layout: Layout, positions: np.ndarray, row_codes: Sequence[str],
               col_codes: Sequence[str], audits: Mapping[Key, CellAudit],
               caption: str) -> str:
    e = html.escape
    rows_h = table.hierarchies[layout.rows]
    cols_h = table.hierarchies[layout.columns] if layout.columns is not None else None
    head = [f"<th>{e(layout.rows)}</th>"]
    for code in col_codes:
        if cols_h is None:
            head.append(f"<th>{e(table.response)}</th>")
            continue
        total = "" if cols_h.is_leaf(code) else " class=tot"
        path = " › ".join(show_code(c) for c in (*reversed(cols_h.ancestors(code)), code))
        head.append(f"<th{total} title='{e(path)}'>{e(show_code(code))}</th>")
    body = []
    for r, code in enumerate(row_codes):
        depth = _depth(rows_h, code)
        total_row = not rows_h.is_leaf(code)
        cls = f"d{depth}{' tot' if total_row else ''}"
        cells = []
        for c, col in enumerate(col_codes):
            bold = total_row or (cols_h is not None and not cols_h.is_leaf(col))
            cells.append(_cell_html(table, table.cells[int(positions[r, c])], audits, bold))
        body.append(f"<tr class='{cls}'><th class='r{' tot' if total_row else ''}' "
                    f"style='padding-left:{0.45 + 1.2 * depth:.2f}em'>{e(show_code(code))}</th>"
                    f"{''.join(cells)}</tr>")
    cap = f"<caption>{e(caption)}</caption>" if caption else ""
    return (f"<div class=grid><table class=tg data-table='{e(table.name)}'>{cap}"
            f"<thead><tr class=h>{''.join(head)}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _cell_html(table: Table, cell: Cell, audits: Mapping[Key, CellAudit], total: bool) -> str:
    """One cell: a published value, or a suppressed cell's status, verdict and interval
    (never its value)."""
    e = html.escape
    tot = " tot" if total else ""
    if not cell.status.suppressed:
        if cell.status is CellStatus.EMPTY:
            return f"<td class='e{tot}' title='{e(cell.name)}: empty'>–</td>"
        mark = " P" if cell.status is CellStatus.PROTECTED else ""
        return f"<td class='p{tot}'>{e(_value_text(cell.value, table.decimals))}{mark}</td>"
    audit = audits.get(table.key(cell))
    name = audit.verdict if audit is not None else "not audited"
    attacker = None if audit is None else (audit.integer or audit.lp)
    interval = "" if audit is None else interval_text(attacker)
    title = f"{cell.name}: {cell.status.value}, {name}"
    if audit is not None:
        title += f"; LP interval {interval_text(audit.lp)}"
        if audit.integer is not None:
            title += f", integer interval {interval_text(audit.integer)}"
    return (f"<td class='s {verdict_class(name)}' title='{e(title)}'>"
            f"<span class=st>{e(STATUS_MARK[cell.status])}</span>"
            f"<span class=vd>{e(name)}</span>"
            + (f"<span class=iv>{e(interval)}</span>" if interval else "") + "</td>")


def _value_text(value: Fraction, decimals: int) -> str:
    """A published value, exactly, with the table's decimals and thousands separated."""
    scaled = round(value * 10**decimals)  # published values are on the table's lattice
    whole, part = divmod(abs(scaled), 10**decimals)
    return ("-" if scaled < 0 else "") + f"{whole:,}" + (f".{part:0{decimals}d}" if decimals
                                                         else "")
