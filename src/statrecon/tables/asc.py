"""tau-Argus microdata: the ``.rda`` metadata of a microdata file and the ``.asc`` records it
describes, read as tau-Argus reads them (sdcTools/tauargus ``Metadata.readMicroMetadata``,
sdcTools/libtauargus ``ExploreFile``, ``DoMicroRecord`` and ``FillTables``).

The ``.rda``: a variable line is its name, its start position (fixed width only, counted
from 1), its length and up to two *missing* codes (``Region 12 2 99``); keywords on the next
lines give its roles: ``<RECODEABLE>`` (explanatory), ``<NUMERIC>`` (a response; both make a
variable that is either), ``<WEIGHT>``, ``<HOLDING>``, ``<REQUEST> "1" "2"``, ``<TOTCODE>``,
``<CODELIST>``, ``<HIERARCHICAL>`` with ``<HIERCODELIST>`` and ``<HIERLEADSTRING>`` (an
``.hrc`` file) or ``<HIERLEVELS> 3 1 1`` (a hierarchy by digits: the first 3 digits, then one
more, then one more), ``<DECIMALS>``. ``<SEPARATOR> ";"`` on the first line makes the file
free format: fields split by the separator, and a variable line has no position. Keywords
for the cell-key method (``<RECORDKEY>``, ``<CKM>``, ``<PFILE>``, ...) and ``<DISTANCE>`` are
read and left aside (no job here perturbs or uses distances).

The records: in fixed width every non-blank line has the length of the first, and a field is
its positions; in free format a field is trimmed and padded on the left with blanks to the
variable's length, as tau-Argus does (``male`` of length 6 is ``"  male"``: the codes of an
``.hrc`` are written that way). A code longer than its length is an error here (tau-Argus cuts
it). A numeric field is read exactly (``number_reader``, a decimal point, blank is 0 as
tau-Argus's ``strtod``); a missing code of a numeric variable is a number like any other, as
tau-Argus sums it. The code of an explanatory variable with an ``.hrc`` must be a bottom code
of the hierarchy or a missing code.

Hierarchies: a flat variable has the codes its records hold, sorted as tau-Argus sorts them
(padded text), then its missing codes; a hierarchy by digits adds each code's prefixes as
its subtotals; an ``.hrc`` gives the tree, its missing codes added under the total. Every
mistake is one line naming ``file:line`` (of the ``.rda``, or of the record).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from statrecon.errors import StatreconError
from statrecon.number_reader import NumberError, parse_number
from statrecon.tables import _rda
from statrecon.tables.model import Hierarchy, show_code

MAX_WIDTH = 100  # characters of one field (tau-Argus's MAXCODEWIDTH)
MAX_RECORD = 32_000  # characters of one record (tau-Argus's MAXRECORDLENGTH)
MAX_LEVELS = 10  # digit groups of a <HIERLEVELS> (tau-Argus's MAXDIGITGROUP)
MAX_RECORDS = 50_000_000
MAX_DEPTH = 50  # levels of an .hrc below the total: a deeper file is refused, not built
# keywords read and left aside: distances, cell-key perturbation, truncation
_IGNORED = ("<DISTANCE>", "<TRUNCABLE>", "<PFILE>", "<PFILE_FREQ>", "<PFILE_CONT>",
            "<PFILE_SEP>", "<CKM>", "<INCLUDEZEROS>", "<PARITY>", "<SCALING>", "<SEPARATION>")


@dataclass
class MicroVariable:
    """One variable of a microdata ``.rda``, with the line that declares it."""

    name: str
    line: int
    position: int | None  # first character, counted from 1 (None: free format)
    length: int
    missing: tuple[str, ...] = ()  # padded on the left to ``length``
    explanatory: bool = False
    numeric: bool = False
    weight: bool = False
    holding: bool = False
    request: tuple[str, ...] = ()  # <REQUEST>'s codes (a request variable)
    record_key: bool = False
    total: str = "Total"
    codelist: str | None = None
    hierarchical: bool = False
    hierarchy_file: str | None = None
    lead: str = "."
    levels: tuple[int, ...] = ()  # <HIERLEVELS>: digits per level, zeros dropped
    decimals: int = 0
    lines: dict[str, int] = field(default_factory=dict)

    def where(self, path: Path, keyword: str | None = None) -> str:
        return f"{path}:{self.lines.get(keyword, self.line) if keyword else self.line}"

    def pad(self, code: str) -> str:
        return code.rjust(self.length)

    @property
    def end(self) -> int:
        """The last position (fixed width)."""
        assert self.position is not None
        return self.position + self.length - 1


@dataclass
class MicroMetadata:
    """A microdata ``.rda`` read: its variables in order, the separator of free format."""

    path: Path
    variables: list[MicroVariable] = field(default_factory=list)
    separator: str | None = None  # None: fixed width

    def find(self, name: str, where: str, what: str = "variable") -> MicroVariable:
        """The variable ``name`` (its case ignored, as tau-Argus finds it), or an error
        naming ``where``."""
        for v in self.variables:
            if v.name.lower() == name.lower():
                return v
        raise StatreconError(f"{where}: no {what} {name!r} in {self.path.name} (it declares "
                             f"{', '.join(v.name for v in self.variables)})", where=where)

    @property
    def weight(self) -> MicroVariable | None:
        return next((v for v in self.variables if v.weight), None)

    @property
    def holding(self) -> MicroVariable | None:
        return next((v for v in self.variables if v.holding), None)


# ----------------------------------------------------------------------------- the .rda


def read_micro_rda(path: Path | str) -> MicroMetadata:
    """Parse the ``.rda`` of a microdata file (module docstring); mistakes name
    ``path:line``."""
    path = Path(path)
    meta = MicroMetadata(path)
    current: MicroVariable | None = None
    first = True
    for number, line in enumerate(_rda.read_text(path, "metadata file").splitlines(), start=1):
        words = _rda._quoted_tokens(line)
        if not words or words[0][0].startswith("//"):
            continue
        where = f"{path}:{number}"
        word, quoted = words[0]
        if not quoted and word.upper() == "<SEPARATOR>":
            if not first:
                raise StatreconError(f"{where}: <SEPARATOR> belongs on the first line (it "
                                     "makes the whole file free format)", where=where)
            meta.separator = _separator([w for w, _ in words[1:]], where)
        elif quoted or not word.startswith("<"):
            current = _variable(meta, words, number, where)
        elif current is None:
            raise StatreconError(f"{where}: {word} before any variable", where=where)
        else:
            current.lines[word.upper()] = number
            _keyword(current, word.upper(), [w for w, _ in words[1:]], where)
        first = False
    _verify(meta)
    return meta


def _separator(args: list[str], where: str) -> str:
    separator = args[0] if args else ""
    if len(separator) != 1 or separator.isspace() or separator == '"':
        raise StatreconError(f"{where}: <SEPARATOR> is one character, not a blank or a quote "
                             f"(got {separator!r})", where=where)
    return separator


def _whole(text: str, what: str, where: str, least: int, most: int) -> int:
    if not text.isdigit() or len(text) > 6 or not least <= int(text) <= most:
        raise StatreconError(f"{where}: {what} must be a whole number from {least} to "
                             f"{most}, not {text[:40]!r}", where=where)
    return int(text)


def _variable(meta: MicroMetadata, words: list[tuple[str, bool]], number: int,
              where: str) -> MicroVariable:
    name = words[0][0]
    if any(v.name.lower() == name.lower() for v in meta.variables):
        raise StatreconError(f"{where}: variable {name} is declared twice", where=where)
    rest = [w for w, _ in words[1:]]
    fixed = meta.separator is None
    needed = 2 if fixed else 1
    if len(rest) < needed:
        shape = "name, position and length" if fixed else "name and length"
        raise StatreconError(f"{where}: variable {name}: a variable line gives its {shape} "
                             f"(and missing codes)", where=where)
    position = _whole(rest[0], f"the position of {name}", where, 1, MAX_RECORD) if fixed \
        else None
    length = _whole(rest[needed - 1], f"the length of {name}", where, 1, MAX_WIDTH)
    missing = [m for m in rest[needed:] if m.strip()]
    if len(missing) > 2:
        raise StatreconError(f"{where}: variable {name}: at most two missing codes, not "
                             f"{len(missing)}", where=where)
    for m in missing:
        if len(m) > length:
            raise StatreconError(f"{where}: variable {name}: missing code {m!r} is longer "
                                 f"than its length {length}", where=where)
    variable = MicroVariable(name, number, position, length,
                             tuple(m.rjust(length) for m in missing))
    meta.variables.append(variable)
    return variable


def _keyword(v: MicroVariable, word: str, args: list[str], where: str) -> None:
    arg = args[0] if args else ""
    if word in ("<RECODEABLE>", "<RECODABLE>", "<NUMERIC>"):
        if word == "<NUMERIC>" and arg:
            raise StatreconError(f"{where}: unknown token {arg[:40]!r} after <NUMERIC> (a "
                                 "microdata response has no role)", where=where)
        if v.weight or v.holding or v.request or v.record_key:
            _role(v, "")  # as tau-Argus: the last role keyword wins
        setattr(v, "explanatory" if word != "<NUMERIC>" else "numeric", True)
    elif word in ("<WEIGHT>", "<HOLDING>", "<RECORDKEY>"):
        _role(v, {"<WEIGHT>": "weight", "<HOLDING>": "holding",
                  "<RECORDKEY>": "record_key"}[word])
    elif word == "<REQUEST>":
        _role(v, "")
        v.request = tuple(a.rjust(v.length) for a in args if a.strip())
        if not v.request:
            raise StatreconError(f"{where}: <REQUEST> needs the request codes", where=where)
    elif word == "<HIERARCHICAL>":
        v.hierarchical = True
    elif word == "<HIERLEVELS>":
        _levels(v, args, where)
    elif word in ("<TOTCODE>", "<CODELIST>", "<HIERCODELIST>", "<HIERLEADSTRING>",
                  "<DECIMALS>"):
        _valued(v, word, arg, where)
    elif word not in _IGNORED:
        raise StatreconError(f"{where}: unknown keyword {word[:40]}", where=where)


def _role(v: MicroVariable, role: str) -> None:
    """One role at a time (an explanatory variable may also be a response)."""
    v.explanatory = v.numeric = v.weight = v.holding = v.record_key = False
    v.request = ()
    if role:
        setattr(v, role, True)


def _valued(v: MicroVariable, word: str, arg: str, where: str) -> None:
    if word == "<DECIMALS>":
        v.decimals = _whole(arg, "<DECIMALS>", where, 0, 12)
    elif not arg.strip() and word != "<HIERLEADSTRING>":
        raise StatreconError(f"{where}: {word} needs a value", where=where)
    elif word == "<TOTCODE>":
        v.total = arg
    elif word == "<CODELIST>":
        v.codelist = arg
    elif word == "<HIERCODELIST>":
        v.hierarchy_file = arg
    else:
        if not arg:
            raise StatreconError(f"{where}: <HIERLEADSTRING> needs a value", where=where)
        v.lead = arg


def _levels(v: MicroVariable, args: list[str], where: str) -> None:
    if not args or len(args) > MAX_LEVELS:
        raise StatreconError(f"{where}: <HIERLEVELS> gives 1 to {MAX_LEVELS} numbers of "
                             "digits", where=where)
    digits = [_whole(a, "a <HIERLEVELS> number", where, 0, MAX_WIDTH) for a in args]
    while digits and digits[-1] == 0:
        digits.pop()
    if not digits or 0 in digits or sum(digits) != v.length:
        raise StatreconError(f"{where}: <HIERLEVELS> {' '.join(args)} of {v.name}: the "
                             f"digits per level must add up to its length {v.length} (zeros "
                             "only at the end)", where=where)
    v.levels = tuple(digits)
    v.hierarchical = True


def _verify(meta: MicroMetadata) -> None:
    path = meta.path
    if not meta.variables:
        raise StatreconError(f"{path}: no variables", where=str(path))
    for v in meta.variables:
        where = f"{path}:{v.line}"
        if v.hierarchical and not v.levels and not v.hierarchy_file:
            raise StatreconError(f"{where}: hierarchical variable {v.name} needs a "
                                 "<HIERCODELIST> or <HIERLEVELS>", where=where)
        if (v.hierarchy_file or v.levels) and not v.explanatory:
            raise StatreconError(f"{where}: {v.name} has a hierarchy but is not "
                                 "<RECODEABLE>", where=where)
        if not v.total.strip():
            raise StatreconError(f"{where}: the <TOTCODE> of {v.name} is blank", where=where)
    if not any(v.explanatory for v in meta.variables):
        raise StatreconError(f"{path}: no explanatory variable (<RECODEABLE>)",
                             where=str(path))
    for role in ("weight", "holding", "record_key"):
        found = [v for v in meta.variables if getattr(v, role)]
        if len(found) > 1:
            where = f"{path}:{found[1].line}"
            raise StatreconError(f"{where}: a second {role.replace('_', ' ')} variable "
                                 f"({found[1].name})", where=where)
    if meta.separator is None:
        _no_overlap(meta)


def _no_overlap(meta: MicroMetadata) -> None:
    """Fixed width: no two variables share a position (tau-Argus warns and asks; a job run
    without a person to ask would read one field as two variables)."""
    ordered = sorted(meta.variables, key=lambda v: (v.position or 0, v.line))
    for a, b in itertools.pairwise(ordered):
        if b.position is not None and a.position is not None and b.position <= a.end:
            later, earlier = (a, b) if a.line > b.line else (b, a)
            where = f"{meta.path}:{later.line}"
            raise StatreconError(f"{where}: variable {later.name} (positions "
                                 f"{later.position}-{later.end}) overlaps {earlier.name} "
                                 f"(positions {earlier.position}-{earlier.end}, line "
                                 f"{earlier.line})", where=where)


# ----------------------------------------------------------------------------- the records


@dataclass(frozen=True)
class Records:
    """The records of a microdata file: one row per record, a column per variable read
    (codes as padded text, numbers as their checked text, read exactly where they are
    summed), and each row's line in the file."""

    path: Path
    meta: MicroMetadata
    frame: pd.DataFrame
    lines: np.ndarray

    def where(self, row: int) -> str:
        return f"{self.path}:{int(self.lines[row])}"


def read_asc(path: Path | str, meta: MicroMetadata) -> Records:
    """The records of ``path`` as ``meta`` describes them (module docstring); every
    variable's field is checked (a numeric field is a number, a code fits its length and an
    ``.hrc`` holds it), mistakes name ``path:line``."""
    path = Path(path)
    lines, fields = _fields(path, meta)
    columns: dict[str, object] = {}
    for i, v in enumerate(meta.variables):
        raw = fields[i]
        if v.numeric or v.weight:
            columns[v.name] = _numbers(raw, v, path, lines)
        else:
            columns[v.name] = raw
    frame = pd.DataFrame(columns)
    records = Records(path, meta, frame, np.asarray(lines, dtype=np.int64))
    for v in meta.variables:
        if v.explanatory and v.hierarchy_file and not v.levels:
            _check_in_hrc(records, v)
    return records


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    text = _rda.read_text(path, "microdata file")
    count = 0
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.rstrip("\r\n\x1a")
        if not line.strip():
            continue  # tau-Argus skips empty records
        count += 1
        if count > MAX_RECORDS:
            raise StatreconError(f"{path}:{number}: more than {MAX_RECORDS:,} records",
                                 where=f"{path}:{number}")
        yield number, line


def _fields(path: Path, meta: MicroMetadata) -> tuple[list[int], list[list[str]]]:
    """Each variable's field of every record (free format: trimmed and padded), and the
    line of every record."""
    numbers: list[int] = []
    lines: list[str] = []
    for number, line in _lines(path):
        if len(line) > MAX_RECORD:
            where = f"{path}:{number}"
            raise StatreconError(f"{where}: a record of {len(line):,} characters (at most "
                                 f"{MAX_RECORD:,})", where=where)
        numbers.append(number)
        lines.append(line)
    if not numbers:
        raise StatreconError(f"{path}: the microdata file has no records", where=str(path))
    if meta.separator is None:
        return numbers, _fixed(path, meta, numbers, lines)
    fields: list[list[str]] = [[] for _ in meta.variables]
    for number, line in zip(numbers, lines, strict=True):
        parts = line.split(meta.separator)
        if len(parts) < len(meta.variables):
            where = f"{path}:{number}"
            raise StatreconError(f"{where}: {len(parts)} fields, but {meta.path.name} "
                                 f"declares {len(meta.variables)} variables", where=where)
        for i, v in enumerate(meta.variables):
            fields[i].append(_free(parts[i], v, meta, f"{path}:{number}"))
    return numbers, fields


def _fixed(path: Path, meta: MicroMetadata, numbers: list[int], lines: list[str]
           ) -> list[list[str]]:
    """Fixed width: every record of the first one's length (every variable within it), each
    field cut out of all records at once."""
    _check_width(meta, lines[0], None, f"{path}:{numbers[0]}")
    lengths = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
    wrong = np.flatnonzero(lengths != lengths[0])
    if len(wrong):
        i = int(wrong[0])
        _check_width(meta, lines[i], int(lengths[0]), f"{path}:{numbers[i]}")
    width = int(lengths[0])
    grid = np.array(lines, dtype=f"U{width}").view("U1").reshape(len(lines), width)
    fields = []
    for v in meta.variables:
        assert v.position is not None
        part = np.ascontiguousarray(grid[:, v.position - 1:v.end])
        fields.append(part.view(f"U{v.length}").ravel().tolist())  # blanks kept
    return fields


def _check_width(meta: MicroMetadata, line: str, width: int | None, where: str) -> int:
    """Fixed width: the first record fixes the length (every variable must fit in it), and
    every other record has that length, as tau-Argus requires."""
    if width is None:
        last = max(meta.variables, key=lambda v: v.end)
        if last.end > len(line):
            raise StatreconError(f"{where}: the record has {len(line)} characters, but "
                                 f"{meta.path.name} line {last.line} puts {last.name} at "
                                 f"positions {last.position}-{last.end}: the positions run "
                                 "past the line", where=where)
        return len(line)
    if len(line) != width:
        raise StatreconError(f"{where}: a record of {len(line)} characters, but the first "
                             f"has {width} (a fixed-width file has one record length)",
                             where=where)
    return width


def _free(text: str, v: MicroVariable, meta: MicroMetadata, where: str) -> str:
    code = text.strip(" \t")
    if len(code) >= 2 and code[0] == code[-1] == '"':
        code = code[1:-1]
    if len(code) > v.length:
        raise StatreconError(f"{where}: {v.name} {code[:40]!r} is longer than its length "
                             f"{v.length} ({meta.path.name} line {v.line})", where=where)
    return code.rjust(v.length)


def _numbers(raw: list[str], v: MicroVariable, path: Path, lines: list[int]) -> list[str]:
    """A numeric field checked as a number, each distinct text once, and kept as its text
    (read exactly where it is summed; blank is 0, as tau-Argus's ``strtod`` reads it)."""
    read: dict[str, str] = {}
    out = []
    for row, text in enumerate(raw):
        value = read.get(text)
        if value is None:
            try:
                if text.strip():
                    parse_number(text)
            except NumberError as e:
                where = f"{path}:{lines[row]}"
                raise StatreconError(f"{where}: {v.name}: {e}", where=where) from None
            value = read[text] = text.strip() or "0"
        out.append(value)
    return out


# ----------------------------------------------------------------------------- hierarchies


def hierarchy(records: Records, variable: MicroVariable) -> Hierarchy:
    """The hierarchy tau-Argus builds for an explanatory variable (module docstring)."""
    if variable.levels:
        return _by_digits(records, variable)
    if variable.hierarchy_file:
        return _from_hrc(records.meta, variable)
    codes = sorted(set(records.frame[variable.name]) - set(variable.missing))
    _check_total(records, variable, codes)
    return Hierarchy(variable.name, variable.total,
                     {variable.total: (*codes, *variable.missing)})


def _check_total(records: Records, v: MicroVariable, codes: list[str]) -> None:
    if v.total in codes or v.total.rjust(v.length) in codes:
        row = int(np.flatnonzero(records.frame[v.name].to_numpy() ==
                                 (v.total if v.total in codes else v.pad(v.total)))[0])
        where = records.where(row)
        raise StatreconError(f"{where}: {v.name} code {show_code(v.total)} is its total code "
                             f"(<TOTCODE>); a record cannot have it", where=where)


def _by_digits(records: Records, v: MicroVariable) -> Hierarchy:
    """Each code under its prefixes: ``<HIERLEVELS> 3 1 1`` puts ``14211`` under ``1421``
    under ``142`` under the total (tau-Argus's ``ComputeHierarchicalCodes``)."""
    codes = sorted(set(records.frame[v.name]) - set(v.missing))
    _check_total(records, v, codes)
    ends = np.cumsum(v.levels)[:-1].tolist()
    children: dict[str, set[str]] = {}
    for code in codes:
        parent = v.total
        for end in [*ends, len(code)]:
            children.setdefault(parent, set()).add(code[:end])
            parent = code[:end]
    tree = {p: tuple(sorted(kids)) for p, kids in children.items()}
    tree[v.total] = (*tree.get(v.total, ()), *v.missing)
    return Hierarchy(v.name, v.total, tree)


def _from_hrc(meta: MicroMetadata, v: MicroVariable) -> Hierarchy:
    assert v.hierarchy_file is not None
    where = v.where(meta.path, "<HIERCODELIST>")
    path = _rda.resolve(meta.path, v.hierarchy_file, "hierarchy file", where)
    _check_depth(path, v.lead)
    hrc = _rda.read_hrc(path, v.name, v.total, v.lead)
    return _rda.with_missing(v.name, hrc, v.total, list(v.missing))


def _check_depth(path: Path, lead: str) -> None:
    """Refuse an .hrc nested more than MAX_DEPTH levels, at its first such line, before it
    is built (each line's leads counted only so far)."""
    for number, raw in enumerate(_rda.read_text(path, "hierarchy file").splitlines(), start=1):
        depth = position = 0
        while lead and raw.startswith(lead, position) and depth <= MAX_DEPTH:
            position += len(lead)
            depth += 1
        if depth > MAX_DEPTH:
            where = f"{path}:{number}"
            raise StatreconError(f"{where}: a code more than {MAX_DEPTH} levels below the "
                                 "total: too deep a hierarchy", where=where)


def _check_in_hrc(records: Records, v: MicroVariable) -> None:
    """Every record's code is a bottom code of the ``.hrc`` or a missing code, as
    tau-Argus requires (``FindHierarchicalCode``)."""
    tree = _from_hrc(records.meta, v)
    bottom = set(tree.leaves()) | set(v.missing)
    column = records.frame[v.name].to_numpy(dtype=object)
    bad = [c for c in pd.unique(column) if c not in bottom]
    if bad:
        row = int(np.flatnonzero(column == bad[0])[0])
        where = records.where(row)
        what = "a subtotal, not a bottom code," if bad[0] in tree else "not a code"
        raise StatreconError(f"{where}: {v.name} {show_code(bad[0])} is {what} of "
                             f"{v.hierarchy_file}", where=where)
