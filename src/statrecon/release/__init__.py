"""What was published: schema, statistics, answers, background knowledge."""

from statrecon.release.files import load_release, parse_release
from statrecon.release.model import Constraint, RecordCount, Release, SuppressionRule
from statrecon.release.schema import Column, ColumnType, Schema
from statrecon.release.statistic import (
    Aggregate,
    Answer,
    Bounded,
    Empty,
    Exact,
    Noisy,
    Query,
    Statistic,
    Suppressed,
)

__all__ = [
    "Aggregate", "Answer", "Bounded", "Column", "ColumnType", "Constraint", "Empty", "Exact",
    "Noisy", "Query", "RecordCount", "Release", "Schema", "Statistic", "Suppressed",
    "SuppressionRule", "load_release", "parse_release",
]
