"""tau-Argus's ``<WRITETABLE>`` output types, as tau-Argus writes them (sdcTools/libtauargus
``WriteCSV``, ``WriteCellRecords``, ``WriteSBSStaart``; sdcTools/tauargus ``SaveTable`` and
``TableSet.write`` with ``Metadata.writeTableMetadata``), and which of them may be published.

1. CSV: the table's layout: the last variable across, the one before it down, one block per
   combination of the others (``Var 1,"code"`` above it); a suppressed cell ``x``, an empty
   one ``-``.
2. CSV for a pivot table and 3. code-value: a line per cell, its codes then its value (``x``
   or ``-``); ``AS+`` adds tau-Argus's status number after the value *and shows the true
   value of a suppressed cell*; ``FL+`` (the default of 2) puts the names on a first line,
   ``SE+`` leaves out empty cells.
4. SBS: a line per non-empty cell with its true value, frequency, a letter (``V`` safe, ``A``
   frequency rule, ``B`` other rules or by hand, ``F`` p% rule, ``C`` dominance, ``D``
   secondary) and, for a cell a rule made unsafe, the largest contributions as a percentage
   of the cell; ``HL+`` adds each code's level.
5. intermediate: tau-Argus's own table input, a ``.tab`` line per cell (value, frequency,
   shadow, cost, largest contributions, status letter, protection levels) with its ``.rda``
   beside it; ``AR+`` adds the audit's interval of every suppressed cell (its ends, width,
   and as percentages of the value), here with two more columns: the integer interval.

A table a job rounded (``<SUPPRESS> RND``) publishes every cell's rounded value in types 1
to 3 (its working files the true values); types 4 and 5 of it are refused by the job.

What an agency publishes never carries the true value of a suppressed cell. Types 1, 2 and 3
without ``AS+`` are publications, written where the job says. Types 2 and 3 with ``AS+``, 4
and 5 carry true values (and 4 and 5 contributions and intervals): they are *working files*,
written beside that name as ``<name>.working<suffix>``; where the job names the file, 2 and 3
write their publication (the status kept, a suppressed value ``x``) and 4 its publication (a
suppressed value ``x``, no percentages); 5 has none.

Numbers are written with the response's ``<DECIMALS>``, rounded half to even as tau-Argus's
``printf`` and Java's ``DecimalFormat`` do; the intermediate file keeps every decimal a value
needs (it is read back as a table) and rounds a protection level up, never down.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from statrecon.errors import StatreconError
from statrecon.tables.model import Cell, CellStatus, Table
from statrecon.tables.tauargus import _file_part, _hrc_text, _lead, _name, rda_lead_lines
from statrecon.tables.values import MAX_DECIMALS, decimals_of, format_decimal

# the LP and the integer interval's ends (None: not proven, or no bound)
Bounds = tuple[Fraction | None, Fraction | None, Fraction | None, Fraction | None]


@dataclass(frozen=True)
class Output:
    """A table to write: the table, tau-Argus's status number of each cell (by position),
    the decimals of its response, how many largest contributions the rules read (and
    whether one is a p% rule: SBS), and the audit's bounds of the suppressed cells."""

    table: Table
    statuses: Sequence[int]
    decimals: int
    tops: int = 0
    p_rule: bool = False
    bounds: Mapping[int, Bounds] | None = None
    hierarchical: frozenset[str] | None = None  # None: those with subtotals
    rounded: Sequence[Fraction] | None = None  # a rounded table's published values, by cell


def working_path(path: Path) -> Path:
    """Where a working file goes: beside ``path``, named as one."""
    return path.with_name(f"{path.stem}.working{path.suffix}")


def texts(output: Output, kind: int, options: Mapping[str, bool], path: Path
          ) -> dict[Path, str]:
    """The files one ``<WRITETABLE>`` writes (module docstring): path -> text."""
    if kind == 1:
        return {path: csv_text(output, options["QU"])}
    if kind in (2, 3):
        first = options["FL"]
        if not options["AS"]:
            return {path: cell_records(output, options, first, show=False)}
        return {path: cell_records(output, options, first, show=False, status=True),
                working_path(path): cell_records(output, options, first, show=True)}
    if kind == 4:
        return {path: sbs_text(output, options, publish=True),
                working_path(path): sbs_text(output, options, publish=False)}
    if kind == 5:
        return intermediate(output, options, working_path(path))
    raise StatreconError(f"output type {kind} is not written")


# ----------------------------------------------------------------------------- numbers


def _up(level: Fraction, decimals: int) -> str:
    """A protection level exactly, or rounded up (never weaker) at MAX_DECIMALS."""
    exact = decimals_of(level)
    places = max(decimals, MAX_DECIMALS if exact is None else exact)
    scaled = level * 10**places
    text = format_decimal(Fraction(-(-scaled.numerator // scaled.denominator), 10**places),
                          places)
    assert text is not None
    return text


def fixed(value: Fraction, decimals: int) -> str:
    """``value`` with ``decimals`` decimals, rounded half to even."""
    scaled = value * 10**decimals
    rounded = Fraction(round(scaled), 10**decimals)
    text = format_decimal(rounded, decimals)
    assert text is not None
    return text


def _label(code: str, quotes: bool) -> str:
    text = code.replace('"', "'")
    return f'"{text}"' if quotes else text


def _value(output: Output, i: int, show: bool) -> str:
    cell = output.table.cells[i]
    if cell.status is CellStatus.EMPTY:
        return "-"
    if output.rounded is not None and not show:  # a rounded table publishes every cell
        return fixed(output.rounded[i], output.decimals)
    if cell.status.suppressed and not show:
        return "x"
    return fixed(cell.value, output.decimals)


# ----------------------------------------------------------------------------- 1. CSV


def csv_text(output: Output, quotes: bool = True) -> str:
    """Type 1: the table's layout (module docstring), byte for byte as tau-Argus writes it
    (a one-variable table is a line of labels and a line of values)."""
    table = output.table
    codes = [table.hierarchies[v].codes() for v in table.variables]
    names = table.variables

    def labels(d: int) -> str:
        return "," + ",".join(_label(c, quotes) for c in codes[d])

    if len(names) == 1:
        return labels(0) + "\n," + ",".join(_value(output, i, False)
                                            for i in range(len(codes[0])))
    out: list[str] = []
    width = len(codes[-1])
    layers = list(itertools.product(*(range(len(c)) for c in codes[:-2])))
    block = len(codes[-2]) * width
    for n, layer in enumerate(layers):
        if len(names) > 2:
            out.append(", ".join(f"Var {d + 1},{_label(codes[d][k], quotes)}"
                                 for d, k in enumerate(layer)) + "\n")
        out.append(labels(len(names) - 1) + "\n")
        for r, row in enumerate(codes[-2]):
            start = n * block + r * width
            values = ",".join(_value(output, start + j, False) for j in range(width))
            out.append(f"{_label(row, quotes)},{values}\n")
        out.append("\n")
    return "".join(out)


# ----------------------------------------------------------------------------- 2, 3. records


def first_line(output: Output, quotes: bool, status: bool) -> str:
    q = '"' if quotes else ""
    table = output.table
    names = [*table.variables,
             "Freq" if table.kind == "frequency" else table.response]
    if status:
        names.append("Status")
    return ",".join(f"{q}{n}{q}" for n in names)


def cell_records(output: Output, options: Mapping[str, bool], first: bool, *, show: bool,
                 status: bool | None = None) -> str:
    """Types 2 and 3: a line per cell (``SE+``: cells with contributors only); ``show``
    writes a suppressed cell's true value, ``status`` (default: ``show``) its status."""
    status = show if status is None else status
    table, quotes = output.table, options["QU"]
    lines = [first_line(output, quotes, status)] if first else []
    for i, cell in enumerate(table.cells):
        if options["SE"] and _empty(cell):
            continue
        fields = [_label(c, quotes) for v, c in cell.codes]
        fields.append(_value(output, i, show))
        if status:
            fields.append(str(output.statuses[i]))
        lines.append(",".join(fields))
    return "".join(line + "\n" for line in lines)


def _empty(cell: Cell) -> bool:
    return cell.status is CellStatus.EMPTY or cell.frequency == 0


# ----------------------------------------------------------------------------- 4. SBS

_SBS = {1: "V", 2: "V", 10: "V", 13: "V", 5: "A", 4: "B", 6: "B", 7: "B", 9: "B",
        11: "D", 12: "D", 14: "-"}


def sbs_text(output: Output, options: Mapping[str, bool], *, publish: bool) -> str:
    """Type 4 (module docstring); ``publish``: a suppressed value ``x``, no percentages."""
    table, quotes = output.table, options["QU"]
    lines = []
    for i, cell in enumerate(table.cells):
        if _empty(cell):
            continue  # tau-Argus's SBS leaves out empty cells
        fields = []
        for v, code in cell.codes:
            fields.append(_label(code, quotes))
            if options["HL"]:
                fields.append(str(_depth(output, v, code)))
        number = output.statuses[i]
        value = "x" if publish and cell.status.suppressed else fixed(cell.value,
                                                                     output.decimals)
        letter, shares = _sbs_flag(output, cell, number)
        fields += [value, str(cell.frequency or 0), letter]
        if not (publish and cell.status.suppressed):
            fields += shares
        lines.append(",".join(fields))
    return "".join(line + "\n" for line in lines)


def _depth(output: Output, variable: str, code: str) -> int:
    """tau-Argus's level of a code: 0 for the total and for a variable without hierarchy."""
    hierarchy = output.table.hierarchies[variable]
    hierarchical = (variable in output.hierarchical if output.hierarchical is not None
                    else len(hierarchy.children) > 1)
    return len(hierarchy.ancestors(code)) if hierarchical else 0


def _sbs_flag(output: Output, cell: Cell, number: int) -> tuple[str, list[str]]:
    if number == 3:  # unsafe by the p% or dominance rule
        letter = "F" if output.p_rule else ("C" if output.tops > 1 else "B")
    else:
        letter = _SBS.get(number, "V")
    if number not in (3, 4, 6, 7, 9):
        return letter, []
    top = [*cell.top, Fraction(0), Fraction(0)]
    if output.tops == 0:
        shares = [Fraction(0)]
    elif output.tops == 1:
        shares = [top[0]]
    elif output.p_rule:
        shares = [top[0], top[1]]
    else:
        shares = [top[0] + top[1]]
    return letter, [_percent(s, cell.value) for s in shares]


def _percent(part: Fraction, whole: Fraction) -> str:
    return fixed(100 * part / whole, 1) if whole else "0.0"


# ----------------------------------------------------------------------------- 5. intermediate

_LETTER = {CellStatus.SAFE: "S", CellStatus.PRIMARY: "U", CellStatus.SECONDARY: "M",
           CellStatus.PROTECTED: "P", CellStatus.EMPTY: "E"}


def intermediate(output: Output, options: Mapping[str, bool], path: Path) -> dict[Path, str]:
    """Type 5: the ``.tab`` at ``path``, its ``.rda`` and an ``.hrc`` per variable."""
    if options["HI"]:
        raise StatreconError("<WRITETABLE> HI+ (holding-level intermediate file) is not "
                             "written: statrecon keeps the records' facts")
    table = output.table
    simple = options["SO"]
    hrcs = {v: path.with_name(f"{path.stem}_{_file_part(v)}.hrc") for v in table.variables}
    places = max([output.decimals, table.decimals,
                  *(decimals_of(t) or 0 for c in table.cells for t in c.top)])
    number: Callable[[Fraction], str] = lambda x: fixed(x, places)  # noqa: E731
    lines = []
    for i, cell in enumerate(table.cells):
        if options["SE"] and cell.status is CellStatus.EMPTY:
            continue
        fields = [_label(c, options["QU"]) for v, c in cell.codes]
        fields.append(number(cell.value))
        if table.kind == "magnitude":
            fields.append(str(cell.frequency or 0))
            if not simple:
                fields.append(number(cell.value))  # the shadow: the response itself
        fields.append(number(cell.cost if cell.cost is not None else cell.value))
        if not simple:
            top = [*cell.top[:cell.frequency or 0], *[Fraction(0)] * output.tops]
            fields += [number(t) for t in top[:output.tops]]
        fields.append(_LETTER[cell.status])
        fields += [_up(cell.protection[0], places), _up(cell.protection[1], places)]
        if options["AR"]:
            fields += _audit_fields(output, i, cell, number)
        lines.append(";".join(fields))
    texts = {path: "".join(line + "\n" for line in lines),
             path.with_suffix(".rda"): _rda_text(output, hrcs, simple, options["AR"])}
    for v, hrc in hrcs.items():
        texts[hrc] = _hrc_text(table.hierarchies[v], _lead(table.hierarchies[v]))
    return texts


def _audit_fields(output: Output, i: int, cell: Cell,
                  number: Callable[[Fraction], str]) -> list[str]:
    bounds = (output.bounds or {}).get(i)
    if bounds is None or not cell.status.suppressed:
        return ["0"] * 8
    low, high, integer_low, integer_high = bounds
    value = cell.value

    def show(x: Fraction | None) -> str:
        return "" if x is None else number(x)

    def share(x: Fraction | None) -> str:
        return "" if x is None else fixed(100 * x / value, 2)

    width = None if low is None or high is None else high - low
    fields = [show(low), show(high), show(width)]
    if value == 0:
        fields += ["0", "0", "0"]
    else:
        fields += [share(None if low is None else value - low),
                   share(None if high is None else high - value), share(width)]
    return [*fields, show(integer_low), show(integer_high)]


def _rda_text(output: Output, hrcs: Mapping[str, Path], simple: bool, audit: bool) -> str:
    table = output.table
    lines = rda_lead_lines(table, hrcs)
    response = _name(table.response)
    if table.kind == "magnitude":
        lines += [response, "    <NUMERIC>", f"    <DECIMALS> {output.decimals}"]
    lines += ["FreqVar", "    <FREQUENCY>"]
    if table.kind == "magnitude" and not simple:
        lines += [f"{response}_Shadow", "    <NUMERIC> <SHADOW>"]
    lines += [f"{response if table.kind == 'magnitude' else 'FreqVar'}_Cost",
              "    <NUMERIC> <COSTVAR>"]
    if not simple:
        for k in range(output.tops):
            lines += [f"Top{k + 1}", "    <MAXSCORE>"]
    lines += ["StatusVar", "    <STATUS>", "LowerProtLevel", "    <NUMERIC> <LOWERPL>",
              "UpperProtLevel", "    <NUMERIC> <UPPERPL>"]
    if audit:
        lines += ["//The audit info cannot be read back into TauArgus",
                  "//Lower auditlevel", "//Upper auditlevel", "//Audit range",
                  "//Percentage lower auditrange", "//Percentage upper auditrange",
                  "//Percentage audit range",
                  "//statrecon: lower and upper end of the integer interval"]
    return "".join(line + "\n" for line in lines)
