"""Every ``*Options`` of the library checks itself when made (issue 29, item 3): a bad value is
one ``OptionError`` (a StatreconError, and a ValueError) naming the class and the field,
never a failure deep inside an engine. A new ``*Options`` class fails here until its bad
values are listed."""

from __future__ import annotations

import ast
import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

from statrecon.engines.census import CensusOptions
from statrecon.engines.ckm import PosteriorOptions
from statrecon.engines.claims import ClaimsOptions
from statrecon.engines.exact import ExactOptions
from statrecon.engines.intervals import AuditOptions
from statrecon.engines.linear import LinearOptions
from statrecon.engines.suppression import ProtectOptions
from statrecon.errors import OptionError, StatreconError
from statrecon.experiments.dp_census import DpCensusOptions
from statrecon.experiments.protections import ProtectionsOptions
from statrecon.runs.census_protect import CensusProtectOptions
from statrecon.runs.ckm import PerturbOptions, PublicationOptions
from statrecon.runs.job import JobOptions
from statrecon.runs.rounding import RoundOptions

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "statrecon"
NAN, INF = math.nan, math.inf

# For each class, keyword arguments each of which alone is out of range; the field the error
# must name is the first key.
BAD: dict[type, list[dict[str, Any]]] = {
    ExactOptions: [{"limit": 0}, {"time_limit": -1.0}, {"time_limit": NAN},
                   {"keep_solutions": -1}, {"workers": 0}, {"seed": -1},
                   {"max_model_size": 0}, {"noise_mode": "loud"}, {"limit": 2.5},
                   {"time_limit": "60"}],
    LinearOptions: [{"method": "nope"}, {"method": "auto"}, {"time_limit": -1},
                    {"seed": -1}, {"epochs": 0.0}, {"epochs": INF},
                    {"determine_max_cells": 0}, {"max_cells": 0}],
    CensusOptions: [{"time_limit": -0.5}, {"time_limit": NAN}, {"seed": -1},
                    {"samples": -1}],
    ClaimsOptions: [{"formulation": "magic"}, {"k_solutions": 0}, {"patience": 0},
                    {"time_limit": NAN}, {"seed": -1}, {"negative_work_limit": -1.0},
                    {"workers": 0}],
    AuditOptions: [{"time_limit": -1.0}, {"workers": 0}],
    ProtectOptions: [{"method": "best"}, {"time_limit": -1.0}, {"workers": 0}],
    DpCensusOptions: [{"rhos": ()}, {"rhos": (1.0, 0.0)}, {"rhos": (NAN,)}, {"seed": -1},
                      {"rank": -1}, {"delta": 0.0}, {"delta": 1.0}, {"workers": 0},
                      {"time_limit": -1.0}, {"certain_time_limit": NAN}],
    RoundOptions: [{"base": 1}, {"base": 0}, {"base": 2.5}, {"method": "floor"},
                   {"seed": 3}, {"knowledge": "all"}, {"time_limit": -1.0},
                   {"workers": 0}],
    JobOptions: [{"method": "MOD"}, {"cost": "weight"}, {"cost_lambda": -1},
                 {"apriori": "wide"}],
    PublicationOptions: [{"dimensions": ()}, {"knowledge": "all"},
                         {"threshold": -1}, {"posterior": True, "knowledge": "d"},
                         {"posterior_time_limit": 0.0}, {"posterior_time_limit": NAN}],
    PosteriorOptions: [{"max_tables": 0}, {"time_limit": -1.0}, {"time_limit": NAN},
                       {"chain_steps": 0}, {"seed": -1}],
    PerturbOptions: [{"tables": ()}, {"tables": ((),)}, {"knowledge": "all"},
                     {"threshold": -1}, {"record_key": "key"}],
    CensusProtectOptions: [{"method": "noise"}, {"seed": -1}, {"base": 1}, {"threshold": -1},
                           {"rounding": "controlled"}, {"rate": 1.5}, {"rate": NAN},
                           {"knowledge": "everything"}, {"swap_k": -1}],
    ProtectionsOptions: [{"swap_rates": (0.1, 1.5)}, {"ckm": ((0, 1),)}, {"bases": (1,)},
                         {"bases": (0,)}, {"thresholds": (0,)}, {"rhos": (0.0,)},
                         {"seed": -1}, {"rank": -1}, {"delta": 1.0}, {"workers": 0},
                         {"time_limit": -1.0}, {"certain_time_limit": NAN}, {"swap_k": -1}],
}
# what a class needs besides the field under test (None: nothing)
REQUIRED: dict[type, dict[str, Any]] = {PerturbOptions: {"tables": (("a",),), "seed": 1},
                                        PublicationOptions: {"dimensions": ("a",)},
                                        CensusProtectOptions: {"method": "round"}}


@pytest.mark.parametrize(("cls", "kwargs"), [(cls, kw) for cls, cases in BAD.items()
                                             for kw in cases],
                         ids=lambda v: v.__name__ if isinstance(v, type) else repr(v))
def test_a_bad_value_is_refused_when_the_options_are_made(cls: type,
                                                          kwargs: dict[str, Any]) -> None:
    with pytest.raises(StatreconError) as caught:
        cls(**{**REQUIRED.get(cls, {}), **kwargs})
    field = next(iter(kwargs))
    assert isinstance(caught.value, OptionError) and isinstance(caught.value, ValueError)
    assert caught.value.option == f"{cls.__name__}.{field}"
    assert str(caught.value).startswith(f"{cls.__name__}.{field} = ")
    assert "\n" not in str(caught.value)


def test_bounds_without_k_are_refused_with_the_noise_policy_message() -> None:
    with pytest.raises(StatreconError, match="noise as bounds needs a positive number"):
        ExactOptions(noise_mode="bounds")
    with pytest.raises(StatreconError, match="got inf"):
        ExactOptions(noise_mode="bounds", noise_k=INF)


@pytest.mark.parametrize("cls", list(BAD), ids=lambda c: c.__name__)
def test_the_defaults_none_zero_and_inf_are_valid_time_limits(cls: type) -> None:
    """The defaults pass their own checks; None is no limit, 0 gives up at once (the tests of
    a spent budget use it) and inf is accepted as a number of seconds."""
    cls(**REQUIRED.get(cls, {}))
    if "time_limit" not in {f.name for f in dataclasses.fields(cls)}:
        return
    for value in (None, 0.0, 0, INF, 1e-6):
        cls(time_limit=value)


def test_a_registered_method_counts() -> None:
    """The registries are read when the options are made: a new entry is accepted."""
    from statrecon.engines.claims import FORMULATIONS
    from statrecon.engines.linear.estimators import ESTIMATORS

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(ESTIMATORS, "midpoint", ESTIMATORS["ls"])
        patch.setitem(FORMULATIONS, "undecided", FORMULATIONS["fast"])
        assert LinearOptions(method="midpoint").method == "midpoint"
        assert ClaimsOptions(formulation="undecided").formulation == "undecided"
    with pytest.raises(OptionError):
        LinearOptions(method="midpoint")


def _options_classes() -> set[str]:
    """Every class named ``*Options`` defined in the package's source."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found |= {node.name for node in ast.walk(tree)
                  if isinstance(node, ast.ClassDef) and node.name.endswith("Options")}
    return found


def test_every_options_class_is_covered() -> None:
    """A new ``*Options`` needs a ``__post_init__`` that checks it and its bad values above."""
    assert _options_classes() == {cls.__name__ for cls in BAD}
    for cls in BAD:
        assert dataclasses.is_dataclass(cls), cls.__name__
        assert "__post_init__" in vars(cls), cls.__name__
        fields = {f.name for f in dataclasses.fields(cls)}
        assert {key for kwargs in BAD[cls] for key in kwargs} <= fields, cls.__name__
