"""tau-Argus's ``<RECODE>`` of an explanatory variable of microdata: a global recode file
(``.grc``) for a flat variable, a ``<TREERECODE>`` file or a level for a hierarchical one, as
tau-Argus does it (sdcTools/libtauargus ``DoRecode``, ``ParseRecodeString``; sdcTools/tauargus
``Variable.applyRecodeTree`` and ``batch.batchRecode``).

- A ``.grc`` line ``new: a, b-c, -d, e-`` puts under the new code ``new`` the code ``a``, the
  codes from ``b`` to ``c``, every code up to ``d`` and every code from ``e`` on (codes
  compared as tau-Argus compares them: padded on the left to the variable's length, as
  text). A later line wins where two overlap; a code no line names keeps itself; a single code
  the records do not hold is passed over, as tau-Argus does. ``<MISSING> m1 m2`` gives the new
  missing codes (else the variable's own), ``<CODELIST>`` (labels) is left aside. The new
  codes are padded on the left to the longest of them, sorted, and the missing codes come
  last. A missing code may only become a missing code.
- ``<TREERECODE>`` then one code a line: each code named is closed (the codes below it are
  taken into it, so it becomes a bottom code).
- A level ``1``..``9``: every code at that level (the total's children are level 1) that has
  codes below it is closed: the hierarchy is cut below that level.

A recode returns the new hierarchy and, for every bottom code of the old one that changes,
its new code; the records are tabulated again through it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from statrecon.errors import StatreconError
from statrecon.tables import _rda
from statrecon.tables.model import Hierarchy, show_code

MAX_LINES = 100_000


@dataclass(frozen=True)
class Recoding:
    """A variable recoded: its new hierarchy and each changed bottom code's new code."""

    hierarchy: Hierarchy
    codes: Mapping[str, str]


def truncate(hierarchy: Hierarchy, level: int) -> Recoding:
    """Close every code at ``level`` (1 = the total's children) that has codes below it."""
    closed = [c for c in hierarchy.codes()
              if len(hierarchy.ancestors(c)) == level and not hierarchy.is_leaf(c)]
    return _close(hierarchy, closed)


def tree_recode(path: Path, hierarchy: Hierarchy) -> Recoding:
    """Close the codes a ``<TREERECODE>`` file names (module docstring)."""
    lines = _lines(path)
    if not lines or lines[0][1].strip() != "<TREERECODE>":
        raise StatreconError(f"{path}:1: a recode file of a hierarchical variable starts "
                             "with <TREERECODE> (then one code a line to close)",
                             where=f"{path}:1")
    closed = []
    for number, raw in lines[1:]:
        if not raw.strip():
            continue
        code = _find(hierarchy, raw)
        if code is None:
            where = f"{path}:{number}"
            raise StatreconError(f"{where}: code {raw.strip()!r} is not a code of "
                                 f"{hierarchy.variable}", where=where)
        if code != hierarchy.total:
            closed.append(code)
    return _close(hierarchy, closed)


def _find(hierarchy: Hierarchy, raw: str) -> str | None:
    for candidate in (raw, raw.rstrip(), raw.strip()):
        if candidate in hierarchy:
            return candidate
    stripped = raw.strip()
    return next((c for c in hierarchy.codes() if c.strip() == stripped), None)


def _close(hierarchy: Hierarchy, closed: list[str]) -> Recoding:
    children = dict(hierarchy.children)
    codes: dict[str, str] = {}
    for node in closed:
        if node not in children:
            continue  # already closed, or below a closed code
        for below in _below(hierarchy, node):
            children.pop(below, None)
            if hierarchy.is_leaf(below):
                codes[below] = node
        children.pop(node)
    for below, node in list(codes.items()):  # a code closed inside a later closed one
        while node in codes:
            node = codes[node]
        codes[below] = node
    return Recoding(Hierarchy(hierarchy.variable, hierarchy.total, children), codes)


def _below(hierarchy: Hierarchy, node: str) -> list[str]:
    found, stack = [], list(hierarchy.children.get(node, ()))
    while stack:
        code = stack.pop()
        found.append(code)
        stack.extend(hierarchy.children.get(code, ()))
    return found


# ----------------------------------------------------------------------------- .grc files


@dataclass(frozen=True)
class _Item:
    """One source of a .grc line: ``kind`` solo, to (``-c``), from (``c-``) or range."""

    kind: str
    first: str
    last: str = ""


_ITEM = re.compile(r'\s*(-)?\s*("[^"]*"|[^\s,"-]+)?\s*(-)?\s*("[^"]*"|[^\s,"-]+)?\s*')


def grc_recode(path: Path, hierarchy: Hierarchy, length: int,
               missing: tuple[str, ...]) -> Recoding:
    """Recode a flat variable by a ``.grc`` file (module docstring). ``length`` is the
    variable's length, ``missing`` its missing codes (the last children of the total)."""
    total = hierarchy.total
    old = [c for c in hierarchy.children.get(total, ()) if c not in missing]
    order = sorted(old)
    rules: list[tuple[str, list[str], str]] = []
    new_missing: tuple[str, ...] | None = None
    for number, raw in _lines(path):
        where = f"{path}:{number}"
        words = _rda.tokens(raw)
        if not words:
            continue
        if words[0].upper() == "<MISSING>":
            new_missing = tuple(w for w in (x.strip(",") for x in words[1:]) if w)
            if not new_missing or len(new_missing) > 2:
                raise StatreconError(f"{where}: <MISSING> gives one or two codes", where=where)
            continue
        if words[0].upper() == "<CODELIST>":
            continue
        if words[0].upper() == "<TREERECODE>":
            raise StatreconError(f"{where}: <TREERECODE> recodes a hierarchical variable; "
                                 f"{hierarchy.variable} has no hierarchy", where=where)
        dest, sources = _grc_line(raw, length, where)
        rules.append((dest, [c for item in sources for c in _expand(item, order, where)],
                      where))
    missing_new = new_missing if new_missing is not None else missing
    return _recoded(hierarchy, old, missing, missing_new, rules)


def _grc_line(raw: str, length: int, where: str) -> tuple[str, list[_Item]]:
    dest, colon, rest = raw.partition(":")
    dest = _unquote(dest.strip())
    if not colon or not dest:
        raise StatreconError(f"{where}: a recode line is 'new code: old codes' (e.g. "
                             "'1: 1-5, 7')", where=where)
    items = []
    for part in rest.split(","):
        m = _ITEM.fullmatch(part)
        if not part.strip() or m is None or not (m.group(2) or m.group(4)):
            raise StatreconError(f"{where}: {part.strip()[:40]!r} is not a code, 'a-b', '-b' "
                                 "or 'a-'", where=where)
        before, first, dash, second = m.groups()
        if before and (dash or not first):
            raise StatreconError(f"{where}: {part.strip()[:40]!r}: one hyphen at most",
                                 where=where)
        codes = [_pad(_unquote(c), length, where) for c in (first, second) if c]
        kind = ("to" if before else "range" if dash and second else "from" if dash
                else "solo")
        if kind == "solo" and len(codes) != 1:
            raise StatreconError(f"{where}: {part.strip()[:40]!r}: two codes need a hyphen "
                                 "between them", where=where)
        if kind == "range" and codes[0] > codes[1]:
            raise StatreconError(f"{where}: range {part.strip()[:40]!r} runs backwards",
                                 where=where)
        items.append(_Item(kind, codes[0], codes[1] if kind == "range" else ""))
    return dest, items


def _unquote(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def _pad(code: str, length: int, where: str) -> str:
    if len(code) > length:
        raise StatreconError(f"{where}: code {code[:40]!r} is longer than the variable "
                             f"({length})", where=where)
    return code.rjust(length)


def _expand(item: _Item, order: list[str], where: str) -> list[str]:
    """The codes of the records an item names (``order``: the old codes, sorted)."""
    if item.kind == "solo":
        return [item.first] if item.first in order else []
    if item.kind == "to":
        return order[:bisect.bisect_right(order, item.first)]
    if item.kind == "from":
        return order[bisect.bisect_left(order, item.first):]
    return order[bisect.bisect_left(order, item.first):bisect.bisect_right(order, item.last)]


def _recoded(hierarchy: Hierarchy, old: list[str], missing: tuple[str, ...],
             new_missing: tuple[str, ...], rules: list[tuple[str, list[str], str]]
             ) -> Recoding:
    target: dict[str, str] = {}
    for dest, sources, where in rules:
        if dest in new_missing and sources:
            raise StatreconError(f"{where}: valid codes cannot become the missing code "
                                 f"{show_code(dest)}", where=where)
        for code in sources:
            target[code] = dest
    named = list(dict.fromkeys([*target.values(), *(c for c in old if c not in target)]))
    width = max((len(c) for c in [*named, *new_missing]), default=0)
    new = {c: c.rjust(width) for c in named}
    codes = {c: new[target.get(c, c)] for c in old}
    padded_missing = tuple(dict.fromkeys(m.rjust(width) for m in new_missing))
    for i, m in enumerate(missing):
        codes[m] = padded_missing[min(i, len(padded_missing) - 1)]
    total = hierarchy.total
    kids = (*sorted(set(new.values()) - set(padded_missing)), *padded_missing)
    if total in kids:
        raise StatreconError(f"recode of {hierarchy.variable}: a new code is its total "
                             f"{show_code(total)}")
    recoded = Hierarchy(hierarchy.variable, total, {total: kids} if kids else {})
    return Recoding(recoded, {o: n for o, n in codes.items() if o != n})


def _lines(path: Path) -> list[tuple[int, str]]:
    lines = list(enumerate(_rda.read_text(path, "recode file").splitlines(), start=1))
    if len(lines) > MAX_LINES:
        raise StatreconError(f"{path}: more than {MAX_LINES:,} lines", where=str(path))
    return lines
