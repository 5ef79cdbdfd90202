"""The CP-SAT exact engine against a brute-force oracle.

Each case is a tiny random schema (2-3 columns, domains of 2-6 values), a random true dataset
(1-5 rows) and random statistics of every aggregate kind with random WHERE clauses. The
published answers come from ``tabulate`` (DuckDB) on the true dataset; the release is written
as YAML and parsed like a user's file. The oracle enumerates every candidate dataset and keeps
those on which every published answer holds, evaluating the statistics in plain Python from
the same predicate tree that was rendered to SQL. The engine must return exactly that set.

Cases without a public table are multisets of rows (``records`` exact, a range, or omitted and
bounded by a COUNT(*) statistic). Cases with a public table have one known integer column
``id`` (duplicates allowed): a dataset assigns unknown values to the public rows, and rows with
equal ``id`` are interchangeable.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statrecon import reconstruct
from statrecon.engines.exact import ExactOptions, enumerate_datasets
from statrecon.release.files import answer_fields, load_release, parse_release
from statrecon.release.known import PublicTable, compile_known
from statrecon.release.tabulate import tabulate

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SPACE_LIMIT = 2000  # most candidate datasets the oracle enumerates in one case
TABLE = "t"
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when installed: 3x faster

Row = dict[str, Any]  # decoded values by column name
Dataset = tuple[tuple[int, ...], ...]  # sorted encoded rows, the engine's canonical form


# --- schema -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Col:
    """A column: 'int' (unknown integer), 'cat' (unknown categorical) or 'known' (id)."""

    name: str
    kind: str
    lo: int = 0
    hi: int = 0
    values: tuple[str, ...] = ()

    @property
    def numeric(self) -> bool:
        return self.kind in ("int", "known")

    def codes(self) -> list[int]:
        if self.kind == "cat":
            return list(range(len(self.values)))
        return list(range(self.lo, self.hi + 1))

    def decode(self, code: int) -> Any:
        return self.values[code] if self.kind == "cat" else code

    def encode(self, value: Any) -> int:
        return self.values.index(value) if self.kind == "cat" else int(value)

    def spec(self) -> dict[str, Any]:
        if self.kind == "cat":
            return {"type": "categorical", "values": list(self.values)}
        if self.kind == "known":
            return {"type": "integer", "known": True}
        return {"type": "integer", "min": self.lo, "max": self.hi}


# --- predicates: one tree, rendered to SQL and evaluated in Python ---------------------------


def _num(x: Fraction) -> str:
    """A constant as SQL text: 3, or 2.5 for a half (exact in DuckDB's doubles)."""
    return str(int(x)) if x.denominator == 1 else str(float(x))


def _lin_sql(terms: tuple[tuple[Fraction, str], ...], const: Fraction) -> str:
    parts: list[str] = []
    for coef, name in terms:
        size = abs(coef)
        term = (name if size == 1 else f"{size} * {name}" if size.denominator == 1
                else f"{name} / {size.denominator}")  # DuckDB: / is exact division here
        if not parts:
            parts.append(("-" if coef < 0 else "") + term)
        else:
            parts.append(("- " if coef < 0 else "+ ") + term)
    if const or not parts:
        if not parts:
            parts.append(_num(const))
        else:
            parts.append(("- " if const < 0 else "+ ") + _num(abs(const)))
    return " ".join(parts)


def _lin_eval(terms: tuple[tuple[Fraction, str], ...], const: Fraction, row: Row
              ) -> Fraction:
    return sum((c * row[n] for c, n in terms), Fraction(const))


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, b: a == b,
    "<>": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}
_FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True)
class Cmp:
    """``left OP right`` with affine integer sides (``flip`` writes it right-to-left)."""

    left: tuple[tuple[Fraction, str], ...]
    op: str
    right: tuple[tuple[Fraction, str], ...]
    const: Fraction  # added to the right side
    flip: bool = False

    def sql(self) -> str:
        a, b = _lin_sql(self.left, Fraction(0)), _lin_sql(self.right, self.const)
        return f"{b} {_FLIP[self.op]} {a}" if self.flip else f"{a} {self.op} {b}"

    def holds(self, row: Row) -> bool:
        return _OPS[self.op](_lin_eval(self.left, Fraction(0), row),
                             _lin_eval(self.right, self.const, row))


@dataclass(frozen=True)
class Between:
    column: str
    low: int
    high: int

    def sql(self) -> str:
        return f"{self.column} BETWEEN {self.low} AND {self.high}"

    def holds(self, row: Row) -> bool:
        return bool(self.low <= row[self.column] <= self.high)


@dataclass(frozen=True)
class InList:
    """``column [NOT] IN (...)`` for integer or categorical columns."""

    column: str
    items: tuple[Any, ...]
    negated: bool = False

    def sql(self) -> str:
        items = ", ".join(f"'{v}'" if isinstance(v, str) else str(v) for v in self.items)
        return f"{self.column} {'NOT IN' if self.negated else 'IN'} ({items})"

    def holds(self, row: Row) -> bool:
        return (row[self.column] in self.items) != self.negated


@dataclass(frozen=True)
class CatEq:
    column: str
    op: str  # = or <>
    value: str
    flip: bool = False

    def sql(self) -> str:
        if self.flip:
            return f"'{self.value}' {self.op} {self.column}"
        return f"{self.column} {self.op} '{self.value}'"

    def holds(self, row: Row) -> bool:
        return (row[self.column] == self.value) == (self.op == "=")


@dataclass(frozen=True)
class Truth:
    value: bool

    def sql(self) -> str:
        return "TRUE" if self.value else "FALSE"

    def holds(self, row: Row) -> bool:
        return self.value


@dataclass(frozen=True)
class NotP:
    arg: Any

    def sql(self) -> str:
        return f"NOT ({self.arg.sql()})"

    def holds(self, row: Row) -> bool:
        return not self.arg.holds(row)


@dataclass(frozen=True)
class Junction:
    op: str  # AND or OR
    args: tuple[Any, Any]

    def sql(self) -> str:
        return f" {self.op} ".join(f"({a.sql()})" for a in self.args)

    def holds(self, row: Row) -> bool:
        if self.op == "AND":
            return all(a.holds(row) for a in self.args)
        return any(a.holds(row) for a in self.args)


def _const_range(col: Col) -> st.SearchStrategy[int]:
    return st.integers(col.lo - 1, col.hi + 1)


@st.composite
def atoms(draw: Any, cols: tuple[Col, ...]) -> Any:
    col = draw(st.sampled_from(cols))
    numeric = [c for c in cols if c.numeric]
    if draw(st.integers(0, 24)) == 0:
        return Truth(draw(st.booleans()))
    if col.kind == "cat":
        form = draw(st.sampled_from(["eq", "eq", "in"]))
        if form == "eq":
            return CatEq(col.name, draw(st.sampled_from(["=", "<>"])),
                         draw(st.sampled_from(col.values)), draw(st.booleans()))
        items = draw(st.lists(st.sampled_from(col.values), min_size=1, max_size=3, unique=True))
        return InList(col.name, tuple(items), draw(st.booleans()))
    form = draw(st.sampled_from(["cmp", "cmp", "cmp", "between", "in", "affine"]))
    if form == "between":
        a, b = draw(_const_range(col)), draw(_const_range(col))
        if draw(st.integers(0, 3)) > 0:
            a, b = min(a, b), max(a, b)
        return Between(col.name, a, b)
    if form == "in":
        items = draw(st.lists(_const_range(col), min_size=1, max_size=3, unique=True))
        return InList(col.name, tuple(items), draw(st.booleans()))
    op = draw(st.sampled_from(list(_OPS)))
    # constants are whole or, sometimes, halves (a fractional right-hand side)
    half = Fraction(1, 2) if draw(st.integers(0, 2)) == 0 else Fraction(0)
    if form == "cmp":
        return Cmp(((Fraction(1), col.name),), op, (), draw(_const_range(col)) + half,
                   draw(st.booleans()))
    # affine: c1 * x OP c2 * y + k, x and y integer columns (known or unknown, maybe equal)
    other = draw(st.sampled_from(numeric))
    c1 = draw(st.sampled_from([Fraction(1), Fraction(1), Fraction(-1), Fraction(2),
                               Fraction(1, 2)]))
    c2 = draw(st.sampled_from([Fraction(1), Fraction(1), Fraction(-1), Fraction(2),
                               Fraction(1, 2)]))
    k = draw(st.integers(-3, 3)) + half
    return Cmp(((c1, col.name),), op, ((c2, other.name),), k, draw(st.booleans()))


@st.composite
def predicates(draw: Any, cols: tuple[Col, ...], depth: int = 2) -> Any:
    kind = draw(st.integers(0, 5)) if depth > 0 else 0
    if kind <= 2:
        return draw(atoms(cols))
    if kind == 3:
        return NotP(draw(predicates(cols, depth - 1)))
    return Junction("AND" if kind == 4 else "OR",
                    (draw(predicates(cols, depth - 1)), draw(predicates(cols, depth - 1))))


# --- statistics -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Stat:
    id: str
    agg: str  # count | count_distinct | sum | avg | median | min | max
    sql_agg: str  # how the aggregate is written, e.g. MEAN(a) or COUNT(b)
    column: str | None
    where: Any  # a predicate or None
    noisy: bool = False

    def sql(self) -> str:
        tail = f" WHERE {self.where.sql()}" if self.where is not None else ""
        return f"SELECT {self.sql_agg} FROM {TABLE}{tail}"

    def matches(self, row: Row) -> bool:
        return self.where is None or self.where.holds(row)


@st.composite
def stats(draw: Any, cols: tuple[Col, ...], public: bool) -> list[Stat]:
    numeric = [c.name for c in cols if c.numeric]
    count = draw(st.integers(1, 5))
    out = []
    for i in range(count):
        kinds = ["count", "count"]
        if numeric:
            kinds += ["sum", "avg", "median", "min", "max"]
        if public:
            kinds += ["count_distinct", "count_distinct"]
        agg = draw(st.sampled_from(kinds))
        column: str | None = None
        if agg == "count":
            if draw(st.integers(0, 3)) == 0:
                sql_agg = f"COUNT({draw(st.sampled_from([c.name for c in cols]))})"
            else:
                sql_agg = "COUNT(*)"
        elif agg == "count_distinct":
            column = "id"
            sql_agg = "COUNT(DISTINCT id)"
        else:
            column = draw(st.sampled_from(numeric))
            name = "MEAN" if agg == "avg" and draw(st.booleans()) else agg.upper()
            sql_agg = f"{name}({column})"
        where = draw(predicates(cols)) if draw(st.integers(0, 5)) > 0 else None
        noisy = agg == "count" and draw(st.integers(0, 19)) == 11
        out.append(Stat(f"s{i}", agg, sql_agg, column, where, noisy))
    return out


# --- cases ----------------------------------------------------------------------------------


@dataclass
class Case:
    cols: tuple[Col, ...]
    truth: list[Row]
    stats: list[Stat]
    records: int | tuple[int, int] | None = None
    public_ids: tuple[int, ...] | None = None
    suppress_below: int | None = None
    decimals: int = 1
    constraints: list[Any] = field(default_factory=list)

    @property
    def unknown(self) -> tuple[Col, ...]:
        return tuple(c for c in self.cols if c.kind != "known")


def _multisets(domain: int, sizes: range) -> int:
    return sum(math.comb(domain + s - 1, s) for s in sizes)


def _public_space(domain: int, ids: tuple[int, ...]) -> int:
    return math.prod(math.comb(domain + g - 1, g) for g in Counter(ids).values())


def _fit(sizes: list[int], space: Callable[[int], int]) -> list[int]:
    """Shrink the largest domains until the oracle's candidate space is small enough."""
    sizes = list(sizes)
    while space(math.prod(sizes)) > SPACE_LIMIT:
        i = max(range(len(sizes)), key=lambda j: sizes[j])
        assert sizes[i] > 2, "the smallest domains always fit"
        sizes[i] -= 1
    return sizes


@st.composite
def unknown_columns(draw: Any, count: int, space: Callable[[int], int]) -> list[Col]:
    kinds = [draw(st.sampled_from(["int", "int", "cat"])) for _ in range(count)]
    sizes = _fit([draw(st.integers(2, 6)) for _ in range(count)], space)
    cols = []
    for name, kind, size in zip("abc", kinds, sizes, strict=False):
        if kind == "cat":
            cols.append(Col(name, "cat", values=tuple(f"{name}{j}" for j in range(size))))
        else:
            lo = draw(st.integers(-2, 3))
            cols.append(Col(name, "int", lo, lo + size - 1))
    return cols


@st.composite
def true_rows(draw: Any, cols: tuple[Col, ...], n: int) -> list[Row]:
    return [{c.name: c.decode(draw(st.sampled_from(c.codes()))) for c in cols} for _ in range(n)]


@st.composite
def constraints(draw: Any, cols: tuple[Col, ...], truth: list[Row]) -> list[Any]:
    """Sometimes one background rule that the true rows satisfy."""
    if draw(st.integers(0, 3)) > 0:
        return []
    pred = draw(predicates(cols, depth=1))
    if all(pred.holds(r) for r in truth):
        return [pred]
    neg = NotP(pred)
    return [neg] if all(neg.holds(r) for r in truth) else []


@st.composite
def no_public_cases(draw: Any) -> Case:
    n = draw(st.integers(1, 5))
    mode = draw(st.sampled_from(["exact", "exact", "range", "omitted"]))
    suppress_below = draw(st.sampled_from([None, None, None, 2, 3, 4]))
    if mode == "range":
        records: int | tuple[int, int] | None = (draw(st.integers(0, n)), draw(st.integers(n, 5)))
        sizes = range(records[0], records[1] + 1)
    elif mode == "omitted":
        records = None
        top = suppress_below - 1 if suppress_below is not None and n < suppress_below else n
        sizes = range(0, top + 1)
    else:
        records = n
        sizes = range(n, n + 1)
    count = draw(st.integers(2, 3))
    cols = tuple(draw(unknown_columns(count, lambda d: _multisets(d, sizes))))
    truth = draw(true_rows(cols, n))
    statistics = draw(stats(cols, public=False))
    if mode == "omitted":  # the row count is bounded only by a COUNT(*) without WHERE
        statistics.append(Stat("total", "count", "COUNT(*)", None, None))
    return Case(cols, truth, statistics, records, None, suppress_below,
                draw(st.sampled_from([0, 1])), draw(constraints(cols, truth)))


@st.composite
def public_cases(draw: Any) -> Case:
    n = draw(st.integers(1, 5))
    ids = tuple(draw(st.lists(st.integers(1, 4), min_size=n, max_size=n)))
    count = draw(st.integers(1, 2))
    unknown = draw(unknown_columns(count, lambda d: _public_space(d, ids)))
    known = Col("id", "known", min(ids), max(ids))
    position = draw(st.integers(0, len(unknown)))
    cols = (*unknown[:position], known, *unknown[position:])
    values = draw(true_rows(tuple(unknown), n))
    truth = [{**row, "id": i} for row, i in zip(values, ids, strict=True)]
    truth = [{c.name: r[c.name] for c in cols} for r in truth]
    mode = draw(st.sampled_from(["omitted", "exact", "range"]))
    records: int | tuple[int, int] | None = None
    if mode == "exact":
        records = n
    elif mode == "range":
        records = (draw(st.integers(0, n)), draw(st.integers(n, 6)))
    return Case(cols, truth, draw(stats(cols, public=True)), records, ids,
                draw(st.sampled_from([None, None, None, 2, 3])), draw(st.sampled_from([0, 1])),
                draw(constraints(cols, truth)))


# --- release --------------------------------------------------------------------------------


def release_yaml(case: Case) -> tuple[str, dict[str, dict[str, Any]]]:
    """The release with answers tabulated on the true rows; also the published fields."""
    doc: dict[str, Any] = {"version": 1, "name": "oracle-case", "table": TABLE}
    if isinstance(case.records, int):
        doc["records"] = case.records
    elif case.records is not None:
        doc["records"] = {"min": case.records[0], "max": case.records[1]}
    doc["columns"] = {c.name: c.spec() for c in case.cols}
    if case.constraints:
        doc["constraints"] = [p.sql() for p in case.constraints]
    if case.suppress_below is not None:
        doc["suppression"] = {"max_count": case.suppress_below - 1}
    doc["statistics"] = [{"id": s.id, "sql": s.sql()} for s in case.stats]
    blank = parse_release(yaml.dump(doc, Dumper=DUMPER, sort_keys=False))
    frame = pd.DataFrame(case.truth, columns=[c.name for c in case.cols])
    answers = tabulate(blank, frame, decimals=case.decimals, suppress_below=case.suppress_below)
    published: dict[str, dict[str, Any]] = {}
    for entry, s in zip(doc["statistics"], case.stats, strict=True):
        fields = answer_fields(answers[s.id])
        if s.noisy:  # soft evidence the exact engine must ignore
            fields = {"value": 0.5, "noise": {"gaussian": 1.0}}
        entry.update(fields)
        published[s.id] = fields
    return yaml.dump(doc, Dumper=DUMPER, sort_keys=False), published


def public_table(case: Case) -> PublicTable | None:
    if case.public_ids is None:
        return None
    return PublicTable(source="test", rows=len(case.public_ids),
                       columns={"id": tuple(case.public_ids)})


# --- the oracle -----------------------------------------------------------------------------


def _median(values: list[int]) -> Fraction:
    v = sorted(values)
    k = len(v)
    return Fraction(v[k // 2]) if k % 2 else Fraction(v[k // 2 - 1] + v[k // 2], 2)


@functools.lru_cache(maxsize=4096)
def _fraction(text: str) -> Fraction:
    """A published number's exact value, read once (the oracle checks each answer on every
    candidate dataset: 300,000 times in one test)."""
    return Fraction(text)


def answer_holds(stat: Stat, fields: dict[str, Any], matched: list[Row], max_count: int
                 ) -> bool:
    """Whether the published answer (YAML fields) is true of a dataset whose rows matching
    the statistic's WHERE clause are ``matched``."""
    if "noise" in fields:
        return True
    count = len(matched)
    if fields.get("suppressed"):
        return 0 <= count <= max_count
    if fields["value"] is None:
        return count == 0
    values = [r[stat.column] for r in matched] if stat.column else []
    true: Fraction
    if stat.agg == "count":
        true = Fraction(count)
    elif stat.agg == "count_distinct":
        true = Fraction(len(set(values)))
    elif stat.agg == "sum":
        true = Fraction(sum(values))
    elif count == 0:
        return False  # AVG / MEDIAN / MIN / MAX of nothing is null, not a number
    elif stat.agg == "avg":
        true = Fraction(sum(values), count)
    elif stat.agg == "median":
        true = _median(values)
    else:
        true = Fraction(min(values) if stat.agg == "min" else max(values))
    value = _fraction(str(fields["value"]))
    if "error" in fields:
        return abs(true - value) <= _fraction(str(fields["error"]))
    if "decimals" in fields:  # rounded to d places: the truth within half a unit of the last
        return abs(true - value) <= Fraction(1, 2 * 10 ** int(fields["decimals"]))
    return true == value


def _canonical(rows: list[Row], cols: tuple[Col, ...]) -> Dataset:
    return tuple(sorted(tuple(c.encode(r[c.name]) for c in cols) for r in rows))


def candidates(case: Case, published: dict[str, dict[str, Any]]) -> Iterator[Dataset]:
    """Every dataset the release's schema and row count allow (before the statistics)."""
    cols = case.cols
    if case.public_ids is None:
        if case.records is None:  # bounded only by COUNT(*) statistics without WHERE
            tops = []
            for s in case.stats:
                fields = published[s.id]
                if s.agg == "count" and s.where is None and "noise" not in fields:
                    tops.append(case.suppress_below - 1 if fields.get("suppressed")
                                else int(fields["value"]))
            sizes = range(0, min(tops) + 1)
        elif isinstance(case.records, int):
            sizes = range(case.records, case.records + 1)
        else:
            sizes = range(case.records[0], case.records[1] + 1)
        rows = sorted(itertools.product(*(c.codes() for c in cols)))
        for size in sizes:
            yield from itertools.combinations_with_replacement(rows, size)
        return
    unknown = case.unknown
    position = [c.name for c in cols].index("id")
    values = list(itertools.product(*(c.codes() for c in unknown)))
    groups = sorted(Counter(case.public_ids).items())
    choices = [
        [[(*v[:position], i, *v[position:]) for v in combo]
         for combo in itertools.combinations_with_replacement(values, g)]
        for i, g in groups
    ]
    for pick in itertools.product(*choices):
        yield tuple(sorted(row for part in pick for row in part))


def oracle(case: Case, published: dict[str, dict[str, Any]]) -> set[Dataset]:
    cols = case.cols
    # per candidate row: the decoded row, whether the background rules allow it, and
    # whether it matches each statistic's WHERE clause
    facts: dict[tuple[int, ...], tuple[Row, bool, tuple[bool, ...]]] = {}
    max_count = (case.suppress_below or 1) - 1
    out: set[Dataset] = set()
    seen = 0
    for data in candidates(case, published):
        seen += 1
        for t in data:
            if t not in facts:
                row = {c.name: c.decode(v) for c, v in zip(cols, t, strict=True)}
                facts[t] = (row, all(p.holds(row) for p in case.constraints),
                            tuple(s.matches(row) for s in case.stats))
        if not all(facts[t][1] for t in data):
            continue
        if all(
            answer_holds(s, published[s.id], [facts[t][0] for t in data if facts[t][2][i]],
                         max_count)
            for i, s in enumerate(case.stats)
        ):
            out.add(data)
    assert seen <= SPACE_LIMIT, f"oracle space {seen} is above {SPACE_LIMIT}"
    return out


# --- the check ------------------------------------------------------------------------------


def _show(datasets: set[Dataset], k: int = 5) -> str:
    return "\n".join(f"  {d}" for d in sorted(datasets)[:k]) or "  (none)"


def check_against_oracle(case: Case) -> None:
    text, published = release_yaml(case)
    release = parse_release(text)
    public = public_table(case)
    expected = oracle(case, published)
    truth = _canonical(case.truth, case.cols)
    context = f"release:\n{text}public ids: {case.public_ids}\ntrue dataset: {truth}\n"
    # The oracle's Python evaluation agrees with DuckDB's tabulated answers on the truth.
    assert truth in expected, "tabulated answers do not hold on the true dataset\n" + context

    # the public entry point enumerates with the engine's own model and enumeration
    # (``enumerate_datasets``'s), so the datasets are read back from its solutions
    options = ExactOptions(limit=2 * SPACE_LIMIT, keep_solutions=None)
    result = reconstruct(release, public=public, options=options)
    assert result.complete and result.certain_complete, context
    found = [_canonical(s, case.cols) for s in result.solutions]
    assert len(set(found)) == len(found), "a dataset was returned twice\n" + context
    assert set(found) == expected, (
        f"engine {len(found)} vs oracle {len(expected)} datasets\n" + context
        + f"engine only:\n{_show(set(found) - expected)}\n"
        f"oracle only:\n{_show(expected - set(found))}"
    )
    assert result.status == ("unique" if len(expected) == 1 else "multiple"), context
    assert result.solution_count == len(expected), context
    common = Counter(next(iter(expected)))
    for d in expected:
        common &= Counter(d)
    certain = {tuple(c.encode(cr.row[c.name]) for c in case.cols): cr.multiplicity
               for cr in result.certain_rows}
    assert certain == dict(common), context
    values = {c.name: sorted({c.decode(t[i]) for d in expected for t in d})
              for i, c in enumerate(case.cols) if c.kind != "known"}
    assert result.column_values == values, context


_SETTINGS = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


@settings(max_examples=220, **_SETTINGS)
@given(no_public_cases())
def test_engine_matches_oracle_without_public_table(case: Case) -> None:
    check_against_oracle(case)


@settings(max_examples=100, **_SETTINGS)
@given(public_cases())
def test_engine_matches_oracle_with_public_table(case: Case) -> None:
    check_against_oracle(case)


# --- fixed examples -------------------------------------------------------------------------


def test_block_2b_has_the_30_datasets_of_the_oracle() -> None:
    release = load_release(EXAMPLES / "block_2b.yaml")
    datasets, complete, _ = enumerate_datasets(release, compile_known(release, None),
                                               ExactOptions(limit=1000))
    assert complete and len(datasets) == 30
    # COUNT(sex = 'M') = 3 = records: every row is male (code 1); brute force over the ages.
    male = 1
    expected = {
        tuple((age, male) for age in ages)
        for ages in itertools.combinations_with_replacement(range(1, 126), 3)
        if ages[1] == 30 and sum(ages) == 3 * 44
    }
    assert set(datasets) == expected


def test_census_block_is_unique() -> None:
    result = reconstruct(EXAMPLES / "block.yaml")
    assert result.status == "unique" and result.solution_count == 1 and result.complete
    ages = sorted(row["age"] for row in result.solutions[0])
    assert ages == [8, 18, 24, 30, 36, 66, 84]


@pytest.mark.parametrize("name", ["block_2b.yaml", "block.yaml"])
def test_a_solution_read_by_index_is_the_one_read_by_variable(name: str) -> None:
    """The enumeration reads each solution by variable index (``indexed_dataset``); on the
    examples that path is taken, and it reads what ``dataset`` reads through the wrapper."""
    from ortools.sat.python import cp_model

    from statrecon.engines.exact.reconstruct import _model
    from statrecon.engines.solvers.cpsat import Deadline

    release = load_release(EXAMPLES / name)
    rm = _model(release, compile_known(release, None), ExactOptions(), Deadline.after(None))
    solver = cp_model.CpSolver()
    assert solver.solve(rm.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    solution = list(solver.response_proto.solution)
    assert rm._slots is not None
    by_index = rm.indexed_dataset(solution.__getitem__, solver.value)
    assert by_index == rm.dataset(solver.value) and by_index
