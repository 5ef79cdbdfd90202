"""A table spec file: what ``tables audit``/``tables protect --spec`` tabulate from microdata,
in one YAML file instead of command-line options (hierarchies cannot be given as options).

.. code-block:: yaml

    name: jobs                  # default: the spec file's name
    variables:                  # explanatory variables, in order
      - region:
          hierarchy: region.hrc # a tau-Argus .hrc file, beside the spec (lead: "@")
      - age:
          hierarchy:            # parent -> children; the total is the top code
            Total: [young, old]
            young: ["0-15", "16-29"]
            old: ["30-66", "67+"]
      - kommune:
          levels: [fylke, kommune]  # nested columns, coarse to fine, ending with the variable
      - sex:                    # a plain name (just "- sex") is flat: its codes under the total
          missing: ["9"]        # codes of a missing answer: cells under the total, always safe
    response: income            # summed; none: records are counted
    weight: w                   # multiplies the response
    contributor: firm           # records of one contributor count once
    zeros: empty                # or cells: combinations without records are published zeros
    total: Total                # the total code of flat and level hierarchies
    rules:                      # primary suppression (at least one)
      max_n: 3                  # primary when 1 <= contributors <= 3
      p_percent: 10             # or {p: 10, n: 2}
      nk: [2, 85]               # (n, k)-dominance
      protect_zeros: false
    protection: {lower: 0.1, upper: 0.1, sliding: 0, relative: true}

A hierarchy file written for tau-Argus's fixed-width microdata pads its codes (``@ 1`` is
code `` 1``); microdata in CSV or Parquet do not, so the spec reads the codes without their
padding (two codes that differ only in padding are an error). A missing code is tabulated as
tau-Argus does: a child of the total, and a cell with it is never primary.

The file is a stranger's: it is read within a size limit, with libyaml when installed, no
anchors or aliases, no duplicate or unknown keys, and every mistake names ``file:line``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import yaml

from statrecon.errors import StatreconError
from statrecon.tables import _rda
from statrecon.tables.frames import HierarchySpec, hierarchy_from_columns
from statrecon.tables.model import NO_PROTECTION, ZERO, Cell, CellStatus, Table
from statrecon.tables.rules import (
    Dominance,
    MinFrequency,
    PPercent,
    Protection,
    Rule,
    TableSpec,
    table_from_microdata,
)

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
TOP_KEYS = ("name", "variables", "response", "weight", "contributor", "zeros", "total",
            "rules", "protection")
RULE_KEYS = ("max_n", "p_percent", "nk", "protect_zeros")


@dataclass(frozen=True)
class MicrodataSpec:
    """A spec file read: the table to tabulate, its rules, and the hierarchies that need the
    microdata to be built (``levels``: variable -> nested columns)."""

    table: TableSpec
    rules: tuple[Rule, ...]
    protect_zeros: bool
    protection: Protection | None
    levels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    source: str = ""
    missing: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def tabulate(self, microdata: pd.DataFrame, source: str = "microdata") -> Table:
        """The table of these microdata (read from ``source``, which messages name) with
        its primary cells marked; a cell with a missing code of a variable is safe."""
        hierarchies: dict[str, HierarchySpec] = dict(self.table.hierarchies)
        for variable, columns in self.levels.items():
            hierarchies[variable] = hierarchy_from_columns(microdata, variable, columns,
                                                           self.table.total)
        for variable, codes in self.missing.items():
            hierarchies[variable] = _with_missing(hierarchies.get(variable, "flat"), codes)
        table = replace(self.table, hierarchies=hierarchies)
        made = table_from_microdata(microdata, table, self.rules,
                                    protect_zeros=self.protect_zeros,
                                    protection=self.protection, source=source)
        return _missing_safe(made, self.missing)


def _with_missing(given: HierarchySpec, codes: tuple[str, ...]) -> HierarchySpec:
    """A hierarchy with the missing codes as children of its total (where absent)."""
    if not isinstance(given, Mapping):
        return given  # flat: every code the microdata hold is a child of the total already
    children = {parent: list(kids) for parent, kids in given.items()}
    present = {c for kids in children.values() for c in kids} | set(children)
    root = next(p for p in children if p not in {c for k in children.values() for c in k})
    children[root] = children[root] + [c for c in codes if c not in present]
    return children


def _missing_safe(table: Table, missing: Mapping[str, tuple[str, ...]]) -> Table:
    """Cells with a missing code published as safe, without protection levels (tau-Argus)."""
    if not missing:
        return table

    def is_missing(cell: Cell) -> bool:
        return any(cell.code(v) in codes for v, codes in missing.items())

    cells = tuple(replace(c, status=CellStatus.SAFE, protection=NO_PROTECTION, sliding=ZERO)
                  if c.status is CellStatus.PRIMARY and is_missing(c) else c
                  for c in table.cells)
    return replace(table, cells=cells)


def read_spec(path: Path | str) -> MicrodataSpec:
    """Read and check a spec file (module docstring); mistakes name ``path:line``."""
    path = Path(path)
    text = _rda.read_text(path, "table spec")
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            if isinstance(event, yaml.AliasEvent):
                mark = event.start_mark
                where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
                raise StatreconError(f"{where}: aliases (*name) are not allowed in a table "
                                     "spec", where=where)
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise StatreconError(f"{where}: not valid YAML: {problem}", where=where) from None
    if node is None:
        raise StatreconError(f"{path}: the table spec is empty", where=str(path))
    top = _At(node, path).mapping(TOP_KEYS, "a table spec")
    if "variables" not in top:
        raise StatreconError(f"{path}: the table spec has no 'variables'", where=str(path))
    total = _optional_text(top, "total") or "Total"
    variables, hierarchies, levels, missing = _variables(top["variables"], path, total)
    rules, protect_zeros = _rules(top.get("rules"), path)
    zeros: Literal["empty", "cells"] = (
        top["zeros"].choice(("empty", "cells")) if "zeros" in top else "empty")
    table = TableSpec(
        variables=variables, hierarchies=hierarchies,
        response=_optional_text(top, "response"), weight=_optional_text(top, "weight"),
        contributor=_optional_text(top, "contributor"),
        name=_optional_text(top, "name") or path.stem, zeros=zeros,
        total=total)
    protection = _protection(top["protection"]) if "protection" in top else None
    return MicrodataSpec(table, rules, protect_zeros, protection, levels, str(path), missing)


def _optional_text(top: dict[str, _At], key: str) -> str | None:
    return top[key].text() if key in top else None


Codes = dict[str, tuple[str, ...]]


def _variables(at: _At, spec_file: Path, total: str
               ) -> tuple[list[str], dict[str, HierarchySpec], Codes, Codes]:
    names: list[str] = []
    hierarchies: dict[str, HierarchySpec] = {}
    levels: Codes = {}
    missing: Codes = {}
    items = at.sequence("a list of explanatory variables")
    if not items:
        at.fail("'variables' is empty: give at least one explanatory variable")
    for item in items:
        if isinstance(item.node, yaml.ScalarNode):
            name, options = item.text(), {}
        else:
            entry = item.mapping(None, "a variable: a name, or name: {hierarchy | levels}")
            if len(entry) != 1:
                item.fail("a variable is one name with its options (name: {hierarchy: ...})")
            name, body = next(iter(entry.items()))
            options = body.mapping(("hierarchy", "levels", "lead", "missing"),
                                   f"options of {name}")
        if name in names:
            item.fail(f"variable {name!r} is listed twice")
        names.append(name)
        if "hierarchy" in options and "levels" in options:
            item.fail(f"variable {name!r}: give a hierarchy or levels, not both")
        if "hierarchy" in options:
            lead = options["lead"].text() if "lead" in options else "@"
            hierarchies[name] = _hierarchy(options["hierarchy"], name, lead, spec_file, total)
        elif "levels" in options:
            cols = tuple(c.text() for c in options["levels"].sequence("a list of columns"))
            if not cols or cols[-1] != name:
                options["levels"].fail(f"variable {name!r}: levels run coarse to fine and "
                                       f"end with the variable itself ({name})")
            levels[name] = cols
        if "missing" in options:
            codes = tuple(c.text() for c in options["missing"].sequence("a list of codes"))
            if not codes:
                options["missing"].fail(f"variable {name!r}: 'missing' lists no code")
            missing[name] = codes
    return names, hierarchies, levels, missing


def _hierarchy(at: _At, variable: str, lead: str, spec_file: Path, total: str
               ) -> HierarchySpec:
    """A hierarchy: an .hrc file name (beside the spec) or a parent -> children mapping."""
    if isinstance(at.node, yaml.ScalarNode):
        path = _rda.resolve(spec_file, at.text(), "hierarchy file", at.where)
        hrc = _rda.read_hrc(path, variable, total, lead)
        return _unpadded({parent: list(kids) for parent, kids in hrc.children.items()},
                         path)
    children = at.mapping(None, f"hierarchy of {variable}: parent -> list of children")
    return {parent: [c.text() for c in kids.sequence(f"the children of {parent!r}")]
            for parent, kids in children.items()}


def _unpadded(children: dict[str, list[str]], path: Path) -> dict[str, list[str]]:
    """An .hrc's codes without tau-Argus's fixed-width padding (``" 1"`` is ``"1"``), as
    microdata in CSV or Parquet write them; two codes the same but for padding: an error."""
    seen: dict[str, str] = {}
    for code in (c for kids in children.values() for c in kids):
        other = seen.setdefault(code.strip(), code)
        if other != code:
            raise StatreconError(f"{path}: codes {other!r} and {code!r} differ only in their "
                                 "padding", where=str(path))
    return {parent.strip(): [c.strip() for c in kids] for parent, kids in children.items()}


def _rules(at: _At | None, path: Path) -> tuple[tuple[Rule, ...], bool]:
    if at is None:
        raise StatreconError(f"{path}: the table spec has no 'rules' (max_n, p_percent, nk, "
                             "protect_zeros)", where=str(path))
    given = at.mapping(RULE_KEYS, "primary suppression rules")
    rules: list[Rule] = []
    if "max_n" in given:
        rules.append(given["max_n"].make(lambda v: MinFrequency(int(v)), int))
    if "p_percent" in given:
        p = given["p_percent"]
        if isinstance(p.node, yaml.MappingNode):
            args = p.mapping(("p", "n"), "p_percent: {p, n}")
            if "p" not in args:
                p.fail("p_percent needs p")
            n = args["n"].number(int) if "n" in args else 1
            rules.append(args["p"].make(lambda v: PPercent(v, int(n)), (int, float)))
        else:
            rules.append(p.make(PPercent, (int, float)))
    if "nk" in given:
        pair = given["nk"].sequence("nk: [n, k]")
        if len(pair) != 2:
            given["nk"].fail("nk is a pair [n, k], e.g. [2, 85]")
        n = pair[0].number(int)
        rules.append(pair[1].make(lambda k: Dominance(int(n), k), (int, float)))
    zeros = given["protect_zeros"].flag() if "protect_zeros" in given else False
    if not rules and not zeros:
        at.fail("no primary suppression rule: give max_n, p_percent, nk or protect_zeros")
    return tuple(rules), zeros


def _protection(at: _At) -> Protection:
    given = at.mapping(("lower", "upper", "sliding", "relative"),
                       "protection: {lower, upper, sliding, relative}")
    lower, upper, sliding = (given[k].number((int, float)) if k in given else 0
                             for k in ("lower", "upper", "sliding"))
    relative = given["relative"].flag() if "relative" in given else True
    try:
        return Protection(lower, upper, relative, sliding)
    except StatreconError as e:
        return at.fail(str(e))


class _At:
    """A YAML node and where it is (``file:line``), read with checks."""

    def __init__(self, node: yaml.Node, path: Path) -> None:
        self.node, self.path = node, path
        self.where = f"{path}:{node.start_mark.line + 1}"

    def fail(self, message: str) -> Any:
        raise StatreconError(f"{self.where}: {message}", where=self.where)

    def _child(self, node: yaml.Node) -> _At:
        return _At(node, self.path)

    def mapping(self, allowed: tuple[str, ...] | None, what: str) -> dict[str, _At]:
        if not isinstance(self.node, yaml.MappingNode):
            self.fail(f"expected {what}")
        out: dict[str, _At] = {}
        for key, value in self.node.value:
            k = self._child(key)
            name = k.text()
            if allowed is not None and name not in allowed:
                k.fail(f"unknown key {name!r} in {what} (known: {', '.join(allowed)})")
            if name in out:
                k.fail(f"key {name!r} is given twice")
            out[name] = self._child(value)
        return out

    def sequence(self, what: str) -> list[_At]:
        if not isinstance(self.node, yaml.SequenceNode):
            self.fail(f"expected {what}")
        return [self._child(n) for n in self.node.value]

    def _scalar(self) -> Any:
        if not isinstance(self.node, yaml.ScalarNode):
            self.fail("expected a single value here")
        return yaml.constructor.SafeConstructor().construct_object(self.node)

    def text(self) -> str:
        value = self._scalar()
        if isinstance(value, bool) or value is None or isinstance(value, list | dict):
            self.fail(f"expected a name, not {self.node.value!r}")
        return str(value)

    def number(self, kind: type | tuple[type, ...]) -> Any:
        value = self._scalar()
        if isinstance(value, bool) or not isinstance(value, kind):
            self.fail(f"expected a number, not {self.node.value!r}")
        if not isinstance(value, float):
            return value
        try:
            return Fraction(self.node.value)
        except ValueError:
            return self.fail(f"expected a finite number, not {self.node.value!r}")

    def flag(self) -> bool:
        value = self._scalar()
        if not isinstance(value, bool):
            self.fail(f"expected true or false, not {self.node.value!r}")
        return value

    def choice(self, options: tuple[str, ...]) -> Any:
        value = self.text()
        if value not in options:
            self.fail(f"{value!r}: choose from {', '.join(options)}")
        return value

    def make(self, build: Callable[[Any], Any], kind: type | tuple[type, ...]) -> Any:
        """``build(value)``, its own error (a rule's check) named at this line."""
        value = self.number(kind)
        try:
            return build(value)
        except StatreconError as e:
            return self.fail(str(e))
