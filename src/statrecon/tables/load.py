"""The tables a user names, read: a tau-Argus batch file (``.arb``) or table (``.tab`` with
its ``.rda``), a CSV/Parquet file of one row per cell, microdata with primary suppression
rules, or microdata with a table spec. ``tables.load(TableSource(...))`` is the one entry:
the CLI parses its options into a :class:`TableSource` and calls it, and so can any caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Literal

from statrecon.errors import StatreconError
from statrecon.tables.model import Table, TableSet

FRAME_SUFFIXES = (".csv", ".parquet", ".pq", ".tsv")
TOTAL = "Total"  # a cell file that lists rows with this code gives its margins


@dataclass(frozen=True)
class MicrodataRules:
    """Primary suppression of tabulated microdata: a cell with 1..``max_n`` contributors,
    the p%-rule with ``p_percent``, the (n, k)-dominance rule ``nk``, zeros
    (``protect_zeros``); protection levels as fractions of the cell's value (``protection``
    both sides, ``sliding`` the least width)."""

    max_n: int | None = None
    p_percent: float | None = None
    nk: tuple[int, int] | None = None
    protect_zeros: bool = False
    protection: float = 0.0
    sliding: float = 0.0

    def __post_init__(self) -> None:
        if self.max_n is not None and self.max_n < 1:
            raise StatreconError(f"--max-n {self.max_n}: must be at least 1")
        if self.nk is not None and (len(self.nk) != 2 or min(self.nk) < 0):
            raise StatreconError(f"--nk {self.nk}: expected N,K (e.g. 2,85)")
        if self.protection < 0 or self.sliding < 0:
            raise StatreconError("protection levels must be >= 0")

    @property
    def given(self) -> list[str]:
        """The options set, as the CLI names them."""
        return [name for name, v in (("--max-n", self.max_n), ("--p-percent", self.p_percent),
                                     ("--nk", self.nk), ("--protect-zeros", self.protect_zeros),
                                     ("--protection", self.protection),
                                     ("--sliding-protection", self.sliding)) if v]


def parse_nk(text: str | None) -> tuple[int, int] | None:
    """``--nk N,K`` as a pair, or None."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise StatreconError(f"--nk {text!r}: expected N,K (e.g. 2,85)")
    return int(parts[0]), int(parts[1])


@dataclass(frozen=True)
class TableSource:
    """What names the tables: ``path`` (an ``.arb``, a ``.tab`` with ``rda`` or the ``.rda``
    beside it, or a CSV/Parquet file); for a cell file its ``dimensions``, ``value``,
    ``status`` and ``frequency`` columns; ``microdata`` (records, tabulated by ``rules``) or
    a ``spec`` file (which says everything about them); ``recompute`` (tau-Argus's
    ``<READTABLE> 1``: totals recomputed; None: as the batch file says)."""

    path: Path
    rda: Path | None = None
    recompute: bool | None = None
    dimensions: tuple[str, ...] = ()
    value: str | None = None
    status: str | None = None
    frequency: str | None = None
    microdata: bool = False
    spec: Path | None = None
    rules: MicrodataRules = MicrodataRules()
    manual_margin: Fraction | None = None  # tau-Argus input: MAN(x) as x / 100 (None: the
    # batch file's <SAFETYRULE> MAN, else 20 %)

    def __post_init__(self) -> None:
        if self.manual_margin is not None and not 0 <= self.manual_margin < 1:
            raise StatreconError(f"--manual-margin {self.manual_margin * 100}: a percentage "
                                 "from 0 to below 100")

    def files(self) -> tuple[tuple[str, Path | None], ...]:
        """The files named here, as (what, path): an output may be none of them."""
        return (("source", self.path), ("--rda", self.rda), ("--spec", self.spec))


def load(source: TableSource) -> TableSet:
    """The tables ``source`` names, read and checked (every mistake a one-line error)."""
    if source.spec is not None:
        return _from_spec(source)
    suffix = source.path.suffix.lower()
    additivity: Literal["check", "recompute"] | None = (
        None if source.recompute is None else ("recompute" if source.recompute else "check"))
    if suffix == ".arb":
        # lazy: each format's reader loads only when its files are read
        from statrecon.tables.job import job_tables, link, opens_microdata, read_job
        from statrecon.tables.tauargus import read_arb

        if opens_microdata(source.path):  # a microdata job: its tables before <SUPPRESS>
            return link(job_tables(read_job(source.path)))

        return read_arb(source.path, additivity=additivity, manual_margin=source.manual_margin)
    if suffix == ".tab":
        # lazy: as above
        from statrecon.tables.tauargus import MANUAL_MARGIN, read_tab

        margin = MANUAL_MARGIN if source.manual_margin is None else source.manual_margin
        return TableSet((read_tab(source.path, source.rda, additivity=additivity or "check",
                                  manual_margin=margin),))
    if suffix not in FRAME_SUFFIXES:
        raise StatreconError(f"{source.path}: expected a tau-Argus .arb or .tab file, or a "
                             "CSV/Parquet table (one row per cell, or microdata with "
                             "--microdata)")
    if not source.dimensions:
        raise StatreconError(f"{source.path}: give the explanatory variables with "
                             "--dimensions a,b,...")
    if source.microdata:
        return TableSet((_from_microdata(source),))
    return TableSet((_from_cells(source),))


def _from_cells(source: TableSource) -> Table:
    # lazy: pandas loads only when a cell file is read
    from statrecon.tables.frames import load_frame, table_from_frame

    if source.value is None:
        raise StatreconError(f"{source.path}: give the column of cell values with --value")
    frame = load_frame(source.path, "table file")
    dims = list(source.dimensions)
    # a frame that lists total rows gives the published margins; else they are computed
    margins: Literal["given", "compute"] = (
        "given" if any((frame[d] == TOTAL).any() for d in dims if d in frame) else "compute")

    def column(name: str) -> str | None:  # written by `tables protect`: read back, not ignored
        return name if name in frame.columns else None

    return table_from_frame(frame, dims, source.value, status=source.status,
                            frequency=source.frequency, margins=margins,
                            name=source.path.stem, source=str(source.path),
                            lower=column("lower"), upper=column("upper"),
                            sliding=column("sliding"), cost=column("cost"))


def _from_microdata(source: TableSource) -> Table:
    # lazy: pandas and the rules load only when microdata are tabulated
    from statrecon.tables.frames import load_frame
    from statrecon.tables.rules import (
        Dominance,
        MinFrequency,
        PPercent,
        Protection,
        TableSpec,
        table_from_microdata,
    )

    rules = source.rules
    chosen: list[MinFrequency | PPercent | Dominance] = []
    if rules.max_n is not None:
        chosen.append(MinFrequency(rules.max_n))
    if rules.p_percent is not None:
        chosen.append(PPercent(str(rules.p_percent)))  # the decimal the user typed
    if rules.nk is not None:
        chosen.append(Dominance(*rules.nk))
    if not chosen and not rules.protect_zeros:
        raise StatreconError("--microdata: give a primary suppression rule (--max-n, "
                             "--p-percent, --nk or --protect-zeros)")
    frame = load_frame(source.path, "microdata file")
    spec = TableSpec(variables=list(source.dimensions), response=source.value,
                     name=source.path.stem)
    protection = Protection(str(rules.protection), str(rules.protection),
                            sliding=str(rules.sliding))
    return table_from_microdata(frame, spec, chosen, protect_zeros=rules.protect_zeros,
                                protection=protection, source=str(source.path))


def _from_spec(source: TableSource) -> TableSet:
    """The table a spec file (``tables/spec.py``) makes of the microdata ``source``."""
    # lazy: pandas and the spec reader load only when a spec is read
    from statrecon.tables.frames import load_frame
    from statrecon.tables.spec import read_spec

    given = [name for name, v in (("--dimensions", source.dimensions), ("--value", source.value),
                                  ("--status", source.status),
                                  ("--frequency", source.frequency)) if v]
    given += source.rules.given
    if given:
        raise StatreconError(f"--spec {source.spec}: the spec file says what to tabulate; "
                             f"leave out {', '.join(given)}")
    if source.path.suffix.lower() not in FRAME_SUFFIXES:
        raise StatreconError(f"{source.path}: with --spec, give the microdata as a CSV or "
                             "Parquet file")
    assert source.spec is not None
    spec = read_spec(source.spec)
    return TableSet((spec.tabulate(load_frame(source.path, "microdata file"),
                                   str(source.path)),))
