"""tau-Argus's <RECODE> (tables/recode.py): a .grc file for a flat variable (codes padded and
compared as tau-Argus compares them, ranges, open ends, overlaps, missing codes), a
<TREERECODE> file and a level for a hierarchical one."""

from __future__ import annotations

from pathlib import Path

import pytest

from statrecon.errors import StatreconError
from statrecon.tables.model import Hierarchy
from statrecon.tables.recode import grc_recode, tree_recode, truncate

SIZE = Hierarchy("Size", "Total", {"Total": (*(f"{i:>2}" for i in range(1, 13)), "99")})
TREE = Hierarchy("Ind", "Total", {"Total": ("142", "150"), "142": ("1421", "1422"),
                                  "1421": ("14211",), "1422": ("14221", "14222"),
                                  "150": ("1500",), "1500": ("15001", "15002")})


def recode(tmp_path: Path, text: str, hierarchy: Hierarchy = SIZE) -> object:
    (tmp_path / "r.grc").write_text(text)
    return grc_recode(tmp_path / "r.grc", hierarchy, 2, ("99",))


def test_a_range_as_tau_argus_gk_grc(tmp_path: Path) -> None:
    """tau-Argus's GK.GRC: '1:1-5' puts sizes 1 to 5 under 1; the others keep their codes,
    padded to the longest, the missing code last."""
    done = recode(tmp_path, "1:1-5\n")
    assert done.hierarchy.children == {"Total": (" 1", " 6", " 7", " 8", " 9", "10", "11",
                                                 "12", "99")}
    assert done.codes == {" 2": " 1", " 3": " 1", " 4": " 1", " 5": " 1"}


def test_open_ends_lists_overlaps_and_text_order(tmp_path: Path) -> None:
    """'-3' is every code up to 3, '10-' every code from 10, codes compare as padded text
    (' 9' < '10'); a later line wins an overlap; an unknown single code is passed over; the
    new codes are padded to the longest and sorted, as tau-Argus sorts them."""
    done = recode(tmp_path, "A: -3, 7\nB: 10-\nC: 3-4, 42\n")
    assert done.codes[" 1"] == done.codes[" 2"] == done.codes[" 7"] == " A"
    assert done.codes[" 3"] == done.codes[" 4"] == " C"
    assert done.codes["10"] == done.codes["12"] == " B"
    assert done.hierarchy.children["Total"] == (" 5", " 6", " 8", " 9", " A", " B", " C",
                                                "99")


def test_new_missing_codes_and_what_is_refused(tmp_path: Path) -> None:
    done = recode(tmp_path, "<MISSING> 0\n1: 1-12\n")
    assert done.hierarchy.children["Total"] == ("1", "0")
    assert done.codes["99"] == "0" and done.codes[" 7"] == "1"
    with pytest.raises(StatreconError, match=r"r\.grc:1: range '5-1' runs backwards"):
        recode(tmp_path, "1: 5-1\n")
    with pytest.raises(StatreconError, match=r"r\.grc:2: a recode line is 'new code: old"):
        recode(tmp_path, "1: 1\n2 3\n")
    with pytest.raises(StatreconError, match=r"r\.grc:1: code '123' is longer than"):
        recode(tmp_path, "1: 123\n")
    with pytest.raises(StatreconError, match=r"r\.grc:2: valid codes cannot become the "
                                             r"missing code 99"):
        recode(tmp_path, "<MISSING> 99\n99: 1-3\n")
    with pytest.raises(StatreconError, match="<TREERECODE> recodes a hierarchical"):
        recode(tmp_path, "<TREERECODE>\n1\n")


def test_tree_recode_and_levels_close_codes(tmp_path: Path) -> None:
    (tmp_path / "t.grc").write_text("<TREERECODE>\n142\n1500\n")
    done = tree_recode(tmp_path / "t.grc", TREE)
    assert done.hierarchy.children == {"Total": ("142", "150"), "150": ("1500",)}
    assert done.codes == {"14211": "142", "14221": "142", "14222": "142", "15001": "1500",
                          "15002": "1500"}
    assert truncate(TREE, 2).hierarchy.children == {
        "Total": ("142", "150"), "142": ("1421", "1422"), "150": ("1500",)}
    assert truncate(TREE, 1).codes["15002"] == "150"
    (tmp_path / "t.grc").write_text("<TREERECODE>\n143\n")
    with pytest.raises(StatreconError, match=r"t\.grc:2: code '143' is not a code of Ind"):
        tree_recode(tmp_path / "t.grc", TREE)
    (tmp_path / "t.grc").write_text("1: 1\n")
    with pytest.raises(StatreconError, match=r"t\.grc:1: .*starts with <TREERECODE>"):
        tree_recode(tmp_path / "t.grc", TREE)
