"""Results draw themselves in Jupyter (``_repr_html_``): proven cells marked, estimates not;
a census run's headline numbers; a table audit as grids coloured by verdict (the notebooks of
``docs/notebooks`` draw them too, in ``tests/test_docs.py``)."""

from __future__ import annotations

import re
from collections import Counter

from conftest import ROOT

import statrecon
from statrecon.runs.census import RunSummary

EXAMPLES = ROOT / "examples"


def _proven(view: str) -> list[str]:
    return re.findall(r"<td class=proven[^>]*>([^<]*)</td>", view)


def test_a_unique_reconstruction_marks_every_cell_proven() -> None:
    view = statrecon.reconstruct(EXAMPLES / "block.yaml")._repr_html_()
    assert "UNIQUE: exactly one dataset" in view
    assert len(_proven(view)) == 7 * 4 and "Engine: exact" in view


def test_several_datasets_mark_only_what_all_share() -> None:
    result = statrecon.reconstruct(EXAMPLES / "block_2b.yaml")
    view = result._repr_html_()
    assert "MULTIPLE: 30 datasets" in view
    # one man is 30 in every dataset; every person is a man (the only possible sex)
    assert sorted(_proven(view)) == ["30", "M", "M", "M"]
    clinic = statrecon.reconstruct(EXAMPLES / "clinic.yaml")._repr_html_()
    assert len(_proven(clinic)) >= len(statrecon.reconstruct(EXAMPLES / "clinic.yaml")
                                       .certain_cells)


def test_an_infeasible_release_names_its_conflict() -> None:
    view = statrecon.reconstruct(EXAMPLES / "contradiction.yaml")._repr_html_()
    assert "INFEASIBLE" in view and "1A-count, 2A-count, 2B-count" in view
    assert not _proven(view)


def test_a_linear_result_marks_the_determined_records_with_their_proof() -> None:
    view = statrecon.reconstruct(EXAMPLES / "hospital.yaml")._repr_html_()
    assert "PARTIAL (determine): 1 of 6 records proven" in view
    assert _proven(view) == ["5.2"]
    assert "q1 - q2 - q3" in view and "an estimate, never a proof" in view


def test_a_census_run_shows_its_headline_numbers() -> None:
    view = RunSummary(tracts=3, skipped=1, ran=2, persons=920, statuses=Counter(ok=2),
                      elapsed_s=4.25, unique_blocks=140)._repr_html_()
    for text in ("Census reconstruction", "920", "140", "2 ok", "4.2"):
        assert text in view, text
