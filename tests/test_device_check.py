"""The CPU-side parts of the GPU check: scripts/device_check.py runs end to end on the simulated
device, and the shell wrappers parse."""
import importlib.util
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load(name="device_check"):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_device_check_runs_every_section_on_the_simulated_device(capsys):
    assert _load().main(["--simulate", "--runs", "3", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    for title in ("Environment", "Head permutation on the device", "Launcher overhead", "Elementwise bandwidth"):
        assert f"### {title}" in out
    assert "FAILED" not in out
    rows = [line for line in out.splitlines() if line.startswith("| (")]
    assert len(rows) == 9  # three shapes x (swapped, paper's fix, safe)
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        kernel, distinct = cells[1], cells[3]
        assert (distinct == "1") is (kernel == "head_permute_safe"), row
    assert "graph replay" in out and "vector add through tilecheck.launch" in out


def test_device_corpus_runs_entries_and_flags_only_nondeterministic_race_free_ones(tmp_path, capsys):
    corpus = _load("device_corpus")
    out_json = tmp_path / "rows.json"
    assert corpus.main(["--simulate", "--runs", "3", "--limit", "12", "--json", str(out_json)]) == 0
    rows = {r["entry"]: r for r in __import__("json").loads(out_json.read_text())}
    assert len(rows) == 12
    swapped = rows["kernels/attention.py::head_permute_swapped"]
    assert swapped["deterministic"] is False and corpus.verdict(swapped) == "race seen"
    assert corpus.verdict(rows["kernels/elementwise.py::vector_add_gather"]) == "ok"
    assert "skipped" in rows["kernels/inplace.py::gather_unchecked"]
    # a race-free label with a nondeterministic outcome is the alarm; float atomics are expected to vary
    alarm = {"expect": "verified", "kinds": [], "deterministic": False}
    assert corpus.verdict(alarm).startswith("ALARM")
    assert not corpus.verdict({**alarm, "kinds": ["order-dependent-atomic"]}).startswith("ALARM")
    assert "0 race-free-labelled with a nondeterministic output" in capsys.readouterr().out


def test_shell_wrappers_parse():
    for script in ("device_check.sh", "device_bundle.sh"):
        subprocess.run(["bash", "-n", str(ROOT / "scripts" / script)], check=True)
