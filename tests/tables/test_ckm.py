"""Cell key perturbation (tables/ckm.py, runs/ckm.py): ptables read exactly in both formats,
every malformed ptable or record key refused naming file:line, and the perturbation against
its brute-force definition: a cell's key is the sum of its records' keys modulo the key
range, its noise the ptable's entry for (count, key), a zero is never perturbed, and the same
cell is published the same in every table."""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.engines.ckm import PTableParams, build_ptable
from statrecon.errors import InconsistentReleaseError, StatreconError
from statrecon.runs.ckm import PerturbOptions, perturb_microdata
from statrecon.tables.ckm import (
    IntervalPTable,
    KeyedPTable,
    keyed,
    ptable_frame,
    read_ptable,
)

ABS = build_ptable(PTableParams(2, Fraction("1.08"), 1))
ONS = keyed(ABS)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ptables")
    ptable_frame(ABS).to_csv(folder / "abs.csv", index=False)
    ptable_frame(ONS).to_csv(folder / "ons.csv", index=False)
    return folder


@pytest.mark.parametrize(("d", "v", "js", "key_range"), [(2, "1.08", 1, 256), (3, "3", 2, 256),
                                                     (5, "3", 0, 97)])
def test_the_ons_form_gives_each_key_the_noise_of_its_unit_key(d: int, v: str, js: int,
                                                                key_range: int) -> None:
    """``keyed`` (one walk per row) against its definition, key by key in Fractions: ONS key
    k perturbs count pcv as the unit key k / key_range does, past the ptable's top row too."""
    built = build_ptable(PTableParams(d, Fraction(v), js))
    got = keyed(built, key_range)
    for pcv in (*range(1, built.top + 2), 750):
        assert got.values[pcv] == tuple(built.perturbation(pcv, Fraction(k, key_range))
                                        for k in range(key_range))


def test_both_formats_read_back_exactly(files: Path) -> None:
    abs_read = read_ptable(files / "abs.csv")
    assert isinstance(abs_read, IntervalPTable) and abs_read.rows == ABS.rows
    ons_read = read_ptable(files / "ons.csv")
    assert isinstance(ons_read, KeyedPTable) and ons_read.values == ONS.values
    assert ons_read.key_range == 256 and ons_read.noise == 2


def test_the_ons_key_k_perturbs_as_the_abs_key_k_over_256() -> None:
    for n in range(1, 12):
        for k in range(256):
            assert ONS.perturbation(n, Fraction(k)) == ABS.perturbation(n, Fraction(k, 256))


def test_the_ons_form_counts_each_rows_outcomes_from_its_keys_and_keeps_them() -> None:
    """Each count's outcomes are its row's keys counted (the largest noise the widest of
    them), asked once or many times; a caller changing what it was given changes nothing
    (the rows' outcomes are worked out once per ptable)."""
    for n in (1, 2, 3, 7, 750, 751, 1001):
        row = [ONS.perturbation(n, Fraction(k)) for k in range(ONS.key_range)]
        counted = {v: Fraction(row.count(v), ONS.key_range) for v in sorted(set(row))}
        assert ONS.outcomes(n) == counted
        ONS.outcomes(n)[0] = Fraction(7)
        assert ONS.outcomes(n) == counted
    assert ONS.noise == max(abs(v) for row in ONS.values.values() for v in row) == ABS.noise


def test_ons_looks_counts_above_750_up_in_rows_501_to_750() -> None:
    assert [ONS.row(n) for n in (1, 750, 751, 1000, 1001, 1250, 1251)] == \
        [1, 750, 501, 750, 501, 750, 501]


def test_the_bundled_ons_ptable_is_plain_rounding(tmp_path: Path) -> None:
    """ONS's own generator's 10-5 rule (generate_ptable_10_5_rule, rebuilt here): the noise
    depends on the count only, never on the cell key."""
    rows = []
    for pcv in range(1, 751):
        v = -pcv if pcv < 10 else {0: 0, 1: -1, 2: -2, 3: 2, 4: 1}[pcv % 5]
        rows += [(pcv, k, v) for k in range(256)]
    pd.DataFrame(rows, columns=["pcv", "ckey", "pvalue"]).to_csv(tmp_path / "p.csv",
                                                                 index=False)
    table = read_ptable(tmp_path / "p.csv")
    assert all(len(set(row)) == 1 for row in table.values.values())  # type: ignore[attr-defined]
    assert table.perturbation(13, Fraction(200)) == 2 and table.perturbation(7, Fraction(0)) == -7


# ------------------------------------------------------------------------------ bad input


def _edit(source: Path, target: Path, line: int, text: str | None) -> Path:
    lines = source.read_text().splitlines()
    if text is None:
        del lines[line - 1]
    else:
        lines[line - 1] = text
    target.write_text("\n".join(lines) + "\n")
    return target


@pytest.mark.parametrize(("line", "text", "message"), [
    (3, "1,0,0.51333334,-1,0,0.51333334", ":4: i = 1: p_int_lb = 0.51333333, but"),
    (5, "1,3,0.03,2,0.97333333,1.00333333", ":5: i = 1: the probabilities sum to 1.00333333"),
    (3, "1,0,-0.51333333,-1,0,-0.51333333", ":3: p = -0.51333333 is a negative probability"),
    (3, "1,0,0.51333333,-2,0,0.51333333", ":3: v = -2 but j - i = -1"),
    (3, "1,0,0.5133333x,-1,0,0.51333333", ":3: p: '0.5133333x' is not a number"),
    (3, "1,0,,-1,0,0.51333333", ":3: p: a missing value"),
])
def test_an_abs_ptable_that_is_no_distribution_names_its_line(
        files: Path, tmp_path: Path, line: int, text: str, message: str) -> None:
    bad = _edit(files / "abs.csv", tmp_path / "bad.csv", line, text)
    with pytest.raises(StatreconError) as e:
        read_ptable(bad)
    assert str(bad) + message in str(e.value), str(e.value)
    assert "\n" not in str(e.value)


def test_an_abs_ptable_missing_a_count_is_refused(files: Path, tmp_path: Path) -> None:
    frame = pd.read_csv(files / "abs.csv", dtype=str)
    frame[frame["i"] != "2"].to_csv(tmp_path / "gap.csv", index=False)
    with pytest.raises(StatreconError, match="no rows for i = 2"):
        read_ptable(tmp_path / "gap.csv")


@pytest.mark.parametrize(("line", "text", "message"), [
    (2, "1,0,-2", ":2: pvalue -2 would publish the count 1 as -1"),
    (2, "751,0,0", ":2: pcv 751 is outside 1..750"),
    (3, "1,0,-1", ":3: pcv 1, ckey 0 is given twice"),
    (2, "1,0,1.5", ":2: pvalue 1.5 is not a whole number"),
    (2, "1,-1,0", ":2: ckey -1 is negative"),
])
def test_a_bad_ons_row_names_its_line(files: Path, tmp_path: Path, line: int, text: str,
                                      message: str) -> None:
    bad = _edit(files / "ons.csv", tmp_path / "bad.csv", line, text)
    with pytest.raises(StatreconError) as e:
        read_ptable(bad)
    assert str(bad) + message in str(e.value), str(e.value)


def test_an_ons_ptable_missing_a_count_or_a_key_is_refused(files: Path, tmp_path: Path) -> None:
    frame = pd.read_csv(files / "ons.csv")
    frame[frame["pcv"] != 600].to_csv(tmp_path / "gap.csv", index=False)
    with pytest.raises(StatreconError, match="pcv 600 has no rows"):
        read_ptable(tmp_path / "gap.csv")
    frame[(frame["pcv"] != 3) | (frame["ckey"] != 17)].to_csv(tmp_path / "key.csv",
                                                              index=False)
    with pytest.raises(StatreconError, match="pcv 3 has no row for ckey 17"):
        read_ptable(tmp_path / "key.csv")


def test_a_file_with_neither_format_is_refused(tmp_path: Path) -> None:
    (tmp_path / "p.csv").write_text("a,b\n1,2\n")
    with pytest.raises(StatreconError, match="ONS's columns"):
        read_ptable(tmp_path / "p.csv")


@pytest.mark.parametrize(("key", "ptable", "message"), [
    ("256", "ons.csv", "record key 256 is not a whole number from 0 to 255"),
    ("-1", "ons.csv", "record key -1 is not a whole number from 0 to 255"),
    ("2.5", "ons.csv", "record key 2.5 is not a whole number from 0 to 255"),
    ("1", "abs.csv", "record key 1 is not in [0, 1)"),
])
def test_record_keys_outside_the_range_name_their_line(files: Path, tmp_path: Path, key: str,
                                                       ptable: str, message: str) -> None:
    micro = tmp_path / "m.csv"
    micro.write_text(f"a,rk\nx,0\ny,{key}\n")
    with pytest.raises(StatreconError) as e:
        perturb_microdata(micro, files / ptable, PerturbOptions((("a",),), record_key="rk"))
    assert str(e.value) == f"{micro}:3: {message} (the ptable's cell keys)"


# ------------------------------------------------------------------ the perturbation itself


records = st.lists(st.tuples(st.sampled_from("pqr"), st.sampled_from("xyz"),
                             st.integers(0, 255)), min_size=1, max_size=40)


def _write(tmp: Path, rows: list[tuple[str, str, int]]) -> Path:
    path = tmp / "m.csv"
    pd.DataFrame(rows, columns=["a", "b", "rk"]).to_csv(path, index=False)
    return path


@settings(max_examples=30, deadline=None)
@given(rows=records)
def test_every_cell_is_perturbed_by_its_brute_force_definition(
        files: Path, tmp_path_factory: pytest.TempPathFactory,
        rows: list[tuple[str, str, int]]) -> None:
    micro = _write(tmp_path_factory.mktemp("m"), rows)
    run = perturb_microdata(micro, files / "ons.csv",
                            PerturbOptions((("a", "b"),), record_key="rk", threshold=0))
    codes_a = [*sorted({r[0] for r in rows}), "Total"]
    codes_b = [*sorted({r[1] for r in rows}), "Total"]
    assert len(run.cells) == len(codes_a) * len(codes_b)
    for a, b in itertools.product(codes_a, codes_b):
        mine = [r for r in rows if a in (r[0], "Total") and b in (r[1], "Total")]
        key = frozenset(p for p in (("a", a), ("b", b)) if p[1] != "Total")
        cell = run.published(key)
        ckey = sum(r[2] for r in mine) % 256
        n = len(mine)
        noise = 0 if n == 0 else ONS.values[n if n <= 750 else (n - 1) % 250 + 501][ckey]
        assert (cell.count, cell.ckey, cell.noise, cell.published) == (n, ckey, noise,
                                                                       n + noise)
        if n == 0:
            assert cell.published == 0  # a zero is never perturbed


@settings(max_examples=20, deadline=None)
@given(rows=records)
def test_the_same_cell_is_published_the_same_in_every_table(
        files: Path, tmp_path_factory: pytest.TempPathFactory,
        rows: list[tuple[str, str, int]]) -> None:
    """a's margin published by the table a x b, by the table a alone, and by a run of its
    own: one cell key, one noise."""
    micro = _write(tmp_path_factory.mktemp("m"), rows)
    for ptable in ("ons.csv", "abs.csv"):
        both = perturb_microdata(micro, files / ptable, PerturbOptions(
            (("a", "b"), ("a",)), record_key="rk" if ptable == "ons.csv" else None,
            seed=None if ptable == "ons.csv" else 7))
        alone = perturb_microdata(micro, files / ptable, PerturbOptions(
            (("a",),), record_key="rk" if ptable == "ons.csv" else None,
            seed=None if ptable == "ons.csv" else 7))
        shared = alone.tables.keys()
        for key in shared:
            assert both.published(key) == alone.published(key)


def test_drawn_keys_are_seeded_and_kept(files: Path, tmp_path: Path) -> None:
    micro = _write(tmp_path, [("p", "x", 0)] * 5 + [("q", "y", 0)] * 3)
    one = perturb_microdata(micro, files / "ons.csv", PerturbOptions((("a",),), seed=2025))
    two = perturb_microdata(micro, files / "ons.csv", PerturbOptions((("a",),), seed=2025))
    assert one.cells == two.cells
    assert list(one.records["record_key"]) == list(two.records["record_key"])
    # the same draw as numpy's default_rng(seed).integers(0, 256): ONS's generate_random_rkey
    import numpy as np

    assert list(one.records["record_key"]) == \
        np.random.default_rng(2025).integers(0, 256, size=8).tolist()


def test_a_threshold_withholds_small_published_counts(files: Path, tmp_path: Path) -> None:
    micro = _write(tmp_path, [("p", "x", 1)] * 3 + [("q", "y", 2)] * 30)
    run = perturb_microdata(micro, files / "ons.csv",
                            PerturbOptions((("a",),), record_key="rk"))
    assert run.threshold == 10  # ONS's default with an ONS ptable
    small = run.published(frozenset({("a", "p")}))
    assert small.published is None and small.count == 3
    assert run.published(frozenset()).published is not None


def test_what_a_published_count_allows() -> None:
    """possible(): with the ptable, the counts it can publish as y (brute force over the
    rows); with D, y +- D; a published count above 0 always means a true count above 0."""
    for y in range(0, 12):
        brute = [n for n in range(0, 20) if n + ABS.perturbation(n, Fraction(0)) == y or
                 any(n + v == y for v in ABS.noises(n))]
        if brute:
            assert ABS.possible(y, "ptable") == (min(brute), max(brute))
        else:
            with pytest.raises(InconsistentReleaseError):
                ABS.possible(y, "ptable")
    assert ABS.possible(1, "d") == (1, 3)
    assert ABS.possible(0, "d") == (0, 2)
    assert ABS.possible(5, "nothing") == (1, None)
    assert ABS.possible(0, "ptable") == (0, 2)  # js = 1: a 1 or a 2 may be published as 0


@pytest.mark.parametrize("ptable", [ABS, ONS], ids=["abs", "ons"])
def test_the_likelihood_of_a_published_value_is_the_ptable_read_backwards(ptable: object
                                                                         ) -> None:
    """likelihood((y,))[n] is P(y | n): for every true count, its published values' likelihoods
    sum to 1, each equals the share of cell keys that publish it (brute force over the keys
    for ONS's form), and a withheld cell's is the sum over the values below the threshold."""
    assert isinstance(ptable, (IntervalPTable, KeyedPTable))
    top = 30
    by_y = {y: ptable.likelihood((y,)) for y in range(top + 3)}
    for n in range(top):
        assert sum(lik.get(n, Fraction(0)) for lik in by_y.values()) == 1
    if isinstance(ptable, KeyedPTable):
        for n, y in itertools.product(range(1, 12), range(15)):
            hits = sum(1 for k in range(ptable.key_range)
                       if n + ptable.perturbation(n, Fraction(k)) == y)
            assert by_y[y].get(n, Fraction(0)) == Fraction(hits, ptable.key_range)
    below = ptable.likelihood(range(5))
    assert below == {n: p for n in range(top)
                     if (p := sum((by_y[y].get(n, Fraction(0)) for y in range(5)),
                                  Fraction(0)))}


@pytest.mark.parametrize(("d", "v", "js"), [(1, "0.5", 0), (2, "1.08", 1), (3, "2.25", 2)])
@pytest.mark.parametrize("ons", [False, True])
def test_the_counts_below_a_threshold_reach_what_a_full_scan_finds(d: int, v: str, js: int,
                                                                  ons: bool) -> None:
    """``possible_below`` stops scanning once no lower value can beat what it has; for every
    threshold up to past the ptable's last row it equals the greatest source of any value
    below the threshold, found by scanning them all."""
    table = build_ptable(PTableParams(d, Fraction(v), js))
    ptable = keyed(table) if ons else table
    for threshold in range(0, 3 * (d + js) + 12):
        full = max((n for y in range(threshold) for n in ptable.sources(y)), default=0)
        assert ptable.possible_below(threshold, "ptable") == (0, full), threshold
