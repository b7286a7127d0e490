"""The command line end to end, via subprocess (or ``run_cli``, tests/cli/conftest.py): exit codes,
formats validated against schemas."""
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import ROOT

DATA = Path(__file__).parent / "data"
SCHEMAS = ROOT / "tests" / "schemas"
KERNELS = ROOT / "corpus" / "kernels"


def tilecheck(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "tilecheck", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, check=False)


def test_safe_kernels_exit_0():
    out = tilecheck("verify", KERNELS / "elementwise.py", "-j", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "11 kernel case(s): 11 verified, 0 racy" in out.stdout


def test_racy_kernels_exit_1_with_both_source_lines():
    out = tilecheck("verify", KERNELS / "attention.py")
    assert out.returncode == 1
    assert "ct.store(dst, index=(b, m, h2, 0), tile=t)" in out.stdout
    assert "witness: block (0, 0, 0)" in out.stdout
    assert "2 racy" in out.stdout


def test_unknown_exits_2_unless_allowed(run_cli):
    out = run_cli("verify", DATA / "unknown_kernel.tileir", "--grid", "4,1,1")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "unknown op 'mystery_op'" in out.stdout
    assert run_cli("verify", DATA / "unknown_kernel.tileir", "--allow-unknown").returncode == 0


def test_bad_input_exits_3(run_cli):
    assert run_cli("verify", DATA / "broken.py").returncode == 3
    missing = run_cli("verify", DATA / "does_not_exist.py")
    assert missing.returncode == 3 and "no such file" in missing.stderr
    assert run_cli("verify", "--format", "xml", KERNELS).returncode == 3
    assert run_cli("run", "no-separator").returncode == 3


def test_kernel_without_case_is_listed(run_cli):
    out = run_cli("verify", DATA / "nocase.py")
    assert "undeclared: no case declared" in out.stdout and out.returncode == 0


# slow: the fast tier has atomics.py's exit 1 in test_pyproject_defaults, and the order-dependent-atomic
# finding in the corpus sample (its split-K matmul with float atomics, in test_verifier_on_the_corpus)
@pytest.mark.slow
def test_strict_makes_order_dependent_atomics_fail():
    assert tilecheck("verify", KERNELS / "atomics.py", "--allow-unknown").returncode == 1  # moe races
    gemm = tilecheck("verify", KERNELS / "gemm.py", "--format", "json")
    data = json.loads(gemm.stdout)
    assert any(f["kind"] == "order-dependent-atomic" for r in data["results"] for f in r["findings"])


# slow: the fast tier validates the JSON report against its schema in test_robustness.py's
# test_isolation_holds_in_json_and_sarif (-j 2), which finds on its folder the results that
# test_a_case_whose_factory_raises_is_an_error_for_that_case_only[1] finds with -j 1
@pytest.mark.slow
def test_json_matches_its_schema_and_jobs_do_not_change_results(tmp_path):
    one = tilecheck("verify", KERNELS / "attention.py", KERNELS / "inplace.py", "--format", "json", "-j", "1")
    two = tilecheck("verify", KERNELS / "attention.py", KERNELS / "inplace.py", "--format", "json", "-j", "2")
    assert one.returncode == two.returncode == 1, one.stderr + two.stderr  # (seen once: stdout empty)
    a, b = json.loads(one.stdout), json.loads(two.stdout)
    jsonschema.validate(a, json.loads((SCHEMAS / "tilecheck-report.json").read_text()))

    def strip(d):
        return [{k: v for k, v in r.items() if k != "seconds"} for r in d["results"]]

    assert strip(a) == strip(b)
    assert a["summary"]["race"] == 3 and a["summary"]["out-of-bounds"] == 1  # gather_unchecked


def test_sarif_is_valid_and_points_at_both_lines(tmp_path, run_cli):
    out_file = tmp_path / "out.sarif"
    out = run_cli("verify", KERNELS / "attention.py", "--format", "sarif", "--output", out_file)
    assert out.returncode == 1, out.stderr
    assert out_file.exists(), out.stderr  # (seen once under heavy load: exit 1 and no file)
    log = json.loads(out_file.read_text())
    jsonschema.validate(log, json.loads((SCHEMAS / "sarif-2.1.0.json").read_text()))
    result = log["runs"][0]["results"][0]
    assert result["ruleId"] == "write-write" and result["level"] == "error"
    loc = result["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "corpus/kernels/attention.py"
    assert loc["region"]["startLine"] > 0 and loc["region"]["startColumn"] >= 1
    assert result["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] > 0


def test_run_reports_nondeterminism_and_writes_files(tmp_path, run_cli):
    target = f"{KERNELS / 'attention.py'}::head_permute_swapped"
    out = run_cli("run", target, "--repeat", "4", "--report", tmp_path / "r.json", "--heatmap", tmp_path / "h.png")
    assert out.returncode == 1 and "NONDETERMINISTIC" in out.stdout
    assert json.loads((tmp_path / "r.json").read_text())["deterministic"] is False
    assert (tmp_path / "h.png").read_bytes()[:4] == b"\x89PNG"
    safe = run_cli("run", f"{KERNELS / 'attention.py'}::head_permute_safe", "--repeat", "4")
    assert safe.returncode == 0 and "deterministic" in safe.stdout


def test_explain_replays_the_witness(run_cli):
    out = run_cli("explain", f"{KERNELS / 'inplace.py'}::inplace_halo")
    assert out.returncode == 1
    assert "replay of read-write" in out.stdout and "->" in out.stdout


def test_pyproject_defaults(tmp_path, run_cli):
    (tmp_path / "kernels.py").write_text((KERNELS / "atomics.py").read_text())
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tilecheck]\npaths = ["kernels.py"]\ntimeout = 5\n\n'
        '[tool.tilecheck.assume]\nmoe_scatter = ["distinct:dest_rows"]\n')
    out = run_cli("verify", cwd=tmp_path)
    # moe_scatter's first case keeps the precondition; its second case's dest_rows repeat a row, so
    # that case breaks it (a finding) and races
    assert out.returncode == 1, out.stdout + out.stderr
    assert "'dest_rows' holds no duplicate values" in out.stdout
    assert "breaks its precondition" in out.stdout
    (tmp_path / "pyproject.toml").write_text("[tool.tilecheck]\npathz = []\n")
    bad = run_cli("verify", cwd=tmp_path)
    assert bad.returncode == 3 and "unknown [tool.tilecheck] keys: pathz" in bad.stderr


SCATTER = '''
import cuda.tile as ct
import numpy as np
import tilecheck


def _args():
    idx = np.arange(64, dtype=np.int32)
    return np.ones((64, 32), np.float32), idx, np.zeros((64, 32), np.float32), 16, 32


@tilecheck.case(grid=(4, 1, 1), args=_args)
@tilecheck.requires(tilecheck.distinct("idx"))
@ct.kernel
def required(x, idx, out, TM: ct.Constant[int], TD: ct.Constant[int]):
    dst = ct.gather(idx, ct.bid(0) * TM + ct.arange(TM, dtype=ct.int32))
    cols = ct.arange(TD, dtype=ct.int32)
    ct.scatter(out, (dst[:, None], cols[None, :]), ct.load(x, index=(ct.bid(0), 0), shape=(TM, TD)))


@tilecheck.case(grid=(4, 1, 1), args=_args, assume=[tilecheck.distinct("idx")])
@ct.kernel
def in_case(x, idx, out, TM: ct.Constant[int], TD: ct.Constant[int]):
    dst = ct.gather(idx, ct.bid(0) * TM + ct.arange(TM, dtype=ct.int32))
    cols = ct.arange(TD, dtype=ct.int32)
    ct.scatter(out, (dst[:, None], cols[None, :]), ct.load(x, index=(ct.bid(0), 0), shape=(TM, TD)))


@tilecheck.case(grid=(4, 1, 1), args=_args)
@ct.kernel
def configured(x, idx, out, TM: ct.Constant[int], TD: ct.Constant[int]):
    dst = ct.gather(idx, ct.bid(0) * TM + ct.arange(TM, dtype=ct.int32))
    cols = ct.arange(TD, dtype=ct.int32)
    ct.scatter(out, (dst[:, None], cols[None, :]), ct.load(x, index=(ct.bid(0), 0), shape=(TM, TD)))
'''


def test_preconditions_on_the_kernel_in_its_case_and_in_pyproject(tmp_path, run_cli):
    (tmp_path / "scatter.py").write_text(SCATTER)
    (tmp_path / "pyproject.toml").write_text('[tool.tilecheck.assume]\nconfigured = ["distinct:idx"]\n')
    out = run_cli("verify", "scatter.py", "-j", "1", "--format", "json", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    results = {r["kernel"]: r for r in json.loads(out.stdout)["results"]}
    for name in ("required", "in_case", "configured"):
        assert results[name]["status"] == "verified"
        assert "'idx' holds no duplicate values (precondition)" in results[name]["assumptions"]
    explained = run_cli("explain", "scatter.py::configured", cwd=tmp_path)
    assert explained.returncode == 0 and "'idx' holds no duplicate values" in explained.stdout
    # without the table: not verified at that level (at most for the case's own contents)
    (tmp_path / "pyproject.toml").write_text("")
    out = run_cli("verify", "scatter.py", "-j", "1", "--format", "json", cwd=tmp_path)
    plain = next(r for r in json.loads(out.stdout)["results"] if r["kernel"] == "configured")
    # (for every shape, the contract then names the facts the case's own contents satisfy)
    assert plain["status"] != "verified" or plain["level"] != results["configured"]["level"] or \
        "'idx' holds no duplicate values" in plain["launch_contract"]["text"], plain


@pytest.mark.parametrize("command", ["verify", "run", "explain", "eval", "ir"])
def test_help(command, run_cli):
    assert run_cli(command, "--help").returncode == 0
