"""Views and pointers: tensor/partition/strided views, index-space shapes, pointer offsets."""
from __future__ import annotations

from tilecheck.ir import Op
from tilecheck.ir import types as T
from tilecheck.verifier.model.bounds import NON_NEGATIVE
from tilecheck.verifier.model.ops.arith import ceildiv
from tilecheck.verifier.model.ops.shape import pointee_bits
from tilecheck.verifier.model.registry import symbolic
from tilecheck.verifier.model.values import IntTile, Pointer, Pointers, SymValue, TensorView, TileView
from tilecheck.verifier.solver import smt


@symbolic("make_tensor_view")
def make_tensor_view(state, op: Op, base: SymValue, *dynamic: SymValue):
    t = op.result.type
    if not isinstance(base, Pointer) or not isinstance(t, T.TensorViewType):
        source = op.operands[0].owner
        if isinstance(source, Op) and source.name == "int_to_ptr":  # cuTile's lowering of list[i]
            state.unsupported_op(op, "tensor view of an array of a list argument (its pointer is read from the "
                                     "list's table, which the static check does not follow; a launch is "
                                     "decided by tilecheck.detect)")
        else:
            state.unsupported_op(op, "tensor view of a value that is not an array argument")
        return (state.havoc(t),)
    values = iter(dynamic)

    def take(static):
        if static is not None:
            return smt.IntVal(static)
        v = next(values)
        return v.term if isinstance(v, IntTile) else smt.fresh_int("dim")

    dims = tuple(take(s) for s in t.shape)
    strides = tuple(take(s) for s in t.strides)
    info = state.arrays.get(base.array)
    rank = len(dims)
    if base.coords is None or info is None or len(base.coords) != rank or info.rank != rank:
        state.unsupported_op(op, "tensor view at an offset that is not a whole number of elements per dimension")
        return (state.havoc(t),)
    if any(not smt.is_true(smt.simplify(a == b)) for a, b in zip(strides, info.strides)):
        state.unsupported_op(op, "tensor view with strides other than its array's (a reinterpretation)")
        return (state.havoc(t),)
    return (TensorView(base.array, dims, strides, tuple(base.coords)),)


@symbolic("make_partition_view", "make_strided_view")
def make_tile_view(state, op: Op, tensor: SymValue):
    t = op.result.type
    if not isinstance(tensor, TensorView):
        state.unsupported_op(op, f"{op.name} of an unknown tensor view")
        return (state.havoc(t),)
    if isinstance(t, T.PartitionViewType):
        return (TileView(tensor, t.tile_shape, t.tile_shape, t.dim_map),)
    if isinstance(t, T.StridedViewType):
        return (TileView(tensor, t.tile_shape, t.traversal_strides, t.dim_map, strided=True),)
    state.unsupported_op(op, f"view type {t}")
    return (state.havoc(t),)


@symbolic("get_index_space_shape")
def index_space_shape(state, op: Op, view: SymValue):
    if not isinstance(view, TileView) or view.strided:
        # strided views: number of positions left unconstrained (>= 0), an over-approximation
        out = []
        for r in op.results:
            h = state.havoc(r.type, "tiles")
            if isinstance(h, IntTile):
                state.fact(h.term >= 0)
            out.append(h)
        return tuple(out)
    # a view's dimensions are never negative, nor then its number of tiles
    return tuple(IntTile(ceildiv(view.tensor.dims[view.dim_map[k]], smt.IntVal(view.tile[k])), bounds=NON_NEGATIVE)
                 for k in range(len(op.results)))


@symbolic("get_tensor_shape")
def tensor_shape(state, op: Op, view: SymValue):
    if not isinstance(view, TensorView):
        return tuple(state.havoc(r.type) for r in op.results)
    return tuple(IntTile(d, bounds=NON_NEGATIVE) for d in view.dims)


@symbolic("bitcast")
def bitcast(state, op: Op, x: SymValue):
    """A pointer cast to a pointer of another element type of the same size points at the same
    elements (Triton reads and writes a bool tensor through ``ptr<i8>``); any other bitcast's result
    is an unknown of its type (an address never depends on a float's bits in the kernels we check)."""
    sizes = [8 if bits == 1 else bits for bits in (pointee_bits(v.type) for v in (op.operands[0], op.result))]
    if isinstance(x, (Pointer, Pointers)) and sizes[0] == sizes[1] > 0:  # (an i1 element takes a byte)
        return (x,)
    return (state.havoc(op.result.type, "bitcast"),)


@symbolic("offset")
def offset(state, op: Op, ptr: SymValue, off: SymValue):
    shape = op.result.type.shape if isinstance(op.result.type, T.TileType) else ()
    if isinstance(ptr, Pointers):  # each array's pointers moved alike
        return (ptr.map(lambda p: offset(state, op, p, off)[0]),)
    if not isinstance(ptr, Pointer):
        state.unsupported_op(op, "pointer arithmetic on a pointer of unknown origin")
        return (state.havoc(op.result.type),)
    if not isinstance(off, IntTile):
        return (Pointer(ptr.array, None, smt.fresh_int("offset"), shape),)
    if smt.const_value(off.term) == 0:
        return (Pointer(ptr.array, ptr.coords, ptr.linear, shape),)
    coords = None
    form = off.form
    if ptr.coords is not None and form is not None and smt.const_value(form.rest) == 0:
        terms = form.as_dict()
        rank = len(ptr.coords)
        if all(a == ptr.array and 0 <= d < rank for a, d in terms):
            coords = tuple(ptr.coords[d] + terms[(ptr.array, d)] if (ptr.array, d) in terms else ptr.coords[d]
                           for d in range(rank))
    return (Pointer(ptr.array, coords, ptr.linear + off.term, shape),)
