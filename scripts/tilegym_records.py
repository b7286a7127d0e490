"""TileGym's captured launches (../shared/tools/tilegym_capture.py) for the scripts that replay them:
the records that compiled, and the kernel object each one launched."""
from __future__ import annotations

import importlib
import pickle
from typing import Any


def compiled_records(capture: str, first_only: bool = True, only: str = "") -> list[dict[str, Any]]:
    """The records that compiled, in capture order (``first_only``: one per kernel, the first), whose
    ``module.kernel_name`` contains ``only``."""
    records, seen = [], set()
    for r in pickle.load(open(capture, "rb")):
        key = (r["module"], r["kernel_name"])
        if not r.get("compile_ok") or only not in f"{key[0]}.{key[1]}" or (first_only and key in seen):
            continue
        seen.add(key)
        records.append(r)
    return records


def kernel_of(record: dict[str, Any]) -> Any:
    """The ``@ct.kernel`` a record launched, with its compiler options (TileGym src on sys.path)."""
    import cuda.tile as ct

    kernel = getattr(importlib.import_module(record["module"]), record["kernel_name"].split(".")[-1])
    if record.get("kernel_ref") == "pyfunc":
        return ct.kernel(kernel, **(record.get("compiler_options") or {}))
    if record.get("compiler_options"):
        return kernel.replace_hints(**record["compiler_options"])
    return kernel
