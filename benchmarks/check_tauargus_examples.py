"""tau-Argus's own examples run through statrecon as written, read from snapshots of their
repositories at run time (nothing of them is in statrecon's repository):

    .venv/bin/python benchmarks/check_tauargus_examples.py \\
        --checktauargus /work/.mirror/sdcTools+checkTauArgus/repo \\
        [--tauargus /work/.mirror/sdcTools+tauargus/repo] [--only NAME ...]

A snapshot is a bare git repository (its files read with ``git --git-dir DIR show
HEAD:path``), a checked-out repository or a plain folder. Without ``--checktauargus`` the
script says so in one line and exits 0.

The cases, each written to a temporary folder and run with statrecon's job runner
(``runs/job.run_job``, what ``statrecon tables protect job.arb`` does, default options):

- ``ex1``, ``ex2``: checkTauArgus's batch tests (``inst/tests/Batch``), their own batch files
  as written; compared with the expectations of ``test_batch_ex1.R`` and ``test_batch_ex2.R``
  (the column names, the rows, the first value, the statuses recoded as sdcTable's
  ``recode_sdcStati`` does: 1-2 and 10 ``s``, 3-9 ``u``, 11-12 ``x``, 13-14 ``z``).
- ``TestRecode``: tau-Argus's ``data/TestRecode.arb`` as written (two tables, three recodes,
  ``<GOINTERACTIVE>``) on the real ``tau_testW.asc`` of checkTauArgus's
  ``inst/doc/Simple2D_InputData.zip``, with tau-Argus's ``Tau_TestW.rda``, ``GK.GRC``,
  ``IndCode2.grc``, ``region2.hrc`` and ``region.cdl`` (needs ``--tauargus``). No expected
  output exists: the table gives what statrecon makes of it.
- ``Simple2D`` and scenarios 2, 3 and 4 of checkTauArgus's ``vignettes/GUItests.Rmd``: the
  clicks translated into batch files (the batch text is this script's), on
  ``Simple2D_InputData.zip`` (with tau-Argus's ``Tau_TestW.rda``) and ``TEST.zip``
  (``example_enterprise.asc``/``.rda``, NACE and NUTS hierarchies), compared with tau-Argus's
  own code-value outputs in ``Simple2D_Expected_Output.zip`` and ``OUTPUT.zip``.
  ``example_enterprise.rda`` names its ``.hrc`` files by Windows paths
  (``\\\\File1\\users\\...\\NUTS.hrc``): statrecon looks a name that leaves the folder up by
  its last part, so they are found beside it. ``NUTS.hrc`` has the code ``11`` twice (lines
  150 and 204: two groups of municipalities, and no ``10``); tau-Argus keeps two nodes named
  11, statrecon refuses a code twice: each scenario is tried as written, and when statrecon
  refuses it, run again with the second ``@11`` read as ``@10`` (tau-Argus's rows of the
  second 11 compared with statrecon's 10).

Per case the table gives: the cells of tau-Argus's output and how many have the same value
in statrecon's (exact, the decimals as written); tau-Argus's primary cells (statuses 3-9),
statrecon's and how many are the same cells; tau-Argus's suppressed cells (primary and
secondary) and how many of its primary cells statrecon's integer audit proves protected
under tau-Argus's pattern (a-priori bounds: nonnegative, statrecon's default; the protection
levels of statrecon's rules); statrecon's own pattern (primary + secondary cells, every
primary cell proven protected under the integer audit before anything is written) and the
seconds of statrecon's job. tau-Argus's status numbers (CellStatus.java): 1 safe, 2 safe
(manual), 3-9 primary (rule, request, frequency, zero, singleton, manual), 10 protected,
11-12 secondary, 13-14 empty.

With ``--side-by-side`` (needs ``--tauargus`` and pytauargus, driven by
``benchmarks/peers/tauargus.py``) the script instead sets statrecon beside tau-Argus on three
one-table cases, the same microdata and rules for both: Simple2D (Size x Region of Var2,
``P(15,1)``, ``tau_testW.asc``), scenario 2 (act x product of turnover) and scenario 3's
second table alone (act x region), both with the scenarios' rules on
``example_enterprise.asc``; cost the response (lambda 1) for both. statrecon: the job runner
with ``JobOptions(method="fast"|"exact", options=ProtectOptions(time_limit=...))`` (fast 60 s,
exact ``--exact-time-limit``); pytauargus: ``MOD(1,5,1,1,1)`` (the GUI tests' settings) and
``OPT(1,--opt-minutes)``. Per pattern: cells, primary + secondary cells, the response summed
over the suppressed cells, the seconds of the suppression alone (statrecon's
``ProtectResult.elapsed_s``, pytauargus's ``suppress`` call), the method's status (statrecon's
``optimal`` only when proven; OPT's objective values as its log gives them), and the other
tool's audit: statrecon's integer audit (nonnegative a-priori bounds, statrecon's protection
levels) of tau-Argus's pattern, tau-Argus's own audit (``audit(table, None)``, a-priori box
[smallest, largest cell], tau-Argus's protection levels) of statrecon's pattern, given to
pytauargus as an a-priori file marking statrecon's secondary cells ``M``; tau-Argus's audit
of its own patterns in the notes. The primary cells are compared: pytauargus 0.6.0 makes the
cells of a missing code (``MIS(1)``: missing = safe) primary where tau-Argus 4.1 (its GUI
outputs above) and statrecon do not; those are given to pytauargus as safe (``S``) in the
same a-priori file, and the notes say so. The ``.rda``'s Windows paths of its hierarchies are
read by their last part (in the temporary copy) for pytauargus.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from statrecon.runs.job import JobRun
    from statrecon.tables import TableSet
    from statrecon.tables.model import Key

SKIP = ("check_tauargus_examples: skipped (no snapshot given: --checktauargus DIR, a snapshot of "
        "sdcTools/checkTauArgus)")
TAUARGUS_DATA = ("TestRecode.arb", "Tau_TestW.rda", "GK.GRC", "GK.CDL", "IndCode2.grc",
                 "region2.hrc", "region.cdl")


class Snapshot:
    """The files of a repository snapshot: a bare git repository, a checkout or a folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bare = (path / "HEAD").is_file() and (path / "objects").is_dir()
        if not self.bare and not path.is_dir():
            raise SystemExit(f"check_tauargus_examples: {path}: not a folder")

    def read(self, name: str) -> bytes:
        if self.bare:
            done = subprocess.run(["git", "--git-dir", str(self.path), "show", f"HEAD:{name}"],
                                  capture_output=True, check=False)
            if done.returncode != 0:
                raise FileNotFoundError(f"{self.path}: no {name} at HEAD")
            return done.stdout
        return (self.path / name).read_bytes()

    def copy(self, name: str, folder: Path, as_name: str | None = None) -> Path:
        target = folder / (as_name or Path(name).name)
        target.write_bytes(self.read(name))
        return target

    def unzip(self, name: str, folder: Path) -> None:
        """Every file of the zip archive ``name``, flat in ``folder``."""
        with zipfile.ZipFile(io.BytesIO(self.read(name))) as archive:
            for info in archive.infolist():
                if not info.is_dir():
                    (folder / Path(info.filename).name).write_bytes(archive.read(info))


# ------------------------------------------------------------------------- code-value files

Codes = tuple[str, ...]


@dataclass(frozen=True)
class Row:
    codes: Codes
    value: str  # as written ("-": an empty cell)
    status: int


def read_code_value(path: Path, dims: int, header: bool = False) -> list[Row]:
    """A code-value file with the statuses (``AS+``): codes, value, status; codes stripped of
    tau-Argus's padding."""
    lines = [r for r in csv.reader(io.StringIO(path.read_text(encoding="latin-1"))) if r]
    if header:
        lines = lines[1:]
    return [Row(tuple(c.strip() for c in r[:dims]), r[dims].strip(), int(r[dims + 1]))
            for r in lines]


def second_as(rows: list[Row], dim: int, code: str, new: str) -> list[Row]:
    """tau-Argus's rows with the second ``code`` of dimension ``dim`` in each block of the
    other codes read as ``new`` (a code that appears twice in an .hrc)."""
    seen: Counter[Codes] = Counter()
    out = []
    for row in rows:
        if row.codes[dim] == code:
            rest = row.codes[:dim] + row.codes[dim + 1:]
            seen[rest] += 1
            if seen[rest] == 2:
                row = Row((*row.codes[:dim], new, *row.codes[dim + 1:]), row.value, row.status)
        out.append(row)
    return out


def _primary(status: int) -> bool:
    return 3 <= status <= 9


def _suppressed(status: int) -> bool:
    return 3 <= status <= 9 or status in (11, 12)


def _same_value(a: str, b: str) -> bool:
    if "-" in (a, b) or "x" in (a, b):
        return a == b
    return Decimal(a) == Decimal(b)


def sdc_letter(status: int) -> str:
    """sdcTable's ``recode_sdcStati`` of a tau-Argus status."""
    return "s" if status in (1, 2, 10) else "u" if 3 <= status <= 9 else \
        "x" if status in (11, 12) else "z"


# ------------------------------------------------------------------------------- the cases


@dataclass
class Expected:
    """A file the job writes (its working file with the statuses) and tau-Argus's output."""

    ours: str
    theirs: Path
    dims: int
    header: bool = False
    mapping: Callable[[list[Row]], list[Row]] | None = None


@dataclass
class Case:
    name: str
    what: str
    folder: Path
    arb: str
    expected: list[Expected] = field(default_factory=list)
    r_test: str | None = None  # checkTauArgus's testthat file (ex1, ex2)
    prepare: Callable[[Path], str] | None = None  # a mapping of the inputs, its note
    mapped: bool = False  # the inputs were mapped (prepare ran)


@dataclass
class Result:
    name: str
    what: str
    cells: str = ""
    values: str = ""
    primary: str = ""
    theirs: str = ""
    audit: str = ""
    ours: str = ""
    seconds: str = ""
    notes: list[str] = field(default_factory=list)


def run_case(case: Case, audit_limit: float) -> Result:
    from statrecon.errors import StatreconError

    result = Result(case.name, case.what)
    try:
        run, elapsed = _run(case.folder / case.arb)
    except StatreconError as e:
        if case.prepare is None:
            result.notes.append(f"refused as written: {e}")
            return result
        result.notes.append("as written, statrecon refuses it: "
                            f"{_short(str(e).replace(str(case.folder) + '/', ''))}")
        result.notes.append(case.prepare(case.folder))
        case.mapped = True
        try:
            run, elapsed = _run(case.folder / case.arb)
        except StatreconError as again:
            result.notes.append(f"refused after the mapping: {again}")
            return result
    result.seconds = f"{elapsed:.1f}"
    result.ours = _our_pattern(run)
    if run.status != "written":
        result.notes.append(f"statrecon: {run.status}")
        return result
    if not case.expected and case.r_test is None:
        tables = run.linked()
        cells = len(tables.keys())
        primary = sum(c.status.value == "primary" for c in tables.cells())
        result.cells = f"{cells} (no expected output)"
        result.primary = f"- / {primary}"
        return result
    pairs = []
    for expected in case.expected:
        ours = read_code_value(case.folder / _working(expected.ours), expected.dims,
                               expected.header)
        if case.r_test is not None:  # tau-Argus's statuses as the R test expects them
            theirs = _check_r(case, result, ours)
        else:
            theirs = read_code_value(expected.theirs, expected.dims, expected.header)
        if expected.mapping is not None and case.mapped:
            theirs = expected.mapping(theirs)
        pairs.append((ours, theirs))
    _compare(result, pairs, values=case.r_test is None)
    _audit_theirs(result, run, [t for _, t in pairs], audit_limit)
    return result


def _short(text: str) -> str:
    return text if len(text) < 140 else text[:137] + "..."


def _working(name: str) -> str:
    path = Path(name)
    return f"{path.stem}.working{path.suffix}"


def _run(arb: Path) -> tuple[JobRun, float]:
    from statrecon.runs.job import JobOptions, check_outputs, run_job
    from statrecon.tables.job import read_job

    start = time.perf_counter()
    job = read_job(arb)
    check_outputs(job)
    run = run_job(job, JobOptions())
    return run, time.perf_counter() - start


def _our_pattern(run: JobRun) -> str:
    protected = run.protected
    if not protected:
        return "nothing to protect"
    primary = secondary = 0
    methods = set()
    for p in protected:
        cells = p.protection.tables.cells()
        primary += sum(c.status.value == "primary" for c in cells)
        secondary += len(p.protection.secondary)
        methods.add(f"{p.method} {p.protection.result.status}")
    return f"{primary} + {secondary} ({', '.join(sorted(methods))})"


def _check_r(case: Case, result: Result, rows: list[Row]) -> list[Row]:
    """checkTauArgus's testthat expectations (names, rows, first value, recoded statuses)
    checked on statrecon's output; returns tau-Argus's rows as far as the test gives them:
    statrecon's codes and values with the expected statuses (u primary, x secondary)."""
    assert case.r_test is not None
    text = case.r_test
    names = re.search(r"expect_equal\(names\(result\),\s*c\(([^)]*)\)\)", text)
    count = re.search(r"expect_equal\(nrow\(result\),\s*(\d+)\)", text)
    first = re.search(r"expect_equal\(result\$\w+\[1\],\s*([-\d.]+)\)", text)
    letters = re.search(r"expect_equal\(result\$Status2,\s*c\(([^)]*)\)\)", text)
    assert names and count and first and letters, "test_batch_*.R not understood"
    header = next(csv.reader((case.folder / _working(case.expected[0].ours)).open()))
    want_names = re.findall(r'"([^"]*)"', names.group(1))
    got_letters = "".join(sdc_letter(r.status) for r in rows)
    want_letters = "".join(re.findall(r'"([a-z])"', letters.group(1)))
    checks = {
        "names": header == [n for n in want_names if n != "Status2"],
        "rows": len(rows) == int(count.group(1)),
        "first value": Decimal(rows[0].value) == Decimal(first.group(1)),
        "statuses": got_letters == want_letters,
    }
    result.values = "first: " + ("same" if checks["first value"] else "DIFFERS")
    result.notes.append(f"test_batch_{case.name}.R: " + ", ".join(
        f"{k} {'as expected' if ok else 'DIFFER'}" for k, ok in checks.items()))
    if not checks["statuses"]:
        result.notes.append(f"statuses: statrecon {got_letters}, expected {want_letters}")
    status = {"u": 3, "x": 11, "z": 14}
    return [Row(r.codes, r.value, status.get(letter, 1))
            for r, letter in zip(rows, want_letters, strict=False)]


def _compare(result: Result, pairs: Sequence[tuple[list[Row], list[Row]]],
             values: bool = True) -> None:
    cells = same = 0
    missing: list[str] = []
    for ours, theirs in pairs:
        by_codes = {r.codes: r for r in ours}
        cells += len(theirs)
        for row in theirs:
            mine = by_codes.get(row.codes)
            if mine is None:
                missing.append("/".join(row.codes))
                continue
            same += _same_value(row.value, mine.value) or (
                row.value == "-" and mine.value in ("0", "-"))
    result.cells = str(cells)
    if values:
        result.values = f"{same}/{cells}"
    if missing:
        result.notes.append(f"{len(missing)} of tau-Argus's cells not in statrecon's table, "
                            f"e.g. {', '.join(missing[:3])}")
    if len(pairs) > 1:
        result.notes.append("linked tables: the cells and values are counted over both "
                            "files (a cell both publish in each), the rest over distinct cells")
    for name, statuses in (("protected", (10,)), ("empty", (13, 14))):
        theirs_set = {(t, r.codes) for t, (_, rows) in enumerate(pairs) for r in rows
                      if r.status in statuses}
        ours_set = {(t, r.codes) for t, (rows, _) in enumerate(pairs) for r in rows
                    if r.status in statuses}
        if theirs_set or ours_set:
            result.notes.append(f"{name} cells (status {'/'.join(map(str, statuses))}): "
                                f"tau-Argus {len(theirs_set)}, statrecon {len(ours_set)}, "
                                f"{len(theirs_set & ours_set)} the same")


def _audit_theirs(result: Result, run: JobRun, theirs: Sequence[list[Row]],
                  limit: float) -> None:
    """tau-Argus's pattern on statrecon's tables: its suppressed cells suppressed, the rest
    published; each of statrecon's primary cells that tau-Argus suppresses audited."""
    tables = run.linked()
    key_of: list[dict[Codes, Key]] = []
    for table in tables.tables:
        key_of.append({tuple(code.strip() for _, code in cell.codes): table.key(cell)
                       for cell in table.cells})
    suppressed: set[Key] = set()
    their_primary: set[Key] = set()
    for t, rows in enumerate(theirs):
        index = key_of[min(t, len(key_of) - 1)]
        for row in rows:
            key = index.get(row.codes)
            if key is not None and _suppressed(row.status):
                suppressed.add(key)
                if _primary(row.status):
                    their_primary.add(key)
    start = time.perf_counter()
    verdicts, _short, audited, ours_primary = integer_audit(tables, suppressed, limit)
    result.primary = (f"{len(their_primary)} / {len(ours_primary)} "
                      f"({len(their_primary & ours_primary)} same)")
    result.theirs = str(len(suppressed))
    protected = verdicts.get("protected", 0)
    result.audit = f"{protected}/{audited} protected"
    others = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()) if v != "protected")
    if others:
        result.audit += f" ({others})"
    if audited < len(ours_primary):
        result.notes.append(f"{len(ours_primary) - audited} of statrecon's primary cells "
                            "are published in tau-Argus's pattern")
    result.notes.append(f"audit of tau-Argus's pattern: {time.perf_counter() - start:.1f} s")


def integer_audit(tables: TableSet, suppressed: set[Key], limit: float
                  ) -> tuple[Counter[str], list[Key], int, set[Key]]:
    """statrecon's integer audit (a-priori bounds nonnegative, statrecon's protection levels)
    of the pattern ``suppressed`` (keys) on ``tables``: the cells in it suppressed, the rest
    published; each of statrecon's primary cells in it audited (``limit`` seconds a cell).
    Returns the verdicts, the cells not proven protected, how many cells were audited and
    statrecon's primary cells."""
    from statrecon.engines.intervals import AuditOptions, audit, prepare, problem_from_tables
    from statrecon.tables import CellStatus

    statuses = {}
    audited = []
    for key, cell in zip(tables.keys(), tables.cells(), strict=True):
        hidden = key in suppressed
        if cell.status is CellStatus.PRIMARY:
            if hidden:
                audited.append(key)
            else:
                statuses[key] = CellStatus.SAFE  # published by the pattern
        elif cell.status is CellStatus.SECONDARY and not hidden:
            statuses[key] = CellStatus.SAFE
        elif hidden and cell.status is not CellStatus.SECONDARY:
            statuses[key] = CellStatus.SECONDARY
    pattern = tables.with_statuses(statuses)
    ours_primary = {k for k, c in zip(tables.keys(), tables.cells(), strict=True)
                    if c.status is CellStatus.PRIMARY}
    prepared = prepare(problem_from_tables(pattern, "nonnegative"))
    columns = [pattern.column(k) for k in audited]
    done = audit(prepared, columns, AuditOptions(time_limit=limit))
    short = [k for k, a in zip(audited, done.cells, strict=True) if a.verdict != "protected"]
    return Counter(a.verdict for a in done.cells), short, len(audited), ours_primary


# ------------------------------------------------------------------------ building the cases

SIMPLE2D = """// checkTauArgus's GUI test Simple2D (vignettes/GUItests.Rmd) as a batch file: Size x
// Region of Var2, cost Var2 (lambda 1), the p%-rule P(15,1) alone (no minimum frequency,
// zero unsafe, weights or missing=safe), the modular method with its three options,
// code-value with the statuses and quotes
<OPENMICRODATA> "tau_testW.asc"
<OPENMETADATA> "Tau_TestW.rda"
<SPECIFYTABLE> "Size""Region"|"Var2"||"Var2",1
<SAFETYRULE> P(15,1)
<READMICRODATA>
<SUPPRESS> MOD(1,5,1,1,1)
<WRITETABLE> (1, 3, AS+QU+, "Simple2D.txt")
"""
# scenarios 2-4: P%-rule Ind 0/0, Ind-2 0/0, Hold-1 P(10,1), Hold-2 0/0; missing=safe,
# holdings, zero unsafe with range 10, manual safety range 10; no minimum frequency, no
# weights
RULES = "P(0,0)|P(0,0)|P(10,1)|P(0,0)|ZERO(10)|MAN(10)|MIS(1)"
HEAD = """<OPENMICRODATA> "example_enterprise.asc"
<OPENMETADATA> "example_enterprise.rda"
"""
SCENARIO2 = f"""// checkTauArgus's GUI scenario 2: act x product of turnover, hypercube (GH)
{HEAD}<SPECIFYTABLE> "act""product"|"turnover"||"turnover",1
<SAFETYRULE> {RULES}
<READMICRODATA>
<SUPPRESS> GH(1,100,0,1)
<WRITETABLE> (1, 3, AS+QU+, "test_1.txt")
"""
SCENARIO3 = f"""// checkTauArgus's GUI scenario 3: act x product and act x region, linked, modular
{HEAD}<SPECIFYTABLE> "act""product"|"turnover"||"turnover",1
<SAFETYRULE> {RULES}
<SPECIFYTABLE> "act""region"|"turnover"||"turnover",1
<SAFETYRULE> {RULES}
<READMICRODATA>
<SUPPRESS> MOD(0,5,1,1,1)
<WRITETABLE> (1, 3, AS+QU+, "test_2a.txt")
<WRITETABLE> (2, 3, AS+QU+, "test_2b.txt")
"""
SCENARIO4A = f"""// checkTauArgus's GUI scenario 4, first part: region x mun, modular
{HEAD}<SPECIFYTABLE> "region""mun"|"turnover"||"turnover",1
<SAFETYRULE> {RULES}
<READMICRODATA>
<SUPPRESS> MOD(1,5,1,1,1)
<WRITETABLE> (1, 3, AS+QU+, "test_3a.txt")
"""
SCENARIO4B = f"""// checkTauArgus's GUI scenario 4, second part: region x product with the
// a-priori file tau-Argus generated from the first part (OUTPUT.zip's test_3a.hst: ignore
// incorrect lines, expand for trivial levels), modular
{HEAD}<SPECIFYTABLE> "region""product"|"turnover"||"turnover",1
<SAFETYRULE> {RULES}
<READMICRODATA>
<APRIORI> "test_3a.hst", 1, ",", 1, 1
<SUPPRESS> MOD(1,5,1,1,1)
<WRITETABLE> (1, 3, AS+QU+, "test_3b.txt")
"""


def _nuts_eleven_as_ten(folder: Path) -> str:
    """NUTS.hrc's second ``@11`` read as ``@10``."""
    path = folder / "NUTS.hrc"
    lines = path.read_bytes().split(b"\n")
    where = [i for i, line in enumerate(lines) if line.strip() == b"@11"]
    if len(where) < 2:
        return "NUTS.hrc: no second @11 to map"
    lines[where[1]] = lines[where[1]].replace(b"@11", b"@10")
    path.write_bytes(b"\n".join(lines))
    return (f"mapped: NUTS.hrc line {where[1] + 1} '@11' read as '@10' (tau-Argus's rows of "
            "the second 11 compared with statrecon's 10)")


def build_cases(check: Snapshot, tau: Snapshot | None, root: Path) -> list[Case]:
    cases = []
    batch = "inst/tests/Batch"
    for ex, files in (("ex1", ("batch_ex1.arb", "hier_gender_ex1.hrc", "hier_region_ex1.hrc",
                               "metadata_ex1.rda", "tabdata_ex1.tab")),
                      ("ex2", ("batch_ex2.arb", "hier_gender_ex2.hrc", "hier_region_ex2.hrc",
                               "metadata_ex2.rda", "microdata_ex2.asc"))):
        folder = root / ex
        folder.mkdir()
        for name in files:
            check.copy(f"{batch}/{ex}/{name}", folder)
        r_test = check.read(f"{batch}/test_batch_{ex}.R").decode("utf-8")
        what = ("table input, MAN(20), OPT" if ex == "ex1" else
                "free-format microdata, FREQ(5,20)|P(20,5)|, OPT")
        cases.append(Case(ex, f"checkTauArgus {ex} ({what})", folder, f"batch_{ex}.arb",
                          [Expected(f"tabout_{ex}.txt", folder / "-", 2, header=True)],
                          r_test))
    inputs = root / "Simple2D_InputData"
    inputs.mkdir()
    check.unzip("inst/doc/Simple2D_InputData.zip", inputs)
    expected = root / "expected"
    expected.mkdir()
    check.unzip("inst/doc/Simple2D_Expected_Output.zip", expected)
    check.unzip("inst/doc/OUTPUT.zip", expected)
    if tau is not None:
        folder = root / "TestRecode"
        folder.mkdir()
        for name in TAUARGUS_DATA:
            tau.copy(f"data/{name}", folder)
        shutil.copy(inputs / "tau_testW.asc", folder)
        cases.append(Case("TestRecode", "tau-Argus TestRecode.arb on the real tau_testW.asc "
                          "(NK(2,75), 3 recodes, no SUPPRESS)", folder, "TestRecode.arb"))
        folder = root / "Simple2D"
        shutil.copytree(inputs, folder)
        tau.copy("data/Tau_TestW.rda", folder)
        (folder / "simple2d.arb").write_text(SIMPLE2D)
        cases.append(Case("Simple2D", "GUI Simple2D: Size x Region, P(15,1), MOD", folder,
                          "simple2d.arb", [Expected("Simple2D.txt", expected / "Simple2D.txt",
                                                    2)]))
    test = root / "TEST"
    test.mkdir()
    check.unzip("inst/doc/TEST.zip", test)
    eleven = lambda rows: second_as(rows, 1, "11", "10")  # noqa: E731
    for name, what, text, outputs in (
            ("scenario2", "GUI 2: act x product, holding P(10,1), ZERO, MIS, GH", SCENARIO2,
             [("test_1.txt", None)]),
            ("scenario3", "GUI 3: act x product + act x region, linked MOD", SCENARIO3,
             [("test_2a.txt", None), ("test_2b.txt", None)]),
            ("scenario4a", "GUI 4a: region x mun (NUTS.hrc), MOD", SCENARIO4A,
             [("test_3a.txt", eleven)]),
            ("scenario4b", "GUI 4b: region x product, a-priori test_3a.hst, MOD", SCENARIO4B,
             [("test_3b.txt", None)])):
        folder = root / name
        shutil.copytree(test, folder)
        shutil.copy(expected / "test_3a.hst", folder)
        (folder / f"{name}.arb").write_text(text)
        cases.append(Case(name, what, folder, f"{name}.arb",
                          [Expected(out, expected / out, 2, mapping=mapping)
                           for out, mapping in outputs], prepare=_nuts_eleven_as_ten))
    return cases


# ----------------------------------------------------------------------- side by side

SIDE_REGION = f"""// scenario 3's second table alone: act x region of turnover, modular
{HEAD}<SPECIFYTABLE> "act""region"|"turnover"||"turnover",1
<SAFETYRULE> {RULES}
<READMICRODATA>
<SUPPRESS> MOD(1,5,1,1,1)
<WRITETABLE> (1, 3, AS+QU+, "act_region.txt")
"""
# (name, the case whose inputs it uses, batch text, explanatory, response, rules)
SIDE_CASES = (
    ("Simple2D", "Simple2D", SIMPLE2D, ("Size", "Region"), "Var2", "P(15,1)"),
    ("scenario2", "scenario2", SCENARIO2, ("act", "product"), "turnover", RULES),
    ("act x region", "scenario3", SIDE_REGION, ("act", "region"), "turnover", RULES),
)
TAU_MOD = "MOD(1,5,1,1,1)"  # the GUI tests' modular settings (singleton checks on)


@dataclass
class Pattern:
    """One tool's pattern on one table."""

    tool: str
    cells: int
    primary: set[Codes]
    suppressed: set[Codes]
    value: Decimal
    seconds: float
    status: str
    audit: str = ""


def _rda_paths_local(folder: Path) -> str | None:
    """Each ``<HIERCODELIST>`` of the ``.rda`` files in ``folder`` named by its last part
    (``example_enterprise.rda`` names them by Windows paths, which pytauargus does not find;
    statrecon looks such a name up by its last part anyway): the copy in the temporary
    folder is changed, never the snapshot."""
    changed = 0
    for rda in folder.glob("*.rda"):
        text = rda.read_text(encoding="latin-1")
        new, n = re.subn(r'(<HIERCODELIST>\s*)"?[^"\n]*[\\/]([^\\/"\n]+?)"?\s*$',
                         r'\1"\2"', text, flags=re.MULTILINE)
        if n:
            rda.write_text(new, encoding="latin-1")
            changed += n
    return (f"{changed} <HIERCODELIST> paths of the .rda read by their last part (for "
            "pytauargus)") if changed else None


def _statrecon(arb: Path, method: str, limit: float) -> tuple[JobRun, Pattern]:
    """statrecon's job runner with ``method`` (``fast``/``exact``), the job's own cost
    function, ``ProtectOptions(time_limit=limit)``."""
    from statrecon.engines.suppression import ProtectOptions
    from statrecon.runs.job import JobOptions, run_job
    from statrecon.tables import CellStatus
    from statrecon.tables.job import read_job

    job = read_job(arb)
    run = run_job(job, JobOptions(options=ProtectOptions(time_limit=limit), method=method))
    tables = run.linked()
    primary, suppressed, value = set(), set(), Decimal(0)
    for cell in tables.cells():
        codes = tuple(code.strip() for _, code in cell.codes)
        if cell.status is CellStatus.PRIMARY:
            primary.add(codes)
        if cell.status.suppressed:
            suppressed.add(codes)
            value += Decimal(cell.value.numerator) / Decimal(cell.value.denominator)
    done = run.protected[0].protection.result if run.protected else None
    status = run.status if done is None else done.status
    seconds = done.elapsed_s if done is not None else 0.0
    return run, Pattern(f"statrecon {method}", len(tables.keys()), primary, suppressed,
                        value, seconds, status)


def _tau_table(folder: Path, explanatory: Sequence[str], response: str, rules: str,
               apriori: Path | None = None) -> object:
    import tauargus as peer  # benchmarks/peers, put on the path by side_by_side

    @dataclass(frozen=True)
    class WithApriori(peer.TauTable):  # type: ignore[misc, name-defined]
        """A table read with an ``<APRIORI>`` file (statuses ``M`` and ``U``) after it."""

        apriori: Path | None = None

        def batch_text(self, suppress: str | None = None) -> str:
            text = super().batch_text(suppress)
            if self.apriori is None:
                return text
            return text.replace("<READMICRODATA>\n", "<READMICRODATA>\n"
                                f'<APRIORI> "{self.apriori}",1,",",0,0\n')

    asc = next(folder.glob("*.asc"))
    rda = next(p for p in folder.glob("*.rda") if p.stem.lower() == asc.stem.lower()
               or p.name == "Tau_TestW.rda")
    return WithApriori(tab=asc, rda=rda, explanatory=tuple(explanatory), response=response,
                       cost=response, safety_rules=(rules,), microdata=True, apriori=apriori)


def _codes(cells: pd.DataFrame, explanatory: Sequence[str]) -> list[Codes]:
    return [tuple(str(c) for c in row) for row in
            cells[list(explanatory)].itertuples(index=False, name=None)]


def _tau(table: object, command: str, explanatory: Sequence[str]) -> Pattern:
    import tauargus as peer  # as _tau_table

    done = peer.suppress(table, command)
    cells = done.cells
    codes = _codes(cells, explanatory)
    status = cells["status"].tolist()
    value = sum((Decimal(repr(v)) for v, s in zip(cells["value"], status, strict=True)
                 if s in ("U", "M")), Decimal(0))
    end = ""
    log = done.logs.get("FullJJ.log", "")
    found = re.findall(r"Objectvalues:\s*(\S+)\s+and\s+(\S+)", log)
    if command.startswith("OPT"):
        limit = re.search(r"MAX_TIME \(secs\)\s*=\s*(\S+)", log)
        end = ("log: objective values " + " and ".join(found[-1]) if found
               else "no objective in its log")
        if limit:
            end += f", MAX_TIME {float(limit.group(1)):.0f} s"
    return Pattern(f"tau-Argus {command}", len(cells),
                   {c for c, s in zip(codes, status, strict=True) if s == "U"},
                   {c for c, s in zip(codes, status, strict=True) if s in ("U", "M")},
                   value.quantize(Decimal("0.01")), done.seconds, end)


def _apriori(path: Path, plain: pd.DataFrame, explanatory: Sequence[str],
             letters: dict[Codes, str]) -> Path:
    """An a-priori file giving each cell of ``letters`` its status letter (``S`` safe,
    ``M`` secondary), a total's code left blank as tau-Argus's reader takes it."""
    totals = [plain[v].iloc[0] for v in explanatory]  # totals first in the engine's order
    lines = [",".join(["" if code == total else code
                       for code, total in zip(c, totals, strict=True)]) + f",{letter}"
             for c, letter in sorted(letters.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def _tau_audit(folder: Path, spec: tuple, pattern: Pattern, name: str,
               safe: set[Codes]) -> str:
    """tau-Argus's audit (pytauargus's port of intervalle.exe, a-priori box [smallest,
    largest cell]) of ``pattern``: the table read again with an a-priori file that marks
    each of its cells that tau-Argus's rules leave safe ``M`` (secondary), and the cells of
    ``safe`` that it publishes ``S``; the primary cells audited against tau-Argus's
    protection levels."""
    import tauargus as peer  # as _tau_table

    _, _, _, explanatory, response, rules = spec
    plain = peer.read(_tau_table(folder, explanatory, response, rules))
    letters = {c: "S" for c in safe - pattern.suppressed}
    for c, status in zip(_codes(plain, explanatory), plain["status"], strict=True):
        if c in pattern.suppressed and (status not in ("U", "E") or c in safe):
            letters[c] = "M"
    apriori = _apriori(folder / f"audit_{pattern.tool.split()[-1]}.hst", plain, explanatory,
                       letters)
    done = peer.audit(_tau_table(folder, explanatory, response, rules, apriori), None)
    return _tau_verdicts(done.cells, explanatory, pattern.suppressed, done.seconds)


def _tau_verdicts(cells: pd.DataFrame, explanatory: Sequence[str], suppressed: set[Codes],
                  seconds: float) -> str:
    shown = set(_codes(cells[cells["status"].isin(["U", "M"])], explanatory))
    missing = suppressed - shown
    primary = cells[cells["status"] == "U"]
    protected = int(primary["protected"].sum())
    text = f"{protected}/{len(primary)} protected"
    text += f" ({len(shown)} cells hidden"
    if len(primary) > protected:
        short = set(_codes(primary[~primary["protected"]], explanatory))
        text += f"; not protected: {_examples(short)}"
    if missing:
        text += f"; {len(missing)} of the pattern's cells not hidden"
    return text + f"), {seconds:.1f} s"


def _examples(codes: set[Codes]) -> str:
    shown = sorted(codes)
    return ", ".join("/".join(c) for c in shown[:4]) + (", ..." if len(shown) > 4 else "")


def side_by_side(check: Snapshot, tau: Snapshot, root: Path, exact_limit: float,
                 opt_minutes: int, audit_limit: float,
                 only: Sequence[str] | None = None) -> list[str]:
    """statrecon fast/exact beside pytauargus MOD/OPT on the tables of ``SIDE_CASES``, each
    tool's pattern audited by the other: the markdown lines to print."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
    import tauargus as peer  # benchmarks/peers: this repository's driver of pytauargus

    if not peer.available():
        return ["side by side: pytauargus is not installed (pip install pytauargus): skipped"]
    cases = {c.name: c for c in build_cases(check, tau, root)}
    head = ("| table | tool | cells | suppressed: primary + secondary | value suppressed | "
            "seconds | status | the other tool's audit of its primary cells |")
    out = [head, "|" + "---|" * 8]
    notes: list[str] = []
    for spec in SIDE_CASES:
        if only and spec[0] not in only:
            continue
        name, source, text, explanatory, response, rules = spec
        print(f"side by side: {name} ...", file=sys.stderr, flush=True)
        folder = root / f"side_{name.replace(' ', '_')}"
        shutil.copytree(cases[source].folder, folder)
        if source != "Simple2D":
            _nuts_eleven_as_ten(folder)  # statrecon refuses NUTS.hrc as written (see above)
        note = _rda_paths_local(folder)
        arb = folder / "side.arb"
        arb.write_text(text)
        ours = []
        for method, limit in (("fast", 60.0), ("exact", exact_limit)):
            run, pattern = _statrecon(arb, method, limit)
            ours.append((run, pattern))
        mine = ours[0][1].primary
        plain = peer.read(_tau_table(folder, explanatory, response, rules))
        their = {c for c, st in zip(_codes(plain, explanatory), plain["status"], strict=True)
                 if st == "U"}
        safe = their - mine  # pytauargus's primary cells that statrecon and tau-Argus leave
        aligned = None
        if safe:
            aligned = _apriori(folder / "aligned.hst", plain, explanatory,
                               dict.fromkeys(safe, "S"))
            notes.append(f"{name}: pytauargus's rules make {len(their)} primary cells, "
                         f"statrecon's {len(mine)} ({len(their & mine)} the same); the "
                         f"{len(safe)} more ({_examples(safe)}) given to pytauargus as safe "
                         "(S) in an a-priori file, for both tools to start from the same "
                         "primary cells")
        if mine - their:
            notes.append(f"{name}: {len(mine - their)} of statrecon's primary cells are not "
                         f"pytauargus's ({_examples(mine - their)}): NOT aligned")
        theirs = []
        for command in (TAU_MOD, f"OPT(1,{opt_minutes})"):
            table = _tau_table(folder, explanatory, response, rules, aligned)
            theirs.append(_tau(table, command, explanatory))
            own = peer.audit(table, command)
            notes.append(f"{name}: tau-Argus's own audit of its {command} pattern: "
                         + _tau_verdicts(own.cells, explanatory, theirs[-1].suppressed,
                                         own.seconds))
        run = ours[0][0]
        tables = run.linked()
        key_of = {tuple(code.strip() for _, code in cell.codes): tables.tables[0].key(cell)
                  for cell in tables.tables[0].cells}
        for pattern in theirs:
            start = time.perf_counter()
            keys = {key_of[c] for c in pattern.suppressed if c in key_of}
            verdicts, short, audited, primary = integer_audit(tables, keys, audit_limit)
            parts = [f"{n} {v}" for v, n in sorted(verdicts.items())]
            left = len(primary) - audited
            codes = {k: c for c, k in key_of.items()}
            pattern.audit = (f"statrecon: {', '.join(parts) or 'nothing audited'} of "
                             f"{audited} ({len(keys)} cells hidden"
                             + (f", {left} of statrecon's primary published" if left else "")
                             + (f"; not protected: {_examples({codes[k] for k in short})}"
                                if short else "")
                             + f"), {time.perf_counter() - start:.1f} s")
        for _, pattern in ours:
            pattern.audit = "tau-Argus: " + _tau_audit(folder, spec, pattern, name, safe)
        first = ours[0][1].primary
        same = all(p.primary == first for p in [*(o[1] for o in ours), *theirs])
        if same:
            notes.append(f"{name}: the same {len(first)} primary cells in every pattern")
        else:
            notes.append(f"{name}: primary cells DIFFER: statrecon {len(first)}, tau-Argus "
                         f"{len(theirs[0].primary)}, {len(first & theirs[0].primary)} the "
                         "same")
        if note:
            notes.append(f"{name}: {note}")
        for pattern in [*(o[1] for o in ours), *theirs]:
            secondary = len(pattern.suppressed) - len(pattern.primary)
            out.append(f"| {name} | {pattern.tool} | {pattern.cells} | "
                       f"{len(pattern.primary)} + {secondary} | {pattern.value:,.2f} | "
                       f"{pattern.seconds:.1f} | {pattern.status} | {pattern.audit} |")
    return [*out, "", *(f"- {n}" for n in notes)]


COLUMNS = ("case", "tau-Argus cells", "same value", "primary: tau-Argus / statrecon",
           "tau-Argus suppressed", "its primary cells under statrecon's integer audit",
           "statrecon: primary + secondary", "statrecon s")


def print_table(results: Sequence[Result]) -> None:
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for r in results:
        print(f"| {r.name} | {r.cells} | {r.values} | {r.primary} | {r.theirs} | {r.audit} | "
              f"{r.ours} | {r.seconds} |")
    print()
    for r in results:
        print(f"- {r.name}: {r.what}")
        for note in r.notes:
            print(f"  - {note}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checktauargus", type=Path, help="a snapshot of sdcTools/"
                        "checkTauArgus (a bare git repository, a checkout or a folder)")
    parser.add_argument("--tauargus", type=Path, help="a snapshot of sdcTools/tauargus "
                        "(for TestRecode and Simple2D)")
    parser.add_argument("--only", nargs="+", help="run these cases only")
    parser.add_argument("--audit-time-limit", type=float, default=10.0,
                        help="seconds per cell of the audit of tau-Argus's pattern")
    parser.add_argument("--side-by-side", action="store_true",
                        help="instead: statrecon fast/exact beside pytauargus MOD/OPT on "
                        "three tables, each audited by the other tool (needs --tauargus)")
    parser.add_argument("--exact-time-limit", type=float, default=60.0,
                        help="seconds of statrecon's exact method (side by side)")
    parser.add_argument("--opt-minutes", type=int, default=1,
                        help="tau-Argus OPT's time limit in minutes (side by side)")
    args = parser.parse_args(argv)
    if args.checktauargus is None:
        print(SKIP)
        return 0
    check = Snapshot(args.checktauargus)
    tau = Snapshot(args.tauargus) if args.tauargus is not None else None
    if args.side_by_side:
        if tau is None:
            raise SystemExit("check_tauargus_examples: --side-by-side needs --tauargus")
        with tempfile.TemporaryDirectory(prefix="check_tauargus_") as tmp:
            lines = side_by_side(check, tau, Path(tmp), args.exact_time_limit,
                                 args.opt_minutes, args.audit_time_limit, args.only)
        print("\n".join(lines))
        return 0
    with tempfile.TemporaryDirectory(prefix="check_tauargus_") as tmp:
        cases = build_cases(check, tau, Path(tmp))
        if args.only:
            cases = [c for c in cases if c.name in args.only]
        results = []
        for case in cases:
            print(f"running {case.name} ...", file=sys.stderr, flush=True)
            results.append(run_case(case, args.audit_time_limit))
    if tau is None:
        print("(TestRecode and Simple2D need --tauargus: a snapshot of sdcTools/tauargus)")
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
