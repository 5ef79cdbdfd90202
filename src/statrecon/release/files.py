"""Read and write release files (YAML, version 1), with file:line in every error."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

from statrecon import inputs
from statrecon.bulk import collector_paused
from statrecon.db import check_identifier
from statrecon.errors import ReleaseError, StatreconError
from statrecon.outputs import dump_yaml, write_atomically
from statrecon.release.columnar import read_rows
from statrecon.release.columnar import where as columnar_where
from statrecon.release.model import Constraint, RecordCount, Release, SuppressionRule
from statrecon.release.schema import Column, ColumnType, Schema
from statrecon.release.sql import QueryParser, parse_predicate
from statrecon.release.statistic import (
    Aggregate,
    Answer,
    Bounded,
    Empty,
    Exact,
    Noisy,
    Statistic,
    Suppressed,
    fraction_of,
    number_out,
    number_text,
    parse_rational,
    rounded_decimals,
    rounding,
)

Number = int | float
NOISE_KINDS = ("gaussian", "laplace", "geometric", "uniform")
# Column bounds beyond this are not a domain a record can have: the solvers work in 64-bit
# integers and sums over many records must still fit, so 10**15 (about 2**50) is the limit.
MAX_BOUND = 10**15


def _finite(v: Any) -> Any:
    """NaN and infinities are not published numbers (YAML reads .nan, .inf and 1e99999 so)."""
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"{v} is not a finite number")
    return v


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ColumnSpec(_Strict):
    type: Literal["integer", "categorical", "real"]
    min: Number | None = None
    max: Number | None = None
    values: list[StrictStr] | None = None
    known: bool = False

    @field_validator("min", "max", mode="after")
    @classmethod
    def _bounded(cls, v: Any) -> Any:
        _finite(v)
        if v is not None and abs(v) > MAX_BOUND:
            raise ValueError(f"{v} is beyond the supported range -10**15..10**15")
        return v


class RangeSpec(_Strict):
    min: int = Field(ge=0, le=MAX_BOUND)
    max: int = Field(ge=0, le=MAX_BOUND)


class SuppressionSpec(_Strict):
    max_count: int = Field(ge=0)
    min_count: int = Field(default=0, ge=0)


class StatisticSpec(_Strict):
    id: StrictStr
    sql: StrictStr
    # a number, or text: an exact fraction "565981/6" or a decimal "12.50"
    value: Number | StrictStr | None = None
    error: Number | StrictStr | None = None
    decimals: StrictInt | None = None
    suppressed: bool = False
    noise: dict[str, float] | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator("value", "error", mode="before")
    @classmethod
    def _not_boolean(cls, v: Any) -> Any:
        if isinstance(v, bool):  # pydantic would read true as 1
            word = "yes/true" if v else "no/false"
            raise ValueError(f"YAML read a bare {word} as a boolean; a number is expected")
        return v

    @field_validator("value", "error", mode="after")
    @classmethod
    def _finite_number(cls, v: Any) -> Any:
        if isinstance(v, str):
            parse_rational(v)  # a ValueError names what is wrong with the text
            return v
        return _finite(v)  # after: pydantic turns the text '1e99999' into inf

    @field_validator("noise", mode="after")
    @classmethod
    def _positive_scale(cls, v: Any) -> Any:
        for kind, scale in (v or {}).items():
            if not (math.isfinite(scale) and scale > 0):
                raise ValueError(f"noise scale {kind}: {scale} must be a positive finite number")
        return v


class ReleaseSpec(_Strict):
    version: Literal[1]
    name: StrictStr = "release"
    description: StrictStr | None = None
    table: StrictStr = "t"

    @field_validator("table", mode="after")
    @classmethod
    def _identifier(cls, v: str) -> str:
        try:
            return check_identifier(v, "table name")
        except StatreconError as e:
            raise ValueError(str(e)) from None

    records: int | RangeSpec | None = Field(default=None, union_mode="left_to_right")

    @field_validator("records", mode="after")
    @classmethod
    def _records_range(cls, v: Any) -> Any:
        if isinstance(v, int) and v > MAX_BOUND:
            raise ValueError(f"{v} records is beyond the supported {MAX_BOUND:,}")
        return v

    public: StrictStr | None = None
    # statistics as a CSV or Parquet table in the release file's folder (release/columnar.py)
    statistics_file: StrictStr | None = None
    columns: dict[str, ColumnSpec]
    constraints: list[StrictStr] = []
    suppression: SuppressionSpec | None = None
    statistics: list[StatisticSpec] = []


class _Lines:
    """Maps a key path in the YAML document to its line number. The node tree is composed
    only when a path is asked for whose line the fast reader did not note (an error)."""

    def __init__(self, node: yaml.Node | None, text: str | None = None,
                 noted: dict[tuple[Any, ...], int] | None = None) -> None:
        self.root = node
        self.text = text  # composed on first need when given
        self.noted = noted or {}

    def line(self, path: tuple[Any, ...]) -> int | None:
        known = self.noted.get(path)
        if known is not None:
            return known
        if self.text is not None:
            loader = _YAML_LOADER(self.text)
            try:
                self.root = loader.get_single_node()
            finally:
                loader.dispose()
            self.text = None
        node = self.root
        best = node.start_mark.line + 1 if node is not None else None
        for key in path:
            child = None
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    if k.value == key:
                        child = v if not isinstance(v, yaml.ScalarNode) else k
                        break
            elif (isinstance(node, yaml.SequenceNode) and isinstance(key, int)
                  and 0 <= key < len(node.value)):
                child = node.value[key]
            if child is None:
                break
            node = child
            best = node.start_mark.line + 1
        return best


def load_release(path: str | Path) -> Release:
    """Read and validate a release file. Every problem raises ReleaseError naming file:line."""
    path = Path(path)
    return parse_release(read_text_file(path), source=path)


def read_text_file(path: Path) -> str:
    """A user's UTF-8 text file through the input gate, or a one-line error naming it."""
    try:
        return inputs.read_text(path, "release file")
    except StatreconError as e:
        raise ReleaseError(str(e), where=e.where) from None


def parse_release(text: str, source: Path | None = None) -> Release:
    with collector_paused():  # millions of small acyclic objects for a large release
        return _parse_release(text, source)


def _parse_release(text: str, source: Path | None) -> Release:
    where = str(source) if source else "<release>"
    fast = fast_yaml(text)
    if fast is not None:
        data, noted = fast
        lines = _Lines(None, text, noted)
    else:  # anything unusual: the full node tree, for its exact error
        data, lines = _slow_yaml(text, where)
    if not isinstance(data, dict):
        raise ReleaseError(f"{where}:1: a release file is a YAML mapping (version, columns, ...)")
    try:
        spec = ReleaseSpec.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err["loc"])
        raise ReleaseError(
            f"{where}:{lines.line(loc)}: {_describe_loc(loc, data)}: {_describe_error(err)}"
        ) from None
    return _build(spec, lines, where, source)


class _Unusual(Exception):
    """Something the fast reader leaves to the node tree (``_slow_yaml``): an anchor, alias,
    tag, merge key, timestamp, complex or repeated key, several documents, a YAML error."""


_YAML_EVENTS = yaml.events
_IMPLICIT = getattr(yaml, "CSafeLoader", yaml.SafeLoader).yaml_implicit_resolvers
_SAFE = yaml.constructor.SafeConstructor()
_SCALARS: dict[str, Any] = {
    "tag:yaml.org,2002:int": _SAFE.construct_yaml_int,
    "tag:yaml.org,2002:float": _SAFE.construct_yaml_float,
    "tag:yaml.org,2002:bool": _SAFE.construct_yaml_bool,
    "tag:yaml.org,2002:null": _SAFE.construct_yaml_null,
}


def _plain_scalar(value: str) -> Any:
    """A plain (unquoted, untagged) scalar as SafeLoader resolves and constructs it."""
    resolvers = _IMPLICIT.get(value[0] if value else "", [])
    for tag, regexp in resolvers + _IMPLICIT.get(None, []):
        if regexp.match(value):
            construct = _SCALARS.get(tag)
            if construct is None:
                raise _Unusual(tag)
            return construct(yaml.ScalarNode(tag, value))
    return value


def fast_yaml(text: str) -> tuple[Any, dict[tuple[Any, ...], int]] | None:
    """The data SafeLoader gives for ``text``, built straight from libyaml's events, and the
    line of each ``statistics`` item; None when the text holds anything unusual, which the
    node-tree path then reads (or refuses) with its exact message."""
    loader = _YAML_LOADER(text)
    try:
        return _EventReader(loader).read()
    except (_Unusual, yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError):
        return None
    finally:
        loader.dispose()


_NO_KEY: Any = object()


class _Frame:
    """An open mapping or sequence: its container, and for a mapping the key waiting for
    its value and the keys' texts seen (a repeated one is left to the slow path)."""

    __slots__ = ("container", "key", "key_line", "key_text", "keys", "noting")

    def __init__(self, container: Any, noting: str | None = None) -> None:
        self.container = container
        self.key: Any = _NO_KEY
        self.key_text = ""
        self.key_line = 0
        self.keys: set[str] = set()
        self.noting = noting  # a list under this top-level key: note each item's line


class _EventReader:
    """Builds the document from parser events (no node tree, no resolver per node), noting
    the lines ``_Lines`` gives for each top-level key and each item of a top-level list."""

    def __init__(self, loader: Any) -> None:
        self.get = loader.get_event
        self.stack: list[_Frame] = []
        self.root: Any = _NO_KEY
        self.noted: dict[tuple[Any, ...], int] = {}
        self.cache: dict[str, Any] = {}

    def read(self) -> tuple[Any, dict[tuple[Any, ...], int]]:
        ev = _YAML_EVENTS
        if not isinstance(self.get(), ev.StreamStartEvent) or not isinstance(
                self.get(), ev.DocumentStartEvent):
            raise _Unusual("no document")
        while True:
            event = self.get()
            kind = type(event)
            if kind is ev.ScalarEvent:
                self.scalar(event)
            elif kind is ev.MappingEndEvent or kind is ev.SequenceEndEvent:
                self.stack.pop()
            elif kind is ev.MappingStartEvent or kind is ev.SequenceStartEvent:
                self.start(event, kind is ev.MappingStartEvent)
            elif kind is ev.DocumentEndEvent:
                break
            else:
                raise _Unusual(kind.__name__)  # an alias
        if not isinstance(self.get(), ev.StreamEndEvent):
            raise _Unusual("more than one document")
        return self.root, self.noted

    def scalar(self, event: Any) -> None:
        if event.anchor is not None or event.tag is not None:
            raise _Unusual("anchor or tag")
        text = event.value
        if event.implicit[0]:
            value = self.cache.get(text, _NO_KEY)
            if value is _NO_KEY:
                value = self.cache[text] = _plain_scalar(text)
        else:
            value = text
        top = self.stack[-1] if self.stack else None
        if top is not None and top.key is _NO_KEY and type(top.container) is dict:
            if text in top.keys:
                raise _Unusual("a repeated key")
            top.keys.add(text)
            top.key, top.key_text, top.key_line = value, text, event.start_mark.line + 1
            return
        self.add(value, event)

    def start(self, event: Any, mapping: bool) -> None:
        if event.anchor is not None or event.tag is not None:
            raise _Unusual("anchor or tag")
        top = self.stack[-1] if self.stack else None
        if top is not None and top.key is _NO_KEY and type(top.container) is dict:
            raise _Unusual("a complex key")
        noting = None if mapping or top is None or len(self.stack) != 1 else top.key_text
        container: Any = {} if mapping else []
        self.add(container, event)
        self.stack.append(_Frame(container, noting))

    def add(self, value: Any, event: Any) -> None:
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        if type(top.container) is dict:
            if len(self.stack) == 1:  # a scalar's line is its key's, a collection's its own
                self.noted[(top.key_text,)] = (event.start_mark.line + 1 if type(
                    value) in (dict, list) else top.key_line)
            top.container[top.key] = value
            top.key = _NO_KEY
        else:
            if top.noting is not None:
                self.noted[(top.noting, len(top.container))] = event.start_mark.line + 1
            top.container.append(value)


def _slow_yaml(text: str, where: str) -> tuple[Any, _Lines]:
    """The data and its lines through the node tree; aliases and duplicate keys refused."""
    try:
        node, data = _load_yaml(text, where)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ReleaseError(f"{where}{line}: malformed YAML: {problem}") from None
    _reject_duplicate_keys(node, where)
    return data, _Lines(node)


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when installed


def _load_yaml(text: str, where: str) -> tuple[yaml.Node | None, Any]:
    """The node tree (for line numbers) and the data, from one parse; aliases refused before
    anything is built from them."""
    loader = _YAML_LOADER(text)
    try:
        node = loader.get_single_node()
        _reject_aliases(node, where)
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def _reject_aliases(node: yaml.Node | None, where: str) -> None:
    """No YAML aliases: a release never needs them, and a few hundred bytes of nested aliases
    expand to billions of values (the 'billion laughs'). An alias is a node reached twice."""
    seen: set[int] = set()
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if id(current) in seen:
            line = current.start_mark.line + 1 if current.start_mark is not None else 1
            raise ReleaseError(f"{where}:{line}: YAML aliases (*name) are not allowed in a "
                               "release file; write the values out")
        seen.add(id(current))
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                stack.extend((key, value))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)


def _reject_duplicate_keys(node: yaml.Node | None, where: str) -> None:
    """YAML lets a later key silently win over an earlier one; a release must not."""
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if isinstance(current, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in current.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        raise ReleaseError(
                            f"{where}:{key.start_mark.line + 1}: key '{key.value}' appears twice"
                        )
                    seen.add(key.value)
                stack.append(value)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)


def _describe_loc(loc: tuple[Any, ...], data: dict[str, Any]) -> str:
    if len(loc) >= 2 and loc[0] == "statistics" and isinstance(loc[1], int):
        stats = data.get("statistics") or []
        sid = stats[loc[1]].get("id") if loc[1] < len(stats) and isinstance(
            stats[loc[1]], dict) else None
        head = f"statistic '{sid}'" if sid is not None else f"statistics[{loc[1]}]"
        rest = ".".join(str(p) for p in loc[2:] if not _is_union_tag(p))
        return f"{head}" + (f" field '{rest}'" if rest else "")
    return ".".join(str(p) for p in loc if not _is_union_tag(p))


def _is_union_tag(part: Any) -> bool:
    """Parts pydantic adds to a location for union members and validators (not YAML keys)."""
    return str(part) in ("int", "float", "str", "RangeSpec") or str(part).startswith("function-")


def _describe_error(err: Any) -> str:
    if err["type"] == "extra_forbidden":
        return "unknown key (not part of release format version 1)"
    if err["type"] == "string_type" and isinstance(err.get("input"), bool):
        word = "yes" if err["input"] else "no"
        return f"YAML read a bare {word}/true/false as a boolean; quote it, e.g. \"{word}\""
    if err["type"] == "missing":
        return "required key is missing"
    if err["type"] == "value_error" and "error" in err.get("ctx", {}):
        return str(err["ctx"]["error"])
    return str(err["msg"])


@dataclass(frozen=True)
class _Locator:
    """Errors at a key path of the release file, as ``file:line: message``."""

    where: str
    lines: _Lines

    def fail(self, path: tuple[Any, ...], msg: str) -> ReleaseError:
        return ReleaseError(f"{self.where}:{self.lines.line(path)}: {msg}")


def _build(spec: ReleaseSpec, lines: _Lines, where: str, source: Path | None) -> Release:
    at = _Locator(where, lines)
    columns = [_column(name, c, at) for name, c in spec.columns.items()]
    if not columns:
        raise at.fail(("columns",), "a release declares at least one column")
    schema = Schema(table=spec.table, columns=tuple(columns))
    records = _records(spec, at)
    suppression = _suppression(spec, at)
    constraints = _constraints(spec, schema, at)
    statistics = _statistics(spec, schema, suppression, at, source)

    public, refusal = None, None
    if spec.public is not None:
        public, refusal = _public_path(spec.public, source, f"{where}:{lines.line(('public',))}")
    return Release(
        name=spec.name,
        schema=schema,
        statistics=tuple(statistics),
        records=records,
        constraints=tuple(constraints),
        suppression=suppression,
        source=source,
        public=public,
        public_refusal=refusal,
    )


def _column(name: str, c: ColumnSpec, at: _Locator) -> Column:
    """One declared column, its name and bounds checked."""
    loc = ("columns", name)
    try:
        check_identifier(name, "column name")
    except StatreconError as e:
        raise at.fail(loc, str(e)) from None
    if c.type == "categorical":
        _check_categorical(name, c, at)
    else:
        _check_numeric(name, c, at)
    return Column(
        name=name,
        type=ColumnType(c.type),
        min=c.min,
        max=c.max,
        values=tuple(c.values or ()),
        known=c.known,
    )


def _check_categorical(name: str, c: ColumnSpec, at: _Locator) -> None:
    loc = ("columns", name)
    if not c.values:
        raise at.fail(loc, f"column '{name}': categorical columns need 'values'")
    if len(set(c.values)) != len(c.values):
        raise at.fail(loc, f"column '{name}': repeated values")
    if c.min is not None or c.max is not None:
        raise at.fail(loc, f"column '{name}': categorical columns take 'values', not min/max")


def _check_numeric(name: str, c: ColumnSpec, at: _Locator) -> None:
    loc = ("columns", name)
    if c.values is not None:
        raise at.fail(loc, f"column '{name}': 'values' is for categorical columns")
    if not c.known and (c.min is None or c.max is None):
        raise at.fail(loc, f"column '{name}': unknown {c.type} columns need min and max")
    if c.min is not None and c.max is not None and c.min > c.max:
        raise at.fail(loc, f"column '{name}': min {c.min} is above max {c.max}")
    if c.type == "integer" and any(
        v is not None and float(v) != int(v) for v in (c.min, c.max)
    ):
        raise at.fail(loc, f"column '{name}': integer bounds must be whole numbers")


def _records(spec: ReleaseSpec, at: _Locator) -> RecordCount | None:
    """The published number of records (exact or a range), if any."""
    records = None
    if isinstance(spec.records, int):
        if spec.records < 0:
            raise at.fail(("records",), "records must be >= 0")
        records = RecordCount(spec.records, spec.records)
    elif spec.records is not None:
        if spec.records.min > spec.records.max:
            raise at.fail(("records",), "records: min is above max")
        records = RecordCount(spec.records.min, spec.records.max)
    return records


def _suppression(spec: ReleaseSpec, at: _Locator) -> SuppressionRule | None:
    suppression = None
    if spec.suppression is not None:
        if spec.suppression.min_count > spec.suppression.max_count:
            raise at.fail(("suppression",), "suppression: min_count is above max_count")
        suppression = SuppressionRule(spec.suppression.max_count, spec.suppression.min_count)
    return suppression


def _constraints(spec: ReleaseSpec, schema: Schema, at: _Locator) -> list[Constraint]:
    constraints = []
    for i, sql in enumerate(spec.constraints):
        try:
            constraints.append(Constraint(sql, parse_predicate(sql, schema), at.lines.line(
                ("constraints", i))))
        except ReleaseError as e:
            raise at.fail(("constraints", i), f"constraint[{i}] {sql!r}: {e}") from None
    return constraints


@dataclass
class _StatisticReader:
    """Builds statistics from checked fields, YAML or columnar alike: one parser (one parse
    per SQL shape), one set of ids."""

    schema: Schema
    suppression: SuppressionRule | None
    parser: QueryParser
    seen: set[str]

    def build(self, s: StatisticSpec, line: int | None) -> Statistic:
        """One statistic; ReleaseError (without a place: the caller adds it) on any mistake."""
        if s.id in self.seen:
            raise ReleaseError("id used twice")
        self.seen.add(s.id)
        query = self.parser.parse(s.sql)
        statistic = Statistic(s.id, s.sql, query, _answer(s, self.suppression), line)
        _check_answer(statistic, self.schema)
        return statistic


def _statistics(spec: ReleaseSpec, schema: Schema, suppression: SuppressionRule | None,
                at: _Locator, source: Path | None) -> list[Statistic]:
    """Every statistic parsed and its answer checked; ids are unique across the YAML list and
    the ``statistics_file``."""
    reader = _StatisticReader(schema, suppression, QueryParser(schema), set())
    statistics: list[Statistic] = []
    for i, s in enumerate(spec.statistics):
        stat_loc: tuple[str, int] = ("statistics", i)
        try:
            statistics.append(reader.build(s, at.lines.line(stat_loc)))
        except ReleaseError as e:
            raise at.fail(stat_loc, f"statistic '{s.id}': {e}") from None
    if spec.statistics_file is not None:
        path = _statistics_path(spec.statistics_file, source, at)
        statistics.extend(_file_statistics(path, reader))
    return statistics


def _statistics_path(text: str, source: Path | None, at: _Locator) -> Path:
    """The ``statistics_file``, which must lie in the release file's folder (as ``public:``,
    but with no command-line way around it)."""
    where = f"{at.where}:{at.lines.line(('statistics_file',))}"
    target, refusal = _public_path(text, source, where)
    if refusal is not None:
        raise ReleaseError(refusal.replace("public:", "statistics_file:").split("; give")[0])
    if not target.is_file():
        raise ReleaseError(f"{where}: statistics_file: {text[:80]!r}: no such file")
    return target


def _file_statistics(path: Path, reader: _StatisticReader) -> list[Statistic]:
    """The rows of a columnar statistics file, each checked as a YAML statistic is."""
    out: list[Statistic] = []
    for row, fields in read_rows(path):
        try:
            spec = statistic_spec(fields)
        except ValidationError as e:
            err = e.errors()[0]
            loc = [str(p) for p in err["loc"] if not _is_union_tag(p)]
            raise ReleaseError(f"{columnar_where(path, row, loc[0] if loc else None)}: "
                               f"{_describe_error(err)}") from None
        try:
            out.append(reader.build(spec, None))
        except ReleaseError as e:
            raise ReleaseError(f"{columnar_where(path, row)}: statistic '{spec.id}': {e}"
                               ) from None
    return out


def statistic_spec(fields: dict[str, Any]) -> StatisticSpec:
    """``StatisticSpec.model_validate(fields)``; a row of plain text fields (the usual row of a
    statistics file) is checked here by hand with the very validators, anything else (or
    anything that fails a check, for pydantic's own error) goes through pydantic."""
    if _plain_fields(fields):
        return StatisticSpec.model_construct(_fields_set=set(fields), **fields)
    return StatisticSpec.model_validate(fields)


def _plain_fields(fields: dict[str, Any]) -> bool:
    """Text id and sql, text value/error that read as numbers, a noise mapping of positive
    finite float scales: what ``StatisticSpec`` keeps exactly as given."""
    if "id" not in fields or "sql" not in fields:
        return False
    for key, v in fields.items():
        if key in ("id", "sql"):
            if type(v) is not str:
                return False
        elif key in ("value", "error"):
            if type(v) is not str or not _reads_as_number(v):
                return False
        elif key != "noise" or type(v) is not dict or not all(
                type(k) is str and type(scale) is float and math.isfinite(scale) and scale > 0
                for k, scale in v.items()):
            return False
    return True


def _reads_as_number(text: str) -> bool:
    try:
        parse_rational(text)
    except ValueError:
        return False
    return True


def _public_path(text: str, source: Path | None, where: str) -> tuple[Path, str | None]:
    """The release's ``public:`` table, and why it may not be read if it leaves the release
    file's folder.

    A release from a stranger must not make the tool read an arbitrary file of the user's
    (``../../home/me/secrets.csv``, an absolute path, a symbolic link out): a table elsewhere is
    given on the command line with ``--public``, which overrides this key.
    """
    base = (source.parent if source is not None else Path.cwd()).resolve()
    if not text.strip() or "\x00" in text:
        raise ReleaseError(f"{where}: public: an empty or invalid path")
    target = (base / text).resolve()
    if target.is_relative_to(base):
        return target, None
    shown = text if len(text) <= 80 else text[:80] + "..."
    return target, (f"{where}: public: {shown!r} lies outside the release file's folder; give "
                    "the table on the command line instead (--public FILE)")


def _answer(s: StatisticSpec, rule: SuppressionRule | None) -> Answer | None:
    """The published answer a statistic's fields state (shared by YAML and columnar files)."""
    given = s.model_fields_set
    qualifiers = s.error is not None or s.noise is not None or s.decimals is not None
    if s.suppressed:
        if "value" in given or qualifiers:
            raise ReleaseError("a suppressed statistic has no value, error, decimals or noise")
        if rule is None:
            raise ReleaseError("suppressed, but the release has no 'suppression' rule")
        return Suppressed(rule.min_count, rule.max_count)
    if "value" not in given:
        if qualifiers:
            raise ReleaseError("'error'/'decimals'/'noise' given without a 'value'")
        return None
    if s.value is None:
        if qualifiers:
            raise ReleaseError("a null value (empty group) takes no error, decimals or noise")
        return Empty()
    return _valued(s, _number(s.value))


def _valued(s: StatisticSpec, value: Fraction) -> Answer:
    """A published number and how exact it is: exact, within ``error``, rounded to
    ``decimals`` places, or with ``noise``; at most one of the three."""
    stated = [k for k, v in (("error", s.error), ("decimals", s.decimals), ("noise", s.noise))
              if v is not None]
    if len(stated) > 1:
        raise ReleaseError(f"give either 'error' (a bound), 'decimals' (rounding) or 'noise' "
                           f"(a distribution), not {' and '.join(stated)}")
    if s.error is not None:
        error = _number(s.error)
        if error < 0:
            raise ReleaseError(f"error {number_out(error)} must be >= 0")
        return Bounded(value, error)
    if s.decimals is not None:
        try:
            return rounding(value, s.decimals)
        except ValueError as e:
            raise ReleaseError(str(e)) from None
    if s.noise is not None:
        bad = [k for k in s.noise if k not in NOISE_KINDS]
        if bad or len(s.noise) != 1:
            raise ReleaseError(
                f"noise must be one of {{{', '.join(NOISE_KINDS)}}}: <scale>, got {s.noise}"
            )
        return Noisy(value, dict(s.noise))
    return Exact(value)


def _number(v: int | float | str) -> Fraction:
    """A checked published number (validated by StatisticSpec) as an exact rational."""
    return parse_rational(v) if isinstance(v, str) else fraction_of(v)


def _check_answer(stat: Statistic, schema: Schema) -> None:
    """Catch published values that no table could produce (typos), as user errors."""
    ans, agg = stat.answer, stat.query.aggregate
    if ans is None or isinstance(ans, Suppressed | Noisy):
        return
    name = f"{agg.value.upper()}" + (f"({stat.query.column})" if stat.query.column else "")
    if isinstance(ans, Empty):
        if agg in (Aggregate.COUNT, Aggregate.COUNT_DISTINCT, Aggregate.SUM):
            raise ReleaseError(f"{name} is never null; publish 0 for an empty group")
        return
    low, high = (ans.value, ans.value) if isinstance(ans, Exact) else (ans.low, ans.high)
    if agg in (Aggregate.COUNT, Aggregate.COUNT_DISTINCT):
        if high < 0:
            raise ReleaseError(f"{name} = {number_out(ans.value)} is negative")
        if isinstance(ans, Exact) and ans.value.denominator != 1:
            raise ReleaseError(f"{name} = {number_out(ans.value)} is not a whole number")
        return
    if agg is Aggregate.SUM or stat.query.column is None:
        return
    col = schema.column(stat.query.column)
    lo = Fraction(-(10**30)) if col.min is None else fraction_of(col.min)
    hi = Fraction(10**30) if col.max is None else fraction_of(col.max)
    if high < lo or low > hi:
        raise ReleaseError(
            f"{name} = {number_out(ans.value)} lies outside the domain of {col.name} "
            f"({col.domain_text()})"
        )


def answer_fields(answer: Answer | None) -> dict[str, Any]:
    """An answer as the YAML keys of release format version 1."""
    if answer is None:
        return {}
    if isinstance(answer, Suppressed):
        return {"suppressed": True}
    if isinstance(answer, Empty):
        return {"value": None}
    if isinstance(answer, Bounded):
        decimals = rounded_decimals(answer)
        if decimals is not None:  # the same bound, said the way numbers are published
            return {"value": number_text(answer.value), "decimals": decimals}
        return {"value": number_text(answer.value), "error": number_text(answer.error)}
    if isinstance(answer, Noisy):
        return {"value": number_text(answer.value), "noise": answer.distribution}
    return {"value": number_text(answer.value)}


def write_filled_release(
    source: Path,
    out: Path,
    answers: dict[str, Answer],
    suppression: SuppressionRule | None = None,
) -> None:
    """Copy a release file with the given answers filled in (and a suppression rule if set)."""
    data = yaml.load(read_text_file(source), Loader=_YAML_LOADER)
    if data.get("statistics_file"):
        raise ReleaseError(f"{source}: its statistics are in statistics_file "
                           f"{data['statistics_file']!r}; filling in answers is supported for "
                           "statistics listed in the YAML only")
    if suppression is not None:
        rule: dict[str, int] = {"max_count": suppression.max_count}
        if suppression.min_count:
            rule["min_count"] = suppression.min_count
        data["suppression"] = rule
    if data.get("public") and not Path(data["public"]).is_absolute():
        target = (source.parent / data["public"]).resolve()
        try:
            data["public"] = str(target.relative_to(out.resolve().parent))
        except ValueError:
            data["public"] = str(target)
    for entry in data.get("statistics") or []:
        sid = str(entry["id"])
        if sid in answers:
            for key in ("value", "error", "decimals", "noise", "suppressed"):
                entry.pop(key, None)
            entry.update(answer_fields(answers[sid]))
    text = dump_yaml(data)
    write_atomically(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))  # no half file
