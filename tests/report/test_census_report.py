"""`statrecon census report`: one self-contained HTML page on a census reconstruction.

Built once from the bundled three-tract slice; the headline numbers are recomputed here from
the Parquet with pyarrow and looked up in the page.
"""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import SLICE, CensusSlice, assert_user_error, statrecon

from statrecon.errors import StatreconError
from statrecon.experiments.census_match import compare
from statrecon.report.census import write_report

IMG = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, census_slice: CensusSlice
          ) -> dict[str, Any]:
    """The reports of the session's slice reconstruction (``census_slice``): the command's,
    with the truth, and ``write_report``'s without."""
    d = tmp_path_factory.mktemp("census_report")
    rel, recon = census_slice.release, census_slice.recon
    plain, with_truth = d / "report.html", d / "report_truth.html"
    proc = statrecon("census", "report", recon, "--out", with_truth, "--truth", SLICE)
    assert proc.returncode == 0, proc.stderr
    write_report(recon, plain)
    return {"dir": d, "release": rel, "recon": recon,
            "plain": plain.read_text(encoding="utf-8"),
            "truth": with_truth.read_text(encoding="utf-8")}


def value_of(page: str, label: str) -> str:
    """The (unescaped) cell right after the table cell that reads ``label``."""
    m = re.search(rf"<td>{re.escape(html.escape(label))}</td><td[^>]*>([^<]*)</td>", page)
    assert m, label
    return html.unescape(m.group(1))


def count(text: str) -> int:
    return int(text.replace(",", ""))


def test_headline_numbers_match_the_parquet(built: dict[str, Any]) -> None:
    table = pq.read_table(built["recon"], columns=[
        "tract", "block", "status", "persons", "unique", "certain_persons", "unique_binned",
        "certain_persons_binned"])
    ok = table.filter(pc.equal(table["status"], "ok"))
    unique = ok.filter(pc.fill_null(ok["unique"], False))
    unique_b = ok.filter(pc.fill_null(ok["unique_binned"], False))
    persons = pc.sum(ok["persons"]).as_py()
    expected = {
        "tracts": len(set(table["tract"].to_pylist())),
        "blocks": table.num_rows,
        "persons reconstructed": persons,
        "blocks certified unique, full records": unique.num_rows,
        "blocks certified unique, age-bin resolution": unique_b.num_rows,
        "persons in blocks certified unique, full records":
            pc.sum(unique["persons"]).as_py() or 0,
        "persons in blocks certified unique, age-bin resolution":
            pc.sum(unique_b["persons"]).as_py() or 0,
        "certain persons, full records": pc.sum(ok["certain_persons"]).as_py(),
        "certain persons, age-bin resolution": pc.sum(ok["certain_persons_binned"]).as_py(),
    }
    assert persons == 920 and table.num_rows == 217  # the slice, reconstructed in full
    for page in (built["plain"], built["truth"]):
        for label, n in expected.items():
            assert count(value_of(page, label)) == n, label


def test_tract_table_lists_every_tract(built: dict[str, Any]) -> None:
    meta = json.loads(pq.read_schema(built["recon"]).metadata[b"statrecon.census.recon"])
    table = pq.read_table(built["recon"], columns=["tract", "persons"])
    page = built["plain"]
    tracts = page[page.index("<h2>Tracts</h2>"):]
    for tract, summary in meta["tracts"].items():
        persons = pc.sum(table.filter(pc.equal(table["tract"], tract))["persons"]).as_py()
        row = re.search(rf"<tr><td>{tract}</td>(.*?)</tr>", tracts)
        assert row, tract
        cells = re.findall(r"<td[^>]*>([^<]*)</td>", row.group(1))
        assert count(cells[1]) == persons and cells[2] == summary["status"]
        assert count(cells[3]) == summary["variables"]


def test_plots_are_embedded_pngs_and_nothing_is_external(built: dict[str, Any]) -> None:
    for key, plots in (("plain", 1), ("truth", 2)):
        page = built[key]
        images = IMG.findall(page)
        assert len(images) == plots, key
        assert all(base64.b64decode(b).startswith(b"\x89PNG\r\n\x1a\n") for b in images)
        assert page.startswith("<!DOCTYPE html>")
        lowered = page.lower()
        assert "<script" not in lowered and "<link" not in lowered
        assert not re.search(r"(src|href)=\"(?!data:)", lowered)


def test_truth_adds_match_rates_beside_the_baseline(built: dict[str, Any]) -> None:
    summary = compare(SLICE, built["recon"], seed=0)
    page = built["truth"]
    row = re.search(r"<tr><td>exact match rate</td><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td>",
                    page)
    assert row
    assert row.group(1) == f"{100 * summary['exact_match_rate']:.1f} %"
    assert row.group(2) == f"{100 * summary['baseline_exact_match_rate']:.1f} %"
    assert summary["exact_match_rate"] > summary["baseline_exact_match_rate"]
    assert count(value_of(page, "blocks reconstructed exactly")) == summary["blocks_exact"]
    assert "Against the true persons" in page
    assert "Against the true persons" not in built["plain"]
    assert "baseline" not in built["plain"].split("<h2>Tracts</h2>")[0].lower()


def test_no_person_rows_or_block_ids_reach_the_page(built: dict[str, Any]) -> None:
    blocks = pq.read_table(built["recon"], columns=["block"])["block"].to_pylist()
    for page in (built["plain"], built["truth"]):
        assert not any(b in page for b in blocks)
        assert "hispanic</td>" not in page.lower() and "nhopi" not in page.lower()


def test_text_is_escaped_and_the_file_replaced(built: dict[str, Any], tmp_path: Path) -> None:
    odd = tmp_path / "a<b>&c.parquet"
    shutil.copy(built["recon"], odd)
    out = tmp_path / "out.html"
    out.write_text("old")
    write_report(odd, out)
    page = out.read_text(encoding="utf-8")
    assert "a&lt;b&gt;&amp;c.parquet" in page and "<b>" not in page
    assert sorted(p.name for p in tmp_path.iterdir()) == [odd.name, "out.html"]


def test_bad_input_and_unwritable_output_are_user_errors(built: dict[str, Any],
                                                         tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    proc = statrecon("census", "report", built["release"], "--out", out)
    assert_user_error(proc, "not a statrecon census reconstruction")
    assert not out.exists()
    with pytest.raises(StatreconError, match="cannot write"):
        write_report(built["recon"], tmp_path / "no" / "r.html")
    with pytest.raises(StatreconError, match="cannot write"):
        write_report(built["recon"], tmp_path)  # a directory
    assert list(tmp_path.iterdir()) == []
