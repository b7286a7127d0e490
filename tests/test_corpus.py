"""The labelled corpus is the yardstick: every racy kernel is caught, none is called verified."""
import json
import subprocess
import sys

from tests.conftest import ROOT
from tilecheck.evaluation import evaluate, load_manifest


def test_manifest_is_large_and_balanced():
    entries = load_manifest(ROOT / "corpus")
    assert len(entries) >= 40
    racy = sum(1 for e in entries if e["expect"] == "race")
    assert 0.35 <= racy / len(entries) <= 0.65
    assert all(e.get("description") for e in entries)
    assert all(e["kinds"] for e in entries if e["expect"] == "race")


def test_verifier_on_the_corpus():
    result = evaluate(ROOT / "corpus")
    assert result.recall == 1.0, result.table()
    assert result.false_verified == [], result.table()
    assert result.precision == 1.0, result.table()
    assert not result.disagreements, result.table()


def test_eval_cli_json_and_run(tmp_path):
    manifest = tmp_path / "manifest.toml"
    manifest.write_text((ROOT / "corpus" / "manifest.toml").read_text())
    for sub in ("kernels", "tileir"):
        (tmp_path / sub).symlink_to(ROOT / "corpus" / sub)
    out = subprocess.run([sys.executable, "-m", "tilecheck", "eval", str(tmp_path), "--format", "json"],
                         capture_output=True, text=True, cwd=ROOT, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout)
    assert {"kernels", "precision", "recall", "false_verified", "disagreements", "median_s"} <= set(data)
    assert data["recall"] == 1.0 and data["false_verified"] == [] and data["count"] == len(data["kernels"])
    entry = next(k for k in data["kernels"] if k["id"].endswith("head_permute_swapped"))
    assert entry["status"] == "race" and entry["kinds_found"] == ["write-write"]


def test_eval_run_shows_the_head_permutation_nondeterminism():
    result = evaluate(ROOT / "corpus", run=True, runs=4)
    swapped = next(e for e in result.entries if e.id.endswith("head_permute_swapped"))
    assert not swapped.run["deterministic"] and swapped.run["fraction_differing"] > 0.1
    safe = [e for e in result.entries if e.expect == "verified" and e.run is not None]
    assert all(e.run["deterministic"] or "order-dependent-atomic" in e.kinds_expected for e in safe)
