"""Issue 27's gates on the protected census release (issue 30, item 4): the protection a
release states is user text, checked field by field where it is read; a value its
protection never publishes is an inconsistent release (exit 2) naming the file and the
cell; a null value only where the protection withholds cells. Each case goes through
``census certain`` (which reads the release and makes its bounds): one line naming the file,
nothing written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import SLICE, CliRunner, assert_one_line_error

from statrecon.census.persons.release import METADATA_KEY
from statrecon.runs.census_protect import CensusProtectOptions, publish_protected


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One protected release per method, from the slice's six smallest blocks."""
    raw = pd_read(SLICE)
    blocks = raw["block_geoid"].value_counts().sort_values(kind="stable").index[:6]
    folder = tmp_path_factory.mktemp("protected")
    persons = folder / "persons.csv"
    raw[raw["block_geoid"].isin(blocks)].to_csv(persons, index=False)
    out = {}
    for method, options in (("ckm", CensusProtectOptions("ckm-abs", seed=1)),
                            ("round", CensusProtectOptions("round", base=5)),
                            ("suppress", CensusProtectOptions("suppress"))):
        out[method] = folder / f"{method}.parquet"
        publish_protected(persons, out[method], options)
    return out


def pd_read(path: Path) -> Any:
    import pandas as pd

    return pd.read_csv(path, dtype=str)


def _meta(source: Path, target: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    table = pq.read_table(source)
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    edit(meta)
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()}),
                   target)


def _protection(**changes: Any) -> Callable[[dict[str, Any]], None]:
    def edit(meta: dict[str, Any]) -> None:
        meta["protection"].update(changes)
    return edit


def _noise(meta: dict[str, Any]) -> None:
    meta["noise"] = {"mechanism": "discrete_gaussian", "rho": 1.0, "sampler": "numpy",
                     "tables": {c["table"]: {"sigma": 2.0} for c in meta["cells"]}}


META_CASES: list[tuple[str, str, Callable[[dict[str, Any]], None], tuple[str, ...]]] = [
    ("unknown-field", "ckm", _protection(seed=7), ("unknown field", "seed")),
    ("unknown-method", "ckm", _protection(method="blur"), ("method must be one of",)),
    ("method-not-text", "ckm", _protection(method=["ckm-abs"]), ("method must be one of",)),
    ("d-as-text", "ckm", _protection(d="2"), ("d must be a whole number",)),
    ("d-boolean", "ckm", _protection(d=True), ("d must be a whole number",)),
    ("d-huge", "ckm", _protection(d=10**12), ("d must be a whole number",)),
    ("d-beyond-ptables", "ckm", _protection(d=99), ("d = 99", "1 to 50")),
    ("v-a-float", "ckm", _protection(v=1.08), ("v must be written as text",)),
    ("v-zero", "ckm", _protection(v="0"), ("v must be above 0",)),
    ("v-no-number", "ckm", _protection(v="1.o8"), ("v:", "not a number")),
    ("v-endless", "ckm", _protection(v="1" * 5000), ("v:",)),
    ("knowledge-of-another-method", "ckm", _protection(knowledge="method"),
     ("knowledge", "ptable, d, nothing")),
    ("knowledge-not-a-name", "round", _protection(knowledge="../x"),
     ("knowledge must be a plain name",)),
    ("base-one", "round", _protection(base=1), ("base",)),
    ("rounding-unknown", "round", _protection(rounding="up"), ("rounding",)),
    ("statement-endless", "suppress", _protection(statement="x" * 5000),
     ("statement must be text",)),
    ("d-missing", "ckm", lambda m: m["protection"].pop("d"), ("d missing",)),
    ("knowledge-missing", "suppress", lambda m: m["protection"].pop("knowledge"),
     ("knowledge missing",)),
    ("threshold-null", "suppress", _protection(threshold=None), ("threshold missing",)),
    ("not-a-mapping", "suppress", lambda m: m.update(protection=[1, 2]),
     ("protection: expected a mapping",)),
    ("noise-and-protection", "round", _noise, ("both noise and a protection",)),
]


@pytest.mark.parametrize(("name", "method", "edit", "parts"), META_CASES,
                         ids=[c[0] for c in META_CASES])
def test_a_protection_that_does_not_read_is_one_line(
        tmp_path: Path, releases: dict[str, Path], run_cli: CliRunner, name: str,
        method: str, edit: Callable[[dict[str, Any]], None], parts: tuple[str, ...]) -> None:
    target = tmp_path / "release.parquet"
    _meta(releases[method], target, edit)
    out = tmp_path / "certain.parquet"
    assert_one_line_error(run_cli("census", "certain", target, "--out", out),
                          str(target), *parts)
    assert not out.exists() and not out.with_name(out.name + ".parts").exists()


def _values(source: Path, target: Path, value: int | None) -> tuple[str, str]:
    """``source`` with its first block row's value replaced; the (geoid, cell) changed."""
    table = pq.read_table(source)
    values = table["value"].to_pylist()
    i = table["level"].to_pylist().index("block")
    values[i] = value
    changed = table.set_column(table.schema.get_field_index("value"), "value",
                               pa.array(values, pa.int64()))
    pq.write_table(changed.replace_schema_metadata(table.schema.metadata), target)
    return table["geoid"][i].as_py(), table["cell"][i].as_py()


VALUE_CASES: list[tuple[str, str, int | None, int, tuple[str, ...]]] = [
    # a value the protection never publishes: inconsistent with it, exit 2
    ("ckm-publishes-no-1", "ckm", 1, 2, ("the ptable never publishes 1",)),
    ("round-not-a-multiple", "round", 7, 2, ("7 is not a multiple of 5",)),
    ("suppress-publishes-a-2", "suppress", 2, 2, ("counts from 1 to 2 are suppressed",)),
    # a null where nothing is withheld; a count beyond a block and what D adds
    ("ckm-null", "ckm", None, 1, ("no value", "withholds no cell")),
    ("round-beyond-a-block", "round", 100_010, 1, ("more than a census block holds",)),
]


@pytest.mark.parametrize(("name", "method", "value", "code", "parts"), VALUE_CASES,
                         ids=[c[0] for c in VALUE_CASES])
def test_a_value_the_protection_cannot_publish_names_its_cell(
        tmp_path: Path, releases: dict[str, Path], run_cli: CliRunner, name: str,
        method: str, value: int | None, code: int, parts: tuple[str, ...]) -> None:
    target = tmp_path / "release.parquet"
    geoid, cell = _values(releases[method], target, value)
    out = tmp_path / "certain.parquet"
    assert_one_line_error(run_cli("census", "certain", target, "--out", out),
                          str(target), geoid, cell, *parts, code=code)
    assert not out.exists()


def test_the_unmutated_releases_are_read(tmp_path: Path, releases: dict[str, Path],
                                         run_cli: CliRunner) -> None:
    for method, path in releases.items():
        out = tmp_path / f"{method}.parquet"
        code, _, err = run_cli("census", "certain", path, "--out", out, "--workers", "1",
                               "--quiet")
        assert code == 0 and out.exists(), (method, err)


TABULATE_CASES: list[tuple[list[str], tuple[str, ...]]] = [
    (["--base", "3"], ("--base describes a protection", "--protect")),
    (["--protect", "swap"], ("--protect must be one of", "census swap")),
    (["--protect", "blur"], ("--protect must be one of",)),
    (["--protect", "round", "--rounding", "up"], ("rounding", "nearest, random")),
    (["--protect", "ckm-abs", "--ckm-v", "-1"], ("v", "above 0")),
    (["--protect", "ckm-abs", "--ckm-v", "a lot"], ("--ckm-v", "not a number")),
    (["--protect", "ckm-abs", "--ckm-d", "51"], ("d = 51", "1 to 50")),
    (["--protect", "suppress", "--attacker-knows", "ptable"], ("knowledge", "nothing, rule")),
    (["--protect", "round", "--dp-rho", "1"], ("--dp-rho", "do not go with it")),
    (["--protect", "ckm-abs", "--base", "3"], ("--base does not go with --protect ckm-abs",)),
    (["--protect", "suppress", "--ckm-d", "3"], ("--ckm-d does not go with --protect",)),
]


@pytest.mark.parametrize(("extra", "parts"), TABULATE_CASES,
                         ids=[" ".join(c[0]) for c in TABULATE_CASES])
def test_a_protection_that_does_not_go_together_writes_nothing(
        tmp_path: Path, run_cli: CliRunner, extra: list[str], parts: tuple[str, ...]) -> None:
    out = tmp_path / "release.parquet"
    assert_one_line_error(run_cli("census", "tabulate", "--persons", SLICE, "--out", out,
                                  *extra), *parts)
    assert not out.exists()
