"""The TileGym sweep: every case in cases1-4.py, each in its own process; one JSON line per case.

    git --git-dir=<TileGym mirror> archive HEAD src | tar -x -C /tmp/tilegym   # or a checkout
    TILEGYM_SRC=/tmp/tilegym/src python scripts/tilegym_sweep/sweep.py [CASE_MODULE [CASE ...]] > results.jsonl

Needs torch (CPU build). docs/corpus.md has the results of the last run and what they mean.
"""
from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULES = ("cases1", "cases2", "cases3", "cases4")


def cases(module_name: str) -> list[str]:
    sys.path.insert(0, str(HERE))
    module = importlib.import_module(module_name)
    return [n for n, f in inspect.getmembers(module, inspect.isfunction)
            if f.__module__ == module_name and not n.startswith("_")]


def main(argv: list[str]) -> None:
    selected = [(argv[0], name) for name in argv[1:]] if len(argv) > 1 else \
        [(m, n) for m in (argv[:1] or MODULES) for n in cases(m)]
    for module_name, name in selected:
        try:
            done = subprocess.run([sys.executable, str(HERE / "harness.py"), module_name, name], check=False,
                                  capture_output=True,
                                  text=True, timeout=400, cwd=HERE)
            line = next((x for x in done.stdout.splitlines() if x.startswith("@@JSON@@")), None)
            rec = json.loads(line[8:]) if line else {"case": name, "crash": (done.stderr or done.stdout)[-2000:]}
        except subprocess.TimeoutExpired:
            rec = {"case": name, "crash": "timeout (400 s)"}
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
