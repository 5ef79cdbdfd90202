"""tau-Argus metadata for table input: the ``.rda`` file, its ``.hrc`` hierarchies and ``.cdl``
code lists, and the ``.arb`` batch file that names them.

The rules follow tau-Argus's own reader (sdcTools/tauargus, ``Metadata.readTableMetadata`` and
``setVariableLengthFromData``), so that a file tau-Argus reads means the same here:

- a variable line is its name and up to two *missing* codes (``Size "99"``); keywords on the
  following lines give its role. tau-Argus adds the missing codes to the variable's codes, as
  children of the total after the others: ``pp.tab`` has rows for ``Region "99"``.
- a hierarchical variable's ``.hrc`` gives each code on a line, preceded by the lead string
  once per level below the first (``@ 1`` is code `` 1`` one level below ``Nr``); trailing
  blanks are dropped, leading ones kept; the total is implicit and may not appear.
- a code appears once. tau-Argus does not check it (libtauargus ``CVariable::SetCodeList``
  lists the code twice, and a record finds only the first bottom-level copy), so a code
  repeated, under the same parent or under two, is refused here, naming both lines; so are
  two codes that differ only in their leading blanks (``1`` and `` 1``), which the ``.tab``
  reader (codes padded to the variable's length) and the spec route (padding stripped) read
  as one code.
- a file named in the ``.rda`` is looked up next to the ``.rda``; tau-Argus (on Windows) finds
  ``"REGION.CDL"`` as ``region.cdl``, so names match without regard to case. A path that
  leaves the ``.rda``'s folder (absolute, or with ``..``) is looked up by its file name there,
  as tau-Argus falls back to the data folder, and a symbolic link that leads out of the
  folder is refused before it is read: a file from a stranger reads nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from statrecon import inputs
from statrecon.errors import StatreconError
from statrecon.tables.model import Hierarchy, show_code
from statrecon.tables.safety import parse_safety_rule
from statrecon.tables.values import MAX_DECIMALS

_TOKEN = re.compile(r'"([^"]*)"|(<[^>]*>)|([^\s"<]+)')
ROLES = ("explanatory", "response", "shadow", "cost", "lower", "upper", "frequency", "top",
         "status")
_NUMERIC_ROLES = {"": "response", "<SHADOW>": "shadow", "<COST>": "cost",
                  "<COSTVAR>": "cost", "<LOWERPL>": "lower", "<UPPERPL>": "upper"}
_SINGLE = ("shadow", "cost", "frequency", "lower", "upper", "status")


def read_text(path: Path, what: str) -> str:
    """The text of ``path`` (UTF-8, else Latin-1 as tau-Argus on Windows writes), through the
    input gate (size limit, regular files only), or a StatreconError naming it."""
    return inputs.read_text(path, what, latin1=True)


def resolve(named_by: Path, name: str, what: str, where: str) -> Path:
    """The file ``name`` that ``named_by`` (an .rda, .arb or spec) names, in its folder, its
    case ignored; a name that leaves the folder is looked up by its last part, and a link
    out of the folder is refused (see the module docstring and :func:`inputs.named_file`)."""
    return inputs.named_file(name, named_by, what, where, by_file_name=True, ignore_case=True)


def tokens(line: str) -> list[str]:
    """An .rda or .arb line's tokens: quoted strings (unquoted, inner blanks kept),
    ``<KEYWORDS>`` and bare words."""
    return [word for word, _ in _quoted_tokens(line)]


def _quoted_tokens(line: str) -> list[tuple[str, bool]]:
    found = []
    for match in _TOKEN.finditer(line):
        quoted, keyword, word = match.groups()
        found.append((quoted, True) if quoted is not None else (keyword or word, False))
    return found


@dataclass
class Variable:
    """One variable of an .rda file, with the line that declares it."""

    name: str
    line: int
    role: str = ""
    missing: list[str] = field(default_factory=list)
    total: str | None = None
    codelist: str | None = None
    hierarchical: bool = False
    hierarchy_file: str | None = None
    lead: str = "."  # tau-Argus's default lead string
    decimals: int = 0
    lines: dict[str, int] = field(default_factory=dict)  # keyword -> its line

    def where(self, path: Path, keyword: str) -> str:
        """``path:line`` of ``keyword`` for this variable (else of the variable)."""
        return f"{path}:{self.lines.get(keyword, self.line)}"


@dataclass
class Metadata:
    """An .rda file read: its variables in column order, the separator and status letters."""

    path: Path
    variables: list[Variable] = field(default_factory=list)
    separator: str = ";"
    safe: str = "S"
    unsafe: str = "U"
    protect: str = "P"

    def of_role(self, role: str) -> list[Variable]:
        return [v for v in self.variables if v.role == role]


def read_rda(path: Path) -> Metadata:
    """Parse an .rda file for table input; every mistake names ``path:line``."""
    meta = Metadata(path)
    current: Variable | None = None
    for number, line in enumerate(read_text(path, "metadata file").splitlines(), start=1):
        words = _quoted_tokens(line)
        if not words:
            continue
        where = f"{path}:{number}"
        first, quoted = words[0]
        if quoted or not first.startswith("<"):
            current = _new_variable(meta, words, number, where)
        else:
            _keyword(meta, current, first, [w for w, _ in words[1:]], where)
    _verify(meta)
    return meta


def _new_variable(meta: Metadata, words: list[tuple[str, bool]], number: int,
                  where: str) -> Variable:
    name = words[0][0]
    if any(v.name.lower() == name.lower() for v in meta.variables):
        raise StatreconError(f"{where}: variable {name} is declared twice", where=where)
    missing = [w for w, _ in words[1:] if w.strip()]
    if len(missing) > 2:
        raise StatreconError(f"{where}: variable {name}: at most two missing codes, "
                             f"not {len(missing)}", where=where)
    variable = Variable(name, number, missing=missing)
    meta.variables.append(variable)
    return variable


def _keyword(meta: Metadata, variable: Variable | None, word: str, args: list[str],
             where: str) -> None:
    arg = args[0] if args else ""
    if word in ("<SEPARATOR>", "<SAFE>", "<UNSAFE>", "<PROTECT>"):
        if not arg:
            raise StatreconError(f"{where}: {word} needs a value", where=where)
        attribute = {"<SEPARATOR>": "separator", "<SAFE>": "safe", "<UNSAFE>": "unsafe",
                     "<PROTECT>": "protect"}[word]
        setattr(meta, attribute, arg if word == "<SEPARATOR>" else arg.upper())
        return
    if variable is None:
        raise StatreconError(f"{where}: {word} before any variable", where=where)
    variable.lines[word] = int(where.rsplit(":", 1)[1])
    _variable_keyword(variable, word, arg, where)


def _variable_keyword(variable: Variable, word: str, arg: str, where: str) -> None:
    simple = {"<RECODEABLE>": "explanatory", "<RECODABLE>": "explanatory",
              "<FREQUENCY>": "frequency", "<MAXSCORE>": "top", "<STATUS>": "status"}
    if word in simple:
        variable.role = simple[word]
    elif word == "<NUMERIC>":
        if arg not in _NUMERIC_ROLES:
            raise StatreconError(f"{where}: unknown token {arg} after <NUMERIC>", where=where)
        variable.role = _NUMERIC_ROLES[arg]
    elif word in ("<TOTCODE>", "<CODELIST>", "<HIERCODELIST>", "<HIERLEADSTRING>",
                  "<DECIMALS>"):
        _valued_keyword(variable, word, arg, where)
    elif word == "<HIERARCHICAL>":
        variable.hierarchical = True
    elif word == "<HIERLEVELS>":
        raise StatreconError(f"{where}: <HIERLEVELS> (a hierarchy by digits) is not "
                             f"supported; give the hierarchy as an .hrc file", where=where)
    elif word not in ("<DISTANCE>", "<TRUNCABLE>"):
        raise StatreconError(f"{where}: unknown keyword {word}", where=where)


def _valued_keyword(variable: Variable, word: str, arg: str, where: str) -> None:
    if word == "<DECIMALS>":
        if not arg.isdigit() or len(arg) > 3 or int(arg) > MAX_DECIMALS:
            raise StatreconError(f"{where}: <DECIMALS> needs a whole number from 0 to "
                                 f"{MAX_DECIMALS}, not {arg[:40]!r}", where=where)
        variable.decimals = int(arg)
    elif word == "<TOTCODE>":
        variable.total = arg
    elif not arg:
        raise StatreconError(f"{where}: {word} needs a value", where=where)
    elif word == "<CODELIST>":
        variable.codelist = arg
    elif word == "<HIERCODELIST>":
        variable.hierarchy_file = arg
    else:
        variable.lead = arg


def _verify(meta: Metadata) -> None:
    path = meta.path
    for v in meta.variables:
        where = f"{path}:{v.line}"
        if not v.role:
            raise StatreconError(f"{where}: variable {v.name} has no role (<RECODEABLE>, "
                                 f"<NUMERIC>, <FREQUENCY>, <MAXSCORE>, <STATUS>)", where=where)
        if v.role == "explanatory" and not (v.total or "").strip():
            raise StatreconError(f"{where}: explanatory variable {v.name} needs a <TOTCODE>",
                                 where=where)
        if v.hierarchical and not v.hierarchy_file:
            raise StatreconError(f"{where}: hierarchical variable {v.name} needs a "
                                 f"<HIERCODELIST>", where=where)
    if not meta.of_role("explanatory"):
        raise StatreconError(f"{path}: no explanatory variable (<RECODEABLE>)",
                             where=str(path))
    for role in _SINGLE:
        found = meta.of_role(role)
        if len(found) > 1:
            raise StatreconError(f"{path}:{found[1].line}: a second {role} variable "
                                 f"({found[1].name})", where=f"{path}:{found[1].line}")
    if not meta.of_role("response") and not meta.of_role("frequency"):
        raise StatreconError(f"{path}: no response (<NUMERIC>) or <FREQUENCY> variable",
                             where=str(path))


# ----------------------------------------------------------------------------------------
# hierarchies and code lists


@dataclass(frozen=True)
class HrcFile:
    """An .hrc file read: the hierarchy below the total, the longest code (tau-Argus pads a
    table's codes to it) and each code's line."""

    children: dict[str, tuple[str, ...]]
    length: int
    lines: dict[str, int]


def read_hrc(path: Path, variable: str, total: str, lead: str) -> HrcFile:
    """Parse an .hrc file (see the module docstring); mistakes name ``path:line``."""
    children: dict[str, list[str]] = {total: []}
    stack = [total]  # stack[d] is the latest code at depth d (the total at depth 0)
    lines: dict[str, int] = {}
    bare: dict[str, str] = {}  # each code without its leading blanks -> the code
    for number, raw in enumerate(read_text(path, "hierarchy file").splitlines(), start=1):
        depth, code = _hrc_line(raw, lead)
        if not code.strip():
            continue
        where = f"{path}:{number}"
        _check_hrc_code(code, depth, len(stack), total, lines, bare, where)
        del stack[depth + 1:]
        children.setdefault(stack[-1], []).append(code)
        stack.append(code)
        lines[code] = number
        bare[code.lstrip()] = code
    length = max((len(c) for c in lines), default=0)
    return HrcFile({p: tuple(k) for p, k in children.items() if k}, length, lines)


def _hrc_line(raw: str, lead: str) -> tuple[int, str]:
    depth = 0
    while lead and raw.startswith(lead):
        raw = raw[len(lead):]
        depth += 1
    return depth, raw.rstrip(" \t\r\n")


def _check_hrc_code(code: str, depth: int, levels: int, total: str,
                    lines: dict[str, int], bare: dict[str, str], where: str) -> None:
    if code.strip() == total.strip():
        raise StatreconError(f"{where}: the total code {total!r} may not appear in a "
                             f"hierarchy file (tau-Argus adds it)", where=where)
    if depth > levels - 1:
        raise StatreconError(f"{where}: code {show_code(code)} is {depth + 1} levels deep "
                             f"below a code of level {levels - 1}", where=where)
    if code in lines:
        raise StatreconError(f"{where}: code {show_code(code)} appears twice (also on line "
                             f"{lines[code]})", where=where)
    other = bare.get(code.lstrip())
    if other is not None:
        raise StatreconError(f"{where}: code {code[:40]!r} is {other[:40]!r} of line "
                             f"{lines[other]} but for its leading blanks: the same code twice",
                             where=where)


def read_codelist(path: Path) -> dict[str, str]:
    """A .cdl file: ``code,label`` lines, as code -> label (codes kept as written)."""
    labels: dict[str, str] = {}
    for raw in read_text(path, "code list").splitlines():
        if raw.strip():
            code, _, label = raw.partition(",")
            labels[code.rstrip()] = label.strip()
    return labels


def with_missing(variable: str, hrc: HrcFile, total: str, missing: list[str]) -> Hierarchy:
    """The hierarchy of an .hrc with the missing codes added under the total, last."""
    top = list(hrc.children.get(total, ()))
    top.extend(m for m in missing if m not in hrc.lines and m not in top)
    children = dict(hrc.children)
    if top:
        children[total] = tuple(top)
    return Hierarchy(variable, total, children)


# ----------------------------------------------------------------------------------------
# batch files


@dataclass
class BatchTable:
    """One table an .arb batch file opens: its files and the response it specifies."""

    tab: Path
    rda: Path
    explanatory: list[str]
    response: str | None
    line: int = 0
    manual_margin: Fraction | None = None  # <SAFETYRULE> MAN(x): x % (None: not given)
    apriori: list[AprioriCommand] = field(default_factory=list)  # its <APRIORI> files

    def same_as(self, other: BatchTable) -> bool:
        return (self.tab, self.rda, sorted(v.lower() for v in self.explanatory),
                self.response) == (other.tab, other.rda,
                                   sorted(v.lower() for v in other.explanatory), other.response)


@dataclass
class Batch:
    tables: list[BatchTable]
    read_mode: int  # <READTABLE>'s parameter: 0 check, 1 recompute the totals, 2 no check


def read_arb(path: Path) -> Batch:
    """The table-input commands of a tau-Argus batch file (others are left to tau-Argus)."""
    opened: dict[str, Path] = {}
    tables: list[BatchTable] = []
    mode = 0
    for number, raw in enumerate(read_text(path, "batch file").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        where = f"{path}:{number}"
        command, _, rest = line.partition(">")
        command = command.upper() + ">"
        if command in ("<OPENTABLEDATA>", "<OPENMETADATA>"):
            name = (tokens(rest) or [""])[0]
            opened[command] = resolve(path, name, command.strip("<>").lower(), where)
        elif command == "<SPECIFYTABLE>":
            table = _specify(opened, rest, where)
            twice = next((t for t in tables if t.same_as(table)), None)
            if twice is not None:
                raise StatreconError(f"{where}: <SPECIFYTABLE> specifies the same table as "
                                     f"line {twice.line}", where=where)
            tables.append(table)
        elif command == "<APRIORI>":
            _apriori(path, rest, where, tables)
        elif command == "<SAFETYRULE>":
            if not tables:
                raise StatreconError(f"{where}: <SAFETYRULE> before any <SPECIFYTABLE> (it "
                                     "applies to the table specified last)", where=where)
            tables[-1].manual_margin = safety_rules(rest, where)
        elif command == "<READTABLE>":
            digits = re.match(r"\s*(\d)", rest)
            mode = int(digits.group(1)) if digits else 0
    if not tables:
        raise StatreconError(f"{path}: no <SPECIFYTABLE> after <OPENTABLEDATA> and "
                             f"<OPENMETADATA>", where=str(path))
    return Batch(tables, mode)


def _specify(opened: dict[str, Path], rest: str, where: str) -> BatchTable:
    if "<OPENTABLEDATA>" not in opened or "<OPENMETADATA>" not in opened:
        raise StatreconError(f"{where}: <SPECIFYTABLE> needs <OPENTABLEDATA> and "
                             f"<OPENMETADATA> before it (microdata batch files are not "
                             f"read here)", where=where)
    parts = rest.split("|")
    explanatory = tokens(parts[0])
    named = tokens(parts[1]) if len(parts) > 1 else []
    response = named[0] if named else None
    return BatchTable(opened["<OPENTABLEDATA>"], opened["<OPENMETADATA>"], explanatory,
                      response, int(where.rsplit(":", 1)[1]))


def safety_rules(rest: str, where: str) -> Fraction:
    """A ``<SAFETYRULE>`` line of a table-input job, read by :func:`safety.parse_safety_rule`:
    ``MAN(x)``, the manual safety margin (x % of a primary cell's value as its protection
    levels where the table gives none), returned as x / 100. The statuses of table input come
    from its file, so another rule would be ignored: it is refused instead, naming the rule
    (microdata jobs apply them: ``safety.mark_unsafe``)."""
    rules = parse_safety_rule(rest, where)
    if not rules.status_only or rules.weighted or rules.missing_safe:
        raise StatreconError(f"{where}: <SAFETYRULE> {rules}: the primary cells of table "
                             "input are the statuses its file gives; safety rules other than "
                             "MAN are applied to microdata jobs", where=where)
    if not rules.manual_given:
        raise StatreconError(f"{where}: <SAFETYRULE> names no rule", where=where)
    return rules.manual / 100


@dataclass(frozen=True)
class AprioriCommand:
    """An ``<APRIORI>`` command: the a-priori file (resolved beside the batch file), the
    table it changes (1-based, in ``<SPECIFYTABLE>`` order), the separator, IgnoreError and
    ExpandTrivial (read and applied by :mod:`statrecon.tables.apriori`)."""

    file: Path
    table: int
    separator: str = ";"
    ignore_errors: bool = True
    expand_trivial: bool = False
    where: str = ""


def _apriori(path: Path, rest: str, where: str, tables: list[BatchTable]) -> None:
    """``<APRIORI> "file.hst", TabNo, "sep", IgnoreError, ExpandTrivial`` (the last two 0 or
    1, optional: IgnoreError 1, ExpandTrivial 0 as tau-Argus has them): the a-priori file of
    a table specified before it, kept with that table to be applied once it is read."""
    values = [quoted if quoted is not None and quoted != "" else bare
              for quoted, bare in re.findall(r'"([^"]*)"|([^,\s]+)', rest)]
    if len(values) < 2:
        raise StatreconError(f"{where}: <APRIORI> needs a file name and a table number "
                             '(<APRIORI> "file.hst", 1, ";", 0, 0)', where=where)
    found = resolve(path, values[0], "a-priori file", where)
    number = values[1]
    if not number.isdigit() or not 1 <= int(number) <= len(tables):
        raise StatreconError(f"{where}: <APRIORI> table {number[:20]!r}: a table specified "
                             f"before it (1 to {len(tables)})", where=where)
    flags = []
    for name, text in zip(("IgnoreError", "ExpandTrivial"), values[3:5], strict=False):
        if text not in ("0", "1"):
            raise StatreconError(f"{where}: <APRIORI> {name} is 0 or 1, not {text[:20]!r}",
                                 where=where)
        flags.append(text == "1")
    ignore, expand = (flags + [True, False][len(flags):])[:2]
    tables[int(number) - 1].apriori.append(AprioriCommand(
        found, int(number), values[2] if len(values) > 2 else ";", ignore, expand, where))
