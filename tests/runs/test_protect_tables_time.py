"""``protect_tables``'s search gets what is left of ``--time-limit`` once the problem is built
and the finishing work (marking, writing) is set aside (issue 28: the scale job ran 7 s past
its limit)."""

from __future__ import annotations

import pytest

from statrecon.engines.suppression import ProtectOptions
from statrecon.runs.tables import FINISH, within_time


def test_no_limit_stays_none() -> None:
    assert within_time(ProtectOptions(time_limit=None), 5.0).time_limit is None


def test_building_and_finishing_come_off_the_limit() -> None:
    got = within_time(ProtectOptions(time_limit=10.0), 1.0).time_limit
    assert got == pytest.approx(10.0 - (1.0 + FINISH) * 1.0)


def test_the_search_keeps_a_sliver_when_building_took_it_all() -> None:
    assert within_time(ProtectOptions(time_limit=10.0), 9.0).time_limit == pytest.approx(0.1)


def test_other_options_kept() -> None:
    given = ProtectOptions(method="exact", time_limit=10.0, workers=3, prune=False)
    got = within_time(given, 0.5)
    assert (got.method, got.workers, got.prune) == ("exact", 3, False)
