"""``statrecon reconstruct`` on linear releases, through the real console script: the JSON
contract of issue 3, routing, --truth, --bounds, and user errors (exit 1, one line)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES, CliRunner, assert_user_error, json_of, statrecon
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.report.linear import commonest_share

HOSPITAL = EXAMPLES / "hospital.yaml"


def test_auto_routes_hospital_to_linear_with_the_json_contract() -> None:
    proc = statrecon("reconstruct", HOSPITAL, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json_of(proc)
    assert data["method"] == "determine" and data["status"] == "partial"
    assert {"status", "method", "estimate", "determined", "residual", "elapsed_s"} <= set(data)
    assert data["determined"] == [{"index": 1, "value": 5.2, "certificate": [
        {"statistic": "q1", "coefficient": 1}, {"statistic": "q2", "coefficient": -1},
        {"statistic": "q3", "coefficient": -1}], "interval": [5.2, 5.2],
        "proof": "combination"}]
    assert data["bounded_records"] == []  # exact answers: a record is pinned or not
    # the estimate lists public columns and the secret, in public-table order
    assert [row["id"] for row in data["estimate"]] == [1, 2, 3, 4, 5, 6]
    assert set(data["estimate"][0]) == {"id", "zip", "gender", "sugar"}
    assert data["estimate"][1]["sugar"] == 5.2


def test_truth_adds_accuracy_and_mean_absolute_error() -> None:
    proc = statrecon("reconstruct", HOSPITAL, "--method", "ls", "--bounds",
                     "sugar_low,sugar_high", "--truth", EXAMPLES / "hospital_truth.csv",
                     "--json")
    assert proc.returncode == 0, proc.stderr
    data = json_of(proc)
    assert data["method"] == "ls"
    assert 0 < data["accuracy"] <= 1
    # truth: 4.3 5.2 6.1 3.2 7.1 6.2; estimate ≈ 4.07 5.2 5.17 5.17 7.33 5.17
    assert data["mean_absolute_error"] == pytest.approx(
        (0.229 + 0 + 0.933 + 1.967 + 0.229 + 1.033) / 6, abs=0.01)


def test_human_view_shows_the_proof_not_the_rows() -> None:
    proc = statrecon("reconstruct", HOSPITAL)
    assert proc.returncode == 0, proc.stderr
    assert "q1 - q2 - q3" in proc.stdout and "5.2" in proc.stdout
    assert "32453" not in proc.stdout  # public rows only with --all


@pytest.mark.parametrize("method", ["lp-l1", "lp-linf", "kaczmarz", "sgd"])
def test_every_estimator_runs_from_the_command_line(method: str) -> None:
    proc = statrecon("reconstruct", HOSPITAL, "--method", method, "--bounds", "3,10", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json_of(proc)
    assert data["method"] == method and len(data["estimate"]) == 6
    assert all(3 - 1e-6 <= row["sugar"] <= 10 + 1e-6 for row in data["estimate"])


def write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


RELEASE_HEAD = """version: 1
table: patients
columns:
  id:     {type: integer, known: true}
  zip:    {type: integer, known: true}
  gender: {type: categorical, values: [Male, Female], known: true}
  sugar:  {type: real, min: 0, max: 40}
statistics:
"""


def test_secret_inside_a_public_function_is_a_clear_error(tmp_path: Path) -> None:
    rel = write(tmp_path, "r.yaml", RELEASE_HEAD + (
        "  - {id: q9, sql: \"SELECT SUM(sugar) FROM patients WHERE floor(id * 2 + sugar) = 3\","
        " value: 1}\n"))
    proc = statrecon("reconstruct", rel, "--public", EXAMPLES / "hospital_public.csv")
    assert_user_error(proc, "r.yaml", "q9", "sugar")


def test_public_table_missing_a_known_column(tmp_path: Path) -> None:
    pub = write(tmp_path, "p.csv", "id,gender\n1,Male\n2,Female\n")
    proc = statrecon("reconstruct", HOSPITAL, "--public", pub)
    assert_user_error(proc, "p.csv", "zip", "missing")


def test_truth_of_the_wrong_length(tmp_path: Path) -> None:
    truth = write(tmp_path, "t.csv", "id,sugar\n1,4.3\n2,5.2\n")
    proc = statrecon("reconstruct", HOSPITAL, "--truth", truth)
    assert_user_error(proc, "t.csv", "2 rows", "6")


def test_explicit_linear_method_on_a_non_linear_release() -> None:
    proc = statrecon("reconstruct", EXAMPLES / "clinic.yaml", "--method", "ls")
    assert_user_error(proc, "--method ls", "exactly one unknown column")


def test_condition_on_numeric_secret_with_explicit_method(tmp_path: Path) -> None:
    rel = write(tmp_path, "r.yaml", RELEASE_HEAD + (
        "  - {id: hi, sql: \"SELECT COUNT(*) FROM patients WHERE sugar > 6\", value: 2}\n"))
    proc = statrecon("reconstruct", rel, "--public", EXAMPLES / "hospital_public.csv",
                     "--method", "lp-l1")
    assert_user_error(proc, "statistic 'hi'", "not linear")


def test_bad_bounds(tmp_path: Path) -> None:
    proc = statrecon("reconstruct", HOSPITAL, "--bounds", "3")
    assert_user_error(proc, "--bounds", "lower,upper")
    proc = statrecon("reconstruct", HOSPITAL, "--bounds", "3,nosuchcolumn")
    assert_user_error(proc, "nosuchcolumn", "neither a number nor a column")
    proc = statrecon("reconstruct", HOSPITAL, "--bounds", "8,5")
    assert_user_error(proc, "bounds", "above upper")


def test_inconsistent_exact_statistics_exit_2(tmp_path: Path) -> None:
    rel = write(tmp_path, "r.yaml", RELEASE_HEAD + (
        "  - {id: all, sql: \"SELECT SUM(sugar) FROM patients\", value: 30}\n"
        "  - {id: men, sql: \"SELECT SUM(sugar) FROM patients WHERE gender = 'Male'\", "
        "value: 10}\n"
        "  - {id: women, sql: \"SELECT SUM(sugar) FROM patients WHERE gender = 'Female'\", "
        "value: 10}\n"))
    proc = statrecon("reconstruct", rel, "--public", EXAMPLES / "hospital_public.csv",
                     "--json")
    assert proc.returncode == 2, proc.stderr
    data = json_of(proc)
    assert data["status"] == "infeasible"
    assert sorted(data["conflict"]) == ["all", "men", "women"]


def test_bundled_audit_example_discloses_record_2() -> None:
    audit = EXAMPLES / "audit"
    proc = statrecon("audit-stream", audit / "hospital_schema.yaml", "--input",
                     audit / "hospital_stream.txt", "--json")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    steps = [x for x in lines if "statistic" in x]
    assert [s["status"] for s in steps] == ["accepted"] * 3
    assert steps[2]["newly_determined"][0]["index"] == 1
    assert steps[2]["newly_determined"][0]["value"] == 5.2


def _sixty_patients(tmp_path: Path, truth_of: Callable[[int], str], values: str,
                   statistics: str) -> tuple[Path, Path, Path]:
    """(release, public ids 1..60, truth) of an ``ill`` indicator over 60 known patients."""
    truth = write(tmp_path, "truth.csv",
                  "id,ill\n" + "".join(f"{i},{truth_of(i)}\n" for i in range(1, 61)))
    pub = write(tmp_path, "pub.csv", "id\n" + "".join(f"{i}\n" for i in range(1, 61)))
    rel = write(tmp_path, "r.yaml", (
        "version: 1\ntable: t\ncolumns:\n"
        "  id: {type: integer, known: true}\n"
        f"  ill: {{type: categorical, values: [{values}]}}\n"
        "statistics:\n" + statistics))
    return rel, pub, truth


def test_truth_with_a_value_outside_the_domain(tmp_path: Path) -> None:
    rel, pub, truth = _sixty_patients(
        tmp_path, lambda i: "maybe" if i == 3 else "no", "'no', 'yes', 'unsure'",
        "  - {id: a, sql: \"SELECT COUNT(*) FROM t WHERE ill = 'yes' AND id < 3\", value: 1}\n")
    proc = statrecon("reconstruct", rel, "--public", pub, "--truth", truth)
    assert_user_error(proc, "truth.csv:4", "'maybe'", "ill")


def test_a_public_or_is_linear(tmp_path: Path, run_cli: CliRunner) -> None:
    """A WHERE that ORs conditions on public columns is a public predicate: the linear engine
    takes it (it was refused as 'inside OR/NOT') and proves record 1 by a - b."""
    (tmp_path / "p.csv").write_text("id\n1\n2\n3\n4\n5\n", encoding="utf-8")
    release = tmp_path / "r.yaml"
    release.write_text("""version: 1
public: p.csv
columns:
  id: {type: integer, known: true}
  x: {type: integer, min: 0, max: 10}
statistics:
  - {id: a, sql: "SELECT SUM(x) FROM t WHERE id = 1 OR id = 5", value: 5}
  - {id: b, sql: "SELECT SUM(x) FROM t WHERE id = 5", value: 2}
""", encoding="utf-8")
    code, out, err = run_cli("reconstruct", release, "--method", "determine", "--json",
                             "--quiet")
    assert code == 0, err
    data = json.loads(out)
    assert data["determined"][0]["index"] == 0 and data["determined"][0]["value"] == 3
    assert data["determined"][0]["certificate"] == [
        {"statistic": "a", "coefficient": 1}, {"statistic": "b", "coefficient": -1}]


def test_truth_comes_with_its_baseline() -> None:
    """The baseline guesses one value for every record: the commonest true value (accuracy)
    and the median (error). Hospital truth: 4.3 5.2 6.1 3.2 7.1 6.2, all distinct, median
    5.65."""
    proc = statrecon("reconstruct", HOSPITAL, "--method", "ls", "--bounds",
                     "sugar_low,sugar_high", "--truth", EXAMPLES / "hospital_truth.csv",
                     "--json")
    assert proc.returncode == 0, proc.stderr
    data = json_of(proc)
    truth = [4.3, 5.2, 6.1, 3.2, 7.1, 6.2]
    assert data["baseline_accuracy"] == pytest.approx(1 / 6)
    assert data["baseline_mean_absolute_error"] == pytest.approx(
        sum(abs(v - 5.65) for v in truth) / 6)
    assert data["mean_absolute_error"] < data["baseline_mean_absolute_error"]
    human = statrecon("reconstruct", HOSPITAL, "--method", "ls", "--bounds",
                      "sugar_low,sugar_high", "--truth", EXAMPLES / "hospital_truth.csv")
    assert "(baseline 16.67%)" in human.stdout and "commonest true value" in human.stdout


def test_an_indicator_truth_comes_with_the_majority_baseline(tmp_path: Path) -> None:
    """60 records, 15 of them 'yes': guessing 'not yes' for everyone scores 75%."""
    rel, pub, truth = _sixty_patients(
        tmp_path, lambda i: "yes" if i % 4 == 0 else "no", "'no', 'yes'",
        "  - {id: a, sql: \"SELECT COUNT(*) FROM t WHERE ill = 'yes' AND id < 5\", value: 1}\n"
        "  - {id: b, sql: \"SELECT COUNT(*) FROM t WHERE ill = 'yes' AND id < 4\", value: 0}\n")
    proc = statrecon("reconstruct", rel, "--public", pub, "--truth", truth, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json_of(proc)
    assert data["baseline_accuracy"] == pytest.approx(0.75)
    assert "baseline_mean_absolute_error" not in data


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=30),
       st.sampled_from([0.0, 0.5, 1.0, 2.5]))
def test_the_commonest_share_equals_trying_every_guess(values: list[int], width: float) -> None:
    """Brute force: try each true value as the one guess for every record."""
    t = np.array(values, dtype=float) / 2
    tol = np.full_like(t, width) * (1 + np.abs(t) / 10)  # per-record tolerances differ
    want = max(float(np.mean(np.abs(v - t) <= tol)) for v in t)
    assert commonest_share(t, tol) == pytest.approx(want)
