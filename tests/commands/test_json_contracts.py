"""The ``--json`` output keys of the main commands, pinned before the house is restructured
(issue 13): moving code must not move a key. Keys may be added (a test here then fails and
names the new key, so the addition is deliberate); none may disappear or change its level.

The key sets are the documented contracts (README), written out here by hand.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from conftest import SLICE, CliRunner

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

RECONSTRUCT_EXACT = {
    "status", "method", "solution_count", "complete", "solutions", "certain_rows",
    "certain_cells", "column_values", "column_ranges", "certain_complete", "conflict",
    "conflict_minimal", "ignored_statistics", "elapsed_s", "route", "noise",
}
ROUTE = {"engine", "method", "reason"}
CERTAIN_ROW = {"row", "multiplicity"}
RECONSTRUCT_LINEAR = {
    "status", "method", "secret", "estimate", "determined", "determined_checked", "rank",
    "residual", "records", "statistics", "ignored_statistics", "elapsed_s", "route",
    "bounded_records",
}
DETERMINED = {"index", "value", "certificate", "interval", "proof"}
CERTIFICATE_TERM = {"statistic", "coefficient"}
CENSUS_TABULATE = {"persons", "blocks", "tracts", "cells", "rows", "elapsed_s", "out"}
CENSUS_RECONSTRUCT = {"tracts", "skipped", "ran", "persons", "statuses", "elapsed_s", "out",
                      "conflicts"}
CENSUS_COMPARE = {
    "persons", "blocks", "tracts", "exact_match_rate", "age_within_1_rate", "blocks_exact",
    "blocks_certified_unique", "persons_in_certified_blocks", "certified_blocks_mismatched",
    "baseline_exact_match_rate", "baseline_age_within_1_rate", "certain_persons",
    "certain_persons_not_in_truth", "binned_match_rate", "blocks_exact_binned",
    "blocks_certified_unique_binned", "persons_in_certified_binned_blocks",
    "certified_binned_blocks_mismatched", "blocks_not_reconstructed", "blocks_not_in_truth",
    "truth_blocks_left_out", "truth_tracts_left_out", "truth_persons_left_out", "seed",
    "scores", "baselines", "precision_at_k", "precision_at_k_binned", "precision_curve",
    "certain_within_noise", "certain_within_noise_not_in_truth", "delta",
}
CENSUS_SCORES = {
    "persons", "guessed", "agreement_exact", "agreement_binned", "unique_rows",
    "precision_unique", "precision_unique_binned", "nonmodal_unique_rows",
    "precision_nonmodal", "precision_nonmodal_binned", "by_block_size",
}
CLAIMS_BLOCK = {
    "block", "tract", "state", "households", "statistics", "status", "claims",
    "negative_claims", "negative_undecided", "reconstructed", "candidates",
    "unknown_candidates", "solutions", "allowed_types", "elapsed_s", "timings_s", "sound",
    "covered_singleton", "covered_all",
}
CLAIM = {"assignment", "multiplicity", "columns", "singleton", "trivial", "baseline_tract",
         "baseline_state"}
NEGATIVE_CLAIM = {"assignment", "columns", "impossible_multiplicities", "at_least", "trivial"}
AUDIT_STEP = {
    "statistic", "source", "line", "status", "rank", "independent", "newly_determined",
    "would_disclose", "conflict", "discrepancy", "outside", "attainable",
}
AUDIT_RECORD = {"index", "record", "public", "value", "proven", "certificate"}
AUDIT_SUMMARY = {
    "statistics", "accepted", "denied", "inconsistent", "skipped", "rank", "records", "secret",
    "determined", "engine", "switched_at", "elapsed_s",
}


def keys(data: dict[str, Any], expected: set[str], what: str) -> None:
    assert set(data) == expected, (
        f"{what}: missing {sorted(expected - set(data))}, new {sorted(set(data) - expected)}")


def test_reconstruct_exact_keys(run_cli: CliRunner) -> None:
    code, out, err = run_cli("reconstruct", EXAMPLES / "block_2b.yaml", "--json", "--quiet")
    assert code == 0, err
    data = json.loads(out)
    keys(data, RECONSTRUCT_EXACT, "reconstruct (exact)")
    assert data["certain_rows"], "block_2b proves a row (one man is 30)"
    keys(data["certain_rows"][0], CERTAIN_ROW, "certain_rows[]")


def test_reconstruct_linear_keys(run_cli: CliRunner) -> None:
    code, out, err = run_cli("reconstruct", EXAMPLES / "hospital.yaml", "--json", "--quiet")
    assert code == 0, err
    data = json.loads(out)
    keys(data, RECONSTRUCT_LINEAR, "reconstruct (linear)")
    (record,) = data["determined"]
    keys(record, DETERMINED, "determined[]")
    keys(record["certificate"][0], CERTIFICATE_TERM, "certificate[]")


def test_census_keys(run_cli: CliRunner, tmp_path: Path) -> None:
    persons = SLICE
    release, recon = tmp_path / "r.parquet", tmp_path / "c.parquet"
    code, out, err = run_cli("census", "tabulate", "--persons", persons, "--out", release,
                             "--json", "--quiet")
    assert code == 0, err
    keys(json.loads(out), CENSUS_TABULATE, "census tabulate")
    code, out, err = run_cli("census", "reconstruct", release, "--out", recon, "--workers", "1",
                             "--no-certify", "--json", "--quiet")
    assert code == 0, err
    keys(json.loads(out), CENSUS_RECONSTRUCT, "census reconstruct")
    code, out, err = run_cli("census", "compare", "--truth", persons, "--recon", recon,
                             "--json", "--quiet")
    assert code == 0, err
    compared = json.loads(out)
    keys(compared, CENSUS_COMPARE, "census compare")
    keys(compared["scores"], CENSUS_SCORES, "census compare scores")
    assert set(compared["baselines"]) == {"block_majority", "tract_draw"}
    for name, scored in compared["baselines"].items():
        keys(scored, CENSUS_SCORES, f"census compare baseline {name}")
    assert set(compared["scores"]["by_block_size"][0]) == {
        "size", "blocks", "persons", "agreement_exact", "agreement_binned"}
    html = tmp_path / "report.html"
    code, out, err = run_cli("census", "report", recon, "--out", html, "--truth", persons,
                             "--json", "--quiet")
    assert code == 0, err
    assert json.loads(out) == {"out": str(html), "truth": str(persons)} and html.exists()
    block = pd.read_parquet(release)["geoid"].iloc[0]
    code, out, err = run_cli("census", "block-release", release, "--block", block, "--out",
                             tmp_path / "b.yaml", "--json")
    assert code == 0, err
    written = yaml.safe_load((tmp_path / "b.yaml").read_text())
    assert json.loads(out) == {"out": str(tmp_path / "b.yaml"), "block": block,
                               "statistics": len(written["statistics"])}


def test_claims_tabulate_keys(run_cli: CliRunner, tmp_path: Path) -> None:
    from conftest import households

    out_csv = tmp_path / "tables.csv"
    code, out, err = run_cli("claims", "tabulate", "--households", households(tmp_path),
                             "--out", out_csv, "--json")
    assert code == 0, err
    written = pd.read_csv(out_csv, dtype=str)
    assert json.loads(out) == {"out": str(out_csv), "blocks": written["block"].nunique(),
                               "cells": len(written) // written["block"].nunique()}


def test_claims_verify_keys(run_cli: CliRunner, tmp_path: Path) -> None:
    """One synthetic 3-unit block (seed 2): it has verified and negative claims."""
    units = tmp_path / "units.csv"
    code, _, err = run_cli("claims", "generate-blocks", "--blocks", "1", "--seed", "2", "--out",
                           units)
    assert code == 0, err
    code, out, err = run_cli("claims", "verify", "--households", units, "--k", "10", "--json",
                             "--quiet")
    assert code == 0, err
    data = json.loads(out)
    keys(data, {"blocks"}, "claims verify")
    (block,) = data["blocks"]
    keys(block, CLAIMS_BLOCK, "claims verify blocks[]")
    keys(block["claims"][0], CLAIM, "claims[]")
    keys(block["negative_claims"][0], NEGATIVE_CLAIM, "negative_claims[]")


def test_audit_stream_keys(run_cli: CliRunner, tmp_path: Path) -> None:
    audit = EXAMPLES / "audit"
    for name in ("hospital_schema.yaml", "hospital_public.csv", "hospital_stream.txt"):
        shutil.copy(audit / name, tmp_path / name)
    code, out, err = run_cli("audit-stream", tmp_path / "hospital_schema.yaml", "--input",
                             tmp_path / "hospital_stream.txt", "--json")
    assert code == 0, err
    *steps, last = [json.loads(line) for line in out.splitlines() if line.strip()]
    for step in steps:
        keys(step, AUDIT_STEP, "audit-stream step")
    disclosed = [r for s in steps for r in s["newly_determined"]]
    assert disclosed, "the hospital stream discloses record 2"
    keys(disclosed[0], AUDIT_RECORD, "newly_determined[]")
    keys(last, {"summary"}, "audit-stream last line")
    keys(last["summary"], AUDIT_SUMMARY, "audit-stream summary")


TABULATE = {"out", "statistics", "suppressed"}


def test_tabulate_json_keys_and_counts(run_cli: CliRunner, tmp_path: Path) -> None:
    import yaml
    from conftest import BLOCK_COLUMNS, BLOCK_PEOPLE

    data = yaml.safe_load((EXAMPLES / "block.yaml").read_text())
    data.pop("suppression")
    for entry in data["statistics"]:
        for key in ("value", "error", "suppressed"):
            entry.pop(key, None)
    stats, micro, out = tmp_path / "stats.yaml", tmp_path / "people.csv", tmp_path / "f.yaml"
    stats.write_text(yaml.safe_dump(data, sort_keys=False))
    micro.write_text(",".join(BLOCK_COLUMNS) + "\n"
                     + "".join(",".join(map(str, p)) + "\n" for p in BLOCK_PEOPLE))
    code, printed, err = run_cli("tabulate", "--microdata", micro, "--release", stats, "--out",
                                 out, "--suppress-below", "3", "--json")
    assert code == 0, err
    result = json.loads(printed)
    keys(result, TABULATE, "tabulate")
    filled = yaml.safe_load(out.read_text())["statistics"]
    assert result["statistics"] == len(filled) == len(data["statistics"])
    assert result["suppressed"] == sum(1 for s in filled if s.get("suppressed")) >= 1
    assert result["out"] == str(out)


def test_reconstruct_says_which_engine_answered_and_why(run_cli: CliRunner) -> None:
    """``route``: auto sends a release with no public table to CP-SAT, a linear one to
    determine; an explicit method is its own reason."""
    cases = [((EXAMPLES / "block_2b.yaml",), "exact", "exact", "auto: not linear"),
             ((EXAMPLES / "hospital.yaml",), "linear", "determine", "auto: every statistic"),
             ((EXAMPLES / "hospital.yaml", "--method", "ls"), "linear", "ls", "--method ls"),
             ((EXAMPLES / "block_2b.yaml", "--method", "exact"), "exact", "exact",
              "--method exact")]
    for args, engine, method, reason in cases:
        code, out, err = run_cli("reconstruct", *args, "--json", "--quiet")
        assert code == 0, err
        data = json.loads(out)
        keys(data["route"], ROUTE, "route")
        assert (data["route"]["engine"], data["route"]["method"], data["method"]) == (
            engine, method, method)
        assert data["route"]["reason"].startswith(reason), data["route"]


TABLES_JOB = {"status", "tables", "protected", "rounded", "written", "notes", "elapsed_s"}
TABLES_JOB_TABLE = {"number", "name", "variables", "response", "cells", "primary",
                    "secondary"}
TABLES_JOB_PROTECTED = {"tables", "method", "status", "primary", "secondary", "cost",
                        "cost_exact", "audit", "elapsed_s"}


def test_tables_protect_of_a_job_keys(run_cli: CliRunner, tmp_path: Path) -> None:
    """``tables protect job.arb --json``: a tau-Argus job carried out."""
    shutil.copytree(ROOT / "tests" / "data" / "jobs" / "micro", tmp_path / "micro")
    code, out, err = run_cli("tables", "protect", tmp_path / "micro" / "income.arb",
                             "--json", "--quiet")
    assert code == 0, err
    data = json.loads(out)
    keys(data, TABLES_JOB, "tables protect (job)")
    keys(data["tables"][0], TABLES_JOB_TABLE, "tables[]")
    keys(data["protected"][0], TABLES_JOB_PROTECTED, "protected[]")
    keys(data["written"][0], {"path", "working"}, "written[]")
