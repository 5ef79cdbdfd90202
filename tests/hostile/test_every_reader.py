"""The shared hostile-input harness (issue 27): every reader of ``readers.READERS`` against
every class of danger its hooks let us plant: a file named by a file that links out of the
folder (to a FIFO that would block a reader for ever), ``..``, an absolute path; a huge
number, 5,001 digits, NaN and infinity; a byte-order mark; control characters; an empty
file; a duplicate key, column or cell; an output that is an input.

Whatever the case, the command ends with an exit code of 0-4, no traceback, and exactly one
line on stderr when it refuses (exit 1); the cases that must be refused are refused, and an
input is never changed. ``test_every_reader_module_is_registered`` keeps the registry whole.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ROOT, CliRunner
from readers import OWN_FILES, READERS, Reader

PACKAGE = ROOT / "src" / "statrecon"
Case = Callable[[Reader, Path], tuple[list[str], str | None]]


def check(result: tuple[int, str, str], must_refuse: bool, *words: str) -> None:
    code, out, err = result
    assert "Traceback" not in out + err, err
    assert code in (0, 1, 2, 3, 4), (code, err)
    if code == 1:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), err
        for word in words:
            assert word in lines[0], (word, lines[0])
    assert code == 1 or not must_refuse, (code, out, err)


def prepared(reader: Reader, tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "job"
    folder.mkdir()
    return reader.build(folder), tmp_path / "out" / f"o{_suffix(reader)}"


def _suffix(reader: Reader) -> str:
    argv = reader.argv(Path("x"), Path("o"))
    if argv[:2] == ["census", "tabulate"]:
        return ".parquet"
    if argv[0] in ("tabulate",) or argv[:2] == ["census", "block-release"]:
        return ".yaml"
    return ".csv"


def run(run_cli: CliRunner, reader: Reader, main: Path, out: Path) -> tuple[int, str, str]:
    out.parent.mkdir(exist_ok=True)
    return run_cli(*reader.argv(main, out))


def applicable(hook: str) -> list[Reader]:
    return [r for r in READERS if getattr(r, hook)]


# ----------------------------------------------------------------------------- baseline


@pytest.mark.parametrize("reader", READERS, ids=str)
def test_each_reader_reads_its_valid_input(run_cli: CliRunner, tmp_path: Path,
                                           reader: Reader) -> None:
    main, out = prepared(reader, tmp_path)
    code, _, err = run(run_cli, reader, main, out)
    assert code in (0, 3, 4), err


# ------------------------------------------------------------------ files named by files


@pytest.mark.parametrize("reader", applicable("names"), ids=str)
@pytest.mark.parametrize("case", ["link out", "dot-dot", "absolute"])
def test_a_named_file_never_leaves_the_folder(run_cli: CliRunner, tmp_path: Path,
                                              reader: Reader, case: str) -> None:
    main, out = prepared(reader, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.mkfifo(outside / "secret.csv")  # reading it would block for ever
    (tmp_path / "secret.csv").write_text("token\n1\n")
    name = {"link out": "linked.csv", "dot-dot": "../secret.csv",
            "absolute": str(outside / "secret.csv")}[case]
    if case == "link out":
        (main.parent / "linked.csv").symlink_to(outside / "secret.csv")
    assert reader.names is not None
    reader.names(main.parent, name)
    check(run(run_cli, reader, main, out), True)
    assert not out.exists()


# ---------------------------------------------------------------------------- numbers


@pytest.mark.parametrize("reader", applicable("number"), ids=str)
@pytest.mark.parametrize("text", ["1e400", "9" * 5001, "nan", "inf", "-inf"],
                         ids=["huge", "5001 digits", "nan", "inf", "-inf"])
def test_a_number_beyond_the_reader_is_refused(run_cli: CliRunner, tmp_path: Path,
                                               reader: Reader, text: str) -> None:
    main, out = prepared(reader, tmp_path)
    assert reader.number is not None
    reader.number(main.parent, text)
    check(run(run_cli, reader, main, out), True)


# ------------------------------------------------------------------------ text and shape


@pytest.mark.parametrize("reader", [r for r in READERS if r.text], ids=str)
def test_a_byte_order_mark_is_read_as_nothing(run_cli: CliRunner, tmp_path: Path,
                                              reader: Reader) -> None:
    main, out = prepared(reader, tmp_path)
    expected, _, _ = run(run_cli, reader, main, out)
    if out.exists():
        out.unlink()
    main.write_bytes(b"\xef\xbb\xbf" + main.read_bytes())
    code, _, err = run(run_cli, reader, main, out)
    assert code == expected, err


@pytest.mark.parametrize("reader", applicable("code"), ids=str)
def test_control_characters_never_reach_the_terminal(run_cli: CliRunner, tmp_path: Path,
                                                     reader: Reader) -> None:
    main, out = prepared(reader, tmp_path)
    assert reader.code is not None
    reader.code(main.parent, "a\x1b[31mb\x07c")
    code, stdout, err = run(run_cli, reader, main, out)
    check((code, stdout, err), False)
    assert "\x1b" not in stdout + err and "\x07" not in stdout + err


@pytest.mark.parametrize("reader", READERS, ids=str)
def test_an_empty_file_is_refused(run_cli: CliRunner, tmp_path: Path, reader: Reader) -> None:
    main, out = prepared(reader, tmp_path)
    main.write_bytes(b"")
    if reader.empty_ok:
        check(run(run_cli, reader, main, out), False)
        return
    check(run(run_cli, reader, main, out), True, main.name)
    assert not out.exists()


@pytest.mark.parametrize("reader", applicable("duplicate"), ids=str)
def test_a_duplicate_key_column_or_cell_is_refused(run_cli: CliRunner, tmp_path: Path,
                                                   reader: Reader) -> None:
    main, out = prepared(reader, tmp_path)
    assert reader.duplicate is not None
    reader.duplicate(main.parent)
    check(run(run_cli, reader, main, out), True)


@pytest.mark.parametrize("reader", [r for r in READERS if r.writes], ids=str)
def test_an_output_is_never_an_input(run_cli: CliRunner, tmp_path: Path,
                                     reader: Reader) -> None:
    main, out = prepared(reader, tmp_path)
    before = {p: p.read_bytes() for p in main.parent.iterdir()}
    for target in sorted(before):  # every input the command could be asked to write over
        if target.suffix == out.suffix:
            check(run_cli(*reader.argv(main, target)), True, "never replaces an input")
        elif target == main:
            check(run_cli(*reader.argv(main, target)), True)
    assert {p: p.read_bytes() for p in main.parent.iterdir()} == before


# ------------------------------------------------------------------------- the registry


# the gate's functions and the libraries' readers (a call of a registered reader, such as
# read_release, is not itself a reader)
READING_CALLS = {"read_text", "read_bytes", "read_columnar", "read_frame", "read_yaml",
                 "admit", "named_file", "check_csv_header", "read_table", "read_schema",
                 "read_parquet", "read_csv", "open_csv", "ParquetFile", "read_json"}


def _reads_files(path: Path) -> bool:
    """Whether a module opens files: a call of a reading function (the gate's or a
    library's), ``open(...)`` or a path's ``.open(...)`` for reading."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in READING_CALLS:
            return True
        if name == "open":
            mode = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "mode"), None)
            text = mode.value if isinstance(mode, ast.Constant) else "r"
            if isinstance(text, str) and "r" in text:
                return True
    return False


def test_every_reader_module_is_registered() -> None:
    """A module that reads files is covered by a registered reader (and so by every case
    above), or is listed in OWN_FILES with the reason it reads no stranger's file; and the
    registry names no module that is gone."""
    covered = {m for r in READERS for m in r.modules}
    reading = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
               if _reads_files(p)}
    unregistered = sorted(reading - covered - set(OWN_FILES))
    assert unregistered == [], ("modules that read files but no reader of "
                                "tests/hostile/readers.py covers", unregistered)
    gone = sorted(m for m in covered | set(OWN_FILES) if not (PACKAGE / m).exists())
    assert gone == []
