"""tau-Argus table input (``.tab`` with its ``.rda``, ``.hrc``, ``.cdl``; ``.arb`` batch files)
and the ``.tab`` writer.

A ``.tab`` line is one cell: its codes, then the numbers the ``.rda`` declares, in the
``.rda``'s order, separated by its ``<SEPARATOR>``; numbers take a decimal comma or point;
``-`` or nothing is "no value". Codes keep what tau-Argus keeps: a quoted code keeps its
leading blanks (``" 1"``); a code that is not in a variable's hierarchy is padded with blanks
on the left to the variable's length (its longest ``.hrc`` code, or for a variable without one
its longest code in the file) and looked up again, so ``1`` and ``" 1"`` are the same code. A
variable without a hierarchy has its codes from the file, sorted, then its missing codes.

Statuses are tau-Argus's letters: ``S`` safe, ``U`` primary unsafe, ``P`` protected, ``M``
secondary, ``E`` (or an empty field) empty; ``<SAFE>``, ``<UNSAFE>`` and ``<PROTECT>`` in the
``.rda`` may rename the first three. As in tau-Argus a cell with value 0 and frequency 0 is
empty; unlike tau-Argus, which then drops it, one marked ``U``, ``M`` or ``P`` keeps that
status (a zero the user asked to protect stays protected). A combination of codes with no line
is an empty cell.

Protection levels (``<LOWERPL>``, ``<UPPERPL>``) apply to primary cells; as in tau-Argus a
primary cell without them gets ``manual_margin`` (20 %) of its value, capped at the value,
and other cells get none. In a table without negative values a lower protection level above
the cell's value is an error: the cell cannot go below zero, so no suppression could protect
it. An upper level above the value is allowed (a count of 1 may need protecting up to 3).

The table's decimals are the response's ``<DECIMALS>``, or more where a value has more (the
audit needs every value on its lattice). A table that does not add up is an error naming the
equation, its cells, both sides and the line of the total, unless
``additivity="recompute"``: then, as tau-Argus's ``<READTABLE> 1``, every total is
recomputed from the cells below it (values, frequencies, largest contributions; statuses and
costs as the file gives them) and the changed totals are listed in ``TabFile.recomputed``.
(tau-Argus's own test table ``pp.tab`` needs this: four of its cells were edited without
their totals.)
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Literal

import numpy as np

from statrecon.errors import StatreconError
from statrecon.number_reader import NumberError, parse_number
from statrecon.outputs import atomic_outputs
from statrecon.tables import _rda
from statrecon.tables._grid import aggregate, largest, objects
from statrecon.tables.apriori import apply_commands
from statrecon.tables.model import (
    MAX_CELLS,
    NO_PROTECTION,
    Cell,
    CellStatus,
    Hierarchy,
    Table,
    TableSet,
    check_grid_size,
    show_code,
)
from statrecon.tables.values import (
    MAX_DECIMALS,
    decimals_of,
    format_decimal,
    parse_decimal,
    show,
)

Additivity = Literal["check", "recompute"]
MANUAL_MARGIN = Fraction(20, 100)  # tau-Argus's default "manual safety margin"
_NO_VALUE = ("", "-")
_WHOLE = re.compile(r"\d+")
_LETTERS = {"S": CellStatus.SAFE, "U": CellStatus.PRIMARY, "P": CellStatus.PROTECTED,
            "M": CellStatus.SECONDARY, "E": CellStatus.EMPTY}


@dataclass(frozen=True)
class Recomputed:
    """A total that ``additivity="recompute"`` changed."""

    codes: tuple[str, ...]
    old: Fraction
    new: Fraction
    line: int | None  # its line in the .tab (None: the file had no line for it)


@dataclass(frozen=True)
class TabFile:
    """A .tab file read: the table, the line of each cell the file gives, the totals that
    were recomputed, and the labels of the ``.cdl`` code lists (variable -> code -> label)."""

    table: Table
    lines: Mapping[tuple[str, ...], int]
    recomputed: tuple[Recomputed, ...] = ()
    labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------
# reading


def read_tab(tab: Path | str, rda: Path | str | None = None, *, response: str | None = None,
             name: str | None = None, additivity: Additivity = "check",
             manual_margin: Fraction = MANUAL_MARGIN) -> Table:
    """The table in a tau-Argus ``.tab`` file (its ``.rda`` beside it unless given)."""
    return read_tauargus(tab, rda, response=response, name=name, additivity=additivity,
                         manual_margin=manual_margin).table


def read_tauargus(tab: Path | str, rda: Path | str | None = None, *,
                  response: str | None = None, name: str | None = None,
                  additivity: Additivity = "check",
                  manual_margin: Fraction = MANUAL_MARGIN) -> TabFile:
    """Read a ``.tab`` with its ``.rda`` (see the module docstring). ``response`` picks one of
    several ``<NUMERIC>`` variables (or the ``<FREQUENCY>`` one, or ``"<freq>"``, for a
    frequency table); mistakes raise StatreconError with ``where="file:line"``."""
    if additivity not in ("check", "recompute"):
        raise StatreconError(f"additivity must be 'check' or 'recompute', not {additivity!r}")
    tab = Path(tab)
    rda_path = Path(rda) if rda is not None else _beside(tab, ".rda")
    meta = _rda.read_rda(rda_path)
    layout = _layout(meta, response)
    rows = _rows(tab, meta, layout)
    coders = [_coder(meta, v, rows, layout.columns[v.name]) for v in layout.explanatory]
    check_grid_size((c.hierarchy for c in coders), where=str(tab))
    raws = _read_cells(tab, rows, coders, meta, layout)
    reader = _Reader(tab, layout, coders, raws, manual_margin)
    recomputed = reader.recompute() if additivity == "recompute" else ()
    table = reader.table(name or tab.stem)
    if additivity == "check":
        reader.check(table)
    lines = {codes: raw.line for codes, raw in raws.items() if raw.line is not None}
    return TabFile(table, lines, recomputed, _labels(meta, layout))


def read_arb(arb: Path | str, *, additivity: Additivity | None = None,
             manual_margin: Fraction | None = None) -> TableSet:
    """The tables a tau-Argus batch file opens (``<OPENTABLEDATA>``, ``<OPENMETADATA>``,
    ``<SPECIFYTABLE>``), linked; ``<READTABLE> 1`` means ``additivity="recompute"`` unless
    ``additivity`` is given; a table's ``<SAFETYRULE> MAN(x)`` is its manual safety margin,
    unless ``manual_margin`` is given (default 20 %). Output commands are not read."""
    arb = Path(arb)
    batch = _rda.read_arb(arb)
    if additivity is None:
        if batch.read_mode == 2:
            raise StatreconError(f"{arb}: <READTABLE> 2 (additivity not required) cannot be "
                                 f"audited: its equations would not hold", where=str(arb))
        additivity = "recompute" if batch.read_mode == 1 else "check"
    tables: list[Table] = []
    for spec in batch.tables:
        stem = spec.tab.stem
        taken = {t.name for t in tables}
        label = next(n for n in itertools.chain([stem], (f"{stem}_{i}" for i in
                                                          itertools.count(2)))
                     if n not in taken)
        margin = manual_margin if manual_margin is not None else (
            spec.manual_margin if spec.manual_margin is not None else MANUAL_MARGIN)
        table = read_tab(spec.tab, spec.rda, response=spec.response, name=label,
                         additivity=additivity, manual_margin=margin)
        _check_specified(arb, spec, table)
        table = apply_commands(table, spec.apriori, margin * 100)  # its <APRIORI> files
        tables.append(table)
    return TableSet(tuple(tables))


def _check_specified(arb: Path, spec: _rda.BatchTable, table: Table) -> None:
    if sorted(v.lower() for v in spec.explanatory) != sorted(v.lower() for v in
                                                              table.variables):
        raise StatreconError(f"{arb}: <SPECIFYTABLE> names {', '.join(spec.explanatory)} but "
                             f"{spec.rda.name} declares {', '.join(table.variables)}: a table "
                             f"read from a file has all its variables", where=str(arb))


def _beside(path: Path, suffix: str) -> Path:
    """The file of ``path``'s name with ``suffix`` beside it (its case ignored), through the
    gate for files that files name: never a link out of the folder."""
    name = path.with_suffix(suffix).name
    return _rda.resolve(path, name, f"{suffix} file beside {path.name}", str(path))


@dataclass
class _Layout:
    """Where each role's numbers are in a .tab line."""

    explanatory: list[_rda.Variable]
    columns: dict[str, int]  # variable name -> field position
    response: _rda.Variable | None  # None: a frequency table (its value is the frequency)
    frequency: _rda.Variable | None
    tops: list[_rda.Variable]
    singles: dict[str, _rda.Variable]  # role -> variable for cost, status, lower, upper

    @property
    def fields(self) -> int:
        return len(self.columns)

    def column(self, role: str) -> int | None:
        variable = self.singles.get(role)
        return None if variable is None else self.columns[variable.name]


def _layout(meta: _rda.Metadata, response: str | None) -> _Layout:
    columns = {v.name: i for i, v in enumerate(meta.variables)}
    frequency = next(iter(meta.of_role("frequency")), None)
    chosen = _response(meta, response, frequency)
    singles = {role: found[0] for role in ("cost", "status", "lower", "upper")
               if (found := meta.of_role(role))}
    return _Layout(meta.of_role("explanatory"), columns, chosen, frequency,
                   meta.of_role("top"), singles)


def _response(meta: _rda.Metadata, response: str | None,
              frequency: _rda.Variable | None) -> _rda.Variable | None:
    numeric = meta.of_role("response")
    if response is None:
        if len(numeric) > 1:
            names = ", ".join(v.name for v in numeric)
            raise StatreconError(f"{meta.path}: several responses ({names}); choose one",
                                 where=str(meta.path))
        return numeric[0] if numeric else None
    if response.lower() == "<freq>" or (frequency and response.lower() ==
                                        frequency.name.lower()):
        if frequency is None:
            raise StatreconError(f"{meta.path}: no <FREQUENCY> variable for a frequency "
                                 f"table", where=str(meta.path))
        return None
    for v in numeric:
        if v.name.lower() == response.lower():
            return v
    raise StatreconError(f"{meta.path}: no <NUMERIC> response {response!r} (there are: "
                         f"{', '.join(v.name for v in numeric) or 'none'})",
                         where=str(meta.path))


def _labels(meta: _rda.Metadata, layout: _Layout) -> dict[str, dict[str, str]]:
    labels = {}
    for v in layout.explanatory:
        if v.codelist:
            where = v.where(meta.path, "<CODELIST>")
            path = _rda.resolve(meta.path, v.codelist, "code list", where)
            labels[v.name] = _rda.read_codelist(path)
    return labels


# ----------------------------------------------------------------------------------------
# lines and codes


def _rows(tab: Path, meta: _rda.Metadata, layout: _Layout) -> list[tuple[int, list[str]]]:
    """Every non-blank line as (number, fields), each field trimmed and unquoted."""
    rows: list[tuple[int, list[str]]] = []
    for number, line in enumerate(_rda.read_text(tab, "table file").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{tab}:{number}"
        if len(rows) >= MAX_CELLS:
            raise StatreconError(f"{where}: more than {MAX_CELLS:,} cells", where=where)
        fields = _split(line, meta.separator, where)
        if len(fields) == layout.fields + 1 and fields[-1] == "":
            fields.pop()  # a separator at the end of the line
        if len(fields) != layout.fields:
            names = ", ".join(v.name for v in meta.variables)
            raise StatreconError(f"{where}: {len(fields)} fields, but {meta.path.name} "
                                 f"declares {layout.fields} ({names})", where=where)
        rows.append((number, fields))
    if not rows:
        raise StatreconError(f"{tab}: the table file has no cells", where=str(tab))
    return rows


def _split(line: str, separator: str, where: str) -> list[str]:
    """A line's fields: blanks around a field dropped, a quoted field's quotes removed
    (blanks inside kept), a separator inside quotes kept."""
    fields: list[str] = []
    i = 0
    while True:
        start = len(line) - len(line[i:].lstrip(" \t"))
        if line.startswith('"', start):
            end = line.find('"', start + 1)
            if end < 0:
                raise StatreconError(f"{where}: a quote that is not closed", where=where)
            fields.append(line[start + 1:end])
            rest = len(line) - len(line[end + 1:].lstrip(" \t"))
            if rest == len(line):
                return fields
            if not line.startswith(separator, rest):
                raise StatreconError(f"{where}: text after a quoted field", where=where)
            i = rest + len(separator)
        else:
            end = line.find(separator, i)
            if end < 0:
                fields.append(line[i:].strip())
                return fields
            fields.append(line[i:end].strip())
            i = end + len(separator)


@dataclass
class _Coder:
    """One explanatory variable's codes: its hierarchy and how a .tab field maps to it."""

    variable: _rda.Variable
    hierarchy: Hierarchy
    length: int  # tau-Argus's variable length: codes are padded on the left to it
    source: str  # where the codes come from, for messages

    def code(self, text: str) -> str | None:
        total = self.hierarchy.total
        if text.strip() in ("", total.strip()):
            return total
        if text in self.hierarchy:
            return text
        padded = text.rjust(self.length)
        return padded if padded in self.hierarchy else None


def _coder(meta: _rda.Metadata, v: _rda.Variable, rows: list[tuple[int, list[str]]],
           column: int) -> _Coder:
    total = (v.total or "").strip()
    where = v.where(meta.path, "<HIERCODELIST>")
    if v.hierarchical:
        assert v.hierarchy_file is not None
        path = _rda.resolve(meta.path, v.hierarchy_file, "hierarchy file", where)
        hrc = _rda.read_hrc(path, v.name, total, v.lead)
        missing = [m.rjust(hrc.length) for m in v.missing]
        hierarchy = _rda.with_missing(v.name, hrc, total, missing)
        return _Coder(v, hierarchy, hrc.length, path.name)
    texts = {fields[column] for _, fields in rows}
    codes = {t for t in texts if t.strip() not in ("", total)}
    length = max((len(c) for c in codes), default=0)
    missing = [m.rjust(length) for m in v.missing]
    found = sorted({c.rjust(length) for c in codes} - set(missing))
    hierarchy = Hierarchy.flat(v.name, [*found, *missing], total)
    return _Coder(v, hierarchy, length, "the codes of the file")


@dataclass
class _Raw:
    """A cell as read, before its protection levels are settled."""

    value: Fraction
    frequency: int | None
    status: CellStatus
    line: int | None
    lower: Fraction | None = None
    upper: Fraction | None = None
    cost: Fraction | None = None
    top: tuple[Fraction, ...] = ()


def _read_cells(tab: Path, rows: list[tuple[int, list[str]]], coders: list[_Coder],
                meta: _rda.Metadata, layout: _Layout) -> dict[tuple[str, ...], _Raw]:
    raws: dict[tuple[str, ...], _Raw] = {}
    for number, fields in rows:
        where = f"{tab}:{number}"
        codes = tuple(_code(c, fields[layout.columns[c.variable.name]], where)
                      for c in coders)
        if codes in raws:
            raise StatreconError(f"{where}: cell {', '.join(map(show_code, codes))} again "
                                 f"(first on line {raws[codes].line})", where=where)
        raws[codes] = _LineReader(fields, meta, layout, where).cell(number)
    return raws


def _code(coder: _Coder, text: str, where: str) -> str:
    code = coder.code(text)
    if code is None:
        raise StatreconError(f"{where}: code {text!r} of {coder.variable.name} is not in "
                             f"{coder.source}", where=where)
    return code


@dataclass
class _LineReader:
    """The numbers and status of one .tab line, checked as tau-Argus checks them."""

    fields: list[str]
    meta: _rda.Metadata
    layout: _Layout
    where: str

    def _fail(self, message: str) -> StatreconError:
        return StatreconError(f"{self.where}: {message}", where=self.where)

    def number(self, variable: _rda.Variable | None) -> Fraction | None:
        if variable is None:
            return None
        text = self.fields[self.layout.columns[variable.name]]
        if text in _NO_VALUE:
            return None
        try:
            value = parse_decimal(text)
        except NumberError as e:
            raise self._fail(f"{variable.name}: {e}") from None
        if value is None:
            raise self._fail(f"{variable.name} {text[:40]!r} is not a number")
        return value

    def whole(self, variable: _rda.Variable | None) -> int | None:
        if variable is None:
            return None
        text = self.fields[self.layout.columns[variable.name]]
        if text in _NO_VALUE:
            return None
        if not _WHOLE.fullmatch(text):
            raise self._fail(f"{variable.name} {text[:40]!r} is not a whole number >= 0")
        try:
            value = parse_number(text)
        except NumberError as e:
            raise self._fail(f"{variable.name}: {e}") from None
        return int(value)

    def status(self) -> CellStatus:
        column = self.layout.column("status")
        if column is None:
            return CellStatus.SAFE
        letter = self.fields[column].upper()
        renamed = {self.meta.safe: CellStatus.SAFE, self.meta.unsafe: CellStatus.PRIMARY,
                   self.meta.protect: CellStatus.PROTECTED}
        if letter in ("", "E"):
            return CellStatus.EMPTY
        found = renamed.get(letter) or (_LETTERS.get(letter) if letter == "M" else None)
        if found is None:
            raise self._fail(f"unknown status {letter!r} (tau-Argus knows {self.meta.safe} "
                             f"safe, {self.meta.unsafe} unsafe, {self.meta.protect} "
                             f"protected, M secondary, E empty)")
        return found

    def cell(self, line: int) -> _Raw:
        frequency = self.whole(self.layout.frequency)
        value = self.number(self.layout.response) if self.layout.response else (
            None if frequency is None else Fraction(frequency))
        status = self.status()
        if value is None:
            return self._no_value(frequency, status, line)
        raw = _Raw(value, frequency, self._status_of(value, frequency, status), line)
        raw.lower, raw.upper = self._levels()
        raw.cost = self._cost()
        raw.top = self._tops(value)
        return raw

    def _no_value(self, frequency: int | None, status: CellStatus, line: int) -> _Raw:
        if frequency is not None:
            raise self._fail("an empty cell (no value) cannot have a frequency")
        if status not in (CellStatus.EMPTY, CellStatus.SAFE):
            raise self._fail(f"an empty cell (no value) cannot be {status}")
        return _Raw(Fraction(0), 0 if self.layout.frequency else None, CellStatus.EMPTY,
                    line)

    def _status_of(self, value: Fraction, frequency: int | None,
                   status: CellStatus) -> CellStatus:
        if frequency == 0 and value != 0:
            raise self._fail(f"a cell of value {show(value)} cannot have frequency 0")
        if status is CellStatus.EMPTY and (value != 0 or frequency):
            raise self._fail("a cell with a value or contributors cannot have status E "
                             "(empty)")
        if value == 0 and frequency == 0 and status is CellStatus.SAFE:
            return CellStatus.EMPTY
        return status

    def _levels(self) -> tuple[Fraction | None, Fraction | None]:
        levels = []
        for role in ("lower", "upper"):
            level = self.number(self.layout.singles.get(role))
            if level is not None and level < 0:
                raise self._fail(f"a negative {role} protection level {show(level)}")
            levels.append(level)
        return levels[0], levels[1]

    def _cost(self) -> Fraction | None:
        cost = self.number(self.layout.singles.get("cost"))
        if cost is not None and cost < 0:
            raise self._fail(f"a negative cost {show(cost)}")
        return cost

    def _tops(self, value: Fraction) -> tuple[Fraction, ...]:
        tops = tuple(t for t in (self.number(v) for v in self.layout.tops) if t is not None)
        if any(b > a for a, b in itertools.pairwise(tops)):
            raise self._fail("the largest contributions (<MAXSCORE>) are not in "
                             "decreasing order")
        total = Fraction(sum(tops))
        if tops and total > value:
            raise self._fail(f"the largest contributions add up to {show(total)}, more than "
                             f"the cell's value {show(value)}")
        return tops


# ----------------------------------------------------------------------------------------
# the grid


@dataclass
class _Reader:
    """The cells of a .tab on the full grid of its codes."""

    tab: Path
    layout: _Layout
    coders: list[_Coder]
    raws: dict[tuple[str, ...], _Raw]
    margin: Fraction

    @property
    def hierarchies(self) -> list[Hierarchy]:
        return [c.hierarchy for c in self.coders]

    def _raw(self, codes: tuple[str, ...]) -> _Raw:
        raw = self.raws.get(codes)
        if raw is None:
            raw = _Raw(Fraction(0), 0 if self.layout.frequency else None, CellStatus.EMPTY,
                       None)
            self.raws[codes] = raw
        return raw

    def grid(self) -> list[tuple[str, ...]]:
        return list(itertools.product(*(h.codes() for h in self.hierarchies)))

    def recompute(self) -> tuple[Recomputed, ...]:
        """Every total recomputed from the cells below it (tau-Argus ``<READTABLE> 1``)."""
        grid = self.grid()
        shape = tuple(len(h) for h in self.hierarchies)
        raws = [self._raw(codes) for codes in grid]
        values = aggregate(objects([r.value for r in raws], shape), self.hierarchies,
                            operator.add)
        frequencies = aggregate(objects([r.frequency or 0 for r in raws], shape),
                                 self.hierarchies, operator.add)
        tops = aggregate(objects([r.top for r in raws], shape), self.hierarchies,
                          largest(len(self.layout.tops)))
        empty = aggregate(np.array([r.status is CellStatus.EMPTY for r in raws],
                                    dtype=bool).reshape(shape), self.hierarchies,
                           np.logical_and)
        changed = []
        for codes, raw, value, frequency, top, is_empty in zip(
                grid, raws, values.ravel(), frequencies.ravel(), tops.ravel(),
                empty.ravel(), strict=True):
            if value != raw.value:
                changed.append(Recomputed(codes, raw.value, value, raw.line))
            raw.value, raw.top = value, top
            raw.frequency = frequency if self.layout.frequency else None
            raw.status = _recomputed_status(raw.status, is_empty)
        return tuple(changed)

    def table(self, name: str) -> Table:
        grid = self.grid()
        raws = [self._raw(codes) for codes in grid]
        nonnegative = all(r.value >= 0 for r in raws)
        variables = tuple(c.variable.name for c in self.coders)
        cells = tuple(self._cell(variables, codes, raw, nonnegative)
                      for codes, raw in zip(grid, raws, strict=True))
        response = self.layout.response or self.layout.frequency
        assert response is not None
        decimals = max([response.decimals if self.layout.response else 0,
                        *(decimals_of(r.value) or 0 for r in raws)])
        return Table(name, variables, {h.variable: h for h in self.hierarchies},
                     response.name, "magnitude" if self.layout.response else "frequency",
                     decimals, cells, source=str(self.tab))

    def _cell(self, variables: tuple[str, ...], codes: tuple[str, ...], raw: _Raw,
              nonnegative: bool) -> Cell:
        protection = NO_PROTECTION
        if raw.status is CellStatus.PRIMARY:
            protection = self._protection(codes, raw, nonnegative)
        return Cell(tuple(zip(variables, codes, strict=True)), raw.value, raw.frequency,
                    raw.status, protection, raw.cost, raw.top)

    def _protection(self, codes: tuple[str, ...], raw: _Raw,
                    nonnegative: bool) -> tuple[Fraction, Fraction]:
        size = abs(raw.value)
        default = min(size * self.margin, size)
        lower = default if raw.lower is None else raw.lower
        upper = default if raw.upper is None else raw.upper
        if nonnegative and lower > raw.value:
            where = f"{self.tab}:{raw.line}" if raw.line else str(self.tab)
            raise StatreconError(f"{where}: cell {', '.join(map(show_code, codes))}: lower "
                                 f"protection level {show(lower)} is larger than its value "
                                 f"{show(raw.value)}; no suppression can protect it (the "
                                 f"cell cannot go below 0)", where=where)
        return lower, upper

    def check(self, table: Table) -> None:
        """Raise naming the first equation the file breaks, at its total's line."""
        equations = TableSet((table,)).equations()
        values = [c.value for c in table.cells]
        bad = equations.violations(values)
        if not len(bad):
            return
        row = int(bad[0])
        parent, children = equations.sides(row, values)
        codes = tuple(c for _, c in table.cells[equations.parent(row)].codes)
        line = self.raws[codes].line
        where = f"{self.tab}:{line}" if line else str(self.tab)
        more = f" ({len(bad) - 1} more equations do not add up)" if len(bad) > 1 else ""
        raise StatreconError(f"{where}: the table does not add up: {equations.names[row]}: "
                             f"{show(parent)} != {show(children)}{more}; tau-Argus's "
                             "<READTABLE> 1 recomputes the totals (--recompute-totals; "
                             "additivity='recompute' in Python)",
                             where=where, statistic=equations.names[row])


def _recomputed_status(status: CellStatus, empty: bool) -> CellStatus:
    if empty and status is CellStatus.SAFE:
        return CellStatus.EMPTY
    if not empty and status is CellStatus.EMPTY:
        return CellStatus.SAFE
    return status


# ----------------------------------------------------------------------------------------
# writing


def write_tab(table: Table, path: Path | str) -> tuple[Path, ...]:
    """Write ``table`` as tau-Argus table input: ``path`` (the .tab, every cell of the grid
    with its status letter and protection levels), the .rda beside it, and one .hrc per
    variable (so that codes and their order come back exactly). All files are written
    atomically, or none. Returns the paths written."""
    return _write_all(_tab_texts(table, Path(path)))


def write_arb(tables: TableSet, path: Path | str) -> tuple[Path, ...]:
    """Write linked tables as a tau-Argus job: per table a ``.tab`` with its ``.rda`` and
    ``.hrc`` files (``<stem>_<table>.tab``), and the batch file ``path`` that opens and
    specifies each of them (``read_arb`` reads them back as the same linked tables). All
    files are written atomically, or none. Returns the paths written."""
    path = Path(path)
    texts: dict[Path, str] = {}
    lines = ["// linked tables written by statrecon: one <SPECIFYTABLE> per table"]
    for table in tables.tables:
        tab = path.with_name(f"{path.stem}_{_file_part(table.name)}.tab")
        texts.update(_tab_texts(table, tab))
        explanatory = "".join(f'"{_name(v)}"' for v in table.variables)
        lines += [f'<OPENTABLEDATA> "{tab.name}"',
                  f'<OPENMETADATA> "{tab.with_suffix(".rda").name}"',
                  f'<SPECIFYTABLE> {explanatory}|"{_name(_columns(table).response)}"||']
    lines.append("<READTABLE> 0")
    texts[path] = "".join(line + "\n" for line in lines)
    return _write_all(texts)


def _tab_texts(table: Table, path: Path) -> dict[Path, str]:
    """The .tab, its .rda and one .hrc per variable, by the paths they are written to."""
    hrcs = {v: path.with_name(f"{path.stem}_{_file_part(v)}.hrc") for v in table.variables}
    texts = {path: _tab_text(table), path.with_suffix(".rda"): _rda_text(table, hrcs)}
    for v, hrc in hrcs.items():
        texts[hrc] = _hrc_text(table.hierarchies[v], _lead(table.hierarchies[v]))
    return texts


def _write_all(texts: dict[Path, str]) -> tuple[Path, ...]:
    paths = tuple(texts)
    with atomic_outputs(*paths) as temporary:
        for tmp, final in zip(temporary, paths, strict=True):
            tmp.write_text(texts[final], encoding="utf-8")
    return paths


def _file_part(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def _writable_code(variable: str, code: str) -> str:
    if code != code.rstrip() or not code.strip() or any(ch in code for ch in '";\n\r'):
        raise StatreconError(f"code {code!r} of {variable} cannot be written in tau-Argus "
                             f"form (blank, trailing blanks, a quote or a separator)")
    return code


def _lead(hierarchy: Hierarchy) -> str:
    for lead in "@#+~.!":
        if not any(c.startswith(lead) for c in hierarchy.codes()):
            return lead
    raise StatreconError(f"the codes of {hierarchy.variable} start with every lead string "
                         f"tried; cannot write its hierarchy")


def _hrc_text(hierarchy: Hierarchy, lead: str) -> str:
    lines = []
    for code in hierarchy.codes()[1:]:
        depth = len(hierarchy.ancestors(code)) - 1
        lines.append(lead * depth + _writable_code(hierarchy.variable, code))
    return "".join(line + "\n" for line in lines)


@dataclass(frozen=True)
class _Columns:
    """The columns a written .tab has, with the names its .rda gives them."""

    response: str
    frequency: str | None
    cost: str | None
    tops: tuple[str, ...]
    status: str
    lower: str
    upper: str


def _columns(table: Table) -> _Columns:
    taken = set(table.variables)

    def fresh(name: str) -> str:
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    response = fresh(table.response)
    magnitude = table.kind == "magnitude"
    has_frequency = magnitude and any(c.frequency is not None for c in table.cells)
    k = max((len(c.top) for c in table.cells), default=0)
    return _Columns(response, fresh("FreqVar") if has_frequency else None,
                    fresh("Cost") if any(c.cost is not None for c in table.cells) else None,
                    tuple(fresh(f"Top{i + 1}") for i in range(k)), fresh("Status"),
                    fresh("LowerProtLevel"), fresh("UpperProtLevel"))


def rda_lead_lines(table: Table, hrcs: Mapping[str, Path]) -> list[str]:
    """The start of a table-input .rda written here: the separator and each explanatory
    variable with its total code and hierarchy file (``hrcs``: the .hrc of each)."""
    lines = ['   <SEPARATOR> ";"']
    for v in table.variables:
        hierarchy = table.hierarchies[v]
        lines += [_name(v), "    <RECODEABLE>", f'    <TOTCODE> "{hierarchy.total}"',
                  "    <HIERARCHICAL>", f'    <HIERCODELIST> "{hrcs[v].name}"',
                  f'    <HIERLEADSTRING> "{_lead(hierarchy)}"']
    return lines


def _rda_text(table: Table, hrcs: Mapping[str, Path]) -> str:
    columns = _columns(table)
    lines = rda_lead_lines(table, hrcs)
    if table.kind == "frequency":
        lines += [_name(columns.response), "    <FREQUENCY>"]
    else:
        lines += [_name(columns.response), "    <NUMERIC>"]
        lines += [f"    <DECIMALS> {table.decimals}"] if table.decimals else []
        lines += [_name(columns.frequency), "    <FREQUENCY>"] if columns.frequency else []
    lines += [_name(columns.cost), "    <NUMERIC> <COSTVAR>"] if columns.cost else []
    for top in columns.tops:
        lines += [_name(top), "    <MAXSCORE>"]
    lines += [_name(columns.status), "    <STATUS>", _name(columns.lower),
              "    <NUMERIC> <LOWERPL>", _name(columns.upper), "    <NUMERIC> <UPPERPL>"]
    return "".join(line + "\n" for line in lines)


def _name(name: str) -> str:
    if not name or any(ch.isspace() or ch in '"<>' for ch in name):
        raise StatreconError(f"{name!r} cannot be written as a tau-Argus variable name")
    return name


def _tab_text(table: Table) -> str:
    columns = _columns(table)
    for v in table.variables:
        total = table.hierarchies[v].total
        _writable_code(v, total)
        for code in table.hierarchies[v].codes()[1:]:
            if code.strip() == total.strip():
                raise StatreconError(f"code {code!r} of {v} reads as its total {total!r}")
    return "".join(_tab_line(table, cell, columns) + "\n" for cell in table.cells)


def _tab_line(table: Table, cell: Cell, columns: _Columns) -> str:
    fields = [f'"{code}"' for _, code in cell.codes]
    if table.kind == "frequency":
        if cell.value.denominator != 1:
            raise StatreconError(f"table {table.name}: frequency cell {cell.name} has value "
                                 f"{show(cell.value)}, not a whole number")
        fields.append(str(cell.value.numerator))
    else:
        value = format_decimal(cell.value, table.decimals, comma=True)
        assert value is not None  # Table checks its values' decimals
        fields.append(value)
        if columns.frequency:
            fields.append("-" if cell.frequency is None else str(cell.frequency))
    if columns.cost:
        fields.append("-" if cell.cost is None else _exact(cell.cost, table, cell))
    fields += [_exact(cell.top[i], table, cell) if i < len(cell.top) else "-"
               for i in range(len(columns.tops))]
    fields.append("E" if cell.status is CellStatus.EMPTY else
                  {"safe": "S", "primary": "U", "secondary": "M", "protected": "P"}[cell.status])
    fields += [_level(level, table.decimals) for level in cell.protection]
    return ";".join(fields)


def _exact(value: Fraction, table: Table, cell: Cell) -> str:
    decimals = decimals_of(value)
    if decimals is None:
        raise StatreconError(f"table {table.name}: cell {cell.name}: {value} has no exact "
                             f"decimal form")
    text = format_decimal(value, max(decimals, table.decimals), comma=True)
    assert text is not None
    return text


def _level(level: Fraction, decimals: int) -> str:
    """A protection level exactly, or rounded up at MAX_DECIMALS when no decimal is exact
    (rounding up keeps the requirement at least as strict)."""
    places = decimals_of(level)
    if places is None:
        places = MAX_DECIMALS
        level = Fraction(-((-level.numerator * 10**places) // level.denominator), 10**places)
    text = format_decimal(level, max(places, decimals), comma=True)
    assert text is not None
    return text
