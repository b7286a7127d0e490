"""The proof cache (issue 20): a launch verified for every shape is remembered; a later launch
of the same Tile IR that satisfies the contract is decided without a solver call, one that does
not is verified again; corrupt entries are ignored and rewritten; the CLI clears it."""

import json
import os

import numpy as np
import pytest

import tilecheck
from tests.verifier.test_shape_contract import copy_tiles, same_tile
from tilecheck.verifier import proof_cache
from tilecheck.verifier.api import EVERY_SHAPE_LEVEL


def _args(n):
    return np.ones(n, np.float32), np.zeros(n, np.float32), 16


def test_a_second_launch_of_another_shape_is_decided_by_the_contract(tmp_path):
    first = tilecheck.verify(copy_tiles, _args(64), (4, 1, 1), cache=tmp_path)
    assert first.level == EVERY_SHAPE_LEVEL and "cache" not in first.stats
    second = tilecheck.verify(copy_tiles, _args(1000), (63, 1, 1), cache=tmp_path)
    assert second.stats["cache"] == "hit"
    assert second.status == "verified" and second.level == EVERY_SHAPE_LEVEL
    assert str(second.launch_contract) == str(first.launch_contract)
    assert second.assumptions == first.assumptions


def test_a_launch_outside_every_stored_contract_is_verified_again(tmp_path):
    tilecheck.verify(copy_tiles, _args(64), (4, 1, 1), cache=tmp_path)
    racy = tilecheck.verify(copy_tiles, _args(64), (4, 2, 1), cache=tmp_path)  # an unread axis of 2
    assert "cache" not in racy.stats
    assert racy.status == "race"


def test_a_fresh_process_reads_the_entry_from_disk(tmp_path):
    tilecheck.verify(copy_tiles, _args(64), (4, 1, 1), cache=tmp_path)
    fresh = proof_cache.ProofCache(tmp_path)  # what another process sees: nothing in memory
    (entry,) = list((tmp_path / "proofs").rglob("*.json"))
    assert fresh.contracts(entry.stem)
    assert (tmp_path / ".gitignore").read_text() == "*\n"


def test_a_corrupt_entry_is_ignored_and_rewritten(tmp_path):
    tilecheck.verify(copy_tiles, _args(64), (4, 1, 1), cache=tmp_path)
    (entry,) = list((tmp_path / "proofs").rglob("*.json"))
    entry.write_text("{not json")
    proof_cache._OPEN.clear()
    again = tilecheck.verify(copy_tiles, _args(128), (8, 1, 1), cache=proof_cache.ProofCache(tmp_path).directory)
    assert again.status == "verified" and "cache" not in again.stats
    assert json.loads(entry.read_text())["contracts"]


def test_entries_of_another_version_are_not_read(tmp_path, monkeypatch):
    tilecheck.verify(copy_tiles, _args(64), (4, 1, 1), cache=tmp_path)
    (entry,) = list((tmp_path / "proofs").rglob("*.json"))
    data = json.loads(entry.read_text())
    data["versions"]["z3"] = "0.0.0"
    entry.write_text(json.dumps(data))
    assert proof_cache.ProofCache(tmp_path).contracts(entry.stem) == []


def test_races_and_given_case_verdicts_are_not_stored(tmp_path):
    y = np.zeros(64, np.float32)
    assert tilecheck.verify(same_tile, (y, 16), (2, 1, 1), cache=tmp_path).status == "race"
    assert not (tmp_path / "proofs").exists()


def test_the_environment_turns_the_default_cache_off(tmp_path, monkeypatch):
    monkeypatch.setenv(proof_cache.ENV_OFF, "1")
    assert proof_cache.resolve(None) is None
    monkeypatch.delenv(proof_cache.ENV_OFF)
    monkeypatch.setenv(proof_cache.ENV_DIR, str(tmp_path / "here"))
    assert proof_cache.resolve(None).directory == tmp_path / "here"
    assert proof_cache.resolve(False) is None


def test_cli_cache_clear_removes_the_directory(tmp_path, monkeypatch):
    from tilecheck.cli import main

    monkeypatch.setenv(proof_cache.ENV_DIR, str(tmp_path / "c"))
    tilecheck.verify(copy_tiles, _args(64), (4, 1, 1), cache=tmp_path / "c")
    assert (tmp_path / "c").exists()
    assert main(["cache", "clear"]) == 0
    assert not (tmp_path / "c").exists()
    assert main(["cache", "clear"]) == 0  # nothing to clear is fine
