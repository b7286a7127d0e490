"""The oracle grammar's Triton twin (issue 24): generated ``@triton.jit`` kernels, so ``verify`` and
``detect`` are checked against each other through the Triton frontend as ``tests/oracle_kernels.py``
checks them through cuTile's.

A kernel moves values between a float input ``x``, a float output ``y`` and an int counter array
``c`` (flat 1-D tensors, as Triton sees memory): each statement loads a tile at one index expression
and stores, adds atomically, or updates in place at another, under an optional mask, a branch on the
program id, or a loop. The index expressions range from disjoint per program (``pid * B + ar``)
to overlapping ones (``pid // 2 * B + ar``, a shift, a clamp, an ignored grid axis), so about half
the launches race. Modules are loaded and checked with ``tests.oracle_relation.load`` / ``check``.

Memory, not views (issue 52): the tensors may be views shorter than their allocation (padded rows:
an access past the view's end lands in the allocation's padding, as on a GPU), ``x`` and ``y``
views of one buffer that overlap (a store through ``y`` is a write to what ``x`` reads), or ``x``
followed by ``y`` in one buffer (a read past ``x``'s end reads ``y``).
"""
from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.oracle_relation import OracleCase

_HEADER = '''import numpy as np
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, y_ptr, c_ptr, n, B: tl.constexpr):
    pid = tl.program_id(0)
    pid1 = tl.program_id(1)
    ar = tl.arange(0, B)
'''


def _index(draw: Any, grid: tuple[int, int], tile: int, loop: str | None) -> tuple[str, str]:
    """An element index tile over the program's lanes ``ar``, and the feature it exercises."""
    g0, g1 = grid
    program = "(pid * %d + pid1)" % g1 if g1 > 1 and draw(st.booleans()) else "pid"
    forms = [
        (f"{program} * B + ar", "disjoint"),
        (f"({program} // 2) * B + ar", "halved"),
        (f"{program} * B + ar + {draw(st.sampled_from([1, tile // 2, tile]))}", "shifted"),
        (f"ar * {g0 * g1} + {program}", "strided"),
        (f"(({program} + 1) % {g0 * g1}) * B + ar", "rotated"),
        (f"{program} * {max(tile // 2, 1)} + ar", "overlapping"),
        (f"tl.minimum({program} * B + ar, n - 1)", "clamped"),
    ]
    if loop is not None:
        forms += [(f"({program} * 2 + {loop}) * B + ar", "loop-disjoint"),
                  (f"({program} + {loop}) * B + ar", "loop-overlap")]
    return draw(st.sampled_from(forms))


def _mask(draw: Any, index: str) -> tuple[str, str]:
    choice = draw(st.sampled_from(["", "", "n", "half"]))
    if not choice:
        return "", "unmasked"
    bound = "n" if choice == "n" else "n // 2"
    return f", mask=({index}) < {bound}", f"mask-{choice}"


@st.composite
def triton_cases(draw: Any, budget: int = 3) -> OracleCase:
    g0 = draw(st.sampled_from([1, 2, 3, 4, 6]))
    g1 = draw(st.sampled_from([1, 1, 2]))
    tile = draw(st.sampled_from([4, 8, 16]))
    size = (g0 * g1 * 2 + 2) * tile + draw(st.sampled_from([0, 0, 3]))
    n = draw(st.sampled_from([size, size, size // 2, g0 * g1 * tile]))
    features: set[str] = set()
    body: list[str] = []
    for s in range(draw(st.integers(1, budget))):
        kind = draw(st.sampled_from(["copy", "copy", "atomic", "inplace", "branch", "loop", "count"]))
        loop = "i" if kind == "loop" else None
        src, f1 = _index(draw, (g0, g1), tile, loop)
        dst, f2 = _index(draw, (g0, g1), tile, loop)
        features |= {kind, f1, f2}
        load_mask, f3 = _mask(draw, src)
        store_mask, f4 = _mask(draw, dst)
        features |= {f3, f4}
        load = f"tl.load(x_ptr + ({src}){load_mask}{', other=0.0' if load_mask else ''})"
        if kind == "copy":
            body += [f"    v{s} = {load}", f"    tl.store(y_ptr + ({dst}), v{s} + {s}.0{store_mask})"]
        elif kind == "atomic":
            body += [f"    tl.atomic_add(y_ptr + ({dst}), {load}{store_mask})"]
        elif kind == "inplace":
            body += [f"    v{s} = {load}", f"    tl.store(x_ptr + ({dst}), v{s} * 2.0{store_mask})"]
        elif kind == "branch":
            cond = draw(st.sampled_from(["pid % 2 == 0", "pid < 2", "pid1 == 0", "pid == 0"]))
            body += [f"    if {cond}:", f"        tl.store(y_ptr + ({dst}), {load}{store_mask})"]
            features.add(f"branch {cond}")
        elif kind == "loop":
            body += ["    for i in range(2):", f"        tl.store(y_ptr + ({dst}), {load}{store_mask})"]
        else:  # a counter per program, or one for all: integer atomics commute
            slot = draw(st.sampled_from(["pid", "0", "pid // 2"]))
            body += [f"    tl.atomic_add(c_ptr + {slot}, 1)"]
            features.add(f"count {slot}")
    layout = draw(st.sampled_from(["separate", "separate", "padded", "shared", "adjacent"]))
    features.add(f"layout-{layout}")
    if layout == "separate":
        tensors = f"x_ptr=rng.standard_normal({size}).astype(np.float32), y_ptr=np.zeros({size}, np.float32)"
    elif layout == "padded":  # views of the first rows of longer allocations: the rest is padding
        view = draw(st.sampled_from([g0 * g1 * tile, size // 2]))
        tensors = (f"x_ptr=rng.standard_normal({size}).astype(np.float32)[:{view}], "
                   f"y_ptr=np.zeros({size}, np.float32)[:{view}]")
    elif layout == "shared":  # x and y are views of one buffer, y starting ``shift`` elements into it
        shift = draw(st.sampled_from([tile, tile // 2, size // 2]))
        tensors = (f"x_ptr=buffer[:{size}], y_ptr=buffer[{shift}:{shift + size}]")
    else:  # x then y in one buffer, apart (x read past its end reads y's first elements)
        view = draw(st.sampled_from([g0 * g1 * tile, size // 2]))
        tensors = f"x_ptr=buffer[:{view}], y_ptr=buffer[{view}:{view + size}]"
    setup = f"    buffer = rng.standard_normal({size * 2}).astype(np.float32)\n" if layout in ("shared", "adjacent") else ""
    source = _HEADER + "\n".join(body) + f'''


def make_args():
    rng = np.random.default_rng(0)
{setup}    return dict({tensors},
                c_ptr=np.zeros({max(g0 * g1, 1)}, np.int32), n={n}, B={tile})


GRID = ({g0}, {g1}, 1)
ASSUME = ()
'''
    return OracleCase(source, frozenset(features))
