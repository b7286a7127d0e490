"""The CPU-side parts of the GPU check: scripts/device_check.py runs end to end on the simulated
device, and the shell wrappers parse."""
import importlib.util
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("device_check", ROOT / "scripts" / "device_check.py")
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


def test_shell_wrappers_parse():
    for script in ("device_check.sh", "device_bundle.sh"):
        subprocess.run(["bash", "-n", str(ROOT / "scripts" / script)], check=True)
