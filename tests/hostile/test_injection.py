"""Issue 12, "SQL injection": release files, public tables, audit streams and census and claims
inputs from strangers cannot reach the file system, the network or an extension through SQL.

Reproductions held here: hostile table and column names, statistic SQL and constraints; hostile
audit-stream lines; public paths outside the release folder; census persons values, file names
and block ids; claims tables and households values; a census release whose path holds a quote
(bound, not spliced) or whose cell definitions smuggle SQL (refused); the hardened DuckDB
connection and the identifier checks.

The corpus is run through the real command line (in-process, through ``statrecon.cli.main``, so
it stays fast) against ``tabulate``, ``reconstruct`` (exact and linear engines), ``audit-stream``
and the census and claims commands. Each hostile input must exit 1 with one line, create no file
outside the run's own output, never read the planted secret file (its contents never appear, its
access time does not move) and never touch DuckDB's extension folder.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from conftest import CliRunner, assert_user_error, json_of, statrecon

from statrecon.census.persons.release import METADATA_KEY
from statrecon.db import check_identifier, hardened, quote_identifier
from statrecon.errors import StatreconError

SECRET_TOKEN = "TOPSECRET-5d41402abc4b2a76"


# ----------------------------------------------------------------------------- the sandbox


class Sandbox:
    """A working folder with a clean release, microdata, a public table and a planted secret."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.work = root / "work"
        self.work.mkdir()
        self.home = root / "home"  # DuckDB keeps extensions under $HOME/.duckdb
        self.home.mkdir()
        self.secret = root / "secret.csv"
        self.secret.write_text(f"token\n{SECRET_TOKEN}\n", encoding="utf-8")
        old = time.time() - 10 * 86400
        os.utime(self.secret, (old, time.time()))  # atime < mtime: any read moves atime
        self.atime = self.secret.stat().st_atime
        (self.work / "public.csv").write_text("id\n1\n2\n3\n", encoding="utf-8")
        (self.work / "micro.csv").write_text("id,age\n1,3\n2,5\n3,7\n", encoding="utf-8")

    def release(self, *, table: str = "t", columns: dict[str, Any] | None = None,
                statistics: list[dict[str, Any]] | None = None,
                constraints: list[str] | None = None, public: str = "public.csv",
                name: str = "release.yaml") -> Path:
        data: dict[str, Any] = {
            "version": 1, "table": table, "public": public,
            "columns": columns or {"id": {"type": "integer", "known": True},
                                   "age": {"type": "integer", "min": 0, "max": 10}},
            "statistics": statistics if statistics is not None else [
                {"id": "s1", "sql": f"SELECT SUM(age) FROM {table} WHERE id = 1", "value": 3},
                {"id": "s2", "sql": f"SELECT SUM(age) FROM {table} WHERE id > 1", "value": 12},
            ],
        }
        if constraints:
            data["constraints"] = constraints
        path = self.work / name
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return path

    def files(self) -> set[Path]:
        return {p for p in self.root.rglob("*")}


def assert_refused(box: Sandbox, before: set[Path], code: int, out: str, err: str,
                   allowed: set[Path] | None = None) -> None:
    """Exit 1, one line, nothing created but ``allowed``, the secret neither read nor shown."""
    assert code == 1, (code, out, err)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    created = box.files() - before - (allowed or set())
    assert not created, created
    assert SECRET_TOKEN not in out + err
    assert not (box.home / ".duckdb").exists(), "an extension install or load was attempted"
    assert box.secret.stat().st_atime == box.atime, "the secret file was read"


# --------------------------------------------------------------------------- the corpus

EXFIL = "COPY (SELECT * FROM read_csv('{secret}', header=false)) TO '{out}'"

TABLE_NAMES = [
    'x" AS SELECT 1; ' + EXFIL + '; CREATE TEMP VIEW "y',
    "t; ATTACH '{out}' AS evil; CREATE TABLE evil.copy AS SELECT * FROM __microdata",
    "t; INSTALL httpfs; LOAD httpfs",
    't"--',
    "",
    "read_csv('{secret}')",
    "täble",
    "a" * 200,
]

COLUMN_NAMES = [
    'age" INTEGER); ' + EXFIL + '; --',
    "age; DROP TABLE t",
    "age--",
    "1age",
]

STATISTIC_SQL = [
    "SELECT COUNT(*) FROM t; " + EXFIL,
    "SELECT COUNT(*) FROM t WHERE id = 1; INSTALL httpfs",
    "SELECT COUNT(*) FROM read_csv('{secret}')",
    "SELECT COUNT(*) FROM '{secret}'",
    "SELECT COUNT(*) FROM t WHERE id IN (SELECT 1 FROM read_csv('{secret}'))",
    "SELECT COUNT(*) FROM t WHERE id = (SELECT COUNT(*) FROM read_csv('{secret}'))",
    "SELECT COUNT(*) FROM t WHERE read_text('{secret}') = 'x'",
    "SELECT COUNT(*) FROM t WHERE getenv('HOME') = 'x'",
    "SELECT COUNT(*) FROM t WHERE id = 1 UNION SELECT COUNT(*) FROM read_csv('{secret}')",
    "WITH s AS (SELECT * FROM read_csv('{secret}')) SELECT COUNT(*) FROM t",
    "SELECT COUNT(*) FROM t JOIN read_csv('{secret}') ON TRUE",
    "SELECT MAX(age) FROM t AS x(age, id)",
    "SELECT COUNT(*) FROM t TABLESAMPLE 50%",
    "SELECT COUNT(*) FROM t AT (VERSION => 1)",
    "SELECT COUNT(*) FROM main.t",
    EXFIL,
    "ATTACH '{out}' AS evil",
    "INSTALL httpfs",
    "SELECT COUNT(*) FROM t WHERE id = 1 /* x */; " + EXFIL,
    "SELECT COUNT(*) FROM t WHERE id = CAST(read_blob('{secret}') AS INTEGER)",
]

CONSTRAINTS = [
    "age >= 0; " + EXFIL,
    "age >= (SELECT COUNT(*) FROM read_csv('{secret}'))",
    "age >= 0) OR (1 = 1",
    "age IN (SELECT 1)",
]


def _fill(text: str, box: Sandbox) -> str:
    return text.replace("{secret}", str(box.secret)).replace("{out}", str(box.root / "out.csv"))


def _commands(release: Path) -> list[list[str]]:
    return [
        ["tabulate", "--microdata", "micro.csv", "--release", str(release), "--out",
         "filled.yaml"],
        ["reconstruct", str(release), "--method", "exact"],
        ["reconstruct", str(release), "--method", "ls"],
        ["reconstruct", str(release), "--json"],
    ]


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    sandbox = Sandbox(tmp_path)
    monkeypatch.setenv("HOME", str(sandbox.home))  # DuckDB's extension folder goes there
    return sandbox


def test_the_clean_release_runs(box: Sandbox, run_cli: CliRunner) -> None:
    """The corpus only means something if the same files without the attack succeed."""
    release = box.release()
    for args in _commands(release):
        code, out, err = run_cli(*args, cwd=box.work)
        assert code == 0, (args, out, err)
    assert not (box.home / ".duckdb").exists()
    assert box.secret.stat().st_atime == box.atime


@pytest.mark.parametrize("table", TABLE_NAMES)
def test_table_name_injection(table: str, box: Sandbox, run_cli: CliRunner) -> None:
    name = _fill(table, box)
    release = box.release(table=name, statistics=[
        {"id": "s1", "sql": 'SELECT SUM(age) FROM "' + name.replace('"', '""') + '"',
         "value": 3}])
    before = box.files()
    for args in _commands(release):
        assert_refused(box, before, *run_cli(*args, cwd=box.work))


@pytest.mark.parametrize("column", COLUMN_NAMES)
def test_column_name_injection(column: str, box: Sandbox, run_cli: CliRunner) -> None:
    name = _fill(column, box)
    release = box.release(columns={"id": {"type": "integer", "known": True},
                                   name: {"type": "integer", "min": 0, "max": 10}},
                          statistics=[{"id": "s1", "sql": "SELECT COUNT(*) FROM t", "value": 3}])
    before = box.files()
    for args in _commands(release):
        assert_refused(box, before, *run_cli(*args, cwd=box.work))


@pytest.mark.parametrize("sql", STATISTIC_SQL)
def test_statistic_sql_injection(sql: str, box: Sandbox, run_cli: CliRunner) -> None:
    release = box.release(statistics=[
        {"id": "s1", "sql": "SELECT SUM(age) FROM t WHERE id = 1", "value": 3},
        {"id": "evil", "sql": _fill(sql, box), "value": 3}])
    before = box.files()
    for args in _commands(release):
        code, out, err = run_cli(*args, cwd=box.work)
        assert_refused(box, before, code, out, err)
        assert "evil" in err


@pytest.mark.parametrize("constraint", CONSTRAINTS)
def test_constraint_injection(constraint: str, box: Sandbox,
                              run_cli: CliRunner) -> None:
    release = box.release(constraints=[_fill(constraint, box)])
    before = box.files()
    for args in _commands(release):
        code, out, err = run_cli(*args, cwd=box.work)
        assert_refused(box, before, code, out, err)
        assert "constraint" in err


@pytest.mark.parametrize("line", [
    "evil: " + STATISTIC_SQL[0] + " ; 3",
    "evil: SELECT SUM(age) FROM t WHERE id IN (SELECT 1 FROM read_csv('{secret}')) ; 3",
    "evil: SELECT SUM(age) FROM read_csv('{secret}') ; 3",
    "evil: SELECT SUM(age) FROM t WHERE read_text('{secret}') = 'x' ; 3",
    '{"id": "evil", "sql": "SELECT SUM(age) FROM t; INSTALL httpfs", "value": 3}',
    "evil: SELECT MAX(age) FROM t AS x(age, id) ; 3",
    "evil: ATTACH '{out}' AS x ; 3",
])
def test_audit_stream_injection(line: str, box: Sandbox, run_cli: CliRunner) -> None:
    schema = box.release(statistics=[])
    stream = box.work / "stream.txt"
    stream.write_text("ok: SELECT SUM(age) FROM t WHERE id = 1 ; 3\n" + _fill(line, box) + "\n",
                      encoding="utf-8")
    before = box.files()
    code, out, err = run_cli("audit-stream", str(schema), "--input", str(stream), "--json",
                             cwd=box.work)
    assert_refused(box, before, code, out, err)
    assert "stream.txt:2" in err


@pytest.mark.parametrize("public", [
    "{secret}", "../secret.csv", "./../secret.csv", "sub/../../secret.csv", "link.csv", " ",
])
def test_public_path_must_stay_in_the_release_folder(
        public: str, box: Sandbox, run_cli: CliRunner) -> None:
    (box.work / "link.csv").symlink_to(box.secret)
    release = box.release(public=_fill(public, box))
    before = box.files()
    for args in _commands(release)[1:]:
        code, out, err = run_cli(*args, cwd=box.work)
        assert_refused(box, before, code, out, err)
        assert "public" in err


def test_public_outside_the_folder_is_allowed_on_the_command_line(
        box: Sandbox, run_cli: CliRunner) -> None:
    outside = box.root / "roster.csv"
    outside.write_text("id\n1\n2\n3\n", encoding="utf-8")
    release = box.release(public="../roster.csv")
    code, _, err = run_cli("reconstruct", str(release), "--json", cwd=box.work)
    assert code == 1 and "--public" in err
    code, _, err = run_cli("reconstruct", str(release), "--public", str(outside), "--json",
                           cwd=box.work)
    assert code == 0, err


def test_public_errors_do_not_echo_undeclared_columns(
        box: Sandbox, run_cli: CliRunner) -> None:
    """A public table may hold columns the release does not declare (say, names); a message
    about the table names the bad cell of a declared column, never the other cells."""
    (box.work / "public.csv").write_text(
        f"id,name\n1,{SECRET_TOKEN}\nx,{SECRET_TOKEN}\n3,{SECRET_TOKEN}\n", encoding="utf-8")
    release = box.release()
    for args in _commands(release)[1:]:
        code, out, err = run_cli(*args, cwd=box.work)
        assert code == 1, err
        assert "public.csv:3" in err and "'x'" in err
        assert SECRET_TOKEN not in out + err


def test_statistics_are_tabulated_as_the_engines_read_them(
        box: Sandbox, run_cli: CliRunner) -> None:
    """tabulate runs the re-generated SQL: odd spelling and casing change nothing."""
    release = box.release(statistics=[
        {"id": "m", "sql": "select   max(AGE) from T where ID >= 2 -- trailing comment"},
        {"id": "n", "sql": "SELECT count(age) FROM t WHERE (id = 1 OR id = 3)"}])
    code, _, err = run_cli("tabulate", "--microdata", "micro.csv", "--release", str(release),
                            "--out", "filled.yaml", cwd=box.work)
    assert code == 0, err
    filled = yaml.safe_load((box.work / "filled.yaml").read_text(encoding="utf-8"))
    values = {s["id"]: s["value"] for s in filled["statistics"]}
    assert values == {"m": 7, "n": 2}


# ------------------------------------------------------------- defence in depth: DuckDB


@pytest.mark.parametrize("sql", [
    "SELECT * FROM read_csv('{secret}')",
    "COPY (SELECT 1) TO '{out}'",
    "ATTACH '{out}' AS evil",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "SET lock_configuration = false",
    "SELECT * FROM 'https://example.invalid/a.csv'",
])
def test_hardened_connection_refuses_files_network_and_extensions(sql: str,
                                                                  box: Sandbox) -> None:
    import duckdb
    import pandas as pd

    con = hardened({"t": pd.DataFrame({"a": [1, 2]})})
    before = box.files()
    with pytest.raises(duckdb.Error):
        con.execute(_fill(sql, box))
    assert con.execute("SELECT SUM(a) FROM t").fetchone() == (3,)  # its own data still works
    assert box.files() == before
    assert box.secret.stat().st_atime == box.atime
    assert not (box.home / ".duckdb").exists()


@pytest.mark.parametrize("name", ['a"b', "a b", "1a", "", "a;b", "ä", "a" * 64, "x'--"])
def test_identifiers_are_checked(name: str) -> None:
    with pytest.raises(StatreconError):
        check_identifier(name)


def test_identifiers_are_quoted_by_sqlglot() -> None:
    assert quote_identifier("Age_2") == '"Age_2"'
    assert check_identifier("a" * 63) == "a" * 63


# ------------------------------------------------------------------ census and claims


HOSTILE_TEXT = [
    "x'); " + EXFIL + "; --",
    "060375324001066' OR '1'='1",
    "male\"; INSTALL httpfs; --",
    "ATTACH '{out}' AS evil",
]


def _persons(box: Sandbox, name: str = "persons.csv") -> Path:
    source = Path(__file__).resolve().parents[2] / "examples" / "census" / "persons_3tracts.csv"
    lines = source.read_text(encoding="utf-8").splitlines()[:40]
    path = box.work / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("payload", HOSTILE_TEXT)
@pytest.mark.parametrize("column", ["block_geoid", "sex", "age", "white"])
def test_census_persons_values_are_data(payload: str, column: str, box: Sandbox,
                                        run_cli: CliRunner) -> None:
    """A persons file whose cells are SQL: refused as a bad value, never run."""
    import pandas as pd

    path = _persons(box)
    frame = pd.read_csv(path, dtype=str)
    frame.loc[3, column] = _fill(payload, box)
    frame.to_csv(path, index=False)
    before = box.files()
    code, out, err = run_cli("census", "tabulate", "--persons", str(path), "--out",
                              "release.parquet", cwd=box.work)
    assert_refused(box, before, code, out, err)
    assert "line 5" in err


def test_census_paths_with_sql_in_their_names_are_bound(
        box: Sandbox, run_cli: CliRunner) -> None:
    """File names are bound parameters: a name full of quotes and SQL is just a name."""
    name = "p'); COPY (SELECT 1) TO 'evil.csv'; --.csv"
    path = _persons(box, name)
    out_name = "r'); COPY (SELECT 1) TO 'evil2.csv'; --.parquet"
    before = box.files()
    code, _, err = run_cli("census", "tabulate", "--persons", str(path), "--out", out_name,
                           cwd=box.work)
    assert code == 0, err
    recon = "c'); ATTACH 'evil.db' AS x; --.parquet"
    code, _, err = run_cli("census", "reconstruct", out_name, "--out", recon, "--workers", "1",
                            "--quiet", cwd=box.work)
    assert code == 0, err
    code, _, err = run_cli("census", "compare", "--truth", str(path), "--recon", recon,
                            "--json", cwd=box.work)
    assert code == 0, err
    created = {p.name for p in box.files() - before}
    assert created == {out_name, recon}, created
    assert not (box.home / ".duckdb").exists()


@pytest.mark.parametrize("payload", HOSTILE_TEXT)
def test_census_block_release_block_is_checked(payload: str, box: Sandbox,
                                               run_cli: CliRunner) -> None:
    path = _persons(box)
    code, _, err = run_cli("census", "tabulate", "--persons", str(path), "--out", "r.parquet",
                           cwd=box.work)
    assert code == 0, err
    before = box.files()
    code, out, err = run_cli("census", "block-release", "r.parquet", "--block",
                              _fill(payload, box), "--out", "b.yaml", cwd=box.work)
    assert_refused(box, before, code, out, err)


@pytest.mark.parametrize("payload", HOSTILE_TEXT)
@pytest.mark.parametrize("column", ["block", "cell", "value"])
def test_claims_tables_values_are_data(payload: str, column: str, box: Sandbox,
                                       run_cli: CliRunner) -> None:
    from conftest import households

    units = households(box.work)
    code, _, err = run_cli("claims", "tabulate", "--households", str(units), "--out",
                            "tables.csv", cwd=box.work)
    assert code == 0, err
    tables = box.work / "tables.csv"
    lines = tables.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    cells = lines[1].split(",")
    cells[header.index(column)] = '"' + _fill(payload, box).replace('"', '""') + '"'
    lines[1] = ",".join(cells)
    tables.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = box.files()
    code, out, err = run_cli("claims", "verify", "--tables", str(tables), "--k", "5",
                              "--json", "--quiet", cwd=box.work)
    assert_refused(box, before, code, out, err)
    assert "tables.csv" in err


@pytest.mark.parametrize("payload", HOSTILE_TEXT)
@pytest.mark.parametrize("command", ["block-release", "check-households", "tabulate"])
def test_claims_households_values_are_data(payload: str, command: str, box: Sandbox,
                                           run_cli: CliRunner) -> None:
    import pandas as pd
    from conftest import BLOCK_A, households

    units = households(box.work)
    frame = pd.read_csv(units, dtype=str, keep_default_na=False)
    frame.loc[1, "tenure" if "tenure" in frame.columns else frame.columns[-1]] = _fill(
        payload, box)
    frame.to_csv(units, index=False)
    args = {"block-release": ["--households", str(units), "--block", BLOCK_A, "--out",
                              "b.yaml"],
            "check-households": [str(units)],
            "tabulate": ["--households", str(units), "--out", "t.csv"]}[command]
    before = box.files()
    code, out, err = run_cli("claims", command, *args, cwd=box.work)
    assert_refused(box, before, code, out, err)
    assert "blocks.csv" in err


# --------------------------------------------------------------------------- census release files


def test_release_path_is_bound_not_spliced(census_release_file: Path, tmp_path: Path) -> None:
    """A file name with a quote reads (the path is a parameter, not SQL text)."""
    proc = statrecon("census", "reconstruct", census_release_file, "--out", tmp_path / "r.parquet",
                     "--workers", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json_of(proc)["persons"] == 4


def test_tampered_cell_definitions_are_refused(census_release_file: Path, tmp_path: Path) -> None:
    """Definitions come from the file's metadata: a condition smuggling SQL is refused."""
    table = pq.read_table(census_release_file)
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    meta["cells"][0]["sex"] = "female' OR 1=1 --"
    bad = tmp_path / "bad.parquet"
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(meta)}), bad)
    assert_user_error(statrecon("census", "reconstruct", bad, "--out", tmp_path / "r.parquet"),
                      str(bad), "cell definitions", "sex")


def test_oversized_cell_definitions_are_refused_before_decoding(census_release_file: Path,
                                                                tmp_path: Path) -> None:
    """Metadata past the limit (three times what MAX_CELLS definitions take) is one line,
    never decoded."""
    from statrecon.inputs import MAX_METADATA

    table = pq.read_table(census_release_file)
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    meta["padding"] = "x" * MAX_METADATA
    bad = tmp_path / "big.parquet"
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(meta)}), bad)
    assert_user_error(statrecon("census", "reconstruct", bad, "--out", tmp_path / "r.parquet"),
                      str(bad), "bytes of census release metadata")


@pytest.mark.parametrize("metadata", ["{not json", "[1, 2]", "padding"])
def test_a_reconstruction_with_bad_metadata_is_one_line(census_release_file: Path,
                                                        tmp_path: Path,
                                                        metadata: str) -> None:
    """``census compare --recon``: a reconstruction whose metadata is not JSON, not an
    object, or past the size limit (refused before decoding) is a user error naming it."""
    from statrecon.inputs import MAX_METADATA
    from statrecon.runs.stores import META_KEY as RECON_KEY

    recon = tmp_path / "r.parquet"
    assert statrecon("census", "reconstruct", census_release_file, "--out", recon,
                     "--workers", "1").returncode == 0
    table = pq.read_table(recon)
    text = (json.dumps({"padding": "x" * MAX_METADATA}) if metadata == "padding"
            else metadata)
    bad = tmp_path / "bad.parquet"
    pq.write_table(table.replace_schema_metadata({RECON_KEY: text}), bad)
    truth = census_release_file.parent / "p.csv"  # the persons it was tabulated from
    assert statrecon("census", "compare", "--truth", truth, "--recon", recon).returncode == 0
    proc = statrecon("census", "compare", "--truth", truth, "--recon", bad)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and str(bad) in " ".join(proc.stderr.split())


@pytest.mark.parametrize("metadata", ['{"tracts": 5}', '{"tracts": {"t": 1}}',
                                      '{"tracts": {"t": {"status": 3}}}',
                                      "[" * 100_000 + "]" * 100_000])
def test_a_resumed_reconstruction_reads_its_output_through_the_gate(
        census_release_file: Path, tmp_path: Path, metadata: str) -> None:
    """A rerun reads what ``--out`` and its parts hold: tract records of another shape, or
    metadata nested past what JSON decoding allows, are one line naming the file."""
    from statrecon.runs.stores import META_KEY as RECON_KEY

    recon = tmp_path / "r.parquet"
    assert statrecon("census", "reconstruct", census_release_file, "--out", recon,
                     "--workers", "1").returncode == 0
    table = pq.read_table(recon)
    pq.write_table(table.replace_schema_metadata({RECON_KEY: metadata}), recon)
    proc = statrecon("census", "reconstruct", census_release_file, "--out", recon,
                     "--workers", "1")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert str(recon) in " ".join(proc.stderr.split())


def test_hardened_connection_draws_no_progress_bar_of_its_own() -> None:
    """DuckDB's bar would write to the terminal over statrecon's own progress."""
    con = hardened()
    assert con.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)
