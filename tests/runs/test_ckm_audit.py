"""The audit of a perturbed release (runs/ckm.audit_perturbed) against brute force: on tiny
tables, every integer table whose cells lie within what their published counts allow and
that adds up gives each cell's least and greatest value, and those are the integer
intervals the audit proves; the true counts always lie inside (soundness); and the issue's
example: two cells of 1 with their margin of 2 published as 0 under D = 2 prove both."""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.engines.ckm import PTableParams, build_ptable
from statrecon.runs.ckm import PerturbOptions, audit_perturbed, perturb_microdata
from statrecon.tables.ckm import ptable_frame


@pytest.fixture(scope="module")
def ptable(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("p") / "abs.csv"
    ptable_frame(build_ptable(PTableParams(2, Fraction("1.08"), 1))).to_csv(path, index=False)
    return path


def test_two_ones_and_their_margin_published_as_zero_are_proven(ptable: Path,
                                                                tmp_path: Path) -> None:
    """Keys 0.55 and 0.55: each 1 is published as 2 (key in [0.5133, 0.9733)), their margin
    of 2 as 0 (key 0.1 < 0.1656). The margin allows 0..2, each cell (published above 0)
    at least 1: both are 1, the margin 2."""
    micro = tmp_path / "m.csv"
    micro.write_text("a,rk\nx,0.55\ny,0.55\n")
    run = perturb_microdata(micro, ptable, PerturbOptions((("a",),), record_key="rk"))
    assert [(c.count, c.published) for c in run.cells] == [(2, 0), (1, 2), (1, 2)]
    for knows in ("ptable", "d"):
        checked = audit_perturbed(run, knowledge=knows)
        assert len(checked.pinned) == 3
        assert [(c.integer.lower.value, c.integer.upper.value)
                for c in checked.result.cells] == [(2, 2), (1, 1), (1, 1)]
        assert all(c.attack.equations == ("a: a Total = x + y",)
                   for c in checked.result.cells)
    nothing = audit_perturbed(run, knowledge="nothing")
    assert not nothing.pinned  # without D, only that each published 2 is at least 1


cells = st.lists(st.tuples(st.sampled_from("pq"), st.sampled_from("uv"),
                           st.integers(0, 99_999_999)), min_size=1, max_size=9)


@settings(max_examples=25, deadline=None)
@given(rows=cells, knows=st.sampled_from(["ptable", "d"]))
def test_the_integer_intervals_are_brute_force_min_and_max(
        ptable: Path, tmp_path_factory: pytest.TempPathFactory,
        rows: list[tuple[str, str, int]], knows: str) -> None:
    micro = tmp_path_factory.mktemp("m") / "m.csv"
    pd.DataFrame([(a, b, f"0.{k:08d}") for a, b, k in rows],
                 columns=["a", "b", "rk"]).to_csv(micro, index=False)
    run = perturb_microdata(micro, ptable, PerturbOptions((("a", "b"),), record_key="rk"))
    checked = audit_perturbed(run, knowledge=knows)  # type: ignore[arg-type]
    keys = run.tables.keys()
    index = {k: i for i, k in enumerate(keys)}
    inner = [k for k in keys if len(k) == 2]
    a_codes = sorted({v for k in inner for n, v in k if n == "a"})
    b_codes = sorted({v for k in inner for n, v in k if n == "b"})
    lows = [lo for lo, _ in checked.bounds]
    highs = [hi for _, hi in checked.bounds]
    assert all(h is not None for h in highs)
    least = [None] * len(keys)
    most = [None] * len(keys)
    ranges = [range(lows[index[k]], highs[index[k]] + 1) for k in inner]  # type: ignore[operator]
    for values in itertools.product(*ranges):
        table = dict(zip(inner, values, strict=True))
        full = dict(table)
        for a in a_codes:
            full[frozenset({("a", a)})] = sum(table[frozenset({("a", a), ("b", b)})]
                                              for b in b_codes)
        for b in b_codes:
            full[frozenset({("b", b)})] = sum(table[frozenset({("a", a), ("b", b)})]
                                              for a in a_codes)
        full[frozenset()] = sum(values)
        if all(lows[index[k]] <= v <= highs[index[k]] for k, v in full.items()):  # type: ignore[operator]
            for k, v in full.items():
                i = index[k]
                least[i] = v if least[i] is None else min(least[i], v)
                most[i] = v if most[i] is None else max(most[i], v)
    for audit in checked.result.cells:
        truth = run.cells[audit.cell].count
        assert audit.integer is not None and audit.integer.proven
        assert (audit.integer.lower.value, audit.integer.upper.value) == \
            (least[audit.cell], most[audit.cell])
        assert audit.integer.lower.value <= truth <= audit.integer.upper.value
        assert (audit.verdict == "disclosed") == (least[audit.cell] == most[audit.cell])


def test_sampled_posteriors_with_record_moves_equal_the_enumeration(ptable: Path,
                                                                    tmp_path: Path) -> None:
    """A two-way publication whose tables are few enough to enumerate: the chains, which
    propose the table's boxes and its record moves (``publication_posteriors``), estimate
    every cell's posterior within 0.03 of the exact one (0.008-0.016 measured at 50,000 to
    200,000 steps, seeds 3-5), and call it sampled."""
    from statrecon.engines.ckm import PosteriorOptions
    from statrecon.runs.ckm import publication_posteriors
    from statrecon.tables.box_moves import record_moves
    from statrecon.tables.ckm import read_ptable
    from statrecon.tables.published import read_published

    path = tmp_path / "published.csv"
    shown = {("p", "u"): 2, ("p", "v"): 3, ("q", "u"): 4, ("q", "v"): 0, ("p", "Total"): 5,
             ("q", "Total"): 5, ("Total", "u"): 6, ("Total", "v"): 3, ("Total", "Total"): 10}
    path.write_text("a,b,value\n" + "".join(f"{a},{b},{v}\n" for (a, b), v in shown.items()))
    cells = read_published(path, ("a", "b"))
    assert record_moves(cells.tables)  # the moves the chains now propose are there
    table = read_ptable(ptable)
    exact = publication_posteriors(cells, table, 0)
    assert {p.status for p in exact} == {"exact"} and exact[0].tables > 20
    sampled = publication_posteriors(cells, table, 0, PosteriorOptions(
        max_tables=1, chain_steps=60_000, time_limit=None, seed=3))
    assert {p.status for p in sampled} == {"sampled"}
    for e, s in zip(exact, sampled, strict=True):
        d_e, d_s = dict(e.distribution), dict(s.distribution)
        gap = sum(abs(d_e.get(v, 0) - d_s.get(v, 0)) for v in {*d_e, *d_s}) / 2
        assert gap < 0.03, (e, s)


def test_the_posteriors_keep_their_own_time_limit(ptable: Path, tmp_path: Path) -> None:
    """The guide's 30 linked cells, too many tables to enumerate, whose chains take about
    7 s by default: with ``posterior_time_limit`` 1 s the posteriors stop within it (plus
    the grace of a second solve), and none of them is called exact."""
    import time

    from conftest import EXAMPLES, statrecon

    from statrecon.runs.ckm import PublicationOptions, audit_publication

    published = tmp_path / "persons_ckm.csv"
    assert statrecon("tables", "perturb", EXAMPLES / "tables" / "ckm" / "persons.csv",
                     "--ptable", ptable, "--dimensions", "region,age", "--dimensions",
                     "region,sex", "--seed", "7", "--out", published).returncode == 0
    start = time.monotonic()
    checked = audit_publication(published, ptable, PublicationOptions(
        ("region", "age", "sex"), posterior=True, posterior_time_limit=1.0))
    assert time.monotonic() - start < 4 and checked.posterior_s < 2
    assert len(checked.posteriors) == 30
    assert "exact" not in {p.status for p in checked.posteriors}
    with pytest.raises(ValueError, match="posterior_time_limit"):
        PublicationOptions(("a",), posterior_time_limit=0.0)
