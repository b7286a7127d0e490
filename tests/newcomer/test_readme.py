"""Issue 50: CI runs what the README promises. The two commands in README.md's code blocks are the
first two commands `.ci/run` runs, word for word, under `set -e`."""
import re

from tests.conftest import ROOT


def _readme_commands():
    blocks = re.findall(r"```\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)
    return [b.strip() for b in blocks if b.strip().startswith("python3 -m venv")]


def test_ci_runs_both_readme_commands_first_and_fails_when_either_fails():
    main, tests = _readme_commands()
    assert "tilecheck eval corpus/" in main and "pytest" in tests
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert "set -euo pipefail" in lines[:2]
    commands = [line for line in lines if line.startswith("python3 -m venv")]
    assert commands[:2] == [main, tests]


def test_ci_tests_the_lowest_z3_solver_the_pin_allows():
    """The pin on z3-solver is the range CI tests (docs/architecture.md): its lower bound is the
    release `.ci/run` runs the verifier's tests with, besides the installed one."""
    pin = re.search(r'"z3-solver>=([\d.]+),<([\d.]+)"', (ROOT / "pyproject.toml").read_text())
    tested = re.search(r'"z3-solver==([\d.]+)"', (ROOT / ".ci" / "run").read_text())
    assert pin and tested
    lowest = pin.group(1).split(".")
    assert tested.group(1).split(".")[:len(lowest)] == lowest
    assert all(int(x) == 0 for x in tested.group(1).split(".")[len(lowest):])  # the first release of it
