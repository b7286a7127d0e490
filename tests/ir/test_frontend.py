"""from_cutile on every kernel family: the ops, views, tokens and Python lines it finds."""
import numpy as np
import pytest

import tilecheck
from tests.conftest import source_line
from tilecheck import ir
from tilecheck.ir import types as T
from tilecheck.ir.summary import memory_ops


def ops(module, name):
    return [op for op in module.walk() if op.name == name]


def line_of(op):
    return op.loc.outermost().line


def test_vector_add_views_and_lines(compiled):
    module = compiled("elementwise", "vector_add").module
    mem = memory_ops(module)
    assert [(m.op.name, m.array) for m in mem] == [
        ("load_view_tko", "a"), ("load_view_tko", "b"), ("store_view_tko", "c")]
    store = mem[2].op
    assert line_of(store) == source_line("elementwise", "ct.store(c, index=(bid,)")
    view = store.operand("view").type
    assert isinstance(view, T.PartitionViewType) and view.tile_shape == (16,)
    bid = ops(module, "get_tile_block_id")[0]
    assert store.operand_group("index") == (bid.results[0],)
    # tokens: every memory op takes the root token
    root = ops(module, "make_token")[0].result
    assert all(m.op.operand("token") is root for m in mem)


def test_gather_scatter_form_uses_pointer_tiles_and_masks(compiled):
    module = compiled("elementwise", "vector_add_gather").module
    loads, stores = ops(module, "load_ptr_tko"), ops(module, "store_ptr_tko")
    assert len(loads) == 2 and len(stores) == 1
    for op in loads + stores:
        mask = op.operand("mask")
        assert mask is not None and mask.type == T.TileType((128,), T.I1)
    ptr = stores[0].operand("destination")
    assert ptr.owner.name == "offset" and ptr.type == T.TileType((128,), T.PointerType(T.ScalarType("f32")))
    assert line_of(stores[0]) == source_line("elementwise", "ct.scatter(c, idx")


def test_transpose_order_gives_dim_map(compiled):
    plain = compiled("elementwise", "transpose").module
    ordered = compiled("elementwise", "transpose_order").module
    assert ops(plain, "permute")[0].attrs["permutation"] == (1, 0)
    load = ops(ordered, "load_view_tko")[0]
    assert load.operand("view").type.dim_map == (1, 0)
    assert not ops(ordered, "permute")


def test_tiled_view_with_traversal_steps_is_a_strided_view(compiled):
    module = compiled("elementwise", "tiled_view_overlap").module
    view = ops(module, "make_strided_view")[0].result.type
    assert isinstance(view, T.StridedViewType)
    assert view.tile_shape == (128,) and view.traversal_strides == (64,)


def test_if_on_block_id(compiled):
    module = compiled("elementwise", "branch_on_bid").module
    branch = ops(module, "if")[0]
    assert len(branch.regions) == 2 and branch.results
    assert branch.regions[0].block.ops[-1].name == "yield"
    assert any(op.name == "mulf" for op in branch.regions[0].block.ops)


def test_matmul_k_loop_and_swizzle(compiled):
    module = compiled("gemm", "matmul").module
    loop = ops(module, "for")[0]
    body = [op.name for op in loop.regions[0].block.ops]
    assert body.count("load_view_tko") == 2 and "mmaf" in body
    assert {"divi", "remi", "mini"} <= {op.name for op in module.walk()}  # the swizzle
    store = ops(module, "store_view_tko")[0]
    assert line_of(store) == source_line("gemm", "ct.store(C, index=(bm, bn)")
    # the swizzle is a helper function: its ops carry a call site in the kernel
    divi = next(op for op in module.walk() if op.name == "divi" and op.loc.caller is not None)
    assert divi.loc.caller.line == source_line("gemm", "bm, bn = _swizzle(")


def test_batch_matmul_three_d_views(compiled):
    module = compiled("gemm", "batch_matmul").module
    views = [op.result.type for op in ops(module, "make_partition_view")]
    assert {v.tile_shape for v in views} == {(1, 32, 16), (1, 16, 32), (1, 32, 32)}
    assert ops(module, "reshape")


def test_softmax_reductions(compiled):
    module = compiled("norms", "softmax").module
    reduces = ops(module, "reduce")
    bodies = {op.regions[0].block.ops[0].name for op in reduces}
    assert bodies == {"maxf", "addf"}
    assert reduces[0].attrs["dim"] == 1
    load = ops(module, "load_view_tko")[0]
    assert load.operand("view").type.padding == "neg_inf"


def test_layer_norm_backward_spin_lock(compiled):
    module = compiled("norms", "layer_norm_bwd").module
    cas = ops(module, "atomic_cas_tko")[0]
    xchg = next(op for op in ops(module, "atomic_rmw_tko") if op.attrs["mode"] == "xchg")
    assert cas.attrs["memory_ordering_semantics"] == "acquire"
    assert xchg.attrs["memory_ordering_semantics"] == "release"
    spin = ops(module, "loop")[0]
    assert cas in list(spin.walk())
    assert any(op.name == "break" for op in spin.walk())
    # the guarded load of DW waits for the spin loop's token
    dw_load = next(m.op for m in memory_ops(module) if m.array == "DW" and m.op.name == "load_view_tko")
    token = dw_load.operand("token")
    assert token.owner.name == "join_tokens" and any(v.owner is spin for v in token.owner.operands)
    assert line_of(cas) == source_line("norms", "while ct.atomic_cas(Locks")


def test_layer_norm_forward_and_rms_norm(compiled):
    fwd = compiled("norms", "layer_norm_fwd").module
    assert len(ops(fwd, "for")) == 3
    assert [m.array for m in memory_ops(fwd) if m.op.name == "store_view_tko"] == ["Mean", "Rstd", "Y"]
    rms = compiled("norms", "rms_norm").module
    assert ops(rms, "rsqrt")


def test_rope_and_flash_attention(compiled):
    rope = compiled("attention", "rope").module
    assert [m.array for m in memory_ops(rope)] == ["X", "X", "COS", "SIN", "Y", "Y"]
    fa = compiled("attention", "flash_attention_fwd").module
    loop = ops(fa, "for")[0]
    assert [op.name for op in loop.walk()].count("mmaf") == 2
    k_view = next(m.op for m in memory_ops(fa) if m.array == "K").operand("view").type
    assert k_view.dim_map == (0, 1, 3, 2)


def test_moe_scatter_index_is_loaded_from_memory(compiled):
    module = compiled("atomics", "moe_scatter").module
    store = ops(module, "store_ptr_tko")[0]
    # walk the pointer computation back to the gathered destination rows
    seen, todo = set(), [store.operand("destination")]
    while todo:
        value = todo.pop()
        if isinstance(value.owner, ir.Op) and value.owner not in seen:
            seen.add(value.owner)
            todo.extend(value.owner.operands)
    assert any(op.name == "load_ptr_tko" for op in seen)


def test_float_and_int_atomic_add(compiled):
    f = ops(compiled("atomics", "sum_atomic_float").module, "atomic_rmw_tko")[0]
    i = ops(compiled("atomics", "histogram_atomic_int").module, "atomic_rmw_tko")[0]
    assert f.attrs["mode"] == "addf" and i.attrs["mode"] == "add"
    assert i.operand("mask") is not None


def test_head_permutation_store_index(compiled):
    module = compiled("attention", "head_permute_swapped").module
    store = ops(module, "store_view_tko")[0]
    loop = ops(module, "for")[0]
    index = store.operand_group("index")
    assert len(index) == 4 and index[1] is loop.regions[0].block.args[0]  # dst[b, m, h2, 0]
    assert module.params[1].name == "dst" and module.params[1].shape == (1, 8, 128, 64)


def test_bad_arguments_name_the_argument():
    from corpus.kernels.elementwise import vector_add

    x = np.ones(64, np.float32)
    with pytest.raises(ir.FrontendError, match="argument 'TILE' is a ct.Constant"):
        ir.from_cutile(vector_add, (x, x, x, None))
    with pytest.raises(ir.FrontendError, match="argument 'a': dtype complex64"):
        ir.from_cutile(vector_add, (x.astype(np.complex64), x, x, 16))
    with pytest.raises(ir.FrontendError, match=r"takes 4 arguments \(a, b, c, TILE\), 2"):
        ir.from_cutile(vector_add, (x, x))
    with pytest.raises(ir.FrontendError, match=r"rejected kernel 'vector_add'.*a: float32\[8, 8\]"):
        ir.from_cutile(vector_add, (np.ones((8, 8), np.float32), x, x, 16))
    with pytest.raises(ir.FrontendError, match="expected a @ct.kernel"):
        ir.from_cutile(lambda a: a, (x,))
    with pytest.raises(tilecheck.TilecheckError):  # every error derives from TilecheckError
        ir.from_cutile(vector_add, "not a tuple")


def test_strided_numpy_arrays_report_element_strides():
    from corpus.kernels.elementwise import copy_2d

    src = np.ones((256, 128), np.float32).T  # transposed: strides (1, 128) elements
    module = ir.from_cutile(copy_2d, (src, np.zeros((128, 256), np.float32), 32, 32))
    assert module.params[0].strides == (1, 128)


def test_a_kernel_without_a_source_file_is_a_clear_error():
    namespace = {}
    exec("import cuda.tile as ct\n"  # noqa: S102 - a kernel with no source file, on purpose
         "@ct.kernel\n"
         "def no_source(x):\n"
         "    ct.store(x, index=(0,), tile=ct.load(x, index=(0,), shape=(4,)))\n", namespace)
    with pytest.raises(tilecheck.TilecheckError, match=r"could not compile kernel 'no_source' .*define kernels in a file"):
        ir.from_cutile(namespace["no_source"], (np.zeros(4, np.float32),))
