"""`statrecon claims verify | tabulate | experiment | block-release` from the command line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
from conftest import BLOCK_A, BLOCK_B, assert_user_error, households, json_of, statrecon

from statrecon.census.households import schema as hh
from statrecon.census.households import tables as hht
from statrecon.census.households.files import encode
from statrecon.engines.claims import Claim


def test_verify_json_contract_and_soundness(tmp_path: Path) -> None:
    path = households(tmp_path)
    out = statrecon("claims", "verify", "--households", path, "--json", "--k", "20")
    assert out.returncode == 0, out.stderr
    data = json_of(out)
    assert [b["block"] for b in data["blocks"]] == [BLOCK_A, BLOCK_B]
    truth = pd.read_csv(path, dtype=str, keep_default_na=False)
    for block in data["blocks"]:
        assert {"block", "households", "statistics", "status", "claims", "negative_claims",
                "elapsed_s"} <= set(block)
        assert block["status"] == "ok" and block["statistics"] == len(hht.table_index().cells)
        units = encode(truth[truth["block"] == block["block"]])
        assert block["households"] == len(units)
        assert block["claims"]
        for c in block["claims"]:
            assert set(c) == {"assignment", "multiplicity", "columns", "singleton", "trivial",
                              "baseline_tract", "baseline_state"}
            assert c["columns"] == len(c["assignment"])
            assert c["singleton"] == (c["multiplicity"] == 1)
            assert 0.0 <= c["baseline_tract"] <= 1.0 and 0.0 <= c["baseline_state"] <= 1.0
            cols = tuple(hh.COL[k] for k in c["assignment"])
            vals = tuple(hh.COLUMNS[hh.COL[k]].code(v) for k, v in c["assignment"].items())
            order = sorted(range(len(cols)), key=lambda i: cols[i])
            claim = Claim(tuple(cols[i] for i in order), tuple(vals[i] for i in order),
                          c["multiplicity"])
            assert int(claim.matches(units).sum()) == c["multiplicity"]
        # the vacant unit for sale is read off H5 directly: a trivial claim
        trivial = [c for c in block["claims"] if c["trivial"]]
        assert trivial
    # block A: the tables pin both households and the vacant unit down (three full records)
    a = data["blocks"][0]
    full = [c for c in a["claims"] if c["columns"] == 10]
    assert a["households"] == 3 and len(full) >= 1

    # the same block from its published tables alone: the same claims
    tables = tmp_path / "tables.csv"
    assert statrecon("claims", "tabulate", "--households", path, "--out", tables
                     ).returncode == 0
    by_tables = statrecon("claims", "verify", "--tables", tables, "--block", BLOCK_B,
                          "--json", "--k", "20")
    assert by_tables.returncode == 0, by_tables.stderr

    def claims(block: dict) -> list[str]:  # type: ignore[type-arg]
        return sorted(json.dumps([c["assignment"], c["multiplicity"]])
                      for c in block["claims"])

    assert claims(json_of(by_tables)["blocks"][0]) == claims(data["blocks"][1])

    # inconsistent tables: exit 2 naming the cell
    rows = list(csv.DictReader(tables.open()))
    for row in rows:  # publish a 25-34 householder who is not there
        if row["block"] == BLOCK_B and row["cell"] == "H13_004":
            row["value"] = "1"
    bad = tmp_path / "bad.csv"
    with bad.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["block", "cell", "value"])
        w.writeheader()
        w.writerows(rows)
    out = statrecon("claims", "verify", "--tables", bad, "--block", BLOCK_B)
    assert out.returncode == 2, out.stderr
    assert "H13_004" in out.stderr and "Traceback" not in out.stderr
    rows[3]["cell"] = "H99_001"
    with bad.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["block", "cell", "value"])
        w.writeheader()
        w.writerows(rows)
    assert_user_error(statrecon("claims", "verify", "--tables", bad), str(bad), "line 5",
                      "H99_001")


def test_bad_input_errors(tmp_path: Path) -> None:
    path = households(tmp_path)
    assert_user_error(statrecon("claims", "verify", "--households", path, "--block",
                                "999999999999999"), "unknown block id 999999999999999")
    text = path.read_text().splitlines()
    text[2] = text[2].replace(",4,", ",1,")  # a married couple with children of size 1
    broken = tmp_path / "broken.csv"
    broken.write_text("\n".join(text) + "\n")
    assert_user_error(statrecon("claims", "verify", "--households", broken), str(broken),
                      "line 3")
    assert_user_error(statrecon("claims", "verify", "--households", path, "--formulation",
                                "magic"), "--formulation")


def test_time_limit_exits_unknown(tmp_path: Path) -> None:
    out = statrecon("claims", "verify", "--households", households(tmp_path), "--time-limit",
                    "0.000001", "--json")
    assert out.returncode == 3, out.stderr
    assert {b["status"] for b in json_of(out)["blocks"]} == {"unknown"}
    assert all(b["claims"] == [] for b in json_of(out)["blocks"])


def test_experiment_writes_figures_tables_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "exp"
    args = ("claims", "experiment", "--blocks", "1", "--seed", "1", "--out", out,
            "--workers", "1", "--k", "10", "--json")
    first = statrecon(*args)
    assert first.returncode == 0, first.stderr
    summary = json_of(first)
    assert summary["blocks"] == 1 and summary["sound"] is True
    for name in ("figure2.png", "figure3.png", "results.md", "blocks.jsonl", "blocks.csv",
                 "population.csv"):
        assert (out / name).stat().st_size > 0
    assert (out / "figure2.png").read_bytes()[:4] == b"\x89PNG"
    md = (out / "results.md").read_text()
    assert "Table 2" in md and "Table 3" in md and "reconstructed" in md
    stored = (out / "blocks.jsonl").read_text().splitlines()
    assert len(stored) == 1
    record = json.loads(stored[0])
    assert summary["negative_undecided"] == record["negative_undecided"] >= 0
    assert summary["negative_claims"] == sum(not c["trivial"] for c in record["negative_claims"])
    again = statrecon(*args)  # resumed: nothing solved twice
    assert again.returncode == 0
    assert (out / "blocks.jsonl").read_text().splitlines() == stored
    assert_user_error(statrecon("claims", "experiment", "--blocks", "3", "--seed", "1",
                                "--out", out, "--k", "10"), "different run")
