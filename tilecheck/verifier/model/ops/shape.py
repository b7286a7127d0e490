"""Shape ops (broadcast, reshape, permute, cat) as lane renamings; grid queries; tokens."""
from __future__ import annotations

from tilecheck.ir import Op
from tilecheck.ir import types as T
from tilecheck.verifier.model.bounds import NON_NEGATIVE
from tilecheck.verifier.model.footprints import BLOCK_IDS
from tilecheck.verifier.model.registry import symbolic
from tilecheck.verifier.model.values import (
    GRID,
    LANES,
    BoolTile,
    IntTile,
    Opaque,
    Pointer,
    Pointers,
    StrideForm,
    SymValue,
)
from tilecheck.verifier.solver import smt


def shape_of(v) -> tuple[int, ...]:
    return v.type.shape if isinstance(v.type, T.TileType) else ()


def relane(x: SymValue, pairs: list[tuple[smt.IntExpr, smt.IntExpr]], shape: tuple[int, ...]) -> SymValue:
    """Rename lane variables in a tile value (simultaneous substitution)."""

    def sub(term):
        return smt.substitute(term, *pairs) if pairs else term

    if isinstance(x, IntTile):
        form = None
        if x.form is not None:
            form = StrideForm(tuple((k, sub(c)) for k, c in x.form.coefs), sub(x.form.rest))
        return IntTile(sub(x.term), shape, form, x.bounds)
    if isinstance(x, BoolTile):
        return BoolTile(sub(x.term), shape)
    if isinstance(x, Pointer):
        coords = tuple(sub(c) for c in x.coords) if x.coords is not None else None
        return Pointer(x.array, coords, sub(x.linear), shape)
    if isinstance(x, Pointers):
        return Pointers(tuple((sub(c), relane(p, pairs, shape)) for c, p in x.choices), shape)
    return Opaque(shape)


@symbolic("broadcast")
def broadcast(state, op: Op, x: SymValue):
    src, dst = shape_of(op.operands[0]), shape_of(op.results[0])
    if not src:  # a 0-d tile broadcast to any shape: no lanes to rename
        return (relane(x, [], dst),)
    if len(src) != len(dst):
        return (state.havoc(op.results[0].type),)
    pairs = [(LANES[d], smt.IntVal(0)) for d in range(len(src)) if src[d] == 1 and dst[d] != 1]
    return (relane(x, pairs, dst),)


def _strides(shape: tuple[int, ...]) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return out[::-1]


@symbolic("reshape")
def reshape(state, op: Op, x: SymValue):
    return (reshaped(x, shape_of(op.operands[0]), shape_of(op.results[0])),)


def reshaped(x: SymValue, src: tuple[int, ...], dst: tuple[int, ...]) -> SymValue:
    """``x`` with shape ``src`` read as shape ``dst`` (same element count, row-major)."""
    src_big = [d for d in range(len(src)) if src[d] != 1]
    dst_big = [d for d in range(len(dst)) if dst[d] != 1]
    if [src[d] for d in src_big] == [dst[d] for d in dst_big]:
        # only unit dimensions change: lanes map one to one
        pairs = [(LANES[s], LANES[d]) for s, d in zip(src_big, dst_big) if s != d]
        pairs += [(LANES[s], smt.IntVal(0)) for s in range(len(src)) if src[s] == 1]
        return relane(x, pairs, dst)
    linear = sum((LANES[d] * st for d, st in zip(range(len(dst)), _strides(dst))), smt.IntVal(0))
    pairs = [(LANES[s], (linear / st) % src[s]) for s, st in zip(range(len(src)), _strides(src))]
    return relane(x, pairs, dst)


@symbolic("permute")
def permute(state, op: Op, x: SymValue):
    perm = op.attrs["permutation"]
    pairs = [(LANES[p], LANES[d]) for d, p in enumerate(perm) if p != d]
    return (relane(x, pairs, shape_of(op.results[0])),)


def pointee_bits(t) -> int:
    """The bit width of the elements a pointer tile points at (-1: not a pointer to a scalar)."""
    element = t.element if isinstance(t, T.TileType) else t
    pointee = element.pointee if isinstance(element, T.PointerType) else None
    return pointee.bitwidth if isinstance(pointee, T.ScalarType) else -1


@symbolic("cat")
def cat(state, op: Op, lhs: SymValue, rhs: SymValue):
    """Two tiles laid end to end along ``dim``: the lanes below the first's extent read it, the
    others the second at the lane less that extent (an integer or i1 tile; others stay unknown)."""
    dim, shape = op.attrs["dim"], shape_of(op.results[0])
    n = shape_of(op.operands[0])[dim]
    if type(lhs) is not type(rhs) or not isinstance(lhs, (IntTile, BoolTile)):
        return (state.havoc(op.results[0].type),)
    second = relane(rhs, [(LANES[dim], LANES[dim] - n)], shape)
    term = smt.If(LANES[dim] < n, lhs.term, second.term)
    return (IntTile(term, shape) if isinstance(lhs, IntTile) else BoolTile(term, shape),)


@symbolic("ptr_to_ptr")
def ptr_to_ptr(state, op: Op, x: SymValue):
    # same element width: the same elements; another width would reinterpret the coordinates
    if pointee_bits(op.operands[0].type) != pointee_bits(op.result.type) or not isinstance(x, (Pointer, Pointers)):
        state.unsupported_op(op, "pointer cast to an element type of another width")
        return (state.havoc(op.result.type),)
    return (x,)


@symbolic("get_tile_block_id")
def block_id(state, op: Op):
    return tuple(IntTile(b, bounds=NON_NEGATIVE) for b in BLOCK_IDS)


@symbolic("get_num_tile_blocks")
def num_blocks(state, op: Op):
    return tuple(IntTile(g, bounds=(1, None)) for g in GRID)


@symbolic("make_token", "join_tokens", "memory_fence_alias_tko", "gdc_launch_dependents_tko", "gdc_wait_tko",
          "print_tko")
def token(state, op: Op, *operands: SymValue):
    return tuple(Opaque() for _ in op.results)


@symbolic("assert")
def assert_(state, op: Op, condition: SymValue):
    return ()
