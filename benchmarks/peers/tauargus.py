"""tau-Argus as a peer: its secondary suppression and its audit, through ``pytauargus``.

``pytauargus`` (PyPI, EUPL-1.2) is the headless tau-Argus engine with HiGHS inside. This module
drives it on a tau-Argus table (``.tab`` + ``.rda``, hierarchies in ``.hrc``) so that its
patterns and its "realized" feasibility intervals can be set beside statrecon's, cell by cell.

What the engine offers (pytauargus 0.6): secondary suppression ``MOD`` (modular, HiTaS) and
``OPT`` (optimal, Fischetti-Salazar) on HiGHS; ``GH`` (hypercube), ``NET`` and ``CTA`` are
rejected by the headless engine ("require external executables"). Its audit is the port of
``intervalle.exe``: an LP per suppressed cell over the table's additivity equations, every
cell bounded a priori by the smallest and the largest cell value of the table.

Everything here is importable without pytauargus; a function that needs it says so with one
line (``PeerUnavailable``). Cells come back in the engine's own order (row-major over each
variable's codes, totals first, the order of the JJ file and of the audit's ``cell`` index);
codes are stripped of tau-Argus's padding (``" 1"`` becomes ``"1"``), a total is its TOTCODE.
Each run changes the working directory and ``tempfile.tempdir`` while it lasts (the solvers
write files there): one run at a time per process, as pytauargus itself asks.

    .venv/bin/python -c "from benchmarks.peers import tauargus as t; \\
        print(t.suppress(t.TauTable.from_arb('examples/tables/tauargus/TestTable.arb')).cells)"
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

# tau-Argus status letters (intermediate format) -> statrecon's CellStatus values
STATUS_NAMES = {"S": "safe", "U": "primary", "M": "secondary", "E": "empty", "P": "protected"}
# native status numbers (pytauargus.engine CS_*) -> letters, as pytauargus's own writer maps them
_SAFE, _SAFE_MANUAL, _PROTECT, _SECONDARY, _SECONDARY_MANUAL = 1, 2, 10, 11, 12
_EMPTY_NONSTRUCT, _EMPTY = 13, 14
METHODS = ("MOD", "OPT")          # what the headless engine runs
REJECTED = ("GH", "NET", "CTA")   # what it refuses (needs the legacy executables)
DEFAULT_COMMANDS = {"MOD": "MOD(1,5,1,0,0)", "OPT": "OPT(1,5)"}
_ADDITIVITY = {0: "check", 1: "recompute totals", 2: "not required"}


class PeerUnavailable(RuntimeError):
    """pytauargus is not installed (or cannot load its native engine)."""


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    """A temporary directory that is both the working directory and ``tempfile``'s directory
    for one engine run: the native solvers write their logs (``CSPlogfile.txt``,
    ``HiTaS.log``, ``sdc.lp``, ...) into the current directory, and MOD writes four
    ``<tmpdir>Hitastab.txt``-like files beside pytauargus's own temporary directory (a path
    joined without a separator), which would otherwise stay behind in /tmp."""
    before, before_tmp = Path.cwd(), tempfile.tempdir
    with tempfile.TemporaryDirectory(prefix="tauargus_peer_") as tmp:
        os.chdir(tmp)
        tempfile.tempdir = tmp
        try:
            yield Path(tmp)
        finally:
            tempfile.tempdir = before_tmp
            os.chdir(before)


def _logs(directory: Path) -> dict[str, str]:
    """The solvers' log files left in ``directory`` (name -> text)."""
    return {p.name: p.read_text(errors="replace") for p in sorted(directory.iterdir())
            if p.name in ("CSPlogfile.txt", "FullJJ.log", "HiTaS.log") and p.is_file()}


def _engine_module() -> Any:
    """pytauargus's engine module, or a one-line reason why not."""
    try:
        from pytauargus import engine  # lazy: an optional peer, absent from the base install
    except ImportError as exc:
        raise PeerUnavailable(
            f"pytauargus is not available ({exc}); install it with "
            f"`.venv/bin/pip install pytauargus`") from exc
    return engine


def _batch_module() -> Any:
    _engine_module()
    from pytauargus import batch  # lazy: as above
    return batch


@dataclass(frozen=True)
class TauTable:
    """A tau-Argus table input: data, metadata and the table's specification.

    ``tab`` is the data file: a ``.tab`` table or, with ``microdata``, a fixed-width ``.asc``
    (see ``from_microdata``). ``additivity`` is the ``<READTABLE>`` mode: 0 checks that the
    file adds up (and fails if not), 1 recomputes every total from the bottom cells (what
    ``TestTable.arb`` does: pp.tab does not add up as given), 2 skips the check.
    ``safety_rules`` are ``<SAFETYRULE>`` strings (e.g. ``"FREQ(3,30)"``, several joined by
    ``|``); none means the statuses in the file are used.
    """

    tab: Path
    rda: Path
    explanatory: tuple[str, ...]
    response: str
    shadow: str = ""
    cost: str = ""
    additivity: int = 1
    safety_rules: tuple[str, ...] = ()
    microdata: bool = False

    @classmethod
    def from_microdata(cls, micro: Any, explanatory: Sequence[str], response: str,
                       safety_rules: str, workdir: str | Path, **options: Any) -> TauTable:
        """A table tau-Argus builds from microdata (a DataFrame, one row per contributor):
        pytauargus writes the ``.asc``/``.rda`` into ``workdir`` (``options`` go to its
        ``protect``, e.g. ``hrc={"Region": "region.hrc"}``, ``decimals=2``)."""
        _engine_module()
        from pytauargus import protect  # lazy: as _engine_module

        written = protect(micro, list(explanatory), response=response,
                          safety_rules=safety_rules, workdir=str(workdir), run=False,
                          **options)
        return cls(tab=Path(written.files["asc"]), rda=Path(written.files["rda"]),
                   explanatory=tuple(explanatory), response=response,
                   safety_rules=(safety_rules,) if safety_rules else (), microdata=True)

    @classmethod
    def from_arb(cls, arb: str | Path) -> TauTable:
        """The first table of a batch file (paths resolved beside it)."""
        batch = _batch_module()
        arb = Path(arb)
        commands = batch.parse_batch(arb)
        found: dict[str, Any] = {}
        rules: list[str] = []
        for cmd in commands:
            kind = type(cmd).__name__
            if kind in ("OpenTableData", "OpenMetadata"):
                found[kind] = (arb.parent / cmd.file).resolve()
            elif kind == "SpecifyTable" and "spec" not in found:
                found["spec"] = cmd
            elif kind == "SafetyRule":
                rules.append(f"{cmd.kind}({','.join(cmd.args)})")
            elif kind == "ReadTable":
                found["additivity"] = cmd.additivity
        missing = [k for k in ("OpenTableData", "OpenMetadata", "spec") if k not in found]
        if missing:
            raise ValueError(f"{arb}: no {', '.join(missing)} in the batch (not a table batch)")
        spec = found["spec"]
        return cls(tab=found["OpenTableData"], rda=found["OpenMetadata"],
                   explanatory=tuple(spec.exp_vars), response=spec.resp_var,
                   shadow=spec.shadow_var, cost=spec.cost_var,
                   additivity=found.get("additivity", 0), safety_rules=tuple(rules))

    def batch_text(self, suppress: str | None = None) -> str:
        """The ``.arb`` text that reads this table (and suppresses it when asked)."""
        quoted = "".join(f'"{v}"' for v in self.explanatory)
        opening = "<OPENMICRODATA>" if self.microdata else "<OPENTABLEDATA>"
        lines = [f'{opening} "{Path(self.tab).resolve()}"',
                 f'<OPENMETADATA> "{Path(self.rda).resolve()}"',
                 f'<SPECIFYTABLE> {quoted}|"{self.response}"|"{self.shadow}"|"{self.cost}"']
        lines += [f"<SAFETYRULE> {rule}" for rule in self.safety_rules]
        lines.append("<READMICRODATA>" if self.microdata else f"<READTABLE> {self.additivity}")
        if suppress:
            lines.append(f"<SUPPRESS> {suppress}")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class SuppressResult:
    """A table after tau-Argus's secondary suppression.

    ``cells``: one row per cell (see ``read``); ``seconds``: the suppression alone; the
    optimality of an ``OPT`` pattern is not returned by the engine; ``logs`` holds the
    solvers' log files (``CSPlogfile.txt`` for OPT says what the branch-and-cut ended with).
    """

    method: str
    command: str
    cells: pd.DataFrame
    seconds: float
    read_seconds: float
    primary_before: int
    logs: dict[str, str] = field(default_factory=dict, repr=False)
    secondary: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "secondary", int((self.cells["status"] == "M").sum()))

    @property
    def solver_end(self) -> str | None:
        """OPT's last log line, e.g. ``END: SDC optimal solution = 643 with 15 suppressions``
        (optimal only when it says so; None for MOD)."""
        for line in self.logs.get("CSPlogfile.txt", "").splitlines():
            if line.strip().startswith("END:"):
                return line.strip()
        return None


@dataclass(frozen=True)
class AuditResult:
    """tau-Argus's audit: per suppressed cell, its realized interval.

    ``apriori`` is the box every cell lies in for the audit's LP: (smallest, largest) cell
    value of the table, as the engine computes it.
    """

    method: str | None
    cells: pd.DataFrame
    seconds: float
    suppress_seconds: float
    apriori: tuple[float, float]
    suppression: SuppressResult | None = None


def _code_lists(tau: Any, meta: Any, var_indices: Sequence[int]) -> list[list[tuple[str, int]]]:
    """Each variable's active codes (stripped) with their hierarchy level, engine order."""
    out = []
    for vi in var_indices:
        var = meta.variables[vi]
        total = var.tot_code or "Total"
        _n_codes, n_active = tau.get_var_number_of_codes(vi)
        codes = []
        for ci in range(n_active):
            ok, _ctype, code, _missing, level = tau.get_var_code(vi, ci)
            codes.append(((code.strip() if ok and code.strip() else total), int(level)))
        out.append(codes)
    return out


def _letter(status: int) -> str:
    if status in (_EMPTY_NONSTRUCT, _EMPTY):
        return "E"
    if status in (_SAFE, _SAFE_MANUAL):
        return "S"
    if 3 <= status <= 9:
        return "U"
    if status == _PROTECT:
        return "P"
    if status in (_SECONDARY, _SECONDARY_MANUAL):
        return "M"
    return "?"


def _cells(engine: Any, tab: int = 0) -> pd.DataFrame:
    """Every cell of table ``tab`` as the engine holds it (exact doubles, not rounded text).

    pytauargus has no public cell accessor; ``Engine._tau`` is its native ``TauArgus`` object
    (``get_table_cell`` is what its own intermediate writer reads).
    """
    tau, meta = engine._tau, engine.metadata
    spec, _rules = engine._tables[tab]
    var_indices = [meta.index_of(n) for n in spec.exp_vars]
    codes = _code_lists(tau, meta, var_indices)
    rows = []
    for cell, combo in enumerate(itertools.product(*[range(len(c)) for c in codes])):
        got = tau.get_table_cell(tab, list(combo), 0)
        (_ok, resp, _rresp, _cta, _ckm, shadow, cost, _key, _key_nz, freq, status,
         *_rest) = got[:13]
        lower, upper, rlower, rupper = got[-4:]
        row: dict[str, Any] = {"cell": cell}
        for name, per_var, i in zip(spec.exp_vars, codes, combo, strict=True):
            row[name] = per_var[i][0]
        letter = _letter(int(status))
        row.update(value=float(resp), freq=int(freq), shadow=float(shadow), cost=float(cost),
                   status=letter, status_name=STATUS_NAMES.get(letter, "unknown"),
                   native_status=int(status), protection_lower=float(lower),
                   protection_upper=float(upper), realized_lower=float(rlower),
                   realized_upper=float(rupper))
        rows.append(row)
    return pd.DataFrame(rows)


def _trees(engine: Any, explanatory: Sequence[str]) -> dict[str, dict[str, tuple[str, ...]]]:
    meta = engine.metadata
    var_indices = [meta.index_of(n) for n in explanatory]
    trees = {}
    for name, codes in zip(explanatory, _code_lists(engine._tau, meta, var_indices),
                           strict=True):
        children: dict[str, list[str]] = {}
        stack: list[tuple[str, int]] = []
        for code, level in codes:
            while stack and stack[-1][1] >= level:
                stack.pop()
            if stack:
                children.setdefault(stack[-1][0], []).append(code)
            stack.append((code, level))
        trees[name] = {p: tuple(c) for p, c in children.items()}
    return trees


def hierarchies(table: TauTable) -> dict[str, dict[str, tuple[str, ...]]]:
    """Each explanatory variable's tree as tau-Argus built it: parent code -> children.

    Read from the engine's code list (codes depth-first with their levels), so it shows what
    tau-Argus adds up, e.g. a missing code (``99``) hung under the total.
    """
    with _scratch() as tmp:
        engine, _seconds = _read(table, tmp)
        return _trees(engine, table.explanatory)


def _read(table: TauTable, tmp: Path) -> tuple[Any, float]:
    engine_mod = _engine_module()
    arb = tmp / "read.arb"
    arb.write_text(table.batch_text())
    engine = engine_mod.Engine()
    start = time.perf_counter()
    try:
        engine.run_batch(arb)
    except engine_mod.BatchError as exc:
        mode = _ADDITIVITY.get(table.additivity, table.additivity)
        raise ValueError(f"{table.tab}: tau-Argus could not read the table "
                         f"(READTABLE {table.additivity}, {mode}): {exc}") from exc
    return engine, time.perf_counter() - start


def read(table: TauTable) -> pd.DataFrame:
    """The table as tau-Argus reads it, before any suppression (totals recomputed when
    ``additivity == 1``): the input to hand statrecon for a like-for-like comparison."""
    with _scratch() as tmp:
        engine, _seconds = _read(table, tmp)
        return _cells(engine)


def _suppress_command(table: TauTable, method: str, tmp: Path) -> tuple[str, Any]:
    """``MOD``/``OPT`` with tau-Argus's usual defaults, or a full ``MOD(1,...)`` string,
    parsed by pytauargus's own batch grammar."""
    batch = _batch_module()
    command = DEFAULT_COMMANDS.get(method.upper(), method)
    kind = command.split("(", 1)[0].strip().upper()
    if kind in REJECTED:
        raise ValueError(f"{kind}: pytauargus's headless engine does not run this method "
                         f"(only {', '.join(METHODS)})")
    if kind not in METHODS:
        raise ValueError(f"{method!r}: not a suppression method ({', '.join(METHODS)})")
    arb = tmp / "suppress.arb"
    arb.write_text(table.batch_text(command))
    parsed = [c for c in batch.parse_batch(arb) if type(c).__name__ == "Suppress"]
    return command, parsed[0]


def _suppressed(table: TauTable, method: str, tmp: Path) -> tuple[Any, SuppressResult]:
    command, cmd = _suppress_command(table, method, tmp)
    engine, read_seconds = _read(table, tmp)
    before = _cells(engine)
    start = time.perf_counter()
    if (before["status"] == "U").any():
        # pytauargus 0.6.0 crashes (SIGSEGV in AHiTaS) when MOD meets no primary cell
        engine.suppress(cmd)
    seconds = time.perf_counter() - start
    result = SuppressResult(method=cmd.kind, command=command, cells=_cells(engine),
                            seconds=seconds, read_seconds=read_seconds,
                            primary_before=int((before["status"] == "U").sum()),
                            logs=_logs(tmp))
    return engine, result


def suppress(table: TauTable, method: str = "MOD") -> SuppressResult:
    """Read the table and run tau-Argus's secondary suppression (``"MOD"``, ``"OPT"`` or a
    batch command such as ``"MOD(1,5,1,0,0)"``); every cell with its status after it."""
    with _scratch() as tmp:
        return _suppressed(table, method, tmp)[1]


def _audited(engine: Any) -> tuple[pd.DataFrame, float, tuple[float, float]]:
    cells = _cells(engine)
    finite = cells["value"].dropna()
    apriori = (float(finite.min()), float(finite.max()))
    start = time.perf_counter()
    rows = engine.audit(0)
    seconds = time.perf_counter() - start
    found = pd.DataFrame(rows, columns=["cell", "min", "max", "value", "status", "unsafe"])
    merged = cells.drop(columns=["realized_lower", "realized_upper"]).merge(
        found[["cell", "min", "max", "unsafe"]].rename(
            columns={"min": "realized_lower", "max": "realized_upper",
                     "unsafe": "tau_unsafe"}), on="cell", how="inner")
    merged["width"] = merged["realized_upper"] - merged["realized_lower"]
    merged["protected"] = ((merged["realized_lower"] <= merged["value"]
                            - merged["protection_lower"])
                           & (merged["realized_upper"] >= merged["value"]
                              + merged["protection_upper"]))
    merged["tau_unsafe"] = merged["tau_unsafe"].astype(bool)
    return merged, seconds, apriori


def audit(table: TauTable, method: str | None = "MOD") -> AuditResult:
    """tau-Argus's audit of the table after ``method`` (``None``: the statuses as read, i.e.
    the primary cells alone): per suppressed cell its realized lower/upper bound, its
    protection levels, and whether the interval covers value - lower .. value + upper."""
    with _scratch() as tmp:
        if method is None:
            engine, _seconds = _read(table, tmp)
            suppressed = None
        else:
            engine, suppressed = _suppressed(table, method, tmp)
        cells, seconds, apriori = _audited(engine)
    return AuditResult(method=None if suppressed is None else suppressed.method,
                       cells=cells, seconds=seconds,
                       suppress_seconds=0.0 if suppressed is None else suppressed.seconds,
                       apriori=apriori, suppression=suppressed)


def additivity(cells: pd.DataFrame, trees: dict[str, dict[str, tuple[str, ...]]],
               explanatory: Sequence[str]) -> tuple[Any, list[str]]:
    """The table's equations from its hierarchies (parent - sum of children = 0, for every
    combination of the other variables' codes), as a sparse matrix over ``cells`` rows."""
    import scipy.sparse as sp  # lazy: only the reference LP needs scipy

    where = {tuple(row): i for i, row in enumerate(
        cells[list(explanatory)].itertuples(index=False, name=None))}
    codes = {v: list(dict.fromkeys(cells[v])) for v in explanatory}
    data: list[float] = []
    rows: list[int] = []
    cols: list[int] = []
    names: list[str] = []
    for pos, var in enumerate(explanatory):
        others = [codes[v] for v in explanatory if v != var]
        for parent, kids in trees[var].items():
            for rest in itertools.product(*others):
                def key(code: str, rest: tuple[str, ...] = rest, pos: int = pos) -> tuple:
                    return (*rest[:pos], code, *rest[pos:])
                r = len(names)
                for code, sign in [(parent, 1.0)] + [(k, -1.0) for k in kids]:
                    rows.append(r)
                    cols.append(where[key(code)])
                    data.append(sign)
                names.append(f"{var} {parent} = {' + '.join(kids)} ({rest})")
    matrix = sp.csr_matrix((data, (rows, cols)), shape=(len(names), len(cells)))
    return matrix, names


def reference_lp(cells: pd.DataFrame, trees: dict[str, dict[str, tuple[str, ...]]],
                 explanatory: Sequence[str], apriori: tuple[float, float]) -> pd.DataFrame:
    """The LP tau-Argus's audit is meant to solve, by scipy's HiGHS: each suppressed cell's
    min and max over completions that keep the published cells, add up, and lie in
    ``apriori``. A float reference for the peer's figures, not a proof."""
    import numpy as np  # lazy: as above
    from scipy.optimize import linprog  # lazy: as above

    matrix, _names = additivity(cells, trees, explanatory)
    hidden = cells["status"].isin(["U", "M"]).to_numpy()
    values = cells["value"].to_numpy(dtype=float)
    bounds = [apriori if h else (v, v) for v, h in zip(values, hidden, strict=True)]
    zero = np.zeros(matrix.shape[0])
    out = []
    for i in np.flatnonzero(hidden):
        c = np.zeros(len(values))
        c[i] = 1.0
        low = linprog(c, A_eq=matrix, b_eq=zero, bounds=bounds, method="highs")
        high = linprog(-c, A_eq=matrix, b_eq=zero, bounds=bounds, method="highs")
        if low.status != 0 or high.status != 0:
            raise RuntimeError(f"reference LP for cell {i}: {low.message} / {high.message}")
        out.append({"cell": int(cells["cell"].iloc[i]), "lp_lower": float(low.fun),
                    "lp_upper": float(-high.fun)})
    return pd.DataFrame(out)


def available() -> bool:
    """Whether pytauargus can be imported here (its native engine loads)."""
    try:
        _engine_module()
    except PeerUnavailable:
        return False
    return True
