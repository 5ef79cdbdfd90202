"""The typed records of a claims run (``runs.records``) write the JSON the dict records wrote:
the same keys (the golden sets of test_json_contracts), in the same order, and a line of
``blocks.jsonl`` written by the dict code reads back and is written again byte for byte."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from conftest import ROOT

from statrecon.census.households.priors import tract_and_state_priors
from statrecon.census.households.synthetic import generate_blocks
from statrecon.engines.claims import ClaimsOptions
from statrecon.runs.claims import BlockTask, Shared, attack_block
from statrecon.runs.claims import tasks_from_households as claims_tasks
from statrecon.runs.records import BlockRecord
from statrecon.runs.stores import BlockStore

# Written by the dict code (before runs.records): the first line of the blocks.jsonl of
# `claims experiment --blocks 3 --seed 1 --workers 1`, its claims cut to four (two trivial,
# a non-trivial one of multiplicity 3, a singleton) and its negative claims to two; every
# other key as stored.
OLD_LINE = (
    '{"block": "010038800001032", "tract": "01003880000", "state": "01", "households": 37, '
    '"statistics": 873, "status": "ok", "claims": [{"assignment": {"tenure": "owned_mortgag'
    'e"}, "multiplicity": 23, "columns": 1, "singleton": false, "trivial": true, "baseline_'
    'tract": 0.10072319678327528, "baseline_state": 0.10072319678327528}, {"assignment": {"'
    'tenure": "owned_free"}, "multiplicity": 13, "columns": 1, "singleton": false, "trivial'
    '": true, "baseline_tract": 0.0691561381897967, "baseline_state": 0.0691561381897967}, '
    '{"assignment": {"hh_type": "nonfamily_male_alone", "over65": "yes"}, "multiplicity": 3'
    ', "columns": 2, "singleton": false, "trivial": false, "baseline_tract": 0.091862869778'
    '7762, "baseline_state": 0.0918628697787762}, {"assignment": {"size": "2", "hispanic": '
    '"yes"}, "multiplicity": 1, "columns": 2, "singleton": true, "trivial": false, "baselin'
    'e_tract": 0.28524406067007996, "baseline_state": 0.28524406067007996}], "negative_clai'
    'ms": [{"assignment": {"tenure": "owned_mortgage", "size": "1"}, "columns": 2, "impossi'
    'ble_multiplicities": [0], "at_least": 1, "trivial": false}, {"assignment": {"tenure": '
    '"owned_mortgage", "vacancy": "occupied", "size": "1"}, "columns": 3, "impossible_multi'
    'plicities": [0], "at_least": 1, "trivial": false}], "negative_undecided": 332, "recons'
    'tructed": false, "candidates": 960, "unknown_candidates": 0, "solutions": 42, "allowed'
    '_types": 951, "elapsed_s": 56.0906, "timings_s": {"generate": 17.6555, "candidates": 0'
    '.2101, "verify": 4.3849, "negative": 33.088, "trivial": 0.739}, "sound": true, "covere'
    'd_singleton": {"1": 1, "2": 5, "3": 6, "4": 6, "5": 4, "6": 3, "7": 1, "8": 1}, "cover'
    'ed_all": {"1": 36, "2": 36, "3": 36, "4": 36, "5": 36, "6": 31, "7": 14, "8": 6}}'
)
# Written by the dict code, whole: `claims experiment --blocks 1 --seed 2 --k 10
# --time-limit 0.01`, a block the time limit cut short.
OLD_UNKNOWN_LINE = (
    '{"block": "010038930001034", "tract": "01003893000", "state": "01", "households": 3, "'
    'statistics": 873, "status": "unknown", "claims": [], "negative_claims": [], "negative_'
    'undecided": 0, "reconstructed": false, "candidates": 0, "unknown_candidates": 0, "solu'
    'tions": 0, "allowed_types": 5, "elapsed_s": 0.0763, "timings_s": {"generate": 0.0763},'
    ' "sound": true, "covered_singleton": {}, "covered_all": {}}'
)
TRUTH_KEYS = {"sound", "covered_singleton", "covered_all"}


def golden() -> ModuleType:
    """The golden key sets of tests/commands/test_json_contracts.py (a test module, not a
    package, so it is loaded from its file)."""
    path = ROOT / "tests" / "commands" / "test_json_contracts.py"
    spec = importlib.util.spec_from_file_location("json_contracts_golden", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def records() -> tuple[BlockRecord, BlockRecord]:
    """One synthetic 3-unit block (seed 2, as in test_json_contracts), verified twice: with
    its true units and the tract and state priors, and from its tables alone."""
    gen = generate_blocks(1, 2)
    options = ClaimsOptions(k_solutions=10)
    (task,) = claims_tasks(gen.targets, None, "generated blocks")
    known = attack_block(Shared(options, *tract_and_state_priors(gen.population)), task)
    tables_only = BlockTask(task.block, task.tract, task.state, task.values, None)
    return known, attack_block(Shared(options), tables_only)


def test_records_of_a_real_run_round_trip(records: tuple[BlockRecord, BlockRecord]) -> None:
    known, tables_only = records
    assert known.truth is not None and known.truth.sound and tables_only.truth is None
    assert known.nontrivial() and known.negative_claims
    assert all(c.baseline_tract is None for c in tables_only.claims)
    for record in records:
        text = json.dumps(record.to_json())
        back = BlockRecord.from_json(json.loads(text))
        assert back == record
        assert json.dumps(back.to_json()) == text
        assert json.dumps({"blocks": [back.to_json()]}, indent=1) == \
            json.dumps({"blocks": [json.loads(text)]}, indent=1)  # claims verify --json


def test_keys_are_the_golden_sets(records: tuple[BlockRecord, BlockRecord]) -> None:
    contracts = golden()
    known, tables_only = (r.to_json() for r in records)
    assert set(known) == contracts.CLAIMS_BLOCK
    assert set(tables_only) == contracts.CLAIMS_BLOCK - TRUTH_KEYS
    assert set(known["claims"][0]) == contracts.CLAIM
    assert set(known["negative_claims"][0]) == contracts.NEGATIVE_CLAIM


@pytest.mark.parametrize("line", [OLD_LINE, OLD_UNKNOWN_LINE], ids=["ok", "unknown"])
def test_a_line_of_the_dict_code_reads_back_unchanged(line: str) -> None:
    record = BlockRecord.from_json(json.loads(line))
    assert json.dumps(record.to_json()) == line


def test_a_stored_line_reads_as_attributes() -> None:
    record = BlockRecord.from_json(json.loads(OLD_LINE))
    assert (record.block, record.status, record.households) == ("010038800001032", "ok", 37)
    assert [c.columns for c in record.nontrivial()] == [2, 2]
    assert [c.multiplicity for c in record.nontrivial(singleton=True)] == [1]
    assert record.negative_claims[1].assignment == {
        "tenure": "owned_mortgage", "vacancy": "occupied", "size": "1"}
    assert record.truth is not None and record.truth.covered_singleton[2] == 5
    assert record.timings_s["verify"] == 4.3849


def test_a_line_from_before_the_negative_budget_reads_as_none_left_open() -> None:
    """Stores written before ``negative_undecided`` existed resume, counting 0 (as the
    summaries always read them)."""
    data = json.loads(OLD_UNKNOWN_LINE)
    del data["negative_undecided"]
    assert BlockRecord.from_json(data).negative_undecided == 0


def test_the_store_writes_the_old_line_and_reads_the_record_back(tmp_path: Path) -> None:
    record = BlockRecord.from_json(json.loads(OLD_LINE))
    store = BlockStore(tmp_path / "blocks.jsonl", {})
    store.write(record.block, record)
    assert store.path.read_text(encoding="utf-8") == OLD_LINE + "\n"
    assert store.finished() == {record.block}
    assert store.record(record.block) == record
