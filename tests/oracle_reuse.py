"""The reuse oracle (issue 49): every shortcut that skips a proof is compared with the proof it skips.

For one generated kernel (``tests/oracle_kernels.py``) and its base launch, ``trial`` asks about other
launches of it (other grids, shapes, strides and dtypes, other contents of its integer arrays, ``data``
on and off) and about an
edit of it (another generated kernel written over the same file, imported under the same name):

- with the proof cache warm from the launches before (the in-process memo and the disk entries),
- with the cache as a new process finds it (every in-memory cache dropped, the disk entries kept),
- and with no cache at all.

The relation: a reused verdict says no more than the fresh proof of the same question. Each launch's
statuses must be equal, except that a reused ``verified`` may stand where the fresh proof, asked from
that launch alone, ran out of budget (``unknown``): the reuse then holds a proof the fresh run did not
find, never a verdict it contradicts. And every ``verified`` is checked against ``tilecheck.detect``
at that launch. ``scripts/oracle_long.py --reuse`` runs it long.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from tests.oracle_relation import DEFECTS, Loaded, load_file


@dataclasses.dataclass(frozen=True)
class Question:
    """One launch asked about: its arguments, grid and mode, and what it is (for messages)."""

    label: str
    args: tuple[Any, ...]
    grid: tuple[int, int, int]
    data: bool


@dataclasses.dataclass
class Disagreement:
    label: str
    how: str
    reused: Any
    fresh: Any
    detect: Any | None = None

    def describe(self) -> str:
        out = f"{self.label} ({self.how}): reused {self.reused.status}, fresh {self.fresh.status}"
        if self.detect is not None:
            out += f", detect {self.detect.status}"
        return f"{out}\n--- reused:\n{self.reused}\n--- fresh:\n{self.fresh}"


def new_process() -> None:
    """Drop what a process keeps in memory between verifications, as a new process starts: the open
    caches, compiled kernels, source digests and file digests (the disk entries stay)."""
    from tilecheck.ir import cutile, source_digest
    from tilecheck.runtime import launcher
    from tilecheck.verifier.reuse import proof_cache

    proof_cache._OPEN.clear()
    proof_cache._DEFAULTS.clear()
    for table in (cutile._COMPILED, cutile._SPECIALIZED, cutile._DIGESTS, source_digest._FILES,
                  launcher._VERIFIED, launcher._CHECKED, launcher._ON_DATA, launcher._PROVED, launcher._SEEN,
                  launcher._PRECONDITIONS):
        table.clear()


def other_contents(args: tuple[Any, ...], how: str, rng: np.random.Generator) -> tuple[Any, ...]:
    """The arguments with the integer arrays' contents changed: ``permute``, ``duplicate`` (one entry
    copied over another), ``pad`` (an entry set to -1) or ``same``."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray) and a.dtype.kind == "i" and a.size > 1 and how != "same":
            a = a.copy()
            flat = a.reshape(-1)
            i, j = rng.choice(flat.size, 2, replace=False)
            if how == "permute":
                rng.shuffle(flat)
            elif how == "duplicate":
                flat[i] = flat[j]
            elif how == "pad":
                flat[i] = -1
        elif isinstance(a, np.ndarray):
            a = a.copy()
        out.append(a)
    return tuple(out)


def other_layout(args: tuple[Any, ...], how: str) -> tuple[Any, ...]:
    """The arguments in another layout, their values kept where they still fit: ``prefix`` (every
    1-D array cut to its first three quarters: other shapes), ``strided`` (every 1-D array in every
    other element of a buffer twice its size: other strides), ``half`` (float32 arrays as float16:
    another dtype) or ``same``."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray) and how != "same":
            if how == "prefix" and a.ndim == 1 and a.size >= 4:
                a = a[: a.size * 3 // 4].copy()
            elif how == "strided" and a.ndim == 1:
                buffer = np.zeros(2 * a.size, a.dtype)
                buffer[::2] = a
                a = buffer[::2]
            elif how == "half" and a.dtype == np.float32:
                a = a.astype(np.float16)
            else:
                a = a.copy()
        elif isinstance(a, np.ndarray):
            a = a.copy()
        out.append(a)
    return tuple(out)


def trial(base: Loaded, edited_source: str, questions: list[Question], cache: Path,
          check_detect: bool = True) -> list[Disagreement]:
    """Ask ``questions`` of ``base``'s kernel with the cache warm, then as a new process, then ask the
    base launch of the kernel ``edited_source`` holds, written over ``base``'s file: each compared
    with the fresh proof."""
    import tilecheck

    def ask(kernel: Any, q: Question, where: Any) -> Any:
        return tilecheck.verify(kernel, q.args, q.grid, assume=base.assume, data=q.data, cache=where)

    found: list[Disagreement] = []

    def launcher(kernel: Any, q: Question) -> Any:
        from tilecheck.ir.cutile import module_for
        from tilecheck.runtime.launcher import verified_report

        return verified_report(module_for(kernel, q.args)[0], q.args, q.grid, tuple(base.assume))

    def compare(kernel: Any, q: Question, how: str) -> None:
        reused = _answer(lambda: ask(kernel, q, cache))
        fresh = _answer(lambda: ask(kernel, q, False))
        if not _agree(reused, fresh):
            found.append(Disagreement(q.label, how, reused, fresh))
            return
        # the launcher's memo (a contract proved at an earlier launch decides this one: data=False)
        memo = _answer(lambda: launcher(kernel, q))
        alone = _answer(lambda: tilecheck.verify(kernel, q.args, q.grid, assume=base.assume, data=False, cache=False))
        if not _no_more(memo, alone):
            found.append(Disagreement(q.label, how + ", the launcher's memo", memo, alone))
            return
        if check_detect and reused.status == "verified":
            exact = tilecheck.detect(kernel, q.args, q.grid, assume=base.assume)
            if exact.status in DEFECTS:
                found.append(Disagreement(q.label, how, reused, fresh, exact))

    for q in questions:
        compare(base.kernel, q, "warm")
    new_process()
    for q in questions:
        compare(base.kernel, q, "new process")
    # an edit: the file rewritten, the module imported again under its name (a new process), the
    # cache kept
    base.path.write_text(edited_source)
    new_process()
    edited = load_file(base.path)
    edit = Question("edit", edited.args, edited.grid, True)
    reused = _answer(lambda: tilecheck.verify(edited.kernel, edit.args, edit.grid, assume=edited.assume, cache=cache))
    fresh = _answer(lambda: tilecheck.verify(edited.kernel, edit.args, edit.grid, assume=edited.assume, cache=False))
    if not _agree(reused, fresh):
        found.append(Disagreement("edit", "file rewritten", reused, fresh))
    return found


@dataclasses.dataclass
class Refused:
    """A question the verifier refused (a launch cuTile cannot compile, arguments it rejects): as a
    report, so both sides compare by status."""

    error: str
    status: str = "error"
    stats: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __str__(self) -> str:
        return f"error: {self.error}"


def _answer(ask: Any) -> Any:
    from tilecheck.errors import TilecheckError

    try:
        return ask()
    except TilecheckError as exc:
        return Refused(str(exc).splitlines()[0])


def _no_more(memo: Any, fresh: Any) -> bool:
    """The launcher's verdict says no more than the fresh proof: never ``verified`` where the proof
    finds a defect, never a defect where it proves the launch. (Its question differs in budgets:
    queries about contents get the data step's smaller one, since the launcher runs the exact
    detector on an undecided host launch; an ``unknown`` says less, and is allowed.)"""
    defects = ("race", "out-of-bounds")
    return not (memo.status == "verified" and fresh.status in defects
                or memo.status in defects and fresh.status == "verified")


def _agree(reused: Any, fresh: Any) -> bool:
    """The same status, or a reused proof where the fresh run from this launch alone ran out of budget."""
    if reused.status == fresh.status:
        return True
    return reused.status == "verified" and reused.stats.get("cache") == "hit" and fresh.status == "unknown"
