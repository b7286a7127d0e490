"""Long run of the reuse oracle (issue 49): the proof cache against fresh proofs on N generated kernels.

    nice python scripts/reuse_long.py --examples 500 --seed 1 --out build/oracle-runs/reuse-seed1

The property and the grammar are the CI test's (tests/verifier/test_reuse_oracle.py, tests/oracle_reuse.py,
tests/oracle_kernels.py), run in one process under hypothesis with a fixed seed and generation only (no
shrinking). Per example: a base launch, one to three other launches (grids; contents permuted,
duplicated or padded; shapes, strides or dtypes changed; ``data`` on and off) asked with the cache warm and then as a new process finds
it, and an edit (another generated kernel written over the same file). Every disagreement (a reused
status other than the fresh proof's, or a reused ``verified`` that ``tilecheck.detect`` contradicts)
is written to ``--out`` as the base module with both reports in a trailing comment. At the end it
prints (and writes to ``summary.json``): examples, questions, how many the cache decided, the
disagreements, errors and time.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings

import tilecheck
from tests.oracle_relation import load
from tests.oracle_reuse import Question, other_contents, other_layout, trial
from tests.verifier.test_reuse_oracle import reuse_cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("build/oracle-runs/reuse"))
    opts = parser.parse_args()
    opts.out.mkdir(parents=True, exist_ok=True)
    counts: collections.Counter[str] = collections.Counter()
    errors: collections.Counter[str] = collections.Counter()
    start = time.perf_counter()
    hits = [0]
    real_verify = tilecheck.verify

    def counting(*args: Any, **kwargs: Any) -> Any:  # the cache's decisions, counted
        report = real_verify(*args, **kwargs)
        if kwargs.get("cache") is not False:
            counts["reused questions"] += 1
            hits[0] += report.stats.get("cache") == "hit"
        return report
    tilecheck.verify = counting

    @settings(max_examples=opts.examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seed(opts.seed)
    @given(case=reuse_cases())
    def run(case: Any) -> None:
        base_case, edit_case, more, rng_seed = case
        counts["examples"] += 1
        folder = Path(tempfile.mkdtemp(prefix="reuse-"))
        try:
            base = load(base_case, folder)
            rng = np.random.default_rng(rng_seed)
            questions = [Question("base", base.args, base.grid, True),
                         Question("base, any contents", base.args, base.grid, False)]
            for n, (grid, how, layout, data) in enumerate(more):
                questions.append(Question(f"launch {n}: grid {grid}, contents {how}, layout {layout}, data={data}",
                                          other_layout(other_contents(base.args, how, rng), layout), grid, data))
            found = trial(base, edit_case.source, questions, folder / "cache")
        except Exception as exc:  # noqa: BLE001 - a generator bug (cuTile refused it) or a checker's crash
            errors[f"{type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''}"] += 1
            return
        for d in found:
            counts["disagreements"] += 1
            name = opts.out / f"disagreement_{base_case.digest}.py"
            name.write_text(base_case.source + "\n# " + d.describe().replace("\n", "\n# ") + "\n")
        if counts["examples"] % 25 == 0:
            print(f"[{counts['examples']}] {time.perf_counter() - start:.0f}s {dict(counts)} hits={hits[0]}",
                  flush=True)

    run()
    summary = {"examples": counts["examples"], "reused_questions": counts["reused questions"],
               "cache_hits": hits[0], "disagreements": counts["disagreements"], "errors": dict(errors),
               "seconds": round(time.perf_counter() - start)}
    (opts.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 0 if not counts["disagreements"] else 1


if __name__ == "__main__":
    sys.exit(main())
