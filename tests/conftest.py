"""Shared fixtures and helpers.

``run_cli`` runs the real command line in-process through ``statrecon.cli.main`` (exit code,
stdout, stderr), which is what a user gets, at a fraction of a subprocess's start-up cost;
``statrecon`` does the same outside a fixture (module fixtures use it) and returns a
``CompletedProcess``. ``statrecon_process`` and the tests that need a real process (signals,
stdin, memory) start one.

The inputs that the modules of issue 12 (test_injection, test_resource_limits, test_tracebacks,
test_silent_changes, test_cli_ux) share live here too: a small release file (``write_release``),
a census release (``census_release_file``, built once per module that uses it), claims tables
(``claims_tables``) and an audit-stream schema (``audit_schema``) with the runner of
``statrecon audit-stream`` (``audit_cli``).
"""
# ruff: noqa: E402  (the imports after the BLAS threads are set, below)

from __future__ import annotations

import contextlib
import csv
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Two test workers share two cores: OpenBLAS's own threads would spin on the core the other
# worker needs (measured: 8 min 2 s of CPU for the suite with them, 6 min 57 s without;
# `census reconstruct` with two pool workers uses the same CPU either way). Set before numpy
# is first imported, in every worker and in every process the tests start; a value the caller
# set is kept.
for _blas in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_blas, "1")


def _one_core_per_worker() -> None:
    """Each test worker on a core of its own (worker i on the i-th core it may use) when
    there is one for each: ``--workers 0``, the census and claims commands' default (every
    core this process may use), then runs in the worker's process instead of starting two
    interpreters that import the solvers again beside the other worker (the documented
    commands: 61 -> 42 s in a whole run). The pool still runs where a test asks for two
    workers."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if not worker.startswith("gw") or count < 2 or not hasattr(os, "sched_setaffinity"):
        return
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) >= count:
        os.sched_setaffinity(0, {cores[int(worker[2:]) % len(cores)]})


_one_core_per_worker()

import pandas as pd
import pytest

from statrecon.census.households import schema as hh
from statrecon.census.households.files import write_households_csv

CliResult = tuple[int, str, str]

# The longest test files, longest first (seconds of a run on 2 busy cores, 2026-11-28, in
# brackets). ``--dist loadfile`` gives each worker a whole file as it frees up, in collection
# order (pyproject: --no-loadscope-reorder): these go first, so the files that start last are
# short ones and neither worker waits long on the other. A file not here keeps its place.
LONGEST_FIRST = (
    "tests/test_readme.py",  # [33] every documented command, the DP guide's among them
    "tests/pipelines/test_census_pipeline.py",  # [22]
    "tests/engines/exact/test_exact_oracle.py",  # [13]
    "tests/census/persons/test_census_noise.py",  # [13]
    "tests/runs/test_census_protect_release.py",  # [12]
    "tests/commands/test_signals.py",  # [11]
    "tests/engines/suppression/test_suppression.py",  # [11]
    "tests/runs/test_census_protect.py",  # [10]
    "tests/engines/ckm/test_posterior.py",  # [9]
    "tests/engines/intervals/test_intervals.py",  # [9]
    "tests/engines/intervals/test_reach.py",  # [9]
    "tests/hostile/test_injection.py",  # [8]
    "tests/experiments/test_experiments.py",  # [8]
    "tests/peers/test_easysdctable_peer.py",  # [8]
)


# Libraries pytest marks for assertion rewriting because a plugin ships with them: their own
# asserts need no introspection, and rewriting hypothesis's 100 modules took about 1 s in each
# worker and again in the controller's summary at the end (where Python writes no bytecode
# nothing is cached: make test lets it write). Our test modules are still rewritten.
NOT_REWRITTEN = ("hypothesis", "platformdirs")


def pytest_configure(config: pytest.Config) -> None:
    hook = getattr(config.pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)  # pytest's own set; absent: rewrite as is
    if isinstance(marked, set):
        marked.difference_update(NOT_REWRITTEN)
        getattr(hook, "_marked_for_rewrite_cache", {}).clear()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files of LONGEST_FIRST first, in its order; the rest as collected."""
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))

CliRunner = Callable[..., CliResult]

# ------------------------------------------------- the real console script, as a subprocess

ROOT = Path(__file__).resolve().parents[1]  # the repository
EXAMPLES = ROOT / "examples"
# three real tracts of the bundled census persons (920 persons, 217 blocks): fast census tests
SLICE = EXAMPLES / "census" / "persons_3tracts.csv"
SCRIPT = Path(sys.executable).parent / "statrecon"
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "statrecon.cli"]
EXIT_FOR_STATUS = {"unique": 0, "multiple": 0, "infeasible": 2, "unknown": 3}

BLOCK_PEOPLE = [
    (8, "F", "Black", "no"), (18, "M", "White", "no"), (24, "F", "White", "no"),
    (30, "M", "White", "yes"), (36, "F", "Black", "yes"), (66, "F", "Black", "yes"),
    (84, "M", "Black", "yes"),
]
BLOCK_COLUMNS = ("age", "sex", "race", "married")


def statrecon(*args: str | Path, cwd: Path = ROOT, stdin: str | bytes | None = None,
              columns: int = 120, env: dict[str, str] | None = None
              ) -> subprocess.CompletedProcess[str]:
    """``statrecon ARGS`` run in this process (the real ``cli.main``, exit code, stdout and
    stderr as a user sees them, in a ``columns``-wide terminal without colour), at a fraction
    of a subprocess's start-up. ``stdin``: what a pipe on standard input carries (a real file
    descriptor, as a shell pipe gives, written from a thread); None leaves stdin alone.
    ``env``: environment variables set for the call only. ``statrecon_process`` for what
    needs a process of its own (signals, a clean interpreter)."""
    import io

    from statrecon import cli

    out, err = io.StringIO(), io.StringIO()
    setting = {"COLUMNS": str(columns), "NO_COLOR": "1", **(env or {})}
    saved = sys.argv, os.getcwd(), {k: os.environ.get(k) for k in setting}
    sys.argv = ["statrecon", *map(str, args)]
    os.environ.update(setting)
    os.chdir(cwd)
    code: object = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                _piped_stdin(stdin):
            try:
                cli.main()
            except SystemExit as e:
                code = e.code
    finally:
        sys.argv = saved[0]
        os.chdir(saved[1])
        for key, value in saved[2].items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return subprocess.CompletedProcess(["statrecon", *map(str, args)],
                                       code if isinstance(code, int) else 0, out.getvalue(),
                                       err.getvalue())


@contextlib.contextmanager
def _piped_stdin(data: str | bytes | None) -> Iterator[None]:
    """sys.stdin reads ``data`` from a pipe (a thread writes it and closes the pipe)."""
    if data is None:
        yield
        return
    import threading

    read_end, write_end = os.pipe()

    def write() -> None:
        with contextlib.suppress(BrokenPipeError), os.fdopen(write_end, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    saved, sys.stdin = sys.stdin, os.fdopen(read_end, "r", encoding="utf-8")
    try:
        yield
    finally:
        sys.stdin.close()  # a writer still blocked on a full pipe gets EPIPE and ends
        sys.stdin = saved
        writer.join(timeout=10)


def statrecon_process(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``statrecon ARGS`` as a real process (the console script)."""
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    return subprocess.run([*COMMAND, *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def json_of(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    data = json.loads(proc.stdout)
    assert isinstance(data, dict)
    return data


def rows_of(dataset: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(tuple(row[c] for c in BLOCK_COLUMNS) for row in dataset)


def assert_user_error(proc: subprocess.CompletedProcess[str], *parts: str) -> str:
    """Exit 1, one line on stderr starting with 'error:', naming every part; no traceback."""
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and len(lines[0]) > len("error: "), lines[0]
    for part in parts:
        assert part in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """``run_cli(*args, cwd=None)`` -> (exit code, stdout, stderr) of ``statrecon ARGS``."""
    from statrecon import cli

    def run(*args: str | Path, cwd: Path | None = None) -> CliResult:
        with monkeypatch.context() as m:
            if cwd is not None:
                m.chdir(cwd)
            m.setattr(sys, "argv", ["statrecon", *map(str, args)])
            capsys.readouterr()
            with pytest.raises(SystemExit) as exited:
                cli.main()
            out = capsys.readouterr()
        code = exited.value.code
        return (code if isinstance(code, int) else 0), out.out, out.err

    return run


def assert_one_line_error(result: CliResult, *parts: str, code: int = 1) -> str:
    """The exit code, one line on stderr starting with 'error:' naming every part; no
    traceback."""
    exit_code, out, err = result
    assert exit_code == code, (exit_code, out, err)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(("error: ", "inconsistent release: ")), lines[0]
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


# --------------------------------------------------------------------------- a small release

RELEASE = """version: 1
{extra}columns:
  age: {{type: integer, min: 0, max: {max}}}
statistics:
  - {{id: q, sql: "{sql}", value: {value}{tail}}}
"""


def write_release(tmp_path: Path, *, extra: str = "", max: str = "10",
                  sql: str = "SELECT COUNT(*) FROM t", value: str = "1", tail: str = "") -> Path:
    """release.yaml with one statistic ``q`` over an integer column ``age``."""
    path = tmp_path / "release.yaml"
    path.write_text(RELEASE.format(extra=extra, max=max, sql=sql, value=value, tail=tail),
                    encoding="utf-8")
    return path


# --------------------------------------------------------------------------- census inputs


@contextlib.contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    """Hold ``lock`` (a file) against the other xdist workers."""
    import fcntl  # lazy: POSIX only (built_once shares nothing without it)

    with lock.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def built_once(factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """``build(folder)`` run once per test session, by whichever xdist worker asks first; the
    others read what it returned (JSON beside the folder). Tests must not change the files.
    Without fcntl (Windows) each worker builds its own."""
    root = factory.getbasetemp()
    shared = bool(os.environ.get("PYTEST_XDIST_WORKER")) and sys.platform != "win32"
    if shared:
        root = root.parent  # the session's folder, above the workers' own
    folder, done = root / name, root / f"{name}.json"
    with _exclusive(root / f"{name}.lock") if shared else contextlib.nullcontext():
        if not done.exists():
            folder.mkdir(exist_ok=True)
            done.write_text(json.dumps(build(folder)), encoding="utf-8")
    return dict(json.loads(done.read_text(encoding="utf-8")))


def slice_persons() -> pd.DataFrame:
    """The slice's persons (block ids as text)."""
    return pd.read_csv(SLICE, dtype={"block_geoid": str})


def edit_release(release: Path, out: Path, edits: dict[tuple[str, str], int]) -> Path:
    """A copy of a census release with some (geoid, cell) values changed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(release)
    frame = table.to_pandas()
    for (geoid, cell), value in edits.items():
        hit = (frame.geoid == geoid) & (frame.cell == cell)
        assert hit.sum() == 1
        frame.loc[hit, "value"] = value
    edited = pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(
        table.schema.metadata)
    pq.write_table(edited, out)
    return out


@dataclass(frozen=True)
class CensusSlice:
    """The bundled slice tabulated (every SF1 person table) and reconstructed (certified, on
    a pool of two workers), as ``census tabulate`` and ``census reconstruct --json`` left
    them. Shared by the whole session: copy a file before changing it."""

    release: Path
    recon: Path
    summary: dict[str, Any]


def _build_census_slice(folder: Path) -> dict[str, Any]:
    release, recon = folder / "release.parquet", folder / "recon.parquet"
    proc = statrecon("census", "tabulate", "--persons", SLICE, "--out", release, "--quiet")
    assert proc.returncode == 0, proc.stderr
    proc = statrecon("census", "reconstruct", release, "--out", recon, "--workers", "2",
                     "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    return {"release": str(release), "recon": str(recon), "summary": json_of(proc)}


@pytest.fixture(scope="session")
def census_slice(tmp_path_factory: pytest.TempPathFactory) -> CensusSlice:
    """The slice's exact release and its reconstruction, built once per test session."""
    got = built_once(tmp_path_factory, "census_slice", _build_census_slice)
    return CensusSlice(Path(got["release"]), Path(got["recon"]), got["summary"])


TRACT_A, TRACT_B = "99001000001", "99001000002"
PERSON = {"sex": "female", "age": "34", "white": "Y", "black": "N", "aian": "N", "asian": "N",
          "nhopi": "N", "sor": "N", "hispanic": "N"}


def write_persons(path: Path, blocks: list[str], per_block: int = 2) -> Path:
    """A persons CSV: ``per_block`` persons of different ages in each block."""
    rows = [{"block_geoid": b, **PERSON, "age": str(20 + 7 * i),
             "sex": ("female", "male")[i % 2]}
            for b in blocks for i in range(per_block)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _build_census_release_file(folder: Path) -> dict[str, Any]:
    persons = write_persons(folder / "p.csv", [TRACT_A + "1000", TRACT_A + "1001"])
    out = folder / "it's a release.parquet"
    proc = statrecon("census", "tabulate", "--persons", persons, "--out", out, "--tables",
                     "P1,P12")
    assert proc.returncode == 0, proc.stderr
    return {"release": str(out)}


@pytest.fixture(scope="session")
def census_release_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A P1+P12 release of two blocks in one tract; its name needs quoting in SQL. Built
    once per test session: copy it before changing it."""
    got = built_once(tmp_path_factory, "census_release_file", _build_census_release_file)
    return Path(got["release"])


# --------------------------------------------------------------------------- claims inputs


def _build_claims_tables(folder: Path) -> dict[str, Any]:
    out = folder / "tables.csv"
    proc = statrecon("claims", "tabulate", "--households", households(folder), "--out", out)
    assert proc.returncode == 0, proc.stderr
    return {"tables": str(out)}


@pytest.fixture(scope="session")
def claims_tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The published tables of the two small test blocks (``claims tabulate``), built once
    per test session: copy them before changing them."""
    return Path(built_once(tmp_path_factory, "claims_tables", _build_claims_tables)["tables"])


def read_claims_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def write_claims_rows(rows: list[dict[str, str]], path: Path) -> Path:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["block", "cell", "value"])
        w.writeheader()
        w.writerows(rows)
    return path


# --------------------------------------------------------------------------- audit-stream inputs

SUM_ALL = "SELECT SUM(sugar) FROM patients"


def audit_cli(*args: str | Path, stdin: str | bytes = "") -> subprocess.CompletedProcess[str]:
    """``statrecon audit-stream ARGS`` in this process (``statrecon``), ``stdin`` piped in,
    200 columns wide."""
    return statrecon("audit-stream", *args, stdin=stdin, columns=200)


def write_schema(tmp_path: Path, sugar: str = "{type: real, min: 0, max: 40}") -> Path:
    """The hospital schema (six known patients, secret sugar) with the public table beside it."""
    (tmp_path / "hospital_public.csv").write_bytes(
        (EXAMPLES / "hospital_public.csv").read_bytes())
    path = tmp_path / "schema.yaml"
    path.write_text(
        "version: 1\ntable: patients\npublic: hospital_public.csv\ncolumns:\n"
        "  id: {type: integer, known: true}\n  zip: {type: integer, known: true}\n"
        "  gender: {type: categorical, values: [Male, Female], known: true}\n"
        f"  sugar: {sugar}\nstatistics: []\n", encoding="utf-8")
    return path


@pytest.fixture
def audit_schema(tmp_path: Path) -> Path:
    return write_schema(tmp_path)


def write_public_release(folder: Path, public_csv: str, id_type: str = "integer") -> Path:
    """A one-statistic release over ``public.csv`` (written from ``public_csv``) whose known
    column ``id`` has type ``id_type``: for tests of what a public table may hold."""
    (folder / "public.csv").write_text(public_csv, encoding="utf-8")
    path = folder / "release.yaml"
    path.write_text(f"""version: 1
public: public.csv
columns:
  id: {{type: {id_type}, known: true}}
  age: {{type: integer, min: 0, max: 10}}
statistics:
  - {{id: q, sql: "SELECT SUM(age) FROM t WHERE id = 1", value: 3}}
""", encoding="utf-8")
    return path


# ------------------------------------------------------ two small blocks of housing units

OWNER = {"tenure": "owned_free", "vacancy": "occupied", "size": "1",
         "hh_type": "nonfamily_female_alone", "hh_type_detail": "female_alone",
         "under18": "no", "over65": "yes", "hispanic": "no", "age": "75-84", "race": "white"}
FAMILY = {"tenure": "rented", "vacancy": "occupied", "size": "4", "hh_type": "married",
          "hh_type_detail": "married_children", "under18": "yes", "over65": "no",
          "hispanic": "yes", "age": "35-44", "race": "sor"}
VACANT = dict.fromkeys(hh.COLUMN_NAMES, hh.NA) | {"vacancy": "for_sale"}
BLOCK_A, BLOCK_B = "010030101001001", "010030101001002"


def households(tmp_path: Path) -> Path:
    rows = [OWNER, FAMILY, VACANT, FAMILY | {"age": "45-54"}, OWNER | {"race": "black"}]
    blocks = [BLOCK_A, BLOCK_A, BLOCK_A, BLOCK_B, BLOCK_B]
    df = pd.DataFrame([{"block": b, "tract": b[:11], "state": b[:2], **r}
                       for b, r in zip(blocks, rows, strict=True)])
    path = tmp_path / "blocks.csv"
    write_households_csv(df, path)
    return path


def load_peer(name: str) -> Any:
    """A module of benchmarks/peers/ (the peers run side by side: not a package of
    statrecon), loaded by its path."""
    import importlib.util

    path = ROOT / "benchmarks" / "peers" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"peers_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
