"""Issue 27's fuzz targets: random bytes and random mutations of the bundled tau-Argus files
(``.tab``, ``.rda``, ``.hrc``, ``.arb``), the table spec of the firms example and a noisy
census release, fed to the command line in-process. Whatever the input, the command ends
with an exit code of 0-4, one line when it refuses, never a traceback, within a time bound.

``STATRECON_FUZZ_EXAMPLES=2000`` runs a longer, randomised soak (outside the suite).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import EXAMPLES, SLICE
from fuzzing import TOKENS, mutate, mutation, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TAUARGUS = EXAMPLES / "tables" / "tauargus"
FIRMS = EXAMPLES / "tables" / "firms"
CODES = (0, 1, 2, 3, 4)
BLOCK = "060375324001066"  # a block of the slice's first tract

_SOAK = int(os.environ.get("STATRECON_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=_SOAK or 25, deadline=None, derandomize=not _SOAK,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

TAU_FILES = ("TestTable.arb", "pp.tab", "pp.rda", "region2.hrc", "region.cdl")


def tau_job(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name in TAU_FILES:
        shutil.copy(TAUARGUS / name, folder / name)
    return folder


@FUZZ
@given(name=st.sampled_from(["pp.tab", "pp.rda", "region2.hrc", "TestTable.arb"]),
       ops=st.lists(mutation, min_size=1, max_size=6),
       command=st.sampled_from(["audit", "protect"]))
def test_mutated_tau_argus_files(tmp_path: Path, name: str, ops: list[tuple[str, int, object]],
                                 command: str) -> None:
    job = tau_job(tmp_path / "job")
    (job / name).write_bytes(mutate((TAUARGUS / name).read_bytes(), ops))
    out = ["--out", str(tmp_path / "o.csv")] if command == "protect" else []
    run("tables", command, job / "TestTable.arb", "--time-limit", "5", *out, "--quiet",
        cwd=job, codes=CODES)


@FUZZ
@given(name=st.sampled_from(["pp.tab", "pp.rda", "region2.hrc", "TestTable.arb"]),
       data=st.one_of(st.binary(max_size=400),
                      st.lists(st.sampled_from(TOKENS), max_size=40).map(b"".join)))
def test_random_bytes_as_tau_argus_files(tmp_path: Path, name: str, data: bytes) -> None:
    job = tau_job(tmp_path / "job")
    (job / name).write_bytes(data)
    run("tables", "audit", job / "TestTable.arb", "--time-limit", "5", "--quiet", cwd=job,
        codes=CODES)


@FUZZ
@given(target=st.sampled_from(["spec.yaml", "industry.hrc", "firms.csv"]),
       ops=st.lists(mutation, min_size=1, max_size=6))
def test_mutated_table_spec_and_microdata(tmp_path: Path, target: str,
                                          ops: list[tuple[str, int, object]]) -> None:
    job = tmp_path / "firms"
    shutil.rmtree(job, ignore_errors=True)
    shutil.copytree(FIRMS, job)
    (job / target).write_bytes(mutate((FIRMS / target).read_bytes(), ops))
    run("tables", "audit", job / "firms.csv", "--spec", job / "spec.yaml", "--time-limit", "5",
        "--quiet", cwd=job, codes=CODES)


@pytest.fixture(scope="module")
def noisy_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A noisy release of one tract of the bundled slice (P1, P12; rho 1, seed 0)."""
    folder = tmp_path_factory.mktemp("noisy")
    persons = folder / "p.csv"
    lines = SLICE.read_text().splitlines()
    tract = lines[1].split(",")[1][:11] if "," in lines[1] else ""
    header = lines[0].split(",")
    geoid = header.index("block_geoid")
    keep = [lines[0], *(ln for ln in lines[1:] if ln.split(",")[geoid].startswith(
        lines[1].split(",")[geoid][:11]))]
    assert tract is not None
    persons.write_text("\n".join(keep) + "\n")
    code, err = run("census", "tabulate", "--persons", persons, "--out", folder / "r.parquet",
                    "--tables", "P1,P12", "--dp-rho", "1", "--seed", "0", "--quiet",
                    cwd=folder)
    assert code == 0, err
    return folder / "r.parquet"


@FUZZ
@given(ops=st.lists(mutation, min_size=1, max_size=4),
       column=st.sampled_from(["value", "geoid", "table", "cell", "level", "sigma"]),
       row=st.integers(0, 10_000), text=st.sampled_from(TOKENS))
def test_mutated_noisy_census_release(tmp_path: Path, noisy_release: Path,
                                      ops: list[tuple[str, int, object]], column: str,
                                      row: int, text: bytes) -> None:
    """Two kinds of damage: the file's bytes mutated (mostly an unreadable Parquet file),
    and one cell of a column replaced with hostile text (a well-formed file with a forged
    value), each read by `census block-release` (the release reader, checks and all; the
    solvers behind `census certain` and `reconstruct` are not what is fuzzed here)."""
    broken = tmp_path / "bytes.parquet"
    broken.write_bytes(mutate(noisy_release.read_bytes(), ops))
    run("census", "block-release", broken, "--block", BLOCK, "--out", tmp_path / "b.yaml",
        cwd=tmp_path, codes=CODES)
    table = pq.read_table(noisy_release)
    forged = tmp_path / "cell.parquet"
    if column in table.column_names:
        values = [None if v is None else str(v) for v in table.column(column).to_pylist()]
        values[row % len(values)] = text.decode("utf-8", "replace")
        i = table.schema.get_field_index(column)
        table = table.set_column(i, column, pa.array(values, pa.string()))
    pq.write_table(table, forged)
    run("census", "block-release", forged, "--block", BLOCK, "--out", tmp_path / "f.yaml",
        cwd=tmp_path, codes=CODES)


def test_the_unmutated_targets_succeed(tmp_path: Path, noisy_release: Path) -> None:
    """The fuzz targets are live: the originals are read and run to the end."""
    job = tau_job(tmp_path / "job")
    code, err = run("tables", "audit", job / "TestTable.arb", "--quiet", cwd=job, codes=CODES)
    assert code == 4, err
    code, err = run("tables", "audit", FIRMS / "firms.csv", "--spec", FIRMS / "spec.yaml",
                    "--quiet", cwd=tmp_path, codes=CODES)
    assert code in (0, 4), err
    code, err = run("census", "certain", noisy_release, "--out", tmp_path / "c.parquet",
                    "--workers", "1", "--quiet", cwd=tmp_path, codes=CODES)
    assert code == 0, err


MICRO_FILES = ("job.arb", "m.rda", "m.asc", "region.hrc", "size.grc")


def micro_job(folder: Path) -> Path:
    """The small tau-Argus microdata job of the readers' registry (free format, an .hrc, a
    .grc recode, MOD, a <WRITETABLE>)."""
    from readers import _micro_job

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return _micro_job(folder)


@FUZZ
@given(name=st.sampled_from(MICRO_FILES), ops=st.lists(mutation, min_size=1, max_size=6))
def test_mutated_microdata_jobs(tmp_path: Path, name: str,
                                ops: list[tuple[str, int, object]]) -> None:
    job = micro_job(tmp_path / "job")
    (job.parent / name).write_bytes(mutate((job.parent / name).read_bytes(), ops))
    (tmp_path / "out").mkdir(exist_ok=True)
    run("tables", "protect", job, "--time-limit", "5", "--out-dir", tmp_path / "out",
        "--quiet", cwd=job.parent, codes=CODES)


@FUZZ
@given(name=st.sampled_from(MICRO_FILES),
       data=st.one_of(st.binary(max_size=400),
                      st.lists(st.sampled_from(TOKENS), max_size=40).map(b"".join)))
def test_random_bytes_as_microdata_job_files(tmp_path: Path, name: str, data: bytes) -> None:
    job = micro_job(tmp_path / "job")
    (job.parent / name).write_bytes(data)
    run("tables", "audit", job, "--time-limit", "5", "--quiet", cwd=job.parent, codes=CODES)
