"""The front door: ``statrecon.reconstruct(release, public=None, method="auto")``."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from statrecon.engines.exact import ExactOptions, check_model_size, model_size
from statrecon.engines.linear import (
    ESTIMATORS,
    LinearOptions,
    LinearResult,
    compile_system,
    plan,
    reconstruct_linear,
    secret,
)
from statrecon.engines.linear import METHODS as LINEAR_METHODS
from statrecon.engines.linear.problem import UnsuitableMethod
from statrecon.errors import StatreconError
from statrecon.release.files import load_release
from statrecon.release.known import (
    KnownData,
    PublicTable,
    compile_known,
    load_public,
)
from statrecon.release.model import Release
from statrecon.release.statistic import Noisy
from statrecon.result import ReconstructionResult, Route

METHODS = ("auto", "exact", *LINEAR_METHODS)


def reconstruct(
    release: Release | str | Path,
    public: PublicTable | str | Path | None = None,
    method: str = "auto",
    options: ExactOptions | None = None,
    linear: LinearOptions | None = None,
    bounds: tuple[str, str] | None = None,
) -> ReconstructionResult | LinearResult:
    """Find what a release reveals. ``auto`` sends releases linear in one secret column of
    known rows to the linear engine (``determine``: exact determinability plus a least-squares
    estimate), everything else to the exact CP-SAT engine.

    >>> result = reconstruct("examples/block.yaml")      # doctest: +SKIP
    >>> result.status, result.solution_count              # doctest: +SKIP
    ('unique', 1)
    """
    prepare_solver(method, linear)
    if not isinstance(release, Release):
        release = load_release(release)
    if method not in METHODS:
        raise StatreconError(f"unknown method '{method}' (choose from {', '.join(METHODS)})")
    table = resolve_public(release, public, keep=_bound_columns(bounds))
    why = f"--method {method}"
    if method != "exact":
        linear_plan, reason = (plan(release, table) if table is not None
                               else (None, "no public table"))
        if method == "auto":
            method, why = _auto_route(release, table, reason, options)
        if method in LINEAR_METHODS:
            if options is not None and options.noise_mode != "ignore":
                raise StatreconError(f"--noise-mode {options.noise_mode} applies to the exact "
                                     f"engine, not to --method {method}")
            if reason is not None:
                raise StatreconError(f"--method {method}: {reason}")
            assert table is not None
            per_record = _bounds(bounds, table, release) if bounds else None
            opts = linear or LinearOptions()
            system = compile_system(release, table, per_record, max_cells=opts.max_cells,
                                    linear_plan=linear_plan)
            try:
                result = reconstruct_linear(system, replace(opts, method=method))
            except UnsuitableMethod as e:  # the user's choice of method; anything else is a bug
                raise StatreconError(f"--method {method}: {e}") from None
            return replace(result, route=Route("linear", method, why))
        if bounds:
            raise StatreconError("--bounds applies to the linear engine only")
    known = compile_known(release, table)
    missing = [s.where_text for s in release.statistics if s.answer is None]
    if missing:
        raise StatreconError(
            f"{release.source or 'release'}: {missing[0]} has no published value "
            "(fill it with statrecon tabulate)"
        )
    # lazy: OR-Tools (and the pandas it imports) load on the exact route only
    from statrecon.engines.exact import reconstruct_exact

    exact = reconstruct_exact(release, known, options)
    return replace(exact, route=Route("exact", "exact", why))


def prepare_solver(method: str, linear: LinearOptions | None = None) -> None:
    """A time-limited HiGHS solve runs in a worker process; starting it before the release is
    read overlaps its imports with loading and compiling (it is stopped at exit if unused).
    Only for the methods that solve with HiGHS; calling it twice starts one worker."""
    if method in ESTIMATORS and ESTIMATORS[method].highs and (
            linear or LinearOptions()).time_limit is not None:
        # lazy: scipy's solvers load only on the linear route, not with the front door
        from statrecon.engines.linear.solvers import prestart_worker

        prestart_worker()


EXACT_MAX_ROWS = 40


def _auto_route(release: Release, table: PublicTable | None, reason: str | None,
                options: ExactOptions | None = None) -> tuple[str, str]:
    """What ``auto`` runs ("determine" or "exact") and why, in words (``route.reason``), with
    the estimated size of the route taken; ``reason`` is why the release is not linear (None:
    it is). The exact route's model size is checked here, before anything is built, so a
    release that fits neither route gets one error naming both reasons."""
    options = options or ExactOptions()
    if options.noise_mode != "ignore":
        return "exact", (f"auto: noisy answers read with --noise-mode {options.noise_mode}, "
                         "which only the exact engine does; "
                         f"{_exact_size(release, table, options, reason)}")
    if reason is not None:
        return "exact", (f"auto: not linear in one secret column ({reason}), so the exact "
                         f"engine; {_exact_size(release, table, options, reason)}")
    if _exact_is_stronger(release, table):
        return "exact", (f"auto: a discrete secret over at most {EXACT_MAX_ROWS} known rows, "
                         "where CP-SAT also uses the domain and enumerates every dataset; "
                         f"{_exact_size(release, table, options, None)}")
    assert table is not None  # linear_plan says "no public table" otherwise
    return "determine", ("auto: every statistic is linear in one secret column of the public "
                         "table's rows, so exact determinability plus a least-squares estimate; "
                         f"{len(release.statistics):,} statistics x {table.rows:,} public rows")


def _exact_size(release: Release, table: PublicTable | None, options: ExactOptions,
                linear_refusal: str | None) -> str:
    """The exact model's estimated size and search space, in words, before it is built; a
    model over ``max_model_size`` is refused here with the linear route's refusal too."""
    known = KnownData(public=table, snippets={})  # the size needs only the row count
    try:
        check_model_size(release, known, options.max_model_size, options.noise)
    except StatreconError as e:
        if linear_refusal is None:
            raise
        raise StatreconError(f"{e}. The linear engine cannot take it either: "
                             f"{linear_refusal}") from None
    size = model_size(release, known, options.noise)
    limit = ("no time limit" if options.time_limit is None
             else f"time limit {options.time_limit:g} s")
    return (f"model estimated at {size.terms:,} terms over up to {size.rows:,} rows, "
            f"{_search_space(release, size.rows)}; {limit}")


def _search_space(release: Release, rows: int) -> str:
    """How many datasets the search ranges over (values of the unknown cells), in words:
    why a small model can still take CP-SAT a long time."""
    digits = 0.0
    for column in release.schema.unknown:
        if column.is_categorical:
            digits += math.log10(max(len(column.values), 1))
        elif column.type.value == "real":
            return "a real-valued unknown (a continuum of datasets)"
        elif column.min is not None and column.max is not None:
            digits += math.log10(float(column.max) - float(column.min) + 1)
    digits *= rows
    if digits < 6:
        return f"a search space of at most {round(10 ** digits):,} datasets"
    return f"a search space of at most 10^{digits:.0f} datasets"


def _exact_is_stronger(release: Release, table: PublicTable | None) -> bool:
    """A discrete secret over few rows: CP-SAT also uses the domain (two 0/1 secrets summing
    to 2 are both 1, which linear algebra alone cannot prove) and enumerates every dataset, so
    ``auto`` prefers it there; real secrets and larger tables go to the linear engine."""
    column = secret(release)
    return (table is not None and table.rows <= EXACT_MAX_ROWS and column.type != "real"
            and not any(isinstance(s.answer, Noisy) for s in release.statistics))


def resolve_public(release: Release, public: PublicTable | str | Path | None,
                   keep: tuple[str, ...] = ()) -> PublicTable | None:
    """The public table given explicitly, else the one the release file names, else none;
    ``keep``: other columns of the file to keep (read once)."""
    if isinstance(public, PublicTable):
        return public
    if public is not None:
        return load_public(Path(public), release.schema, keep)
    if release.public is None:
        return None
    if release.public_refusal is not None:
        raise StatreconError(release.public_refusal)
    return load_public(release.public, release.schema, keep)


def _bound_columns(spec: tuple[str, str] | None) -> tuple[str, ...]:
    """The public-table columns ``--bounds`` names (the sides that are not numbers)."""
    out = []
    for side in spec or ():
        try:
            float(side.strip())
        except ValueError:
            out.append(side.strip())
    return tuple(out)


def _bounds(spec: tuple[str, str], table: PublicTable, release: Release
            ) -> tuple[np.ndarray, np.ndarray]:
    """``--bounds lower,upper``: numbers for every record, or columns of the public table."""
    out = []
    for side in spec:
        text = side.strip()
        try:
            out.append(np.full(table.rows, float(text)))
            continue
        except ValueError:
            pass
        if text not in table.others:
            has = ", ".join([*table.columns, *table.others]) or "no columns"
            raise StatreconError(f"--bounds: '{text}' is neither a number nor a column of "
                                 f"{table.source} (has: {has})")
        try:
            values = np.array([np.nan if v is None else v for v in table.others[text]],
                              dtype=float)
        except (TypeError, ValueError):
            raise StatreconError(f"--bounds: column '{text}' of {table.source} is not "
                                 "numeric") from None
        if np.isnan(values).any():
            row = int(np.flatnonzero(np.isnan(values))[0]) + 2
            raise StatreconError(f"{table.source}:{row}: column '{text}' is empty")
        out.append(values)
    return out[0], out[1]
