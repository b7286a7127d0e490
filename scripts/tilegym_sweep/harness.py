"""One case of the TileGym sweep: compile, verify and interpret a TileGym cuTile kernel on the CPU.

A case (in cases*.py) is a function returning dict(kernel=..., args=..., grid=..., outs=..., want=...,
tol=..., extra=...): the kernel, arguments rebuilt by hand from its host wrapper (torch CPU tensors,
small shapes), and a torch reference. Run through sweep.py, which gives each case its own process.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
import warnings

warnings.filterwarnings("ignore")
sys.path.insert(0, os.environ.get("TILEGYM_SRC", "src"))  # the directory holding the `tilegym` package

import torch

import tilecheck
from tilecheck.ir.cutile import compile_kernel


def mod(name: str):
    return importlib.import_module(name)


def _first_line(exc: BaseException) -> str:
    lines = [line for line in f"{type(exc).__name__}: {exc}".splitlines() if line.strip()]
    return lines[0][:300] if lines else type(exc).__name__


def run_case(name, kernel, args, grid, outs=None, want=None, tol=1e-3, extra=None) -> dict:
    rec = {"case": name}
    try:
        compile_kernel(kernel, args)
        rec["compile"] = "ok"
    except Exception as exc:  # noqa: BLE001 - a sweep records every failure and goes on
        rec["compile"] = "FAIL: " + _first_line(exc)
    start = time.perf_counter()
    try:
        report = tilecheck.verify(kernel, args, grid)
        rec["verify"] = report.status
        rec["reasons"] = list(report.reasons)[:3]
        if report.findings:
            rec["finding_kinds"] = sorted({f.kind for f in report.findings})
            rec["finding"] = str(report.findings[0])[-1200:]
    except Exception as exc:  # noqa: BLE001
        rec["verify"] = "EXC: " + _first_line(exc)
        rec["verify_tb"] = traceback.format_exc()[-1500:]
    rec["verify_s"] = round(time.perf_counter() - start, 2)
    if rec["compile"] == "ok":
        try:
            tilecheck.launch(grid, kernel, args, backend="cpu", unsafe=True)
            rec["interp"] = "ok"
            if want is not None:
                expected, got = want(), (outs() if callable(outs) else outs)
                if not isinstance(expected, (list, tuple)):
                    expected, got = [expected], [got]
                rec["ref"] = [
                    f"{'match' if torch.allclose(o.float(), w.float(), atol=tol, rtol=tol) else 'DIFF'}"
                    f"(maxerr={(o.float() - w.float()).abs().max().item():.3g})" for w, o in zip(expected, got)]
        except Exception as exc:  # noqa: BLE001
            rec["interp"] = "FAIL: " + _first_line(exc)
    if extra:
        rec["note"] = extra
    return rec


if __name__ == "__main__":
    module_name, case_name = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    spec = getattr(importlib.import_module(module_name), case_name)()
    print("@@JSON@@" + json.dumps(run_case(case_name, **spec)))
