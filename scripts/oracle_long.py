"""Long run of the oracle test (issue 11): ``verify`` against ``detect`` on N generated kernels.

    nice python scripts/oracle_long.py --examples 10000 --seed 1 --out build/oracle-runs/seed1

The property and the grammar are the CI test's (tests/test_oracle.py, tests/oracle_kernels.py), run
in one process under hypothesis with a fixed seed and generation only (no shrinking). Every
disagreement (``verify`` says verified, ``detect`` finds a race or an out-of-bounds access) is written
to ``--out`` as a runnable module: kernel, ``make_args()``, ``GRID``, ``ASSUME``, and both reports in a
trailing comment. The first ``--minimize`` ones per set of detect's finding kinds are also reduced
statement by statement (``*.min.py``, ``tests/oracle_minimize.py``); those of an open class that already
has a regression file (``tests.oracle_relation.KNOWN``) are only counted. Launches where ``verify``
reports a defect and ``detect`` none (false alarms, allowed) are counted. A third opinion on ``detect``: with
``--repeat R``, every false alarm and every ``--sample``-th launch both call safe is also run R times
under adversarial schedules; a nondeterministic output where ``detect`` found nothing at all is
reported as a detector miss (kernels whose outputs legitimately depend on the order, through
tickets, CAS or xchg results or relaxed accesses, are left out). And the other way (issue 52): a
cross-block race ``detect`` finds whose two orders leave different values (its witness replayed in
both orders, on the given arguments) must show as nondeterminism in ``run_repeated``'s 20 runs (its
default); one that does not is written
as ``race_not_shown_*.py``. ``--grammar triton`` draws the Triton grammar (tests/oracle_triton.py).

At the end it prints (and writes to ``summary.json``): examples, the verify x detect status matrix,
disagreements by class, the false-alarm count and rate, unknown reasons, generator errors, time.
"""
from __future__ import annotations

import argparse
import collections
import json
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, seed, settings

import tilecheck
from tests.oracle_kernels import cases
from tests.oracle_triton import triton_cases
from tests.oracle_relation import Outcome, known_class, load
from tests.oracle_minimize import minimize, source_features

MINIMIZE_TRIES = 120  # smaller modules tried per minimised disagreement (each one a verify and a detect)


class Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise Timeout()


_STOP: list[int] = []


def _stop(signum: int, frame: Any) -> None:
    """Ctrl-C or SIGTERM: finish the example under way, then print the summary (an interrupt inside
    a solver query or the interpreter could otherwise be read as that example's outcome)."""
    _STOP.append(signum)


class Run:
    """Counters and files of one long run."""

    def __init__(self, out: Path, timeout_s: int, repeat: int, sample: int, minimize_per_class: int) -> None:
        self.out = out
        self.work = Path(tempfile.mkdtemp(prefix="oracle-"))
        self.timeout_s = timeout_s
        self.repeat = repeat
        self.sample = sample
        self.agreed_safe = 0
        self.minimize_per_class = minimize_per_class
        self.matrix: collections.Counter[str] = collections.Counter()
        self.classes: collections.Counter[str] = collections.Counter()
        self.minimized: collections.Counter[str] = collections.Counter()
        self.unknown: collections.Counter[str] = collections.Counter()
        self.errors: collections.Counter[str] = collections.Counter()
        self.detector_misses = 0
        self.races_replayed = 0  # detect's races whose orders leave different values, run repeatedly
        self.races_not_shown = 0  # ... that run_repeated showed no difference for
        self.order_free_races = 0  # detect's races whose two orders leave the same values
        self.repeated = 0
        self.times: list[float] = []
        self.phase: collections.Counter[str] = collections.Counter()
        self.features: collections.Counter[str] = collections.Counter()
        self.alarm_kinds: collections.Counter[str] = collections.Counter()
        self.alarm_features: collections.Counter[str] = collections.Counter()
        self.examples = 0
        self.start = time.perf_counter()

    def one(self, case: Any) -> None:
        if _STOP:
            raise KeyboardInterrupt  # between examples: hypothesis passes it on without shrinking
        self.examples += 1
        self.features.update(case.features)
        started = time.perf_counter()
        try:
            outcome = self._check(case.source)
        except Timeout:
            self.errors["timeout"] += 1
            self._write(f"timeout_{case.digest}.py", case.source, "more than the time limit")
            outcome = None
        except Exception as exc:  # noqa: BLE001 - a generator bug (cuTile refused it) or a checker's crash
            key = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
            self.errors[key] += 1
            self._write(f"error_{case.digest}.py", case.source, f"{type(exc).__name__}: {exc}")
            outcome = None
        self.times.append(time.perf_counter() - started)
        if outcome is not None:
            self._record(case, outcome)
        if self.examples % 100 == 0:
            # cuTile modules compiled for earlier cases are never asked for again
            from tilecheck.ir import cutile

            cutile._COMPILED.clear()
            print(f"[{self.examples}] {time.perf_counter() - self.start:.0f}s {dict(self.matrix)} "
                  f"disagreements={sum(self.classes.values())}", flush=True)

    def _check(self, source: str) -> Outcome:
        """Both checkers on one module, within the time limit (``Timeout``)."""
        signal.alarm(self.timeout_s)
        try:
            loaded = load(source, self.work)
            t = time.perf_counter()
            report = tilecheck.verify(loaded.kernel, loaded.args, loaded.grid, assume=loaded.assume)
            self.phase["verify"] += time.perf_counter() - t
            t = time.perf_counter()
            found = tilecheck.detect(loaded.kernel, loaded.args, loaded.grid, assume=loaded.assume)
            self.phase["detect"] += time.perf_counter() - t
        finally:
            signal.alarm(0)
        return Outcome(report, found)

    def _record(self, case: Any, outcome: Outcome) -> None:
        v, d = outcome.verify, outcome.detect
        self.matrix[f"{v.status}/{d.status}"] += 1
        for report, side in ((v, "verify"), (d, "detect")):
            if report.status == "unknown":
                reason = report.reasons[0] if report.reasons else "?"
                self.unknown[f"{side}: {_generic(reason)}"] += 1
        if v.status == d.status == "verified":
            self.agreed_safe += 1
        if outcome.false_alarm:
            kinds = sorted({f.kind for f in v.findings if f.kind in _DEFECT_KINDS})
            self.alarm_kinds["+".join(kinds)] += 1
            for feature in case.features & (_SUSPECT | {"index-array"}):
                self.alarm_features[feature] += 1
        sampled = v.status == d.status == "verified" and self.sample and self.agreed_safe % self.sample == 0
        if self.repeat and (outcome.false_alarm or sampled) and not case.features & _ORDER_DEPENDENT:
            self._repeat(case, outcome)
        if self.repeat and d.status == "race" and not case.features & _ORDER_DEPENDENT:
            self._shown(case, outcome)
        if not outcome.disagreement:
            return
        kinds = sorted({f.kind for f in d.findings if f.kind in _DEFECT_KINDS})
        self._write(f"disagree_{case.digest}.py", case.source, outcome.describe())
        known = known_class(case.source, outcome)
        if known:  # an open class with its own regression file: counted, not minimised again
            cls = f"known: tests/data/oracle/{known}"
        elif self.minimized["+".join(kinds)] < self.minimize_per_class:
            self.minimized["+".join(kinds)] += 1
            small = minimize(case.source, lambda s: self._still(s, kinds), budget=MINIMIZE_TRIES)
            cls = f"{'+'.join(kinds)} | {'+'.join(sorted(source_features(small)))}"
            self._write(f"disagree_{case.digest}.min.py", small, self._check(small).describe())
        else:
            cls = f"{'+'.join(kinds)} | {'+'.join(sorted(case.features & _SUSPECT))} (not minimised)"
        self.classes[cls] += 1
        print(f"disagreement {case.digest}: {cls}", flush=True)

    def _still(self, source: str, kinds: list[str]) -> bool:
        try:
            outcome = self._check(source)
        except Exception:  # noqa: BLE001 - a reduction that no longer compiles or runs is not interesting
            return False
        found = {f.kind for f in outcome.detect.findings}
        return outcome.disagreement and bool(found & set(kinds))

    def _repeat(self, case: Any, outcome: Outcome) -> None:
        if outcome.detect.findings:  # order-dependent atomics make outputs differ legitimately
            return
        loaded = load(case.source, self.work)
        self.repeated += 1
        signal.alarm(self.timeout_s)
        try:
            runs = tilecheck.run_repeated(loaded.kernel, loaded.args, loaded.grid, runs=self.repeat, seed=1)
        except Timeout:
            self.errors["timeout (repeated runs)"] += 1
            return
        finally:
            signal.alarm(0)
        if not runs.deterministic:
            self.detector_misses += 1
            self._write(f"detector_miss_{case.digest}.py", case.source, f"{outcome.describe()}\n\n{runs}")
            print(f"detector miss {case.digest}", flush=True)

    def _shown(self, case: Any, outcome: Outcome) -> None:
        """A race ``detect`` found, whose orders leave different values, shows in repeated runs."""
        from tilecheck.runtime.replay import replay

        if any(f.kind == "out-of-bounds" for f in outcome.detect.findings):
            return  # the interpreter stops at an out-of-bounds access: no run shows anything else
        races = [f for f in outcome.detect.findings if f.kind in ("write-write", "read-write")]
        signal.alarm(self.timeout_s)
        try:
            # on the given arguments: replay retries with random floats where they hide the difference,
            # and repeated runs on the given arguments cannot show that one
            differing = any((r := replay(f)).reproduced and r.differing
                            and not (r.note or "").startswith("with random float inputs") for f in races[:3])
            if not differing:
                self.order_free_races += 1
                return
            self.races_replayed += 1
            loaded = load(case.source, self.work)
            runs = tilecheck.run_repeated(loaded.kernel, loaded.args, loaded.grid, runs=SHOWN_RUNS, seed=1)
        except Timeout:
            self.errors["timeout (race shown)"] += 1
            return
        except tilecheck.TilecheckError as exc:  # e.g. a spin that never ends in some order
            self.errors[f"run_repeated: {_generic(str(exc).splitlines()[0])}"] += 1
            return
        finally:
            signal.alarm(0)
        if runs.deterministic:
            self.races_not_shown += 1
            self._write(f"race_not_shown_{case.digest}.py", case.source, f"{outcome.describe()}\n\n{runs}")
            print(f"race not shown {case.digest}", flush=True)

    def _write(self, name: str, source: str, note: str) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        comment = "\n".join("# " + line if line else "#" for line in note.splitlines())
        (self.out / name).write_text(f"{source}\n\n{comment}\n")

    def summary(self) -> dict[str, Any]:
        elapsed = time.perf_counter() - self.start
        checked = sum(self.matrix.values())
        alarms = self.matrix["race/verified"] + self.matrix["out-of-bounds/verified"]
        detect_race_free = sum(n for k, n in self.matrix.items() if k.endswith("/verified"))
        times = sorted(self.times) or [0.0]
        return {
            "examples": self.examples, "checked": checked, "matrix (verify/detect)": dict(self.matrix),
            "disagreements": sum(self.classes.values()), "disagreements by class": dict(self.classes),
            "verify race or out-of-bounds / detect verified": alarms,
            "false-alarm rate (of launches detect finds race-free)":
                round(alarms / max(detect_race_free, 1), 4),
            "false-alarm rate (of all checked)": round(alarms / max(checked, 1), 4),
            "false alarms by verify's finding kinds": dict(self.alarm_kinds.most_common()),
            "false alarms by grammar feature (a launch counts once per feature)":
                dict(self.alarm_features.most_common(15)),
            "launches run repeatedly (false alarms, sampled agreements)": self.repeated,
            "detector misses": self.detector_misses,
            "detect's races replayed with differing orders, run repeatedly": self.races_replayed,
            "... of them identical in every repeated run (race not shown)": self.races_not_shown,
            "detect's races whose orders leave the same values": self.order_free_races,
            "unknown reasons": dict(self.unknown.most_common(20)), "errors": dict(self.errors),
            "seconds": round(elapsed, 1), "seconds per example (mean, p95, max)":
                (round(elapsed / max(self.examples, 1), 3), round(times[int(0.95 * (len(times) - 1))], 3),
                 round(times[-1], 3)),
            "seconds in verify / detect": (round(self.phase["verify"], 1), round(self.phase["detect"], 1)),
            "grammar features (examples using each)": dict(sorted(self.features.items())),
        }


# runs in which a race detect found must show (run_repeated's default count, and `tilecheck run`'s)
SHOWN_RUNS = 20
# outputs that depend on the order of blocks without a race: tickets, CAS results stored as data,
# relaxed (morally strong) loads and stores
_ORDER_DEPENDENT = frozenset({"ticket", "atomic-cas", "atomic-xchg", "view-relaxed", "atomic-result",
                              "atomic"})  # the Triton grammar's float atomic add (its rounding)
_DEFECT_KINDS = ("write-write", "read-write", "unordered-in-block", "aliasing", "out-of-bounds")
# grammar features that name a disagreement's class before it is minimised
_SUSPECT = frozenset({
    "lock-ok", "lock-early", "lock-twice", "lock-other", "lock-mismatch", "lock-relaxed-acquire",
    "lock-relaxed-release", "lock-cas-release", "counter", "helper", "while", "break", "continue",
    "return-kernel", "unused-axis", "unchecked", "tiled-view-overlap", "slice-overlap", "in-place",
    "assume-distinct", "assume-bounded", "idx-duplicates", "idx-out-of-range", "atomic-xchg", "atomic-cas",
    "tile2d", "ticket", "cumsum", "atomic-block-scope", "lock-block-scope", "view-unchecked", "view-relaxed",
    "view-relaxed-block", "for-dynamic", "mask", "bits", "counter-continue", "counter-conditional",
    "counter-break", "index-overflow", "for-grid-stride"})


def _generic(reason: str) -> str:
    """A reason without file names and numbers, so equal causes count together."""
    import re

    reason = re.sub(r"\S*oracle_\w+\.py:\d+", "<loc>", reason)
    return re.sub(r"\d+", "N", reason)[:140]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for disagreements (default build/oracle-runs/seed<S>, ignored by git)")
    parser.add_argument("--timeout", type=int, default=60,
                        help="seconds per example before it counts as a timeout")
    parser.add_argument("--repeat", type=int, default=8,
                        help="adversarial runs of each false alarm that detect found clean (0: none)")
    parser.add_argument("--sample", type=int, default=5,
                        help="also run every N-th launch both checkers call safe repeatedly (0: none)")
    parser.add_argument("--grammar", choices=("cutile", "triton"), default="cutile")
    parser.add_argument("--minimize", type=int, default=2,
                        help="disagreements minimised per set of detect's finding kinds (known classes: "
                        "none)")
    opts = parser.parse_args(argv)
    out = opts.out or Path("build") / "oracle-runs" / f"seed{opts.seed}"
    run = Run(out, opts.timeout, opts.repeat, opts.sample, opts.minimize)
    signal.signal(signal.SIGALRM, _alarm)
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)

    @seed(opts.seed)
    @settings(max_examples=opts.examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=cases() if opts.grammar == "cutile" else triton_cases())
    def property_(case: Any) -> None:
        run.one(case)

    try:
        property_()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    summary = run.summary()
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 1 if summary["disagreements"] or run.detector_misses or run.races_not_shown else 0


if __name__ == "__main__":
    sys.exit(main())
