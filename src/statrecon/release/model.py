"""The validated release: what was published plus what an attacker knows anyway."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from statrecon.release.predicate import Predicate
from statrecon.release.schema import Schema
from statrecon.release.statistic import Statistic


@dataclass(frozen=True)
class RecordCount:
    """The number of rows, exactly (min == max) or as a range."""

    min: int
    max: int


@dataclass(frozen=True)
class SuppressionRule:
    """What a suppressed cell means: its COUNT lies in [min_count, max_count]."""

    max_count: int
    min_count: int = 0


@dataclass(frozen=True)
class Constraint:
    """Background knowledge: a SQL boolean expression true for every row."""

    sql: str
    predicate: Predicate
    line: int | None = None

    def label(self, index: int) -> str:
        return f"constraint[{index}]"


@dataclass(frozen=True)
class Release:
    name: str
    schema: Schema
    statistics: tuple[Statistic, ...]
    records: RecordCount | None = None
    constraints: tuple[Constraint, ...] = ()
    suppression: SuppressionRule | None = None
    source: Path | None = None  # the file it was read from, for messages
    public: Path | None = None  # public table with the known columns, if the file names one
    # Why ``public`` may not be read (it leaves the release's folder): only an explicit
    # --public on the command line gets past it. None when the path is fine.
    public_refusal: str | None = None

    def statistic(self, stat_id: str) -> Statistic:
        for s in self.statistics:
            if s.id == stat_id:
                return s
        raise KeyError(stat_id)

    def with_statistics(self, statistics: tuple[Statistic, ...]) -> Release:
        return replace(self, statistics=statistics)
