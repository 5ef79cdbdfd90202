"""Installs and runs outside the repository (issue 31, item 3): the package carries the README's
examples (``statrecon/data/examples``, in a checkout the link to ``examples/`` that the wheel
copies), ``statrecon examples DIR`` writes them to ``DIR/examples`` byte for byte, and
``statrecon --version`` says the package's version. The wheel itself is built, installed into a
clean environment and run outside the checkout by ``.ci/wheel_smoke`` (``make wheel-smoke``)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

from conftest import ROOT, CliRunner

import statrecon
from statrecon.exitcodes import EXIT_OK, EXIT_USER

EXAMPLES = ROOT / "examples"
LINK = ROOT / "src" / "statrecon" / "data" / "examples"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
            and not any(part.startswith(".") for part in p.relative_to(folder).parts)}


def test_the_package_data_is_the_readme_examples_folder() -> None:
    """The wheel copies what the link points to: the very folder the README's commands and
    tests/test_readme.py use, so what runs there runs from the written examples."""
    assert LINK.is_symlink() and os.readlink(LINK) == "../../../examples"
    assert LINK.resolve() == EXAMPLES.resolve()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "data/examples/**/*" in project["tool"]["setuptools"]["package-data"]["statrecon"]


def test_examples_writes_the_bundled_folder_byte_for_byte(run_cli: CliRunner,
                                                           tmp_path: Path) -> None:
    code, out, _ = run_cli("examples", str(tmp_path), "--json")
    assert code == EXIT_OK
    data = json.loads(out)
    assert set(data) == {"folder", "files"}
    written = _files(tmp_path / "examples")
    assert written == _files(EXAMPLES) and data["files"] == len(written)
    for name in ("block.yaml", "census/census2010_reconstructed_persons.csv.gz",
                 "census/census2010_dp_reconstructed_persons.csv.gz",
                 "tables/tauargus/TestTable.arb", "audit/hospital_stream.txt"):
        assert name in written, name


def test_examples_refuses_files_already_there_unless_forced(run_cli: CliRunner,
                                                          tmp_path: Path) -> None:
    assert run_cli("examples", str(tmp_path))[0] == EXIT_OK
    block = tmp_path / "examples" / "block.yaml"
    block.write_text("changed", encoding="utf-8")
    code, _, err = run_cli("examples", str(tmp_path))
    assert code == EXIT_USER and "exists" in err and "--force" in err
    assert block.read_text(encoding="utf-8") == "changed"  # nothing written
    assert run_cli("examples", str(tmp_path), "--force")[0] == EXIT_OK
    assert block.read_bytes() == (EXAMPLES / "block.yaml").read_bytes()


def test_the_readme_commands_run_from_the_written_folder(run_cli: CliRunner,
                                                         tmp_path: Path) -> None:
    assert run_cli("examples", str(tmp_path))[0] == EXIT_OK
    code, out, _ = run_cli("reconstruct", "examples/block.yaml", "--json", cwd=tmp_path)
    assert code == EXIT_OK and json.loads(out)["status"] == "unique"


def test_version(run_cli: CliRunner) -> None:
    code, out, _ = run_cli("--version")
    assert (code, out.strip()) == (EXIT_OK, f"statrecon {statrecon.__version__}")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" in project["project"]["dynamic"]  # one place: statrecon.__version__
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "statrecon.__version__"}
