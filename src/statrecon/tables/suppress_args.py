"""The arguments of a batch file's ``<SUPPRESS>``, read and checked as tau-Argus reads them
(sdcTools/tauargus ``batch.suppressBatch``; manual 4.2, section 5.7), so that a job tau-Argus
would refuse, or run on a number it cannot mean, is one line naming ``file:line`` here.

Each method's arguments after the table number, all optional unless said:

- ``GH(table, apriori, size, singleton)``: the a-priori bounds percentage (a whole 0..100),
  the model size (0 normal, 1 large), apply singleton (0 or 1). Table 0: linked tables.
- ``MOD(table, minutes, single-single, single-multiple, min-freq, max scaling cost)``: the
  time per subtable (whole minutes, at least 0), three switches (0 or 1), the largest
  scaling of the costs (a number above 0; tau-Argus reads it only for one table).
- ``OPT(table, minutes)``: the computing time (whole minutes, at least 0); one table.
- ``NET(table)``: nothing more.
- ``RND(table, base, steps, minutes, partitions, stopping rule, unit cost)``: the rounding
  base (required, a whole number; statrecon needs at least 2), the steps (a whole number at
  least 0; default 0), the time (whole minutes above 0; default 10), partitions (0 or 1;
  default 0), the stopping rule (1 the first feasible rounding, 2 the optimal one; default
  2), unit cost (0 or 1). One table. tau-Argus's batch reader takes stopping rules 1 and 2
  only (2 its optimum; its dialog counts 0 rapid, 1 feasible, 2 optimal); the manual's
  table (1 rapid, 2 feasible, 3 optimal) is not what its reader accepts, so 3 is refused
  with a pointer to 2.

tau-Argus reads a switch as "1 or anything else" and ignores what follows the arguments it
knows; statrecon refuses both (a 2 for a switch, a seventh argument): a number it cannot mean
is a mistake to be told, not guessed. What statrecon cannot honour is named in a note
(``notes``): the time limits of GH, MOD and OPT (statrecon's is ``--time-limit``), GH's
a-priori percentage and model size, MOD's singleton switches and scaling, and for ``RND``
steps above 0, partitions and unit cost (``runs/job_round.py`` says what it does instead).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import NoReturn

from statrecon.errors import StatreconError

DEFAULT_ROUND_MINUTES = 10  # tau-Argus's batch default for RND's time


@dataclass(frozen=True)
class Rounding:
    """``RND``'s arguments, checked (module docstring)."""

    base: int
    steps: int = 0
    minutes: int = DEFAULT_ROUND_MINUTES
    partitions: int = 0
    stopping_rule: int = 2  # 1: the first feasible rounding, 2: the optimal one
    unit_cost: bool = False


@dataclass(frozen=True)
class Checked:
    """A ``<SUPPRESS>``'s arguments read: ``RND``'s as :class:`Rounding`, and a note for
    every argument given that statrecon does not honour."""

    rounding: Rounding | None
    notes: tuple[str, ...]


def _fail(where: str, message: str) -> NoReturn:
    raise StatreconError(f"{where}: {message}", where=where)


def _whole(text: str, where: str, what: str, least: int, most: int | None = None) -> int:
    """A whole number in ``least..most``, as written (digits, maybe a sign)."""
    if re.fullmatch(r"[+-]?[0-9]{1,9}", text) is None:
        _fail(where, f"{what} {text[:20]!r} is not a whole number")
    value = int(text)
    if value < least or (most is not None and value > most):
        span = f"{least}..{most}" if most is not None else f"at least {least}"
        _fail(where, f"{what} is {value}; tau-Argus takes {span}")
    return value


def _switch(text: str, where: str, what: str) -> bool:
    if text not in ("0", "1"):
        _fail(where, f"{what} {text[:20]!r} is a switch: 0 or 1")
    return text == "1"


def _arity(method: str, args: tuple[str, ...], most: int, where: str, names: str) -> None:
    if len(args) > most:
        _fail(where, f"<SUPPRESS> {method} takes at most {most} argument"
              f"{'s' if most != 1 else ''} after the table ({names}); {len(args)} given")
    empty = next((i for i, a in enumerate(args) if not a), None)
    if empty is not None:
        _fail(where, f"<SUPPRESS> {method}: argument {empty + 2} is empty")


def check_arguments(method: str, table: int, args: tuple[str, ...], where: str) -> Checked:
    """The arguments after the table number of ``<SUPPRESS> method(table, ...)`` checked
    (module docstring); one line naming ``where`` on the first mistake."""
    what = f"<SUPPRESS> {method}"
    notes: list[str] = []
    if method == "GH":
        _arity(method, args, 3, where, "a-priori percentage, model size, apply singleton")
        if len(args) > 0:
            percent = _whole(args[0], where, f"{what}'s a-priori bounds percentage", 0, 100)
            notes.append(f"{where}: {what}'s a-priori bounds percentage ({percent}) is not "
                         "applied: statrecon's a-priori box is --apriori")
        if len(args) > 1:
            size = _whole(args[1], where, f"{what}'s model size", 0, 1)
            notes.append(f"{where}: {what}'s model size ({size}) is not applied: statrecon's "
                         "fast method has no model sizes")
        if len(args) > 2 and _switch(args[2], where, f"{what}'s apply singleton"):
            notes.append(f"{where}: {what}'s apply singleton is not applied: --singletons "
                         "protects against singletons")
    elif method == "MOD":
        _arity(method, args, 5, where, "minutes per subtable, single-single, "
               "single-multiple, min-freq, max scaling cost")
        _modular(args, where, what, table, notes)
    elif method == "OPT":
        _arity(method, args, 1, where, "minutes")
        if args:
            minutes = _whole(args[0], where, f"{what}'s computing time (minutes)", 0)
            notes.append(f"{where}: {what}'s computing time ({minutes} min) is not applied: "
                         "statrecon's time limit is --time-limit")
    elif method == "NET":
        _arity(method, args, 0, where, "none")
    elif method == "RND":
        _arity(method, args, 6, where, "base, steps, minutes, partitions, stopping rule, "
               "unit cost")
        return _rounding(args, where, what)
    return Checked(None, tuple(notes))


def _modular(args: tuple[str, ...], where: str, what: str, table: int,
             notes: list[str]) -> None:
    if args:
        minutes = _whole(args[0], where, f"{what}'s time per subtable (minutes)", 0)
        notes.append(f"{where}: {what}'s time per subtable ({minutes} min) is not applied: "
                     "statrecon's time limit is --time-limit")
    names = ("single-single", "single-multiple", "min-freq")
    on = [n for n, a in zip(names, args[1:4], strict=False)
          if _switch(a, where, f"{what}'s {n} check")]
    if on:
        notes.append(f"{where}: {what}'s {', '.join(on)} check{'s' if len(on) > 1 else ''} "
                     "not applied as tau-Argus's heuristics: every pattern is proven under "
                     "the integer audit; --singletons adds what singletons know")
    if len(args) > 4:
        try:
            scaling = Fraction(args[4])
        except (ValueError, ZeroDivisionError):
            _fail(where, f"{what}'s max scaling cost {args[4][:20]!r} is not a number")
        if scaling <= 0:
            _fail(where, f"{what}'s max scaling cost is {args[4][:20]}; it must be above 0")
        read = "" if table else " (tau-Argus reads it only for one table)"
        notes.append(f"{where}: {what}'s max scaling cost is not applied{read}: statrecon's "
                     "costs are exact")


def _rounding(args: tuple[str, ...], where: str, what: str) -> Checked:
    if not args:
        _fail(where, f"{what} needs a rounding base: RND(table, base), e.g. RND(1, 5)")
    base = _whole(args[0], where, f"{what}'s rounding base", 1)
    if base < 2:
        _fail(where, f"{what}'s rounding base is 1: it leaves every whole value as it is; "
              "statrecon rounds to a base of at least 2")
    steps = _whole(args[1], where, f"{what}'s steps", 0) if len(args) > 1 else 0
    minutes = (_whole(args[2], where, f"{what}'s time (minutes)", 1) if len(args) > 2 else
               DEFAULT_ROUND_MINUTES)
    partitions = _whole(args[3], where, f"{what}'s partitions", 0, 1) if len(args) > 3 else 0
    rule = 2
    if len(args) > 4:
        if args[4] == "3":
            _fail(where, f"{what}'s stopping rule 3: tau-Argus's batch reader takes 1 (the "
                  "first feasible rounding) or 2 (the optimal one; the manual's 3)")
        rule = _whole(args[4], where, f"{what}'s stopping rule", 1, 2)
    unit = _switch(args[5], where, f"{what}'s unit cost") if len(args) > 5 else False
    rounding = Rounding(base, steps, minutes, partitions, rule, unit)
    notes = []
    if steps:
        notes.append(f"{where}: {what}'s steps ({steps}) are not applied: statrecon rounds "
                     "every cell to a multiple next to it (steps 0), so a rounding it finds "
                     "is within those steps, but 'infeasible' is proven for steps 0 only")
    if partitions:
        notes.append(f"{where}: {what}'s partitions (1) are not applied: statrecon rounds the "
                     "whole table at once (its least change is no more than a partitioned "
                     "rounding's)")
    if unit:
        notes.append(f"{where}: {what}'s unit cost is not applied: statrecon minimises the "
                     "total change, the sum of |rounded - true|")
    return Checked(rounding, tuple(notes))
