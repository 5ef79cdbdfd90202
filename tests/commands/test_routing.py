"""Issue 14 (2): no search runs unbounded by default, and the answer says which engine gave it
and why (the human view's last line; ``route`` in the JSON, pinned in test_json_contracts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EXAMPLES, CensusSlice, CliRunner

from statrecon.engines import exact
from statrecon.engines.exact import ExactOptions
from statrecon.exitcodes import EXIT_OK, EXIT_UNKNOWN


def test_the_exact_engine_has_a_default_time_limit() -> None:
    assert ExactOptions().time_limit == exact.DEFAULT_TIME_LIMIT == 300.0


def test_the_cli_applies_the_default_without_a_flag(run_cli: CliRunner,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """With the default shrunk to a millisecond, the Figure 1 block (0.1 s of search) stops
    at the default and says unknown, exit 3; --time-limit inf lifts it."""
    monkeypatch.setattr(ExactOptions, "time_limit", 0.001)  # the engine's default, as read
    code, out, _ = run_cli("reconstruct", EXAMPLES / "block.yaml")
    assert code == EXIT_UNKNOWN and "UNIQUE" not in out
    code, out, _ = run_cli("reconstruct", EXAMPLES / "block.yaml", "--time-limit", "inf")
    assert code == EXIT_OK and "UNIQUE" in out


@pytest.mark.parametrize(("args", "line"), [
    ((EXAMPLES / "block.yaml",), "Engine: exact (exact), chosen by auto: not linear"),
    ((EXAMPLES / "hospital.yaml",), "Engine: linear (determine), chosen by auto: every"),
    ((EXAMPLES / "hospital.yaml", "--method", "lp-l1"), "Engine: linear (lp-l1), chosen by "
                                                         "--method lp-l1"),
])
def test_the_human_view_ends_with_the_route(run_cli: CliRunner, args: tuple[Path | str, ...],
                                            line: str) -> None:
    code, out, err = run_cli("reconstruct", *args)
    assert code == EXIT_OK, err
    assert out.rstrip().splitlines()[-1].startswith(line)


def _wide_release(tmp_path: Path, records: int) -> Path:
    """Two unknown columns (so not linear) over ``records`` rows with a wide integer domain."""
    path = tmp_path / "wide.yaml"
    path.write_text(f"""version: 1
records: {records}
columns:
  age: {{type: integer, min: 0, max: 100000}}
  sex: {{type: categorical, values: [F, M]}}
statistics:
  - {{id: n, sql: "SELECT COUNT(*) FROM t", value: {records}}}
  - {{id: a, sql: "SELECT AVG(age) FROM t WHERE sex = 'F'", value: 50}}
""", encoding="utf-8")
    return path


def test_auto_says_the_size_of_the_exact_route_it_takes(run_cli: CliRunner,
                                                        tmp_path: Path) -> None:
    """The route's reason gives the model's size, its search space and the time limit, so a
    user who waits knows why (3 rows x 100,001 ages x 2 sexes: about 10^16 datasets)."""
    code, out, err = run_cli("reconstruct", _wide_release(tmp_path, 3), "--json",
                             "--time-limit", "1")
    assert code in (0, 3), err
    reason = json.loads(out)["route"]["reason"]
    assert "model estimated at" in reason and "over up to 3 rows" in reason
    assert "search space of at most 10^16 datasets" in reason
    assert "time limit 1 s" in reason


def test_auto_refuses_a_release_that_fits_neither_route(run_cli: CliRunner,
                                                        tmp_path: Path) -> None:
    """Too big for the exact model and not linear: one error naming both, before building."""
    code, _, err = run_cli("reconstruct", _wide_release(tmp_path, 400), "--max-model-size",
                             "1000")
    assert code == 1 and err.startswith("error:") and "Traceback" not in err
    assert "over the limit of 1,000" in err
    assert "linear engine cannot take it either: no public table" in err


def test_census_and_claims_runs_have_a_default_per_unit_time_limit() -> None:
    """No tract or block searches unbounded unless asked: no flag keeps the default (600 s a
    tract, 300 s a block), 'inf' lifts it, a number sets it."""
    from statrecon.commands.census import census_options
    from statrecon.commands.claims import _options
    from statrecon.engines.census import DEFAULT_TRACT_TIME_LIMIT
    from statrecon.engines.claims.options import DEFAULT_BLOCK_TIME_LIMIT

    assert census_options(None, True).time_limit == DEFAULT_TRACT_TIME_LIMIT == 600.0
    assert census_options(float("inf"), True).time_limit is None
    assert census_options(7.5, False).time_limit == 7.5
    assert _options("fast", 10, None, True).time_limit == DEFAULT_BLOCK_TIME_LIMIT == 300.0
    assert _options("fast", 10, float("inf"), True).time_limit is None
    assert _options("paper", 10, 2.0, True).time_limit == 2.0


def test_census_reconstruct_takes_inf(run_cli: CliRunner, census_slice: CensusSlice,
                                      tmp_path: Path) -> None:
    """'--time-limit inf' is accepted on the command line and the run completes."""
    code, out, err = run_cli("census", "reconstruct", census_slice.release, "--out",
                             tmp_path / "recon.parquet", "--time-limit", "inf", "--workers",
                             "1", "--json", "--quiet")
    assert code == EXIT_OK, err
    assert json.loads(out)["statuses"] and "unknown" not in json.loads(out)["statuses"]


def test_a_noise_mode_sends_auto_to_the_exact_engine(run_cli: CliRunner,
                                                     tmp_path: Path) -> None:
    """Noisy answers: auto weighs them in the linear engine by default; asked to read them as
    bounds, it goes to the exact engine (the only one that does) and says so."""
    (tmp_path / "rows.csv").write_text("id\n1\n2\n3\n4\n", encoding="utf-8")
    release = tmp_path / "noisy.yaml"
    release.write_text("""version: 1
public: rows.csv
columns:
  id: {type: integer, known: true}
  x: {type: integer, min: 0, max: 3}
statistics:
  - {id: a, sql: "SELECT SUM(x) FROM t WHERE id <= 2", value: 3}
  - {id: b, sql: "SELECT SUM(x) FROM t WHERE id >= 2", value: 4.2, noise: {laplace: 0.5}}
""", encoding="utf-8")
    code, out, err = run_cli("reconstruct", release, "--json")
    assert code in (0, 3), err
    assert json.loads(out)["route"]["engine"] == "linear"
    code, out, err = run_cli("reconstruct", release, "--json", "--noise-as-bounds", "2")
    assert code in (0, 3), err
    data = json.loads(out)
    assert data["route"]["engine"] == "exact" and "--noise-mode bounds" in data["route"]["reason"]
    assert data["noise"]["mode"] == "bounds"
    code, _, err = run_cli("reconstruct", release, "--method", "lp-l1", "--noise-mode", "ml")
    assert code == 1 and "applies to the exact engine" in err
