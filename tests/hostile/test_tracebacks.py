"""Issue 12, "one line, never a traceback": hostile or broken numbers, names, shapes, options
and output paths give one line naming the file, the line or the value (exit 1), never a
traceback, and output paths are checked before any work.

Reproductions held here:
- release files: non-finite values, errors and noise scales; bounds and record counts beyond the
  supported range; an empty table name;
- public tables: inf, nan and huge numbers;
- audit-stream: absurd answers (1e999999, nan, 5,000 digits) and JSON lines, named by line;
- census: release values beyond a block (inf, 1e30, 10**9, 12.5); an unwritable or read-only
  --out refused before any tract is solved; outputs written atomically;
- claims: bad counts and block ids in a tables CSV, named by line; unwritable outputs refused
  before any work;
- command line: experiment options that make no sense, --time-limit nan, negative seeds.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer
from conftest import (
    BLOCK_A,
    EXAMPLES,
    SUM_ALL,
    TRACT_A,
    CliRunner,
    assert_one_line_error,
    assert_user_error,
    audit_cli,
    households,
    read_claims_rows,
    statrecon,
    write_claims_rows,
    write_persons,
    write_public_release,
    write_release,
)
from typer.testing import CliRunner as TyperRunner

from statrecon.census.households.files import read_tables
from statrecon.census.households.synthetic import MAX_BLOCK_UNITS
from statrecon.census.persons.release import MAX_VALUE
from statrecon.commands.experiment import experiment_app
from statrecon.errors import StatreconError
from statrecon.outputs import atomic_outputs, check_writable, write_atomically
from statrecon.release.files import load_release
from statrecon.release.stream import parse_line

# --------------------------------------------------------------------------- release files


@pytest.mark.parametrize(("fields", "parts"), [
    ({"value": ".nan"}, ("release.yaml:5", "'q'", "value", "not a finite number")),
    ({"value": ".inf"}, ("release.yaml:5", "value", "not a finite number")),
    ({"value": "-.inf"}, ("release.yaml:5", "value", "not a finite number")),
    ({"value": "1e99999"}, ("release.yaml:5", "value", "not a finite number")),
    ({"tail": ", error: .inf"}, ("release.yaml:5", "error", "not a finite number")),
    ({"max": "100000000000000000000"}, ("release.yaml:3", "max", "supported range")),
    ({"max": "1e308"}, ("release.yaml:3", "max", "supported range")),
    ({"max": "-1e308"}, ("release.yaml:3", "max", "supported range")),
    ({"extra": "records: 100000000000000000000\n"}, ("release.yaml:2", "records")),
    ({"extra": 'table: ""\n'}, ("release.yaml:2", "table name", "identifier")),
    ({"tail": ", noise: {gaussian: -1}"}, ("release.yaml:5", "noise", "positive finite")),
    ({"tail": ", noise: {gaussian: .nan}"}, ("release.yaml:5", "noise", "positive finite")),
    ({"tail": ", noise: {laplace: .inf}"}, ("release.yaml:5", "noise", "positive finite")),
    ({"tail": ", noise: {laplace: 0}"}, ("release.yaml:5", "noise", "positive finite")),
])
def test_bad_numbers_and_names_in_a_release(fields: dict[str, str], parts: tuple[str, ...],
                                            tmp_path: Path, run_cli: CliRunner) -> None:
    path = write_release(tmp_path, **fields)
    for command in (("reconstruct", path), ("reconstruct", path, "--method", "ls")):
        assert_one_line_error(run_cli(*command), *parts)


# --------------------------------------------------------------------------- public tables


@pytest.mark.parametrize(("cells", "parts"), [
    ("1\ninf\n", ("public.csv:3", "'id'", "not a finite number")),
    ("1\n-inf\n", ("public.csv:3", "not a finite number")),
    ("1\nnan\n", ("public.csv:3", "'id'")),
    ("1\n100000000000000000000\n", ("public.csv:3", "supported range")),
])
def test_bad_numbers_in_a_public_table(cells: str, parts: tuple[str, ...], tmp_path: Path,
                                       run_cli: CliRunner) -> None:
    path = write_public_release(tmp_path, "id\n" + cells, id_type="real")
    for method in ("exact", "ls"):
        assert_one_line_error(run_cli("reconstruct", path, "--method", method), *parts)


# --------------------------------------------------------------------------- audit-stream answers


@pytest.mark.parametrize(("answer", "named"), [
    ("1e999999", "out of range"),
    ("1e-999999999", "out of range"),
    ("0e99999999999999999999", "out of range"),
    ("1" + "0" * 400, "out of range"),
    ("1" * 5000, "not a number"),
    ("nan", "not a number"),
    ("inf", "not a number"),
])
def test_absurd_answers_are_one_line_errors(audit_schema: Path, answer: str, named: str) -> None:
    rel = load_release(audit_schema)
    start = time.perf_counter()
    with pytest.raises(StatreconError, match=named) as err:
        parse_line(f"q: {SUM_ALL} ; {answer}", 4, "s.txt:4", rel.schema)
    assert time.perf_counter() - start < 0.5  # no 10**999999999 computed on the way
    assert str(err.value).startswith("s.txt:4: ") and len(str(err.value)) < 200


@pytest.mark.parametrize(("line", "named"), [
    ('{"sql": "' + SUM_ALL + '", "value": 1e999}', "'value' must be a number"),
    ('{"sql": "' + SUM_ALL + '", "value": 1' + "0" * 400 + "}", "out of range"),
    ('{"sql": "' + SUM_ALL + '", "value": 1' + "0" * 5000 + "}", "malformed JSON"),
    ('{"sql": ' + "[" * 100_000, "malformed JSON"),
])
def test_absurd_json_lines_are_one_line_errors(audit_schema: Path, line: str, named: str) -> None:
    rel = load_release(audit_schema)
    with pytest.raises(StatreconError, match=named) as err:
        parse_line(line, 2, "s.txt:2", rel.schema)
    assert str(err.value).startswith("s.txt:2: ") and len(str(err.value)) < 200


def test_cli_huge_answer_names_the_line(audit_schema: Path, tmp_path: Path) -> None:
    path = tmp_path / "stream.txt"
    path.write_text(f"q1: {SUM_ALL} ; 32.1\nq2: {SUM_ALL} WHERE id = 1 ; 1e999999\n",
                    encoding="utf-8")
    proc = audit_cli(audit_schema, "--input", path)
    assert_user_error(proc, f"{path}:2", "'1e999999'", "out of range")
    assert "accepted     q1" in proc.stdout


# --------------------------------------------------------------------------- census


def _with_value(release: Path, out: Path, value: object, kind: pa.DataType) -> Path:
    """The release with its first P1 value replaced (the value column cast to ``kind``)."""
    table = pq.read_table(release)
    values = table["value"].to_pylist()
    first = table["cell"].to_pylist().index("P0010001")
    values[first] = value
    column = pa.array([v if i == first else kind.to_pandas_dtype()(v)
                       for i, v in enumerate(values)], kind)
    edited = table.set_column(table.schema.get_field_index("value"), "value", column)
    pq.write_table(edited.replace_schema_metadata(table.schema.metadata), out)
    return out


@pytest.mark.parametrize("value, kind, shown", [
    (float("inf"), pa.float64(), "inf"),
    (1e30, pa.float64(), "1e+30"),
    (10**9, pa.int64(), "1000000000"),
    (12.5, pa.float64(), "12.5"),
])
def test_release_values_beyond_a_block_are_one_line(census_release_file: Path, tmp_path: Path,
                                                    value: object, kind: pa.DataType,
                                                    shown: str) -> None:
    """inf and 1e30 were DuckDB cast tracebacks, 10**9 a 7 GiB MemoryError."""
    bad = _with_value(census_release_file, tmp_path / "bad.parquet", value, kind)
    t0 = time.monotonic()
    proc = statrecon("census", "reconstruct", bad, "--out", tmp_path / "r.parquet",
                     "--workers", "1")
    line = assert_user_error(proc, str(bad), TRACT_A + "1000", "P0010001", shown)
    assert time.monotonic() - t0 < 30
    if value != 12.5 and value != float("inf"):
        assert f"{MAX_VALUE['block']:,}" in line
    assert not (tmp_path / "r.parquet").exists()
    assert not (tmp_path / "r.parquet.parts").exists()


def test_unwritable_out_fails_before_any_tract_is_solved(census_release_file: Path,
                                                         tmp_path: Path) -> None:
    """Was: the first tract solved, then a traceback when its part could not be written."""
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    out = blocker / "r.parquet"
    assert_user_error(statrecon("census", "reconstruct", census_release_file, "--out", out),
                      str(out))
    assert_user_error(statrecon("census", "tabulate", "--persons",
                                write_persons(tmp_path / "p.csv", [TRACT_A + "1000"]),
                                "--out", out),
                      str(out))
    assert_user_error(statrecon("census", "block-release", census_release_file, "--block",
                                TRACT_A + "1000", "--out", tmp_path), str(tmp_path), "folder")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_is_refused_before_work(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(StatreconError, match="cannot write there"):
            check_writable(folder / "r.parquet", "--out")
    finally:
        folder.chmod(0o700)


def test_check_writable_and_atomic_outputs_leave_nothing_behind(tmp_path: Path) -> None:
    check_writable(tmp_path / "out.csv", "--out")
    assert list(tmp_path.iterdir()) == []
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    with pytest.raises(StatreconError, match=r"b\.csv: disk full"), \
            atomic_outputs(first, second) as (tmp_a, tmp_b):
        tmp_a.write_text("written")
        raise StatreconError(f"{tmp_b}: disk full")  # the message names the final file
    assert list(tmp_path.iterdir()) == []  # neither output, no temporaries
    with atomic_outputs(first, second) as (tmp_a, tmp_b):
        tmp_a.write_text("a")
        tmp_b.write_text("b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "b.csv"]


def test_write_atomically_names_the_file_and_keeps_the_usual_mode(tmp_path: Path) -> None:
    def full_disk(tmp: Path) -> None:
        tmp.write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(StatreconError, match=r"out\.txt: cannot write: No space left"):
        write_atomically(tmp_path / "out.txt", full_disk)
    assert list(tmp_path.iterdir()) == []  # no half file, no temporary
    written = write_atomically(tmp_path / "out.txt", lambda tmp: tmp.write_text("whole"))
    plain = tmp_path / "plain.txt"
    plain.write_text("whole")  # what open() gives under this umask, not mkstemp's 0600
    assert written.read_text() == "whole"
    assert written.stat().st_mode == plain.stat().st_mode


# --------------------------------------------------------------------------- claims


@pytest.mark.parametrize("value, shown", [
    (str(10**30), "1000000000000000000000000000000"), ("1e30", "1e30"), ("-1", "-1"),
    ("12.5", "12.5"), ("", "''"), ("٣", "٣"), (str(MAX_BLOCK_UNITS + 1), "4,096"),
])
def test_bad_counts_are_named(claims_tables: Path, tmp_path: Path, value: str, shown: str) -> None:
    """10**30 was an OverflowError traceback; '٣' (an Arabic-Indic 3) passed as 3."""
    rows = read_claims_rows(claims_tables)
    rows[3]["value"] = value
    bad = write_claims_rows(rows, tmp_path / "bad.csv")
    with pytest.raises(StatreconError) as e:
        read_tables(bad)
    message = str(e.value)
    for part in (str(bad), "line 5", rows[3]["cell"], shown):
        assert part in message, message


def test_huge_count_from_the_command_line(claims_tables: Path, tmp_path: Path) -> None:
    rows = read_claims_rows(claims_tables)
    rows[0]["value"] = str(10**30)
    bad = write_claims_rows(rows, tmp_path / "bad.csv")
    assert_user_error(statrecon("claims", "verify", "--tables", bad), str(bad), "line 2",
                      "at most 4,095")


def test_bad_block_ids_are_named(claims_tables: Path, tmp_path: Path) -> None:
    rows = read_claims_rows(claims_tables)
    rows[0]["block"] = "01003010100100١"
    bad = write_claims_rows(rows, tmp_path / "bad.csv")
    with pytest.raises(StatreconError, match="line 2: block id"):
        read_tables(bad)


def test_unwritable_outputs_fail_before_any_work(tmp_path: Path) -> None:
    """tabulate, block-release and experiment were tracebacks after the work was done."""
    path = households(tmp_path)
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    out = blocker / "out.csv"
    assert_user_error(statrecon("claims", "tabulate", "--households", path, "--out", out),
                      str(out))
    assert_user_error(statrecon("claims", "block-release", "--households", path, "--block",
                                BLOCK_A, "--out", out), str(out))
    t0 = time.monotonic()
    assert_user_error(statrecon("claims", "experiment", "--out", blocker, "--blocks", "1"),
                      str(blocker), "not a folder")
    assert time.monotonic() - t0 < 30
    assert blocker.read_text() == "not a folder"


def test_claims_experiment_with_a_broken_run_file(tmp_path: Path, run_cli: CliRunner) -> None:
    """A run.json that is not JSON (edited by hand, or cut short) was a JSONDecodeError."""
    (tmp_path / "run.json").write_text("{broken", encoding="utf-8")
    assert_one_line_error(run_cli("claims", "experiment", "--blocks", "1", "--out", tmp_path,
                                  "--workers", "1", "--quiet"),
                          "holds results of a different run", "use another --out")


def test_tabulate_checks_its_output_before_reading_anything(tmp_path: Path,
                                                            run_cli: CliRunner) -> None:
    """The output is checked first: a bad --out is named even when the inputs are missing."""
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    assert_one_line_error(run_cli("tabulate", "--microdata", tmp_path / "missing.csv",
                                  "--release", EXAMPLES / "block.yaml", "--out",
                                  blocker / "out.yaml"), str(blocker / "out.yaml"))
    assert blocker.read_text() == "not a folder"


# --------------------------------------------------------------------------- command-line options


def experiment_cli() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(experiment_app, name="experiment")
    return app


@pytest.mark.parametrize(("args", "part"), [
    (["diffix", "--primes", "4"], "got 4"),
    (["diffix", "--primes", "2,3,1"], "got 1"),
    (["diffix", "--primes", "-3"], "got -3"),
    (["diffix", "--primes", "3,3"], "named twice"),
    (["diffix", "--primes", "1" + "0" * 30], "prime numbers"),
    (["diffix", "--offsets", "nan"], "--offsets"),
    (["diffix", "--offsets", "-1"], "--offsets"),
    (["diffix", "--exponents", "inf"], "--exponents"),
    (["diffix", "--exponents", "0"], "--exponents"),
    (["diffix", "--base-sigma", "nan"], "base_sigma"),
    (["diffix", "--time-limit", "nan"], "--time-limit"),
    (["diffix", "--ids", "100000000"], "--ids 100000000"),
    (["dinur-nissim", "--sigmas", "nan"], "sigmas"),
    (["dinur-nissim", "--c", "nan"], "c must be"),
    (["dinur-nissim", "--c", "-2"], "c must be"),
    (["dinur-nissim", "--n", "-5"], "n must be"),
    (["dinur-nissim", "--n", "1000000"], "matrix entries"),
    (["dinur-nissim", "--n", "30", "--c", "1e9"], "matrix entries"),
    (["dinur-nissim", "--runtime", "--runtime-ns", "100,100000"], "matrix entries"),
    (["dinur-nissim", "--exhaustive-alpha", "nan"], "--exhaustive-alpha"),
    (["dinur-nissim", "--time-limit", "-1"], "--time-limit"),
])
def test_experiment_options_that_make_no_sense(args: list[str], part: str) -> None:
    result = TyperRunner().invoke(experiment_cli(), ["experiment", *args])
    assert isinstance(result.exception, StatreconError), result.output
    message = str(result.exception)
    assert part in message and "\n" not in message


@pytest.mark.parametrize("args", [
    ["claims", "experiment", "--out", "never", "--time-limit", "nan"],
    ["claims", "verify", "--tables", "never.csv", "--time-limit", "nan"],
])
def test_claims_time_limit_nan_is_refused(tmp_path: Path, args: list[str]) -> None:
    from statrecon.cli import app

    args = [str(tmp_path / a) if a.startswith("never") else a for a in args]
    result = TyperRunner().invoke(app, args)
    assert isinstance(result.exception, StatreconError), result.output
    assert "--time-limit nan" in str(result.exception)
    assert list(tmp_path.iterdir()) == []  # refused before anything is written


@pytest.mark.parametrize("command", ["diffix", "dinur-nissim"])
def test_negative_seed_is_refused_by_the_option(command: str) -> None:
    result = TyperRunner().invoke(experiment_cli(), ["experiment", command, "--seed", "-1"])
    assert result.exit_code == 2 and "--seed" in result.output  # typer's usage error


@pytest.mark.parametrize("args", [
    ["reconstruct", "examples/hospital.yaml", "--method", "sgd"],
    ["census", "compare", "--truth", "t.csv", "--recon", "r.parquet"],
    ["claims", "experiment", "--out", "never-written"],
])
def test_negative_seeds_are_refused(args: list[str]) -> None:
    """numpy refuses negative seeds with a message naming another option, or a traceback."""
    from statrecon.cli import app

    result = TyperRunner().invoke(app, [*args, "--seed", "-1"])
    assert result.exit_code == 2 and "--seed" in result.output, result.output
    assert not Path("never-written").exists()  # refused before the run folder is made
