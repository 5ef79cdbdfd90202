"""A tau-Argus batch job (``.arb``) read whole: the tables it specifies, from microdata or
from table files, and the steps it takes on them (``<RECODE>``, ``<SUPPRESS>``,
``<WRITETABLE>``), in its order, as tau-Argus's ``batch.runBatchProcess`` reads it.

Commands, in tau-Argus's grammar and order:

- ``<OPENMICRODATA> "data.asc"``, ``<OPENMETADATA> "data.rda"`` (``tables/asc.py``), then per
  table ``<SPECIFYTABLE> "A""B"|"resp"|"shadow"|"cost"`` (``<FREQ>`` as the response counts
  records; the cost is a variable, ``-1`` frequency, ``-2`` one per cell, or empty: the
  response itself, tau-Argus's default) and its ``<SAFETYRULE>`` (``tables/safety.py``), then
  ``<READMICRODATA>``. Table input (``<OPENTABLEDATA>``, ``<READTABLE>``) is read by
  ``tauargus.read_arb``; its steps are read here.
- ``<RECODE> 1, Size, "size.grc"`` or ``<RECODE> 1, Region, 2`` (``tables/recode.py``): the
  variable is recoded for every table that has it, from its own codes (a second recode of a
  variable replaces the first).
- ``<SUPPRESS> MOD(1, ...)``: secondary suppression of table 1 (0: every table); ``GH``,
  ``MOD`` and ``NET`` are done by statrecon's ``fast`` method, ``OPT`` by ``exact``; their
  arguments are checked as tau-Argus reads them (``tables/suppress_args.py``), and those
  statrecon does not honour are named in a note. ``RND(1, base, ...)`` is controlled
  rounding of one table (``runs/job_round.py``): a later ``<WRITETABLE>`` writes it rounded
  (types 1 to 3; tau-Argus refuses 5 for a rounded table, and statrecon 4 too: SBS carries
  each cell's true frequency). A table is protected once: a second ``<SUPPRESS>`` of a
  rounded table, or ``RND`` of a suppressed one, is refused. Controlled adjustment (``CTA``)
  and cell keys (``CKM``) are no suppression and are refused.
- ``<WRITETABLE> (1, 3, AS+FL+, "out.csv")``: table 1 in output type 1 CSV, 2 CSV for a
  pivot table, 3 code-value, 4 SBS, 5 intermediate (6 JJ and 7 cell key are refused), with
  the options ``AS`` add status, ``SE`` leave out empty cells, ``FL`` names on the first line,
  ``QU`` codes in quotes, ``HL`` hierarchy levels (SBS), ``SO`` status only, ``AR`` add the
  audit, ``HI`` holding level (intermediate). Output files are written in the batch file's
  folder (or the folder a caller gives), by their file name: a job never writes elsewhere.
- ``<SOLVER>``, ``<LOGBOOK>``, ``<VERSIONINFO>``, ``<ANCO>``, ``<JJ>`` and comments (``//``)
  are left aside (statrecon has its own solvers and writes no tau-Argus log);
  ``<GOINTERACTIVE>`` ends the job there, as in tau-Argus. ``<CLEAR>`` (a second job in the
  same file) and ``<COVER>`` are refused.
- ``<APRIORI> "f.hst", 1, ";"`` (``tables/apriori.py``): the a-priori file of table 1,
  applied to it from there on (after its safety rules, before its suppression).

Every mistake is one line naming ``file:line``; nothing is read from a file the job names
until the whole batch file is understood.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path, PureWindowsPath
from typing import TYPE_CHECKING

import pandas as pd

from statrecon.errors import StatreconError
from statrecon.tables import _rda, asc
from statrecon.tables.model import CellStatus, Hierarchy, Table, TableSet, check_grid_size
from statrecon.tables.recode import Recoding, grc_recode, tree_recode, truncate
from statrecon.tables.safety import SafetyRules, assess, cell_facts, parse_safety_rule
from statrecon.tables.suppress_args import Rounding, check_arguments

if TYPE_CHECKING:
    from statrecon.tables.rules import RuleColumns, TableSpec

OUTPUT_TYPES = {1: "CSV", 2: "CSV for pivot table", 3: "code-value", 4: "SBS",
                5: "intermediate", 6: "JJ", 7: "cell key"}
WRITE_OPTIONS = ("AS", "SE", "FL", "QU", "HL", "SO", "AR", "HI", "TR", "AO", "AD", "AC")
METHODS = {"GH": "fast", "MOD": "fast", "NET": "fast", "OPT": "exact"}
ROUNDING = "RND"  # controlled rounding, the other <SUPPRESS> statrecon carries out
NOT_SUPPRESSION = {"CTA": "controlled tabular adjustment", "CKM": "the cell key method"}
ROUNDED_OUTPUTS = (1, 2, 3)  # <WRITETABLE> types of a rounded table
_LEFT_ASIDE = ("<SOLVER>", "<LOGBOOK>", "<VERSIONINFO>", "<ANCO>", "<JJ>", "<COMMENT>",
               "<SILENT>")
_COMMAND = re.compile(r"\s*(<[A-Za-z]+>)(.*)")


@dataclass(frozen=True)
class Specified:
    """One ``<SPECIFYTABLE>`` with its ``<SAFETYRULE>``: the table's variables, response
    (None: ``<FREQ>``), shadow and cost (tau-Argus's fields as written), and rules."""

    number: int
    line: int
    explanatory: tuple[str, ...]
    response: str | None
    shadow: str = ""
    cost: str = ""  # tau-Argus's cost field: a variable, -1, -2, -3, or empty (the value)
    lam: str = ""  # its lambda as written (empty: 1)
    rules: SafetyRules | None = None
    rules_line: int = 0


@dataclass(frozen=True)
class Suppress:
    """One ``<SUPPRESS>``: its arguments as written and checked, ``RND``'s read
    (``rounding``), and a note for each argument statrecon does not honour."""

    line: int
    method: str  # tau-Argus's name (GH, MOD, OPT, NET, RND)
    table: int  # 1-based; 0: every table, linked
    arguments: tuple[str, ...] = ()
    rounding: Rounding | None = None
    notes: tuple[str, ...] = ()

    @property
    def statrecon_method(self) -> str:
        return METHODS[self.method]


@dataclass(frozen=True)
class WriteTable:
    line: int
    table: int
    kind: int  # tau-Argus's output type, 1..5
    options: Mapping[str, bool]  # every option, with tau-Argus's defaults filled in
    name: str  # as the batch file writes it
    path: Path  # where it is written

    def option(self, name: str) -> bool:
        return self.options[name]


@dataclass(frozen=True)
class Recode:
    line: int
    table: int
    variable: str
    level: int | None  # a level to cut the hierarchy at, or None: a file
    file: Path | None


@dataclass(frozen=True)
class AprioriStep:
    """``<APRIORI> "f.hst", 1, ";", IgnoreError, ExpandTrivial`` in a microdata job: the
    a-priori file of a table, applied from here on (``tables/apriori.py``)."""

    line: int
    command: _rda.AprioriCommand


Step = Suppress | WriteTable | Recode | AprioriStep


@dataclass(frozen=True)
class Job:
    """A batch file read: its data (microdata or tables), the tables it specifies and its
    steps in order; ``set_aside`` lists the commands it has that statrecon does not act on."""

    path: Path
    microdata: Path | None  # the .asc (None: table input)
    metadata: Path | None
    tables: tuple[Specified, ...]
    steps: tuple[Step, ...]
    set_aside: tuple[str, ...] = ()
    output_folder: Path | None = None

    @property
    def writes(self) -> tuple[WriteTable, ...]:
        return tuple(s for s in self.steps if isinstance(s, WriteTable))

    @property
    def suppresses(self) -> tuple[Suppress, ...]:
        return tuple(s for s in self.steps if isinstance(s, Suppress))

    def where(self, line: int) -> str:
        return f"{self.path}:{line}"


def is_job(path: Path) -> bool:
    """Whether a batch file is a job with steps or microdata (else: table input only, which
    ``tauargus.read_arb`` reads)."""
    text = _rda.read_text(path, "batch file").upper()
    return any(k in text for k in ("<OPENMICRODATA>", "<WRITETABLE>", "<SUPPRESS>"))


def opens_microdata(path: Path) -> bool:
    """Whether a batch file opens microdata (a job ``tables.load`` reads here)."""
    return "<OPENMICRODATA>" in _rda.read_text(path, "batch file").upper()


def read_job(path: Path | str, output_folder: Path | None = None) -> Job:
    """Read the batch file ``path`` (module docstring); outputs go to ``output_folder``
    (default: the batch file's folder)."""
    return _Parser(Path(path), output_folder).parse()


@dataclass
class _Parser:
    path: Path
    output_folder: Path | None
    status: int = 0  # tau-Argus's: 0 start, 1 data, 2 metadata, 3 table, 4 rules
    data: Path | None = None
    micro: bool = False
    metadata: Path | None = None
    tables: list[Specified] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    aside: list[str] = field(default_factory=list)
    rounded: dict[int, int] = field(default_factory=dict)  # table -> line of its RND
    suppressed: dict[int, int] = field(default_factory=dict)  # table -> line of <SUPPRESS>

    def parse(self) -> Job:
        for number, raw in enumerate(_rda.read_text(self.path, "batch file").splitlines(),
                                     start=1):
            line = raw.strip()
            if not line or line.startswith(("//", "\\\\")):
                continue
            where = f"{self.path}:{number}"
            m = _COMMAND.fullmatch(line)
            if m is None:
                raise StatreconError(f"{where}: {line[:40]!r} is not a command like "
                                     "<SPECIFYTABLE>", where=where)
            if not self.command(m.group(1).upper(), m.group(2).strip(), number, where):
                break
        return self.finish()

    def command(self, word: str, rest: str, number: int, where: str) -> bool:
        if word in ("<OPENMICRODATA>", "<OPENTABLEDATA>", "<OPENMETADATA>"):
            self.open(word, rest, where)
        elif word in ("<SPECIFYTABLE>", "<SAFETYRULE>", "<READMICRODATA>", "<READTABLE>"):
            self.specify(word, rest, number, where)
        elif word == "<SUPPRESS>":
            self.expect((4,), word, where)
            self.steps.append(self.suppress(_suppress(rest, number, where,
                                                      len(self.tables)), where))
        elif word == "<WRITETABLE>":
            self.steps.append(self.write(rest, number, where))
        elif word == "<RECODE>":
            self.steps.append(self.recode(rest, number, where))
        elif word == "<GOINTERACTIVE>":
            self.aside.append(f"{where}: <GOINTERACTIVE>: the job ends here, as in tau-Argus")
            return False
        elif word in _LEFT_ASIDE:
            self.aside.append(f"{where}: {word} left aside")
        elif word in ("<APRIORI>", "<APRIORY>"):
            if self.micro:
                self.steps.append(self.apriori(rest, number, where))
            else:
                self.aside.append(f"{where}: {word} read with the tables")
        else:
            raise StatreconError(f"{where}: {word[:40]} is not run by statrecon "
                                 f"({_refused(word)})", where=where)
        return True

    def specify(self, word: str, rest: str, number: int, where: str) -> None:
        if word == "<SPECIFYTABLE>":
            self.expect((2, 4), word, where)
            self.tables.append(_specify(rest, len(self.tables) + 1, number, where))
            self.status = 3
        elif word == "<SAFETYRULE>":
            self.expect((3,), word, where)
            rules = parse_safety_rule(rest, where)
            self.tables[-1] = replace(self.tables[-1], rules=rules, rules_line=number)
            self.status = 4
        else:
            if word == "<READTABLE>" and self.status == 3:
                self.status = 4
            self.expect((4,), word, where)
            if (word == "<READMICRODATA>") != self.micro:
                raise StatreconError(f"{where}: {word} reads the other kind of data than "
                                     "the job opened", where=where)

    def expect(self, statuses: tuple[int, ...], word: str, where: str) -> None:
        if self.status not in statuses:
            raise StatreconError(f"{where}: {word} is not allowed here (tau-Argus's order: "
                                 "open the data and metadata, specify each table with its "
                                 "safety rule, read, then recode, suppress, write)",
                                 where=where)

    def open(self, word: str, rest: str, where: str) -> None:
        name = (_rda.tokens(rest) or [""])[0]
        if word == "<OPENMETADATA>":
            self.expect((1,), word, where)
            self.metadata = _rda.resolve(self.path, name, "metadata file", where)
            self.status = 2
            return
        micro = word == "<OPENMICRODATA>"
        if micro and (self.status != 0 or self.data is not None):
            raise StatreconError(f"{where}: <OPENMICRODATA> opens the one microdata file of a "
                                 "job, before anything else", where=where)
        self.expect((0, 4), word, where)
        if not micro and self.micro:
            raise StatreconError(f"{where}: a job reads microdata or tables, not both",
                                 where=where)
        self.micro = micro
        what = "microdata file" if micro else "table file"
        self.data = _rda.resolve(self.path, name, what, where)
        self.status = 1

    def suppress(self, step: Suppress, where: str) -> Suppress:
        """A table is protected once: rounding and suppression of one table refused."""
        numbers = [step.table] if step.table else list(range(1, len(self.tables) + 1))
        rounding = step.method == ROUNDING
        for n in numbers:
            other = self.rounded.get(n) or (self.suppressed.get(n) if rounding else None)
            if other is not None:
                raise StatreconError(f"{where}: <SUPPRESS> of table {n}, which line {other} "
                                     "already protected (tau-Argus would undo that first); "
                                     "give one <SUPPRESS> per table when rounding",
                                     where=where)
            (self.rounded if rounding else self.suppressed).setdefault(n, step.line)
        return step

    def write(self, rest: str, number: int, where: str) -> WriteTable:
        table, kind, options, name = _write_arguments(rest, where)
        _table_number(table, len(self.tables), where, "<WRITETABLE>", zero=False)
        if table in self.rounded and kind not in ROUNDED_OUTPUTS:
            why = ("tau-Argus refuses it for a rounded table" if kind == 5 else
                   "it carries each cell's true frequency")
            raise StatreconError(f"{where}: <WRITETABLE> output type {kind} "
                                 f"({OUTPUT_TYPES[kind]}) of table {table}, rounded on line "
                                 f"{self.rounded[table]}: {why}; write type 1, 2 or 3",
                                 where=where)
        folder = self.output_folder or (self.path.parent if str(self.path.parent) else
                                        Path("."))
        file_name = PureWindowsPath(name).name
        if not file_name or file_name in (".", "..") or any(ord(c) < 32 for c in name):
            raise StatreconError(f"{where}: <WRITETABLE> names no file (or one with control "
                                 "characters)", where=where)
        return WriteTable(number, table, kind, options, name, folder / file_name)

    def recode(self, rest: str, number: int, where: str) -> Recode:
        if not self.micro:
            raise StatreconError(f"{where}: <RECODE> recodes microdata; table input is not "
                                 "recoded (as in tau-Argus)", where=where)
        parts = rest.split(",", 2)
        if len(parts) != 3:
            raise StatreconError(f"{where}: <RECODE> is 'table, variable, file or level'",
                                 where=where)
        table = _number(parts[0], where, "<RECODE>'s table")
        _table_number(table, len(self.tables), where, "<RECODE>", zero=False)
        variable = _unquote(parts[1].strip())
        spec = self.tables[table - 1]
        if variable.lower() not in (v.lower() for v in spec.explanatory):
            raise StatreconError(f"{where}: <RECODE>: table {table} has no variable "
                                 f"{variable!r}", where=where)
        source = _unquote(parts[2].strip())
        if len(source) == 1 and source in "123456789":
            return Recode(number, table, variable, int(source), None)
        return Recode(number, table, variable, None,
                      _rda.resolve(self.path, source, "recode file", where))

    def apriori(self, rest: str, number: int, where: str) -> AprioriStep:
        """Read by the batch reader's own rule for ``<APRIORI>`` (``_rda``), for the tables
        specified so far."""
        tables = [_rda.BatchTable(self.path, self.path, list(t.explanatory), t.response)
                  for t in self.tables]
        _rda._apriori(self.path, rest, where, tables)
        return AprioriStep(number, next(c for t in tables for c in t.apriori))

    def finish(self) -> Job:
        if self.data is None or self.metadata is None:
            raise StatreconError(f"{self.path}: the job opens no data and metadata "
                                 "(<OPENMICRODATA> or <OPENTABLEDATA>, <OPENMETADATA>)",
                                 where=str(self.path))
        if not self.tables:
            raise StatreconError(f"{self.path}: no <SPECIFYTABLE>", where=str(self.path))
        return Job(self.path, self.data if self.micro else None,
                   self.metadata if self.micro else None, tuple(self.tables),
                   tuple(self.steps), tuple(self.aside), self.output_folder)


def _refused(word: str) -> str:
    if word == "<CLEAR>":
        return "one job per batch file: split it at <CLEAR>"
    if word == "<COVER>":
        return "tau-Argus's internal cover-table command"
    return "unknown command"


def _specify(rest: str, number: int, line: int, where: str) -> Specified:
    head, bar, tail = rest.partition("|")
    explanatory = tuple(_rda.tokens(head))
    if not bar or not explanatory:
        raise StatreconError(f"{where}: <SPECIFYTABLE> is '\"A\"\"B\"|\"response\"|...' (the "
                             "explanatory variables, a '|', the response)", where=where)
    fields = tail.split("|")
    response = _unquote(fields[0].strip())
    if not response:
        raise StatreconError(f"{where}: <SPECIFYTABLE> names no response (<FREQ> counts "
                             "records)", where=where)
    shadow = _unquote(fields[1].strip()) if len(fields) > 1 else ""
    cost_text = fields[2] if len(fields) > 2 else ""
    cost, _, lam = cost_text.partition(",")
    if len(set(v.lower() for v in explanatory)) != len(explanatory):
        raise StatreconError(f"{where}: <SPECIFYTABLE> names a variable twice", where=where)
    return Specified(number, line, explanatory,
                     None if response.upper() == "<FREQ>" else response, shadow,
                     _unquote(cost.strip()), lam.strip())


def cost_variable(spec: Specified) -> str | None:
    """The cost variable a ``<SPECIFYTABLE>`` names (tau-Argus's COSTVAR), or None."""
    return spec.cost if spec.cost and not spec.cost.startswith("-") else None


def _suppress(rest: str, line: int, where: str, tables: int) -> Suppress:
    m = re.fullmatch(r"([A-Za-z]+)\s*\((.*)\)\s*(//.*)?", rest)
    if m is None:
        raise StatreconError(f"{where}: <SUPPRESS> is a method and its arguments, e.g. "
                             "MOD(1)", where=where)
    method = m.group(1).upper()
    if method in NOT_SUPPRESSION:
        raise StatreconError(f"{where}: <SUPPRESS> {method} is {NOT_SUPPRESSION[method]}, not "
                             "cell suppression or rounding: statrecon suppresses cells and "
                             "proves them protected (GH, MOD, NET, OPT), or rounds (RND)",
                             where=where)
    if method not in METHODS and method != ROUNDING:
        raise StatreconError(f"{where}: <SUPPRESS> {method}: unknown method (GH, MOD, OPT, "
                             "NET, RND)", where=where)
    arguments = tuple(a.strip() for a in m.group(2).split(","))
    table = _number(arguments[0], where, "<SUPPRESS>'s table")
    _table_number(table, tables, where, "<SUPPRESS>", zero=method in ("GH", "MOD"))
    checked = check_arguments(method, table, arguments[1:], where)
    return Suppress(line, method, table, arguments[1:], checked.rounding, checked.notes)


def _number(text: str, where: str, what: str) -> int:
    text = text.strip()
    if not text.isdigit() or len(text) > 4:
        raise StatreconError(f"{where}: {what} {text[:20]!r} is not a table number",
                             where=where)
    return int(text)


def _table_number(table: int, tables: int, where: str, command: str, *, zero: bool) -> None:
    if not (1 <= table <= tables or (zero and table == 0)):
        extra = " (0: every table, GH and MOD only)" if zero else ""
        raise StatreconError(f"{where}: {command}: no table {table}; the job specifies "
                             f"{tables}{extra}", where=where)


def _write_arguments(rest: str, where: str) -> tuple[int, int, dict[str, bool], str]:
    m = re.fullmatch(r"\(\s*([^,]*),\s*([^,]*),([^,]*),(.*)\)\s*(//.*)?", rest)
    if m is None:
        raise StatreconError(f"{where}: <WRITETABLE> is (table, output type, options, "
                             "\"file\"), e.g. (1, 3, AS+FL+, \"out.csv\")", where=where)
    table = _number(m.group(1), where, "<WRITETABLE>'s table")
    kind = _number(m.group(2), where, "<WRITETABLE>'s output type")
    if kind not in OUTPUT_TYPES or kind > 5:
        known = ", ".join(f"{k} {n}" for k, n in OUTPUT_TYPES.items() if k <= 5)
        raise StatreconError(f"{where}: <WRITETABLE> output type {kind} "
                             f"({OUTPUT_TYPES.get(kind, 'unknown')}) is not written by "
                             f"statrecon ({known})", where=where)
    options = {name: False for name in WRITE_OPTIONS}
    options["QU"] = True
    options["FL"] = kind == 2
    text = re.sub(r"\s+", "", m.group(3)).upper()
    for found in re.finditer(r"(..)([+-])|(.+)", text):
        if found.group(3) or found.group(1) not in WRITE_OPTIONS:
            bad = found.group(3) or found.group(1)
            raise StatreconError(f"{where}: <WRITETABLE> option {bad[:10]!r} is not one of "
                                 f"{', '.join(o + '+' for o in WRITE_OPTIONS)} (or -)",
                                 where=where)
        options[found.group(1)] = found.group(2) == "+"
    return table, kind, options, _unquote(m.group(4).strip())


def _unquote(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


# ------------------------------------------------------------------------------ microdata


# tau-Argus's status numbers (libtauargus defines.h), written by <WRITETABLE> with AS+
STATUS_NUMBERS = {"safe": 1, "rule": 3, "request": 4, "frequency": 5, "zero": 6, "manual": 9,
                  "protected": 10, "secondary": 11, "empty": 14}


@dataclass(frozen=True)
class JobTable:
    """A table of the job as it stands: the table, why each primary cell is unsafe (a
    reason of ``safety.Reason`` by cell position; ``manual`` where unknown), the decimals
    tau-Argus writes it with, and its specification."""

    spec: Specified
    table: Table
    reasons: Mapping[int, str]
    decimals: int
    hierarchical: frozenset[str] | None = None  # variables with a hierarchy (None: those
    # with subtotals)

    def status_number(self, i: int) -> int:
        """tau-Argus's status number of cell ``i`` (AS+ columns, SBS letters)."""
        status = self.table.cells[i].status
        if status is CellStatus.PRIMARY:
            return STATUS_NUMBERS[self.reasons.get(i, "manual")]
        return STATUS_NUMBERS[status.value]


class MicroJob:
    """The tables of a microdata job, tabulated from its records, recoded as its steps say:
    read the metadata and the records once, then :meth:`table` gives each table as it
    stands and :meth:`recode` changes a variable for every table that has it."""

    def __init__(self, job: Job) -> None:
        assert job.microdata is not None and job.metadata is not None
        self.job = job
        self.meta = asc.read_micro_rda(job.metadata)
        self._variables = {spec.number: self._check(spec) for spec in job.tables}
        self.records = asc.read_asc(job.microdata, self.meta)
        used = {name for names in self._variables.values() for name in names}
        self._original = {v.name: asc.hierarchy(self.records, v) for v in self.meta.variables
                          if v.name in used}
        self._recoded: dict[str, Recoding] = {}
        self._apriori: dict[int, list[_rda.AprioriCommand]] = {}

    def _check(self, spec: Specified) -> tuple[str, ...]:
        where = self.job.where(spec.line)
        names = []
        for name in spec.explanatory:
            v = self.meta.find(name, where, "explanatory variable")
            if not v.explanatory:
                raise StatreconError(f"{where}: {v.name} is not <RECODEABLE> in "
                                     f"{self.meta.path.name}", where=where)
            names.append(v.name)
        for numeric in (spec.response, spec.shadow or None, cost_variable(spec)):
            if numeric is not None:
                v = self.meta.find(numeric, where, "numeric variable")
                if not v.numeric:
                    raise StatreconError(f"{where}: {v.name} is not <NUMERIC> in "
                                         f"{self.meta.path.name}", where=where)
        if spec.shadow and (spec.response or "").lower() != spec.shadow.lower():
            raise StatreconError(f"{where}: a shadow variable ({spec.shadow}) other than the "
                                 "response is not applied: the rules read the response's "
                                 "contributions; leave the shadow empty", where=where)
        return tuple(names)

    def hierarchy(self, name: str) -> Hierarchy:
        recoded = self._recoded.get(name)
        return recoded.hierarchy if recoded is not None else self._original[name]

    def recode(self, step: Recode) -> None:
        """Recode a variable from its own codes (a second recode replaces the first)."""
        where = self.job.where(step.line)
        v = self.meta.find(step.variable, where)
        original = self._original[v.name]
        if step.level is not None:
            if not (v.levels or v.hierarchy_file):
                raise StatreconError(f"{where}: <RECODE> to a level needs a hierarchical "
                                     f"variable; {v.name} is flat", where=where)
            self._recoded[v.name] = truncate(original, step.level)
        elif step.file is not None and (v.levels or v.hierarchy_file):
            self._recoded[v.name] = tree_recode(step.file, original)
        else:
            assert step.file is not None
            self._recoded[v.name] = grc_recode(step.file, original, v.length, v.missing)

    def apriori(self, step: AprioriStep) -> None:
        """An a-priori file for its table, applied whenever the table is built from now."""
        self._apriori.setdefault(step.command.table, []).append(step.command)

    def table(self, spec: Specified) -> JobTable:
        """The table ``spec`` as it stands (recodes applied), its unsafe cells marked."""
        # lazy: pandas, the tabulation and the rules load when a job is run
        from statrecon.tables.rules import RuleColumns, TableSpec, table_with_safety_rules

        names = self._variables[spec.number]
        hierarchies = {n: self.hierarchy(n) for n in names}
        check_grid_size(hierarchies.values(), where=self.job.where(spec.line))
        frame = self._frame(names, spec)
        rules = spec.rules or parse_safety_rule("", self.job.where(spec.line))
        weight = self.meta.weight
        response = self._name(spec.response) if spec.response else None
        table_spec = TableSpec(variables=list(names), hierarchies=hierarchies,
                               response=response,
                               weight=weight.name if weight and rules.weighted else None,
                               name=_table_name(spec, self.job), total="Total")
        holding, request = self.meta.holding, self._request()
        columns = RuleColumns(holding.name if holding else None,
                              request.name if request else None,
                              _request_codes(request))
        missing = {n: _missing(hierarchies[n], self.meta.find(n, "")) for n in names}
        source = str(self.records.path)
        table = table_with_safety_rules(frame, table_spec, rules, columns, missing=missing,
                                        source=source)
        named = cost_variable(spec)
        cost = self._name(named) if named else None
        table = _with_costs(table, cost, frame, table_spec, source)
        reasons = _reasons(table, frame, table_spec, rules, columns, source)
        if self._apriori.get(spec.number):
            # lazy: a-priori files are read only by the jobs that have one
            from statrecon.tables.apriori import apply_commands

            table = apply_commands(table, self._apriori[spec.number], rules.manual)
        decimals = 0 if response is None else self.meta.find(response, "").decimals
        hierarchical = frozenset(n for n in names if self.meta.find(n, "").hierarchical)
        return JobTable(spec, table, reasons, decimals, hierarchical)

    def _name(self, name: str) -> str:
        return self.meta.find(name, "").name

    def _request(self) -> asc.MicroVariable | None:
        return next((v for v in self.meta.variables if v.request), None)

    def _frame(self, names: Sequence[str], spec: Specified) -> pd.DataFrame:
        frame = self.records.frame.copy(deep=False)
        for name in names:
            recoded = self._recoded.get(name)
            if recoded is not None and recoded.codes:
                frame[name] = frame[name].map(lambda c, m=recoded.codes: m.get(c, c))
        return frame


def _missing(hierarchy: Hierarchy, v: asc.MicroVariable) -> tuple[str, ...]:
    """The variable's missing codes as its (maybe recoded) hierarchy writes them."""
    wanted = {m.strip() for m in v.missing}
    return tuple(c for c in hierarchy.children.get(hierarchy.total, ())
                 if c.strip() in wanted)


def _request_codes(request: asc.MicroVariable | None) -> tuple[str, str]:
    if request is None:
        return ("1", "2")
    codes = [c.strip() for c in request.request]
    return (codes[0], codes[1] if len(codes) > 1 else codes[0])


def _table_name(spec: Specified, job: Job) -> str:
    return f"table{spec.number}" if len(job.tables) > 1 else job.path.stem


def _with_costs(table: Table, cost: str | None, frame: pd.DataFrame, table_spec: TableSpec,
                source: str) -> Table:
    """A cost variable's sums as each cell's cost (tau-Argus's COSTVAR), tabulated like the
    response; the other cost functions need no column."""
    if cost is None:
        return table
    # lazy: as MicroJob.table
    from statrecon.tables.rules import tabulate

    summed = tabulate(frame, replace(table_spec, response=cost, tops=0), source)
    return replace(table, cells=tuple(replace(c, cost=abs(k.value))
                                      for c, k in zip(table.cells, summed.cells, strict=True)))


def _reasons(table: Table, frame: pd.DataFrame, spec: TableSpec, rules: SafetyRules,
             columns: RuleColumns, source: str) -> dict[int, str]:
    """Why each primary cell is unsafe (the rule's kind), for tau-Argus's status numbers."""
    # lazy: as MicroJob.table
    from statrecon.tables import rules as tabulation

    primary = [i for i, c in enumerate(table.cells) if c.status is CellStatus.PRIMARY]
    if not primary:
        return {}
    if not (rules.weighted or rules.needs_holding or rules.individual.request):
        # records alone: what a cell carries (its frequency, largest contributions) is all
        found: dict[int, str] = {}
        for i in primary:
            own, _none = cell_facts(i, table.cells[i])
            verdict = assess(table.cells[i].value, own, rules)
            found[i] = verdict.reason if verdict is not None else "manual"
        return found
    facts = tabulation._rule_facts(frame, table, spec, rules, columns, source)
    found = {}
    for i in primary:
        own, held = facts[i]
        verdict = assess(table.cells[i].value, own, rules, held)
        found[i] = verdict.reason if verdict is not None else "manual"
    return found


def link(tables: Sequence[JobTable]) -> TableSet:
    """Tables of one response as one linked set: a cell published in several is one cell,
    primary where any of them finds it unsafe (with the largest protection levels)."""
    keyed: dict[frozenset[tuple[str, str]], tuple[CellStatus, tuple[Fraction, Fraction]]] = {}
    for jt in tables:
        for cell in jt.table.cells:
            if cell.status is CellStatus.PRIMARY:
                key = jt.table.key(cell)
                old = keyed.get(key, (CellStatus.PRIMARY, (Fraction(0), Fraction(0))))[1]
                keyed[key] = (CellStatus.PRIMARY, (max(old[0], cell.protection[0]),
                                                   max(old[1], cell.protection[1])))
    merged = []
    for jt in tables:
        cells = []
        for cell in jt.table.cells:
            found = keyed.get(jt.table.key(cell))
            if found is not None and cell.status in (CellStatus.SAFE, CellStatus.PRIMARY):
                cell = replace(cell, status=found[0], protection=found[1])
            cells.append(cell)
        merged.append(replace(jt.table, cells=tuple(cells)))
    return TableSet(tuple(merged))


def job_tables(job: Job) -> list[JobTable]:
    """The job's tables after all its recodes, before any suppression (what ``tables
    audit`` audits)."""
    if job.microdata is None:
        return table_input(job)
    micro = MicroJob(job)
    for step in job.steps:
        if isinstance(step, Recode):
            micro.recode(step)
        elif isinstance(step, AprioriStep):
            micro.apriori(step)
    return [micro.table(spec) for spec in job.tables]


def table_input(job: Job) -> list[JobTable]:
    """The tables of a table-input job (``tauargus.read_arb``), each primary cell unsafe
    by its status (tau-Argus's manual status)."""
    # lazy: the table reader loads only for table input
    from statrecon.tables.tauargus import read_arb

    tables = read_arb(job.path).tables
    if len(tables) != len(job.tables):
        raise StatreconError(f"{job.path}: {len(job.tables)} <SPECIFYTABLE>, but "
                             f"{len(tables)} tables read", where=str(job.path))
    return [JobTable(spec, table, {}, table.decimals)
            for spec, table in zip(job.tables, tables, strict=True)]
