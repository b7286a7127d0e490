"""`tilecheck verify --shard I/N` and `tilecheck merge`: shards split the cases deterministically, no
case is lost or checked twice, and the merged JSON / SARIF equal one unsharded run's."""
import fcntl
import json
import os
from types import SimpleNamespace

import jsonschema
import pytest

from tests.cli.conftest import in_a_subprocess, in_this_process
from tests.cli.test_cli import DATA, KERNELS, SCHEMAS

# safe and racy kernels (attention.py has three of one, two of the other), a kernel without a case and a
# file that does not import: every kind of entry
PATHS = [KERNELS / "attention.py", DATA / "nocase.py", DATA / "broken.py"]
SHARDS = (None, "1/3", "2/3", "3/3")
RUNNERS = {"in-process": in_this_process, "subprocess": in_a_subprocess}


def _report(folder, fmt, shard):
    return folder / f"{fmt}-{shard or 'all'}.{fmt}".replace("/", "of")


def _verify(run, folder, fmt, shard=None):
    extra = ["--shard", shard] if shard else []
    out = run("verify", *PATHS, "--format", fmt, "-o", _report(folder, fmt, shard), "-j", "1", *extra)
    return {"returncode": out.returncode, "stderr": out.stderr}


# the command line in this process in the fast tier, in subprocesses in the thorough tier (as run_cli)
@pytest.fixture(scope="module", params=["in-process", pytest.param("subprocess", marks=pytest.mark.slow)])
def runs(request, tmp_path_factory):
    """The eight verify runs (JSON and SARIF, whole and in three shards) and the way they were run, made
    once per session: under pytest-xdist the workers share them through their common temporary folder,
    under a lock (the pattern of pytest-xdist's documentation), instead of each worker making all eight."""
    run = RUNNERS[request.param]
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    folder = shared / f"shards-{request.param}"
    with open(shared / f"shards-{request.param}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "runs.json").exists():
            folder.mkdir(exist_ok=True)
            made = {fmt: {str(shard): _verify(run, folder, fmt, shard) for shard in SHARDS}
                    for fmt in ("json", "sarif")}
            (folder / "runs.json").write_text(json.dumps(made))
    made = json.loads((folder / "runs.json").read_text())
    by_format = {fmt: {shard: (SimpleNamespace(**made[fmt][str(shard)]), _report(folder, fmt, shard))
                       for shard in SHARDS} for fmt in ("json", "sarif")}
    return by_format, run


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
    (by_format, run) = runs
    merged_path = tmp_path / "merged.json"
    files = [by_format["json"][s][1] for s in ("1/3", "2/3", "3/3")]
    merging = run("merge", *files, "-o", merged_path)
    assert merging.returncode == 0, merging.stderr
    merged = json.loads(merged_path.read_text())
    full = json.loads(by_format["json"][None][1].read_text())
    jsonschema.validate(merged, json.loads((SCHEMAS / "tilecheck-report.json").read_text()))
    assert merged["summary"] == full["summary"]

    def key(r):
        return r["id"], r["status"], json.dumps(r["findings"], sort_keys=True)

    assert sorted(map(key, merged["results"])) == sorted(map(key, full["results"]))
    assert sorted(merged["no_case"]) == sorted(full["no_case"])


def test_merged_sarif_is_valid_and_has_every_finding(runs, tmp_path):
    (by_format, run) = runs
    files = [by_format["sarif"][s][1] for s in ("1/3", "2/3", "3/3")]
    merging = run("merge", *files)
    assert merging.returncode == 0, merging.stderr
    merged = json.loads(merging.stdout)
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
    (by_format, run) = runs
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    mixed = run("merge", by_format["json"]["1/3"][1], by_format["sarif"]["2/3"][1])
    assert mixed.returncode == 3 and "all of one format" in mixed.stderr
    assert run("merge", other).returncode == 3
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert "not a JSON report" in run("merge", bad).stderr


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_merge_refuses_a_shard_twice_a_missing_shard_or_two_splits(runs, tmp_path, fmt):
    # issue 49: each would make a merged report that silently leaves out (or doubles) cases
    (by_format, run) = runs
    one, two, three = (by_format[fmt][s][1] for s in ("1/3", "2/3", "3/3"))
    twice = run("merge", one, two, three, two)
    assert twice.returncode == 3 and "2/3 given more than once" in twice.stderr
    missing = run("merge", one, three)
    assert missing.returncode == 3 and "2/3 missing" in missing.stderr
    split = tmp_path / f"half.{fmt}"
    data = json.loads(one.read_text())
    place = data["shard"] if fmt == "json" else data["runs"][0]["properties"]["shard"]
    place["count"] = 2
    split.write_text(json.dumps(data))
    mixed = run("merge", split, two, three)
    assert mixed.returncode == 3 and "different splits" in mixed.stderr
    whole = by_format[fmt][None][1]
    assert run("merge", whole, one, two, three).returncode == 3  # a whole run beside its shards


@pytest.mark.parametrize("shard", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_bad_shard_is_a_usage_error(shard, run_cli):
    out = run_cli("verify", KERNELS / "elementwise.py", "--shard", shard)
    assert out.returncode == 3 and "expected I/N" in out.stderr
