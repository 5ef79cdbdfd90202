"""tau-Argus's a-priori files (``.hst``): what the publisher changes in a table before its
secondary suppression, cell by cell (manual 4.1, section 5.6; ``<APRIORI>`` in a batch file).

Each line names a cell by its codes (one per explanatory variable, in the table's order; a
blank code or the total code is the total), then a command and its values, separated by the
separator the ``<APRIORI>`` command gives (``;`` by default)::

    Nr;4;U          the cell becomes unsafe (primary, the manual safety margin MAN)
    Zd;6;P          protected: published, never a secondary cell
    Nr;5;S          safe (a primary cell published after all)
    Nr;7;M          a secondary cell, suppressed beforehand (ML too)
    5;5;C;1         its cost for secondary suppression (W too; 0 or less: 1, as tau-Argus)
    Zd;5;PL;10;20   its lower and upper protection levels (a primary cell only)

A field may be in double quotes, as tau-Argus writes the a-priori files it generates
(``"RegA","",p``: a pair of quotes around a field is taken off, ``""`` is blank, so the
total). Codes are compared without tau-Argus's padding (``" 1"`` is ``1``); an empty cell (no
contributor) is left as it is, as tau-Argus does. With ``expand_trivial`` (the command's
ExpandTrivial, 1) a line changes every cell that is the same cell through a code with a
single child (a total over one code, its child, ...). With ``ignore_errors`` a line naming
no cell of the table is skipped, as tau-Argus's IgnoreError; otherwise it is an error naming
``file:line``, and so is a change tau-Argus refuses (a primary cell protected, a protected
cell made unsafe, protection levels on a cell that is not primary).

``AB`` (a-priori bounds on a cell's value) is refused, always: tau-Argus does not apply it
either, and an audit that ignored what the attacker is said to know would prove protection
against a weaker attacker than the one the publisher described.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Literal

from statrecon.errors import StatreconError
from statrecon.number_reader import NumberError
from statrecon.tables import _rda
from statrecon.tables.model import NO_PROTECTION, Cell, CellStatus, Hierarchy, Table
from statrecon.tables.safety import manual_levels
from statrecon.tables.values import parse_decimal

ChangeKind = Literal["status", "cost", "levels"]
_STATUSES = {"S": CellStatus.SAFE, "U": CellStatus.PRIMARY, "P": CellStatus.PROTECTED,
             "M": CellStatus.SECONDARY, "ML": CellStatus.SECONDARY}
_VALUES = {"C": 1, "W": 1, "PL": 2}


class AprioriError(StatreconError):
    """A line of an a-priori file that cannot be applied."""


@dataclass(frozen=True)
class Change:
    """One line of an a-priori file: the cells it changes (positions in the table) and how."""

    line: int
    cells: tuple[int, ...]
    kind: ChangeKind
    status: CellStatus | None = None
    values: tuple[Fraction, ...] = ()


@dataclass(frozen=True)
class Apriori:
    """An a-priori file read against a table: its changes in file order, and the lines
    skipped (``ignore_errors``)."""

    path: Path
    changes: tuple[Change, ...]
    skipped: tuple[int, ...] = ()


def read_apriori(path: Path, table: Table, separator: str = ";", *,
                 ignore_errors: bool = False, expand_trivial: bool = False) -> Apriori:
    """Read ``path`` (through the input gate) against ``table``; see the module docstring."""
    if not separator:
        raise AprioriError(f"{path}: an a-priori file needs a separator")
    text = _rda.read_text(path, "a-priori file")
    if not text.strip():
        raise AprioriError(f"{path}: the a-priori file is empty (it changes nothing: leave "
                           "out its <APRIORI>)", where=str(path))
    codes = _CodeIndex(table)
    changes: list[Change] = []
    skipped: list[int] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            changes.append(_line(raw, separator, table, codes, expand_trivial, number, where))
        except _NoSuchCell:
            if not ignore_errors:
                raise
            skipped.append(number)
    return Apriori(path, tuple(changes), tuple(skipped))


class _NoSuchCell(AprioriError):
    """A line whose codes name no cell of the table (IgnoreError skips it)."""


def _line(raw: str, separator: str, table: Table, codes: _CodeIndex, expand: bool,
          number: int, where: str) -> Change:
    fields = [_unquote(f) for f in raw.split(separator)]
    n = len(table.variables)
    if len(fields) <= n:
        raise AprioriError(f"{where}: {len(fields)} fields separated by {separator!r}: "
                           f"expected {n} codes ({', '.join(table.variables)}) and a "
                           "command (S, U, P, M, C, PL)", where=where)
    command = fields[n].upper()
    if command == "AB":
        raise AprioriError(f"{where}: AB (a-priori bounds) is not applied, by tau-Argus "
                           "either; an audit without the bounds the attacker is said to know "
                           "would prove too much: remove the line", where=where)
    if command not in _STATUSES and command not in _VALUES:
        raise AprioriError(f"{where}: unknown command {fields[n][:20]!r} (S, U, P, M, ML, C, "
                           "W, PL)", where=where)
    values = _values(command, fields[n + 1:], where)
    cells = codes.cells(fields[:n], expand, where)
    if command in _STATUSES:
        return Change(number, cells, "status", _STATUSES[command])
    return Change(number, cells, "cost" if command in ("C", "W") else "levels",
                  values=values)


def _unquote(field: str) -> str:
    """A field trimmed, its one pair of surrounding double quotes taken off (tau-Argus's
    ``Tokenizer.nextField``), and trimmed again (codes are compared without padding)."""
    field = field.strip()
    if len(field) >= 2 and field[0] == field[-1] == '"':
        field = field[1:-1].strip()
    return field


def _values(command: str, given: list[str], where: str) -> tuple[Fraction, ...]:
    wanted = _VALUES.get(command, 0)
    if len([g for g in given if g]) < wanted:
        raise AprioriError(f"{where}: {command} needs {wanted} number(s)", where=where)
    values = []
    for text in given[:wanted]:
        try:
            value = parse_decimal(text)
        except NumberError as e:
            raise AprioriError(f"{where}: {command}: {e}", where=where) from None
        if value is None:
            raise AprioriError(f"{where}: {command}: {text[:20]!r} is not a number",
                               where=where)
        values.append(value)
    if command == "PL" and min(values) < 0:
        raise AprioriError(f"{where}: PL: protection levels are distances from the value, "
                           "never negative", where=where)
    return tuple(values)


class _CodeIndex:
    """Each variable's codes by their text without padding, and the table's grid."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.hierarchies = [table.hierarchies[v] for v in table.variables]
        self.by_text = []
        for h in self.hierarchies:
            found: dict[str, str] = {}
            for code in h.codes():
                found.setdefault(code.strip(), code)
            self.by_text.append(found)

    def cells(self, given: Sequence[str], expand: bool, where: str) -> tuple[int, ...]:
        chosen: list[list[str]] = []
        for h, known, text in zip(self.hierarchies, self.by_text, given, strict=True):
            if not text or text == h.total.strip():
                code = h.total
            elif text in known:
                code = known[text]
            else:
                raise _NoSuchCell(f"{where}: code {text[:40]!r} is not a code of "
                                  f"{h.variable}", where=where)
            chosen.append(_trivial(h, code) if expand else [code])
        return tuple(self.table.index(list(codes)) for codes in itertools.product(*chosen))


def _trivial(h: Hierarchy, code: str) -> list[str]:
    """``code`` and the codes that are the same cell through single children: its parent
    while it is the only child, its child while it has only one."""
    same = [code]
    up = code
    while (parent := h.parent(up)) is not None and len(h.children.get(parent, ())) == 1:
        same.append(parent)
        up = parent
    down = code
    while len(kids := h.children.get(down, ())) == 1:
        same.append(kids[0])
        down = kids[0]
    return same


def apply_apriori(table: Table, apriori: Apriori, manual: Fraction = Fraction(20)) -> Table:
    """``table`` with the changes of ``apriori`` made in file order; a cell made unsafe gets
    the manual safety margin ``manual`` (percent, tau-Argus's MAN) as its protection levels
    (:func:`statrecon.tables.safety.manual_levels`)."""
    cells = list(table.cells)
    for change in apriori.changes:
        where = f"{apriori.path}:{change.line}"
        for i in change.cells:
            cell = cells[i]
            if cell.status is CellStatus.EMPTY:
                continue  # tau-Argus leaves an empty cell as it is
            if change.kind == "cost":
                cost = change.values[0] if change.values[0] > 0 else Fraction(1)
                cells[i] = replace(cell, cost=cost)
            elif change.kind == "levels":
                if cell.status is not CellStatus.PRIMARY:
                    raise AprioriError(f"{where}: PL on {cell.name}, a {cell.status.value} "
                                       "cell: protection levels are a primary cell's",
                                       where=where)
                lower, upper = change.values
                cells[i] = replace(cell, protection=(
                    min(lower, cell.value) if cell.value >= 0 else lower, upper))
            else:
                assert change.status is not None
                cells[i] = _new_status(cell, change.status, manual, where)
    return replace(table, cells=tuple(cells))


def _new_status(cell: Cell, status: CellStatus, manual: Fraction, where: str) -> Cell:
    if status is CellStatus.PROTECTED and cell.status is CellStatus.PRIMARY:
        raise AprioriError(f"{where}: {cell.name} is primary: an unsafe cell cannot be "
                           "protected (tau-Argus refuses it too)", where=where)
    if status is CellStatus.PRIMARY and cell.status is CellStatus.PROTECTED:
        raise AprioriError(f"{where}: {cell.name} is protected: a protected cell cannot "
                           "become unsafe", where=where)
    if status is CellStatus.PRIMARY:
        if cell.status is CellStatus.PRIMARY:
            return cell  # unsafe already: its rule's levels stay
        levels = manual_levels(cell.value, manual)
        return replace(cell, status=status, protection=levels, sliding=Fraction(0))
    return replace(cell, status=status, protection=NO_PROTECTION, sliding=Fraction(0))


def describe(apriori: Apriori) -> str:
    """The file's changes in words, for a report."""
    counts: dict[str, int] = {}
    for change in apriori.changes:
        key = change.status.value if change.status is not None else change.kind
        counts[key] = counts.get(key, 0) + len(change.cells)
    parts = [f"{n} {k}" for k, n in counts.items()]
    if apriori.skipped:
        parts.append(f"{len(apriori.skipped)} lines skipped (no such cell)")
    return f"{apriori.path.name}: " + (", ".join(parts) or "no change")


def apply_commands(table: Table, commands: Sequence[_rda.AprioriCommand],
                   manual: Fraction = Fraction(20)) -> Table:
    """``table`` with the a-priori files of its ``<APRIORI>`` commands applied in order."""
    for command in commands:
        found = read_apriori(command.file, table, command.separator,
                             ignore_errors=command.ignore_errors,
                             expand_trivial=command.expand_trivial)
        table = apply_apriori(table, found, manual)
    return table
