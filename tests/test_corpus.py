"""The labelled corpus is the yardstick: every racy kernel is caught, none is called verified.

Each manifest entry is its own test (xdist spreads them). The fast tier checks a fixed sample of the
entries (``tests.tiers.corpus_sample``: every kind of race, every form an entry takes, some race-free
kernels); the others are marked slow and run under ``--thorough``, so the two tiers together check
every entry.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.tiers import corpus_sample, slow_unless
from tilecheck.evaluation import evaluate, load_manifest

ENTRIES = load_manifest(ROOT / "corpus")
SAMPLE = corpus_sample(ENTRIES)


def _first(test) -> int:
    return next(i for i, entry in enumerate(ENTRIES) if test(entry))


SWAPPED = _first(lambda e: e.get("kernel") == "head_permute_swapped")


def _entry_id(i: int) -> str:
    entry = ENTRIES[i]
    return f"{i}-{Path(entry['file']).stem}-{entry.get('kernel', '')}".rstrip("-")


# one parameter per entry; those outside the fast tier's sample are marked slow
EVERY_ENTRY = [pytest.param(i, id=_entry_id(i), marks=slow_unless(i in SAMPLE)) for i in range(len(ENTRIES))]


@pytest.fixture(scope="module")
def corpus_copy(tmp_path_factory) -> Path:
    """A folder whose kernels/ and tileir/ are the corpus's (symlinks), for manifests of some entries."""
    folder = tmp_path_factory.mktemp("corpus")
    for sub in ("kernels", "tileir"):
        (folder / sub).symlink_to(ROOT / "corpus" / sub)
    return folder


def _toml(entry: dict) -> str:
    # the manifest's values are strings, booleans, integers and lists of them: JSON spells them as TOML does
    return "[[kernel]]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in entry.items()) + "\n"


def _manifest(folder: Path, indices: list[int], name: str) -> Path:
    """A manifest in ``folder`` holding the corpus entries ``indices``."""
    path = folder / name
    path.write_text("".join(_toml(ENTRIES[i]) for i in indices))
    assert load_manifest(path) == [ENTRIES[i] for i in indices]
    return path


def test_manifest_is_large_and_balanced():
    entries = load_manifest(ROOT / "corpus")
    assert len(entries) >= 40
    racy = sum(1 for e in entries if e["expect"] == "race")
    assert 0.35 <= racy / len(entries) <= 0.65
    assert all(e.get("description") for e in entries)
    assert all(e["kinds"] for e in entries if e["expect"] == "race")


def test_the_fast_sample_has_every_kind_of_race_and_some_race_free_kernels():
    racy_kinds = {k for e in ENTRIES if e["expect"] == "race" for k in e["kinds"]}
    assert {k for i in SAMPLE if ENTRIES[i]["expect"] == "race" for k in ENTRIES[i]["kinds"]} == racy_kinds
    assert sum(ENTRIES[i]["expect"] == "verified" for i in SAMPLE) >= 5
    assert len(SAMPLE) < len(ENTRIES) / 3  # a sample, not the corpus


@pytest.mark.parametrize("index", EVERY_ENTRY)
def test_verifier_on_the_corpus(index, corpus_copy):
    result = evaluate(_manifest(corpus_copy, [index], f"verify-{index}.toml"))
    assert result.recall == 1.0, result.table()
    assert result.false_verified == [], result.table()
    assert result.precision == 1.0, result.table()
    assert not result.disagreements, result.table()


def _eval_cli_json(manifest: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "tilecheck", "eval", str(manifest), "--format", "json"],
                         capture_output=True, text=True, cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout)
    assert {"kernels", "precision", "recall", "false_verified", "disagreements", "median_s"} <= set(data)
    assert data["recall"] == 1.0 and data["false_verified"] == [] and data["count"] == len(data["kernels"])
    entry = next(k for k in data["kernels"] if k["id"].endswith("head_permute_swapped"))
    assert entry["status"] == "race" and entry["kinds_found"] == ["write-write"]


def test_eval_cli_json_on_a_few_entries(corpus_copy):
    # the paper's head permutation, a race-free kernel and a .tileir file
    few = [SWAPPED, _first(lambda e: e["expect"] == "verified"),
           _first(lambda e: e["file"].endswith(".tileir"))]
    _eval_cli_json(_manifest(corpus_copy, few, "few.toml"))


# slow: the whole corpus through the CLI; test_eval_cli_json_on_a_few_entries checks the same on three entries
@pytest.mark.slow
def test_eval_cli_json_on_the_corpus(tmp_path):
    manifest = tmp_path / "manifest.toml"
    manifest.write_text((ROOT / "corpus" / "manifest.toml").read_text())
    for sub in ("kernels", "tileir"):
        (tmp_path / sub).symlink_to(ROOT / "corpus" / sub)
    _eval_cli_json(tmp_path)


@pytest.mark.parametrize("index", EVERY_ENTRY)
def test_eval_run_shows_the_head_permutation_nondeterminism(index, corpus_copy):
    """Each entry run 4 times on the CPU: the paper's head permutation differs from run to run, no
    race-free entry does (but for order-dependent float atomics)."""
    result = evaluate(_manifest(corpus_copy, [index], f"run-{index}.toml"), run=True, runs=4)
    if index == SWAPPED:
        [swapped] = result.entries
        assert not swapped.run["deterministic"] and swapped.run["fraction_differing"] > 0.1
    safe = [e for e in result.entries if e.expect == "verified" and e.run is not None]
    assert all(e.run["deterministic"] or "order-dependent-atomic" in e.kinds_expected for e in safe)
