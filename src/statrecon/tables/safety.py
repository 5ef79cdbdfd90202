"""tau-Argus's safety rules: the ``<SAFETYRULE>`` of a batch file read, the cells it makes
unsafe, and each unsafe cell's protection levels derived from the rule that made it unsafe.

The rules are tau-Argus's (manual 4.1, sections 4.4.4 and 5.7; its engine, ``Table.cpp``:
``ComputeCellSafeCode`` and ``SetProtectionLevelCell``); the text of one ``<SAFETYRULE>`` is
rules separated by ``|``:

- ``P(p, n)`` or ``P(p, q, n)``: the p%-rule (with prior knowledge q %, default 100): a cell
  is unsafe when ``p/100 x1 > q/100 (x - x1 - ... - x(n+1))``, a coalition of the ``n``
  next largest contributors estimating the largest within p %. Protection: the cell must
  be widened by ``p/q x1 - (x - x1 - ... - x(n+1))``, the value that would make it safe.
- ``NK(n, k)``: (n, k)-dominance: unsafe when the ``n`` largest contributions exceed k % of
  the cell. Protection: ``100/k (x1 + ... + xn) - x``.
- ``FREQ(n, range)``: unsafe when 1 <= contributors < n; protection ``range`` % of the cell.
- ``ZERO(range)``: a zero cell with contributors is unsafe; upper protection ``range`` (an
  amount of the response, not a percentage), lower 0.
- ``REQ(p1, p2, freq, margin)``: the request rule: contributors who asked for protection
  (request code 1 or 2 in the request variable) make a cell unsafe when their largest
  contribution exceeds p1 % (code 1) or p2 % (code 2) of the cell, or when the cell has
  fewer than ``freq`` contributors; protection ``margin`` % of the cell.
- ``MAN(x)``: the manual safety margin, x % (default 20): the protection of a cell made
  unsafe by hand (an a-priori file, a status read from a table).
- ``WGT(1)``: the table and the rules are weighted: a contribution counts as many times
  as its weight (fractions too) in the p% and NK rules, and FREQ compares the cell's total
  weight with n.
- ``MIS(1)``: a cell with a missing code of a variable is always safe.

Holding level. Rules apply to records, and up to a second set to holdings (groups of
records of one enterprise: the ``<HOLDING>`` variable), by position as tau-Argus counts them:
the first two ``P`` and ``NK`` rules are individual and the third and fourth holding-level;
the first ``FREQ`` and ``REQ`` individual and the second holding-level. A rule whose
parameters are all 0 (``NK(0,0)``, ``P(0,100,0)``, ``FREQ(0,0)``) holds no rule: it only
keeps a position, as tau-Argus writes its batch files, and is accepted only beside a real
rule of its kind (alone it is an error, like any impossible parameter).

Which rule made a cell unsafe follows tau-Argus's order: P or NK first, then REQ, then FREQ,
then ZERO; the protection levels are those of that rule (symmetric: lower = upper), at
least 1 as tau-Argus has them, except a zero cell's (upper: the ZERO range, lower 0). A
nonnegative cell's lower level is capped at its value (it cannot go below 0): tau-Argus
keeps it uncapped, which no pattern can meet under its own a-priori bound of 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Literal, NoReturn

from statrecon.errors import StatreconError
from statrecon.number_reader import NumberError
from statrecon.tables.model import NO_PROTECTION, Cell, CellStatus, Table
from statrecon.tables.values import parse_decimal, show

Reason = Literal["rule", "request", "frequency", "zero", "manual"]
MANUAL_MARGIN = Fraction(20)  # tau-Argus's default MAN, percent
MIN_LEVEL = Fraction(1)  # tau-Argus's least protection level of a nonzero unsafe cell
_RULE = re.compile(r"\s*([A-Za-z]+)\s*\(([^()]*)\)\s*")


class SafetyRuleError(StatreconError):
    """A ``<SAFETYRULE>`` that is not a rule, or a rule with impossible parameters."""


@dataclass(frozen=True)
class PRule:
    """``P(p, q, n)``: unsafe when ``p/100 x1 > q/100 (x - x1 - ... - x(n+1))``."""

    p: Fraction
    n: int
    q: Fraction = Fraction(100)

    def unsafe(self, value: Fraction, top: Sequence[Fraction]) -> bool:
        return (self.p * _nth(top, 0) + self.q * (_sum(top, self.n + 1) - value)) > 0

    def needed(self, top: Sequence[Fraction]) -> Fraction:
        """The cell value that would make the cell safe: ``p/q x1 + x1 + ... + x(n+1)``."""
        return self.p * _nth(top, 0) / self.q + _sum(top, self.n + 1)

    @property
    def tops(self) -> int:
        return self.n + 1

    def __str__(self) -> str:
        q = "" if self.q == 100 else f", {show(self.q)}"
        return f"P({show(self.p)}{q}, {self.n})"


@dataclass(frozen=True)
class NKRule:
    """``NK(n, k)``: unsafe when the n largest contributions exceed k % of the cell."""

    n: int
    k: Fraction

    def unsafe(self, value: Fraction, top: Sequence[Fraction]) -> bool:
        if value == 0 or _nth(top, 0) == 0:
            return False
        return 100 * _sum(top, self.n) > self.k * value

    def needed(self, top: Sequence[Fraction]) -> Fraction:
        """The cell value at which the n largest are k %: ``100/k (x1 + ... + xn)``."""
        return 100 * _sum(top, self.n) / self.k

    @property
    def tops(self) -> int:
        return self.n

    def __str__(self) -> str:
        return f"NK({self.n}, {show(self.k)})"


@dataclass(frozen=True)
class FreqRule:
    """``FREQ(n, range)``: unsafe when 1 <= contributors < n; protection range %."""

    n: int
    range: Fraction

    def __str__(self) -> str:
        return f"FREQ({self.n}, {show(self.range)})"


@dataclass(frozen=True)
class RequestRule:
    """``REQ(p1, p2, freq, margin)``: see the module docstring."""

    p1: Fraction
    p2: Fraction
    freq: int
    margin: Fraction

    def __str__(self) -> str:
        return f"REQ({show(self.p1)}, {show(self.p2)}, {self.freq}, {show(self.margin)})"


Magnitude = PRule | NKRule


@dataclass(frozen=True)
class Level:
    """The rules of one level (records, or holdings)."""

    magnitude: tuple[Magnitude, ...] = ()
    frequency: FreqRule | None = None
    request: RequestRule | None = None

    @property
    def empty(self) -> bool:
        return not self.magnitude and self.frequency is None and self.request is None

    @property
    def tops(self) -> int:
        """How many largest contributions the magnitude rules read."""
        return max((r.tops for r in self.magnitude), default=0)


@dataclass(frozen=True)
class SafetyRules:
    """One ``<SAFETYRULE>`` read: the individual rules, the holding-level rules, ``ZERO``'s
    range (None: zeros are safe), the manual margin (percent; ``manual_given``: MAN was
    written), ``WGT`` (``weighted``) and ``MIS`` (``missing_safe``); ``where`` names the
    line for later errors (a rule the table cannot apply)."""

    individual: Level = field(default_factory=Level)
    holding: Level = field(default_factory=Level)
    zero: Fraction | None = None
    manual: Fraction = MANUAL_MARGIN
    manual_given: bool = False
    weighted: bool = False
    missing_safe: bool = False
    where: str = ""

    @property
    def status_only(self) -> bool:
        """No rule marks cells (MAN, WGT, MIS at most): the statuses given are used."""
        return self.individual.empty and self.holding.empty and self.zero is None

    @property
    def needs_holding(self) -> bool:
        return not self.holding.empty

    @property
    def needs_magnitudes(self) -> bool:
        """A rule that a frequency table cannot apply (P, NK, REQ, ZERO)."""
        return any(level.magnitude or level.request is not None
                   for level in (self.individual, self.holding)) or self.zero is not None

    @property
    def frequency_range(self) -> Fraction:
        """FREQ's protection range, as tau-Argus applies it: the holding range where it is
        larger and a holding FREQ rule is set."""
        own = self.individual.frequency.range if self.individual.frequency else Fraction(0)
        held = self.holding.frequency
        return max(own, held.range) if held is not None else own

    def __str__(self) -> str:
        parts = [str(r) for r in (*self.individual.magnitude, self.individual.frequency,
                                  self.individual.request) if r is not None]
        parts += [f"holding {r}" for r in (*self.holding.magnitude, self.holding.frequency,
                                           self.holding.request) if r is not None]
        if self.zero is not None:
            parts.append(f"ZERO({show(self.zero)})")
        if self.manual_given:
            parts.append(f"MAN({show(self.manual)})")
        if self.weighted:
            parts.append("WGT(1)")
        if self.missing_safe:
            parts.append("MIS(1)")
        return " | ".join(parts) or "none"


# ----------------------------------------------------------------------------------------
# parsing


def parse_safety_rule(text: str, where: str) -> SafetyRules:
    """The rules of one ``<SAFETYRULE>`` line (the text after the keyword); a rule that is
    not one, a rule with impossible parameters, or too many of a kind raise a
    :class:`SafetyRuleError` naming ``where`` (``file:line``). An empty text holds no rule
    (tau-Argus then uses the statuses given). One ``|`` may end the list, as tau-Argus
    reads it (``FREQ(5,20)|P(20,5)|``: after each rule a ``|`` or the end of the line)."""
    found: dict[str, list[tuple[Fraction, ...]]] = {k: [] for k in _ARITY}
    parts = text.split("|")
    if len(parts) > 1 and not parts[-1].strip() and parts[-2].strip():
        parts.pop()  # the one trailing '|' after the last rule
    for i, part in enumerate(parts):
        if not part.strip():
            if text.strip():
                _fail(where, "an empty rule between two '|'" if 0 < i < len(parts) - 1
                      else "an empty rule before the first '|' or after the last")
            continue
        m = _RULE.fullmatch(part)
        if m is None:
            _fail(where, f"{part.strip()[:40]!r} is not a rule like P(15, 1) or FREQ(3, 20)")
        name, args = m.group(1).upper(), m.group(2)
        if name not in _ARITY:
            _fail(where, f"{name}({args.strip()[:30]}): unknown rule (P, NK, FREQ, ZERO, REQ, "
                         "MAN, WGT, MIS)")
        found[name].append(_arguments(name, args, where))
    return _build(found, where)


_ARITY: dict[str, tuple[int, ...]] = {"P": (2, 3), "NK": (2,), "FREQ": (2,), "ZERO": (1,),
                                      "REQ": (4,), "MAN": (1,), "WGT": (1,), "MIS": (1,)}
_MOST = {"P": 4, "NK": 4, "FREQ": 2, "REQ": 2, "ZERO": 1, "MAN": 1, "WGT": 1, "MIS": 1}


def _fail(where: str, message: str) -> NoReturn:
    raise SafetyRuleError(f"{where}: <SAFETYRULE> {message}", where=where)


def _arguments(name: str, args: str, where: str) -> tuple[Fraction, ...]:
    texts = [a.strip() for a in args.split(",")]
    if len(texts) not in _ARITY[name]:
        counts = " or ".join(str(n) for n in _ARITY[name])
        _fail(where, f"{name}({args.strip()[:30]}): {name} takes {counts} parameters")
    values = []
    for t in texts:
        try:
            value = parse_decimal(t)
        except NumberError as e:
            _fail(where, f"{name}({args.strip()[:30]}): {e}")
        if value is None:
            _fail(where, f"{name}({args.strip()[:30]}): {t[:20]!r} is not a number")
        values.append(value)
    return tuple(values)


def _build(found: dict[str, list[tuple[Fraction, ...]]], where: str) -> SafetyRules:
    for name, given in found.items():
        if len(given) > _MOST[name]:
            _fail(where, f"{len(given)} {name} rules: at most {_MOST[name]} (tau-Argus: the "
                         "first half for records, the second for holdings)")
    p = [_p_rule(a, where) for a in found["P"]]
    nk = [_nk_rule(a, where) for a in found["NK"]]
    freq = [_freq_rule(a, where) for a in found["FREQ"]]
    req = [_req_rule(a, where) for a in found["REQ"]]
    for name, rules in (("P", p), ("NK", nk), ("FREQ", freq), ("REQ", req)):
        if rules and all(r is None for r in rules):
            _fail(where, f"{name} with all parameters 0 holds no rule (tau-Argus writes it only "
                         f"to keep a position beside a real {name} rule)")
    individual = Level(tuple(r for r in (*p[:2], *nk[:2]) if r is not None),
                       freq[0] if freq else None, req[0] if req else None)
    holding = Level(tuple(r for r in (*p[2:], *nk[2:]) if r is not None),
                    freq[1] if len(freq) > 1 else None, req[1] if len(req) > 1 else None)
    zero = found["ZERO"][0][0] if found["ZERO"] else None
    if zero is not None and zero < 0:
        _fail(where, f"ZERO({show(zero)}): the zero safety range is an amount >= 0")
    manual = found["MAN"][0][0] if found["MAN"] else MANUAL_MARGIN
    if not 0 <= manual < 100:
        _fail(where, f"MAN({show(manual)}): the manual safety margin is a percentage from 0 to "
                     "below 100")
    return SafetyRules(individual, holding, zero, manual, bool(found["MAN"]),
                       _flag("WGT", found["WGT"], where), _flag("MIS", found["MIS"], where),
                       where)


def _whole(name: str, value: Fraction, what: str, where: str, least: int = 0) -> int:
    if value.denominator != 1 or value < least:
        _fail(where, f"{name}: {what} must be a whole number >= {least}, not {show(value)}")
    return int(value)


def _percent(name: str, value: Fraction, what: str, where: str, *, zero: bool = True
             ) -> Fraction:
    if not (0 <= value <= 100) or (value == 0 and not zero):
        low = "from 0" if zero else "above 0"
        _fail(where, f"{name}: {what} is a percentage {low} to 100, not {show(value)}")
    return value


def _p_rule(args: tuple[Fraction, ...], where: str) -> PRule | None:
    text = f"P({', '.join(show(a) for a in args)})"
    p, q, n = (args[0], Fraction(100), args[1]) if len(args) == 2 else args
    p = _percent(text, p, "p", where)
    count = _whole(text, n, "n (the coalition's size)", where)
    if p == 0:
        return None  # a placeholder
    q = _percent(text, q, "q (the prior knowledge)", where, zero=False)
    if p > q:
        _fail(where, f"{text}: p may not exceed q")
    if count < 1:
        _fail(where, f"{text}: n (the coalition's size) must be at least 1")
    return PRule(p, count, q)


def _nk_rule(args: tuple[Fraction, ...], where: str) -> NKRule | None:
    text = f"NK({', '.join(show(a) for a in args)})"
    n = _whole(text, args[0], "n", where)
    k = _percent(text, args[1], "k", where)
    if n == 0 and k == 0:
        return None  # a placeholder
    if n < 1 or k == 0:
        _fail(where, f"{text}: needs n >= 1 contributors and k above 0 %")
    return NKRule(n, k)


def _freq_rule(args: tuple[Fraction, ...], where: str) -> FreqRule | None:
    text = f"FREQ({', '.join(show(a) for a in args)})"
    n = _whole(text, args[0], "the minimum frequency", where)
    safety = _percent(text, args[1], "the frequency safety range", where)
    return None if n <= 1 else FreqRule(n, safety)


def _req_rule(args: tuple[Fraction, ...], where: str) -> RequestRule | None:
    text = f"REQ({', '.join(show(a) for a in args)})"
    p1 = _percent(text, args[0], "the first percentage", where)
    p2 = _percent(text, args[1], "the second percentage", where)
    freq = _whole(text, args[2], "the minimum frequency", where)
    margin = _percent(text, args[3], "the safety margin", where)
    if p1 == 0 and p2 == 0 and freq == 0:
        return None
    return RequestRule(p1, p2, freq, margin)


def _flag(name: str, given: list[tuple[Fraction, ...]], where: str) -> bool:
    if not given:
        return False
    value = given[0][0]
    if value not in (0, 1):
        _fail(where, f"{name}({show(value)}): 0 or 1")
    return value == 1


# ----------------------------------------------------------------------------------------
# the facts a rule reads, and the verdict


@dataclass(frozen=True)
class Facts:
    """What the rules read of one cell at one level: the number of contributors (records,
    or holdings), the largest contributions (largest first), and with ``WGT`` the weight of
    each and the cell's total weight. ``requests``: the largest contribution of a
    contributor who asked for protection, per request code (1, 2)."""

    frequency: int
    top: tuple[Fraction, ...] = ()
    weights: tuple[Fraction, ...] | None = None
    total_weight: Fraction | None = None
    requests: Mapping[int, Fraction] = field(default_factory=dict)

    def scores(self, k: int) -> Fraction:
        """The sum of the k largest contributions, each counted as often as its weight."""
        if self.weights is None:
            return _sum(self.top, k)
        score, used = Fraction(0), Fraction(0)
        for x, w in zip(self.top, self.weights, strict=True):
            if used + w < k:
                score += x * w
                used += w
            else:
                return score + x * (k - used)
        return score

    def weighted_top(self, k: int) -> tuple[Fraction, ...]:
        """The k largest contributions as the rules read them (repeated by weight)."""
        if self.weights is None:
            return self.top[:k]
        return tuple(self.scores(i + 1) - self.scores(i) for i in range(k))


@dataclass(frozen=True)
class Verdict:
    """Why a cell is unsafe (``reason`` and the rule in words) and its protection levels."""

    reason: Reason
    rule: str
    lower: Fraction
    upper: Fraction


def assess(value: Fraction, cell: Facts, rules: SafetyRules, holding: Facts | None = None
           ) -> Verdict | None:
    """The verdict of ``rules`` on a cell of ``value`` (its facts for records, and for
    holdings when the rules have holding-level ones), or None when it is safe."""
    if cell.frequency == 0:
        return None  # empty: no contributor to protect
    if rules.needs_holding and holding is None:
        raise StatreconError(f"{rules.where}: holding-level rules need a holding variable",
                             where=rules.where or None)
    levels = [(rules.individual, cell)]
    if holding is not None and rules.needs_holding:
        levels.append((rules.holding, holding))
    found = _magnitude(value, levels) or _request(value, levels) \
        or _frequency(levels, rules) or _zero(value, cell, rules)
    if found is None:
        return None
    reason, rule = found
    return _levels(value, cell, rules, reason, rule, levels)


def _magnitude(value: Fraction, levels: list[tuple[Level, Facts]]) -> tuple[Reason, str] | None:
    for n, (level, facts) in enumerate(levels):
        for rule in level.magnitude:
            if rule.unsafe(value, facts.weighted_top(rule.tops)):
                return "rule", ("holding " if n else "") + str(rule)
    return None


def _request(value: Fraction, levels: list[tuple[Level, Facts]]) -> tuple[Reason, str] | None:
    for n, (level, facts) in enumerate(levels):
        rule = level.request
        if rule is None or not facts.requests:
            continue
        for code, percent in ((1, rule.p1), (2, rule.p2)):
            largest = facts.requests.get(code)
            if largest is not None and percent > 0 and 100 * largest > percent * value:
                return "request", ("holding " if n else "") + str(rule)
        if facts.frequency < rule.freq:
            return "request", ("holding " if n else "") + str(rule)
    return None


def _frequency(levels: list[tuple[Level, Facts]], rules: SafetyRules
               ) -> tuple[Reason, str] | None:
    for n, (level, facts) in enumerate(levels):
        rule = level.frequency
        if rule is None:
            continue
        if rules.weighted and n == 0:
            count = facts.total_weight if facts.total_weight is not None else facts.frequency
            if count < rule.n:
                return "frequency", str(rule)
        elif 0 < facts.frequency < rule.n:
            return "frequency", ("holding " if n else "") + str(rule)
    return None


def _zero(value: Fraction, cell: Facts, rules: SafetyRules) -> tuple[Reason, str] | None:
    if rules.zero is not None and value == 0 and cell.frequency > 0:
        return "zero", f"ZERO({show(rules.zero)})"
    return None


def _levels(value: Fraction, cell: Facts, rules: SafetyRules, reason: Reason, rule: str,
            levels: list[tuple[Level, Facts]]) -> Verdict:
    """tau-Argus's ``SetProtectionLevelCell``: a percentage of the cell from the rule that
    made it unsafe (the distance to the value that would make it safe for P and NK), at
    least 1; a zero cell gets ZERO's range above, nothing below."""
    if value == 0:
        return Verdict(reason, rule, Fraction(0), rules.zero or Fraction(0))
    if reason == "rule":
        percent = _rule_distance(value, levels, rules) / abs(value)
    elif reason == "request":
        margins = [lv.request.margin for lv, _ in levels if lv.request is not None]
        percent = max(margins) / 100
    elif reason == "frequency":
        percent = rules.frequency_range / 100
    elif reason == "manual":
        percent = rules.manual / 100
    else:
        percent = Fraction(0)
    upper = max(abs(value) * percent, MIN_LEVEL)
    lower = min(upper, value) if value > 0 else upper
    return Verdict(reason, rule, lower, upper)


def _rule_distance(value: Fraction, levels: list[tuple[Level, Facts]],
                   rules: SafetyRules) -> Fraction:
    needed = Fraction(0)
    for level, facts in levels:
        for rule in level.magnitude:
            target = rule.needed(facts.weighted_top(rule.tops))
            if target > value:
                needed = max(needed, target)
    distance = needed - value
    if distance <= 0:  # tau-Argus: the frequency range, else the manual margin
        cell = levels[0][1]
        freq = rules.individual.frequency
        percent = rules.frequency_range if freq is not None and cell.frequency <= freq.n \
            else rules.manual
        distance = abs(value) * percent / 100 or Fraction(1)
    return distance


def manual_levels(value: Fraction, manual: Fraction = MANUAL_MARGIN
                  ) -> tuple[Fraction, Fraction]:
    """The protection levels of a cell made unsafe by hand with the manual safety margin
    ``manual`` (percent, MAN), as tau-Argus sets them: that share of the value, at least 1
    (the lower level capped at a nonnegative value)."""
    rules = SafetyRules(manual=manual, manual_given=True)
    verdict = _levels(value, Facts(1), rules, "manual", "MAN", [])
    return verdict.lower, verdict.upper


# ----------------------------------------------------------------------------------------
# marking a table


FactsOf = Callable[[int, Cell], tuple[Facts, Facts | None]]


def cell_facts(index: int, cell: Cell) -> tuple[Facts, None]:
    """The facts a tabulated cell carries itself: its frequency and largest contributions
    (no weights, no holdings)."""
    return Facts(cell.frequency or 0, cell.top), None


def mark_unsafe(table: Table, rules: SafetyRules, facts: FactsOf = cell_facts, *,
                missing: Mapping[str, Sequence[str]] | None = None) -> Table:
    """A copy of ``table`` with each SAFE cell the rules find unsafe made PRIMARY with the
    protection levels of the rule that made it unsafe; other statuses are kept. ``facts``
    gives each cell's facts (default: what the cell carries); with ``MIS(1)`` a cell with a
    code of ``missing`` (variable -> its missing codes) stays safe."""
    if table.kind == "frequency" and rules.needs_magnitudes:
        raise SafetyRuleError(f"{rules.where}: <SAFETYRULE> {rules}: P, NK, ZERO and REQ "
                              f"need a response; table {table.name} is a frequency table",
                              where=rules.where or None)
    cells = list(table.cells)
    for i, cell in enumerate(cells):
        if cell.status is not CellStatus.SAFE:
            continue
        if rules.missing_safe and missing and any(
                cell.code(v) in codes for v, codes in missing.items() if v in table.variables):
            continue
        own, held = facts(i, cell)
        verdict = assess(cell.value, own, rules, held)
        if verdict is not None:
            cells[i] = replace(cell, status=CellStatus.PRIMARY,
                               protection=(verdict.lower, verdict.upper), sliding=Fraction(0))
    return replace(table, cells=tuple(cells))


def unmark(table: Table) -> Table:
    """``table`` with every PRIMARY cell SAFE again (for re-marking under other rules)."""
    cells = tuple(replace(c, status=CellStatus.SAFE, protection=NO_PROTECTION)
                  if c.status is CellStatus.PRIMARY else c for c in table.cells)
    return replace(table, cells=cells)


def _nth(top: Sequence[Fraction], i: int) -> Fraction:
    return top[i] if i < len(top) else Fraction(0)


def _sum(top: Sequence[Fraction], k: int) -> Fraction:
    return sum(top[:k], Fraction(0))
