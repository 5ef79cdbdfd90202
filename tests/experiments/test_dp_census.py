"""``statrecon experiment dp-census`` (issue 16, item 6) on two small real tracts: the files,
the figures' soundness (no certain person is false), resuming, and bad options."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import SLICE, assert_user_error, json_of, statrecon

SMALL_TRACTS = ("06037532400", "34017006900")  # 5 blocks and 1 block


@pytest.fixture(scope="module")
def truth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    frame = pd.read_csv(SLICE, dtype={"block_geoid": str})
    path = tmp_path_factory.mktemp("dp_truth") / "small.csv"
    frame[frame["block_geoid"].str[:11].isin(SMALL_TRACTS)].to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def experiment(truth: Path, tmp_path_factory: pytest.TempPathFactory
               ) -> tuple[Path, dict[str, object]]:
    out = tmp_path_factory.mktemp("dp_exp") / "exp"
    proc = statrecon("experiment", "dp-census", "--rho", "50,inf", "--truth", truth,
                     "--rank", "2", "--out", out, "--workers", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    return out, json_of(proc)


def test_every_rho_is_scored_and_drawn(experiment: tuple[Path, dict[str, object]]) -> None:
    out, data = experiment
    rows = data["rows"]
    assert isinstance(rows, list) and [r["rho"] for r in rows] == ["50", "inf"]
    for name in ("summary.json", "dp_census.png", "README.md", "rho_50/compare.json",
                 "rho_50/certain.parquet", "rho_inf/recon.parquet"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "dp_census.png").read_bytes()[:4] == b"\x89PNG"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rows"] == rows
    readme = (out / "README.md").read_text()
    assert "| 50 |" in readme and "| inf |" in readme
    noisy, exact = rows
    # the exact tables pin every person at the block tables' age groups on these tracts
    assert exact["agreement_binned"] == 1.0
    assert exact["agreement_exact"] > noisy["agreement_exact"]
    for r in rows:  # soundness: nothing proven is false
        assert r["certain_within_noise_not_in_truth"] == 0
        assert r["precision_at_10pct"] is not None


def test_a_rerun_resumes_and_other_settings_are_refused(
        experiment: tuple[Path, dict[str, object]], truth: Path) -> None:
    out, data = experiment
    before = (out / "rho_50" / "compare.json").stat().st_mtime_ns
    again = statrecon("experiment", "dp-census", "--rho", "50,inf", "--truth", truth,
                      "--rank", "2", "--out", out, "--workers", "1", "--json")
    assert again.returncode == 0, again.stderr
    assert json_of(again)["rows"] == data["rows"]
    assert (out / "rho_50" / "compare.json").stat().st_mtime_ns == before
    other = statrecon("experiment", "dp-census", "--rho", "50", "--truth", truth,
                      "--rank", "2", "--seed", "1", "--out", out)
    assert_user_error(other, "other settings", str(out))


@pytest.mark.parametrize(("args", "message"), [
    (("--rho", "-1"), "must be > 0"),
    (("--rho", "1,abc"), "'abc' is not a number"),
    (("--rho", "1,1"), "given twice"),
    (("--delta", "1.5"), "--delta must lie in (0, 1)"),
])
def test_bad_options(args: tuple[str, ...], message: str, tmp_path: Path, truth: Path
                     ) -> None:
    proc = statrecon("experiment", "dp-census", *args, "--truth", truth, "--out",
                     tmp_path / "x")
    assert_user_error(proc, message)
    assert not (tmp_path / "x" / "summary.json").exists()


@pytest.mark.parametrize("meta", [
    None, [1, 2], {"tracts": [1]}, {"tracts": {"t": "x"}},
    {"tracts": {"t": {"solve_s": "1e9", "certify_s": [1], "sample_s": True}}},
    {"tracts": {"t": {"solve_s": -5, "certify_s": float("nan")}}},
    {"tract_seconds": "fast"},
])
def test_tampered_timings_count_as_none(tmp_path: Path, meta: object) -> None:
    """The timings read back from a run's own files (a resumed experiment reads what is in
    its folder): a record of another shape counts as no time, never a traceback; good
    records beside it still count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from statrecon.experiments.dp_census import (
        CERTAIN_KEY,
        STORE_KEY,
        _certain_seconds,
        tract_seconds,
    )

    def stored(key: bytes, data: object) -> Path:
        path = tmp_path / f"{len(list(tmp_path.iterdir()))}.parquet"
        table = pa.table({"x": [1]})
        if data is not None:
            table = table.replace_schema_metadata({key: json.dumps(data).encode()})
        pq.write_table(table, path)
        return path

    zero = {"tracts_solve": 0.0, "tracts_certify": 0.0, "tracts_sample": 0.0}
    assert tract_seconds(stored(STORE_KEY, meta)) == zero
    assert _certain_seconds(stored(CERTAIN_KEY, meta)) == 0.0
    good = {"tracts": {"a": {"solve_s": 1.5, "certify_s": 2, "sample_s": 0.25},
                       "b": {"solve_s": "x"}}}
    assert tract_seconds(stored(STORE_KEY, good)) == {
        "tracts_solve": 1.5, "tracts_certify": 2.0, "tracts_sample": 0.25}
    assert _certain_seconds(stored(CERTAIN_KEY, {"tract_seconds": 3.25})) == 3.25


@pytest.mark.parametrize("stored", [
    "{bad", "[1, 2]", '{"rho": "inf"}', '{"rho": "10", "scores": {}}',
])
def test_a_changed_step_file_is_one_line_on_resume(tmp_path: Path, stored: str) -> None:
    """A rerun resumes from the steps' files in its folder: one changed by hand (not JSON,
    not an object, another rho's, missing what the summary reads) is one line naming it,
    exit 1, never a traceback."""
    out = tmp_path / "exp"
    args = ("experiment", "dp-census", "--rho", "inf", "--truth", SLICE, "--out", out,
            "--workers", "1")
    (out / "rho_inf").mkdir(parents=True)
    (out / "rho_inf" / "compare.json").write_text(stored)
    assert_user_error(statrecon(*args), "compare.json")
