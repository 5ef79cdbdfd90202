"""Issue 14 fast paths of the release reader. Release YAML is built straight from libyaml's
events (``files.fast_yaml``): exactly what SafeLoader gives and the lines ``_Lines`` finds on the
node tree, or None (the node-tree path then reads or refuses the text with its own message). A
statistics-file row of plain text is checked by hand (``files.statistic_spec``): exactly what
pydantic gives."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.release.files import _YAML_LOADER, _Lines, fast_yaml

# words YAML 1.1 reads as something other than text, and text that merely looks like it
WORDS = ["yes", "No", "on", "OFF", "true", "~", "null", "", "1e3", "0x1F", "0o17", "1_000",
         ".inf", "-.nan", "12:30:00", "2001-01-01", "<<", "=", "q1", "SELECT 1", "0.5e0",
         "- x", "a: b", "#c", "'quoted'", "00", "+1", "1.", "é"]
scalars = st.one_of(
    st.sampled_from(WORDS), st.text(max_size=12), st.integers(-10**20, 10**20),
    st.floats(allow_nan=False), st.booleans(), st.none())
keys = st.one_of(st.sampled_from(["id", "sql", "value", "statistics", "public", "columns",
                                  "1", "yes", "null"]), st.text(min_size=1, max_size=6))
documents = st.recursive(
    scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                     st.dictionaries(keys, inner, max_size=4)), max_leaves=25)


def reference(text: str) -> tuple[Any, _Lines]:
    return (yaml.load(text, Loader=_YAML_LOADER),
            _Lines(yaml.compose(text, Loader=_YAML_LOADER)))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, documents, min_size=1, max_size=5), st.booleans(),
       st.sampled_from([None, "'", '"']))
def test_same_data_and_lines_as_the_node_tree(doc: dict[str, Any], flow: bool,
                                              style: str | None) -> None:
    text = yaml.safe_dump(doc, default_flow_style=flow, default_style=style,
                          allow_unicode=True)
    got = fast_yaml(text)
    data, lines = reference(text)
    if got is None:
        return  # left to the node tree
    assert repr(got[0]) == repr(data) and got[0] == data
    for path, line in got[1].items():
        assert lines.line(path) == line, path


def test_a_release_is_read_fast() -> None:
    text = "version: 1\nstatistics:\n- id: q1\n  sql: SELECT 1\n  value: 2.5\n- {id: q2}\n"
    got = fast_yaml(text)
    assert got is not None
    assert got[0] == {"version": 1, "statistics": [{"id": "q1", "sql": "SELECT 1",
                                                     "value": 2.5}, {"id": "q2"}]}
    assert got[1][("statistics", 0)] == 3 and got[1][("statistics", 1)] == 6
    assert got[1][("version",)] == 1 and got[1][("statistics",)] == 3


@pytest.mark.parametrize("text", [
    "a: &x 1\nb: *x\n",  # alias
    "a: &x 1\n",  # anchor
    "a: !!str 1\n",  # tag
    "a: 1\na: 2\n",  # repeated key
    "a: 1\n'a': 2\n",  # repeated key text, quoted
    "base: {x: 1}\nm:\n  <<: {y: 2}\n",  # merge key
    "? [a, b]\n: 1\n",  # complex key
    "a: 2001-01-01\n",  # timestamp
    "a: 1\n---\nb: 2\n",  # two documents
    "",  # no document
    "a: [1, 2\n",  # malformed
    "=: 1\n",  # the value key
])
def test_the_unusual_is_left_to_the_node_tree(text: str) -> None:
    assert fast_yaml(text) is None


field_values = st.one_of(st.text(max_size=8), st.sampled_from(["1", "2.5", "565981/6", "1e99",
                                                               "-0", " 3 ", "x", "1/0"]),
                         st.integers(-3, 3), st.floats(), st.booleans(), st.none())
noise_values = st.one_of(field_values, st.dictionaries(
    st.sampled_from(["gaussian", "laplace", "x"]),
    st.one_of(st.floats(), st.integers(-2, 2), st.text(max_size=3)), max_size=2))


@settings(max_examples=400, deadline=None)
@given(st.fixed_dictionaries({}, optional={
    "id": field_values, "sql": field_values, "value": field_values, "error": field_values,
    "noise": noise_values, "decimals": field_values, "suppressed": field_values}))
def test_a_row_is_checked_as_pydantic_checks_it(fields: dict[str, Any]) -> None:
    """``statistic_spec`` (a hand-checked fast path for plain rows) is model_validate."""
    from pydantic import ValidationError

    from statrecon.release.files import StatisticSpec, statistic_spec

    try:
        expected = StatisticSpec.model_validate(dict(fields))
    except ValidationError as e:
        with pytest.raises(ValidationError) as got:
            statistic_spec(dict(fields))
        assert str(got.value) == str(e)
        return
    spec = statistic_spec(dict(fields))
    assert spec == expected and spec.model_fields_set == expected.model_fields_set
    assert repr(spec) == repr(expected)
