"""How many of TileGym's captured launches a cached contract decides (issue 20).

    python scripts/tilegym_contract_hits.py TILEGYM_SRC CAPTURE.pkl [--cache DIR]

Every captured launch, in the capture's order, as the pytest plugin meets them: looked up in the
cache (a fresh temporary directory unless ``--cache``) first, and proved (its contract stored)
when the cache does not decide it. A hit is a launch decided without a solver call: by a
contract proved for an earlier launch of the same Tile IR (other specialisations, dtypes or
constants, are other Tile IR, proved on their own), or the same launch's stored verdict.
"""
from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from tilegym_records import compiled_records, kernel_of  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src")
    parser.add_argument("capture")
    parser.add_argument("--cache")
    opts = parser.parse_args()
    sys.path.insert(0, opts.src + "/src")
    import tilecheck as tc
    from tilecheck.verifier.reuse import lookup as cached, proof_cache
    from tilecheck.verifier.api import WORK_BUDGET

    store = proof_cache.ProofCache(Path(opts.cache or tempfile.mkdtemp(prefix="tilecheck-hits-")))
    by_kernel: dict[tuple[str, str], list] = collections.defaultdict(list)
    for r in compiled_records(opts.capture, first_only=False):
        by_kernel[(r["module"], r["kernel_name"])].append(r)
    # verify's defaults: the cache keys a verdict by them, so a lookup with others never hits
    options = {"data": True, "contract": None, "work": WORK_BUDGET, "every_shape": True, "observed": []}
    totals = collections.Counter()
    for (module, name), records in by_kernel.items():
        kern = kernel_of(records[0])
        hits = proved = 0
        for r in records:
            args, grid = tuple(r["args"]), tuple(r["grid"])
            try:
                _, hit = cached.lookup(store, kern, args, grid, (), options)
                if hit is None:  # what the plugin does: prove it (and store its contract)
                    tc.verify(kern, args, grid, cache=store.directory)
            except tc.TilecheckError:
                continue
            hits += hit is not None
            proved += hit is None
        totals["kernels"] += 1
        totals["launches"] += hits + proved
        totals["decided by the cache"] += hits
        totals["proved"] += proved
        print(f"{name.split('.')[-1][:45]:45} {hits}/{hits + proved} from the cache", file=sys.stderr, flush=True)
    for k, v in totals.items():
        print(f"{k}: {v}")


if __name__ == "__main__":
    main()
