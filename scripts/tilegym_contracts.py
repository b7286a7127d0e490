"""Every TileGym contract over the shapes checked against the exact detector (issue 20).

    python scripts/tilegym_contracts.py TILEGYM_SRC CAPTURE.pkl [--out contracts.json] [--only SUBSTR]

For each kernel verified for every shape at its captured launch (one record per kernel, as
``run_tilegym.py``), the contract is instantiated at up to 3 other launches it admits: each
dimension value of the arguments (and each integer scalar equal to one) is mapped to another
(the same value to the same new value, so relations between dimensions survive), arrays get new
contents of their kind (integer arrays under the contract's contents facts when it has them), and
each grid axis takes the value its rule names. ``tilecheck.detect`` must find each race-free.
Then each rule in turn is broken at the first such launch (an unread axis at 2, a bound plus one, a
relation off by a tile) until ``detect`` finds a race or an out-of-bounds access there; a
contract narrower than the kernel needs has no such launch, and the script says so.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from tilegym_records import compiled_records, kernel_of  # noqa: E402

MAX_ELEMENTS = 8_000_000  # the detector's work bound per run
TRIES = 60  # random mappings tried for the 3 admitted launches


def _new_value(d: int, rng: np.random.Generator) -> int:
    """Another size: twice or half (tile multiples stay multiples), or one more (a partial tile)."""
    options = [d, 2 * d if d <= 4096 else d, d // 2 if d % 2 == 0 and d > 1 else d, d, d + 1]
    return int(rng.choice(options))


def _fixed(contract) -> set[int]:
    """The values the contract pins a dimension or scalar to: kept as they are."""
    return {r.right.value for r in contract.rules if r.kind == "fixed" and r.right.name is None}


def _array(a: np.ndarray, shape: tuple[int, ...], rng: np.random.Generator, facts: list) -> np.ndarray:
    if a.dtype.kind == "f" or a.dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return rng.standard_normal(shape).astype(a.dtype)
    if a.dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(a.dtype)
    lo, hi = (int(a.min()), int(a.max())) if a.size else (0, 0)
    for pre in facts:
        if getattr(pre, "lo", None) is not None:
            lo, hi = pre.lo, pre.hi
    size = int(np.prod(shape))
    kinds = {type(p).__name__ for p in facts}
    if a.size and not a.any() and not facts:
        return np.zeros(shape, a.dtype)
    if "Distinct" in kinds and hi - lo + 1 >= size:
        values = rng.permutation(np.arange(lo, hi + 1))[:size]
    else:
        values = rng.integers(lo, hi + 1, size)
    if "Nondecreasing" in kinds:
        values = np.sort(values)
    return values.reshape(shape).astype(a.dtype)


def _launch(kernel, args, grid, contract, rng, tc):
    """Another launch the contract may admit: (args, grid), or None when it does not."""
    from tilecheck.ir.cutile import module_for
    from tilecheck.verifier.contracts import shapes as sc
    from tilecheck.verifier.obligations.arguments import given_integer_arrays

    dims = sorted({int(d) for a in args if isinstance(a, np.ndarray) for d in a.shape})
    frozen = _fixed(contract)
    mapping = {d: d if d in frozen else _new_value(d, rng) for d in dims}
    facts = {}
    for pre in contract.contents:
        facts.setdefault(pre.array, []).append(pre)
    module, _ = module_for(kernel, args)
    params = {p.name: p for p in module.params}
    new = []
    for name, a in zip(_names(kernel), args):
        kind = params[name].kind if name in params else "constant"
        if isinstance(a, np.ndarray):
            new.append(_array(a, tuple(mapping.get(int(d), int(d)) for d in a.shape), rng, facts.get(name, [])))
        elif kind == "scalar" and isinstance(a, int) and not isinstance(a, bool) and a in mapping:
            new.append(mapping[a])  # a runtime size; a ct.Constant is part of the kernel, kept
        else:
            new.append(a)
    new = tuple(new)
    module, _ = module_for(kernel, new)
    env, widths = sc.launch_of(module.params, (1, 1, 1))
    extents = list(grid)
    for k in range(3):
        rules = [r for r in contract.rules if r.left.name == f"grid[{k}]"]
        values = [v for r in rules if (v := r.right.eval(env)) is not None]
        if values:
            extents[k] = max(1, min(values))
    env, widths = sc.launch_of(module.params, tuple(extents))
    if not contract.admits(env, widths, given_integer_arrays(module.params, new)):
        return None
    return new, tuple(extents)


def _names(kernel) -> list[str]:
    import inspect

    from tilecheck.ir.cutile import _python_function
    import cuda.tile as ct

    return list(inspect.signature(_python_function(kernel, ct)).parameters)


def _broken(kernel, args, grid, contract, tc):
    """Launches just outside the contract, one per rule it can break by changing the grid."""
    out = []
    for rule in contract.rules:
        name = rule.left.name or ""
        if not name.startswith("grid["):
            continue
        k = int(name[5])
        extents = list(grid)
        extents[k] = (2 if rule.kind == "unread" else extents[k] + 1)
        out.append((str(rule), tuple(extents)))
    return out


def check(kernel, args, grid, contract, tc, seed=0):
    rng = np.random.default_rng(seed)
    admitted, seen = [], set()
    for _ in range(TRIES):
        try:
            found = _launch(kernel, args, grid, contract, rng, tc)
        except tc.TilecheckError:  # a launch cuTile refuses (a tile shape, a dtype): another one
            continue
        if found is None:
            continue
        key = (tuple(getattr(a, "shape", a) for a in found[0]), found[1])
        if key in seen:
            continue
        seen.add(key)
        admitted.append(found)
        if len(admitted) == 3:
            break
    runs = []
    for new, g in admitted:
        r = tc.detect(kernel, new, g, max_elements=MAX_ELEMENTS)
        runs.append({"grid": list(g), "shapes": [list(a.shape) for a in new if isinstance(a, np.ndarray)],
                     "detect": r.status, "reason": (r.reasons or [""])[0][:160]})
    breaking = None
    base = admitted[0] if admitted else (args, grid)
    for rule, g in _broken(kernel, base[0], base[1], contract, tc):
        r = tc.detect(kernel, base[0], g, max_elements=MAX_ELEMENTS)
        if r.status in ("race", "out-of-bounds"):
            breaking = {"rule": rule, "grid": list(g), "detect": r.status}
            break
    return runs, breaking


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src")
    parser.add_argument("capture")
    parser.add_argument("--out")
    parser.add_argument("--only", default="")
    opts = parser.parse_args()
    sys.path.insert(0, opts.src + "/src")
    import tilecheck as tc
    from tilecheck.grid import normalize_grid
    from tilecheck.verifier.contracts.levels import EVERY_SHAPE_LEVEL

    rows = []
    for r in compiled_records(opts.capture, only=opts.only):
        label = f"{r['module']}.{r['kernel_name']}"
        kern = kernel_of(r)
        args, grid = tuple(r["args"]), normalize_grid(tuple(r["grid"]))
        start = time.perf_counter()
        report = tc.verify(kern, args, grid, cache=False)
        row = {"kernel": label, "status": report.status, "level": report.level,
               "contract": str(report.launch_contract) if report.launch_contract else None}
        if report.status == "verified" and report.level == EVERY_SHAPE_LEVEL:
            try:
                row["runs"], row["breaking"] = check(kern, args, grid, report.launch_contract, tc)
            except Exception as exc:  # noqa: BLE001 - one kernel's failure is a row, not the end
                row["error"] = f"{type(exc).__name__}: {exc}"[:200]
        else:
            row["why"] = (report.notes or report.reasons or [""])[0][:300]
        row["seconds"] = round(time.perf_counter() - start, 2)
        rows.append(row)
        runs = row.get("runs", [])
        print(f"{row['seconds']:7.1f} s  {label.split('.')[-1][:40]:40} {len(runs)} launches "
              f"{[x['detect'] for x in runs]} breaking={(row.get('breaking') or {}).get('detect')}",
              file=sys.stderr, flush=True)
    if opts.out:
        Path(opts.out).write_text(json.dumps(rows, indent=1))
    every = [x for x in rows if "runs" in x]
    clean = [x for x in every if x["runs"] and all(r["detect"] == "verified" for r in x["runs"])]
    none = [x for x in every if not x["runs"]]
    print(f"{len(none)} kernels with no admitted launch generated: " + ", ".join(x["kernel"].split(".")[-1] for x in none))
    wrong = [x for x in every if any(r["detect"] in ("race", "out-of-bounds") for r in x["runs"])]
    print(f"{len(every)} kernels verified for every shape; {len(clean)} with every admitted launch race-free "
          f"on the detector ({sum(len(x['runs']) for x in every)} launches), {len(wrong)} with a race at an "
          f"admitted launch; {sum(1 for x in every if x.get('breaking'))} with a breaking launch found")
    for x in wrong:
        print("  CONTRADICTED:", x["kernel"], x["contract"][:200], x["runs"])


if __name__ == "__main__":
    main()
