"""`tilecheck verify --shard I/N` and `tilecheck merge`: shards split the cases deterministically, no
case is lost or checked twice, and the merged JSON / SARIF equal one unsharded run's."""
import json

import jsonschema
import pytest

from tests.cli.test_cli import DATA, KERNELS, SCHEMAS, tilecheck

# safe and racy kernels, a kernel without a case and a file that does not import: every kind of entry
PATHS = [KERNELS / "elementwise.py", KERNELS / "attention.py", DATA / "nocase.py", DATA / "broken.py"]


def _verify(tmp_path, fmt, shard=None):
    out = tmp_path / f"{fmt}-{shard or 'all'}.{fmt}".replace("/", "of")
    extra = ["--shard", shard] if shard else []
    run = tilecheck("verify", *PATHS, "--format", fmt, "-o", out, "-j", "1", *extra)
    return run, out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shards")
    return {fmt: {shard: _verify(tmp, fmt, shard) for shard in (None, "1/3", "2/3", "3/3")}
            for fmt in ("json", "sarif")}, tmp


def test_shards_split_the_cases_without_overlap(runs):
    (by_format, _) = runs
    full = json.loads(by_format["json"][None][1].read_text())
    shards = [json.loads(by_format["json"][s][1].read_text()) for s in ("1/3", "2/3", "3/3")]
    ids = [[r["id"] for r in d["results"]] + d["no_case"] for d in shards]
    every = [i for shard in ids for i in shard]
    assert all(ids)  # each shard got work
    assert sorted(every) == sorted([r["id"] for r in full["results"]] + full["no_case"])
    assert len(set(every)) == len(every)
    # round-robin in collection order: deterministic and balanced
    assert max(map(len, ids)) - min(map(len, ids)) <= 1


def test_each_shard_exits_as_verify_does_for_its_own_cases(runs):
    (by_format, _) = runs
    codes = {}
    for s in ("1/3", "2/3", "3/3"):
        run, out = by_format["json"][s]
        statuses = {r["status"] for r in json.loads(out.read_text())["results"]}
        codes[s] = run.returncode
        expected = 3 if "error" in statuses else 1 if "race" in statuses else 0
        assert run.returncode == expected, (s, run.stderr)
    assert by_format["json"][None][0].returncode == 3 and 3 in codes.values()


def test_merged_json_equals_the_unsharded_report(runs, tmp_path):
    (by_format, _) = runs
    merged_path = tmp_path / "merged.json"
    files = [by_format["json"][s][1] for s in ("1/3", "2/3", "3/3")]
    run = tilecheck("merge", *files, "-o", merged_path)
    assert run.returncode == 0, run.stderr
    merged = json.loads(merged_path.read_text())
    full = json.loads(by_format["json"][None][1].read_text())
    jsonschema.validate(merged, json.loads((SCHEMAS / "tilecheck-report.json").read_text()))
    assert merged["summary"] == full["summary"]

    def key(r):
        return r["id"], r["status"], json.dumps(r["findings"], sort_keys=True)

    assert sorted(map(key, merged["results"])) == sorted(map(key, full["results"]))
    assert sorted(merged["no_case"]) == sorted(full["no_case"])


def test_merged_sarif_is_valid_and_has_every_finding(runs, tmp_path):
    (by_format, _) = runs
    files = [by_format["sarif"][s][1] for s in ("1/3", "2/3", "3/3")]
    run = tilecheck("merge", *files)
    assert run.returncode == 0, run.stderr
    merged = json.loads(run.stdout)
    full = json.loads(by_format["sarif"][None][1].read_text())
    jsonschema.validate(merged, json.loads((SCHEMAS / "sarif-2.1.0.json").read_text()))
    (m,), (f,) = merged["runs"], full["runs"]

    def key(r):
        return json.dumps(r, sort_keys=True)

    assert sorted(map(key, m["results"])) == sorted(map(key, f["results"]))
    assert m["invocations"][0]["executionSuccessful"] is False  # broken.py did not import, in some shard
    assert len(m["invocations"][0]["toolExecutionNotifications"]) == \
        len(f["invocations"][0]["toolExecutionNotifications"])


def test_merge_refuses_mixed_or_foreign_files(runs, tmp_path):
    (by_format, _) = runs
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    mixed = tilecheck("merge", by_format["json"]["1/3"][1], by_format["sarif"]["2/3"][1])
    assert mixed.returncode == 3 and "all of one format" in mixed.stderr
    assert tilecheck("merge", other).returncode == 3
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert "not a JSON report" in tilecheck("merge", bad).stderr


@pytest.mark.parametrize("shard", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_bad_shard_is_a_usage_error(shard):
    run = tilecheck("verify", KERNELS / "elementwise.py", "--shard", shard)
    assert run.returncode == 3 and "expected I/N" in run.stderr
