"""The interpreter against numpy references, one test per kernel family; bad input."""
import numpy as np
import pytest

import tilecheck
from corpus.kernels import atomics as T
from corpus.kernels import attention as A
from corpus.kernels import elementwise as E
from corpus.kernels import gemm as G
from corpus.kernels import norms as N
from tilecheck import ir

rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def run(kernel, args, grid, **kw):
    tilecheck.launch(grid, kernel, args, **kw)
    return args


def test_vector_add_view_and_gather_forms():
    a, b = f32(1024), f32(1024)
    c = np.zeros_like(a)
    run(E.vector_add, (a, b, c, 16), (64,))
    np.testing.assert_array_equal(c, a + b)
    a, b = f32(1000), f32(1000)  # 1000 is not a multiple of 128: masked tail
    c = np.full_like(a, 7.0)
    run(E.vector_add_gather, (a, b, c, 128), (8,))
    np.testing.assert_array_equal(c, a + b)


def test_copy_transpose_and_order():
    s = f32(128, 256)
    d = np.zeros_like(s)
    run(E.copy_2d, (s, d, 32, 32), (4, 8))
    np.testing.assert_array_equal(d, s)
    for kernel in (E.transpose, E.transpose_order):
        d = np.zeros((256, 128), np.float32)
        run(kernel, (s, d, 32, 32), (4, 8))
        np.testing.assert_array_equal(d, s.T)


def test_overlapping_tiled_view_and_branch_on_block_id():
    s = f32(1024)
    d = np.zeros_like(s)
    run(E.tiled_view_overlap, (s, d, 128), (8,))
    np.testing.assert_array_equal(d, np.concatenate([s[b * 64:b * 64 + 128] for b in range(8)]))
    d = np.zeros_like(s)
    run(E.branch_on_bid, (s, d, 64), (16,))
    want = np.concatenate([s[b * 64:(b + 1) * 64] * 2 if b % 2 == 0 else s[b * 64:(b + 1) * 64] + 1
                           for b in range(16)])
    np.testing.assert_array_equal(d, want)


def test_matmul_with_swizzle_and_batch_matmul():
    a, b = f32(128, 64), f32(64, 128)
    c = np.zeros((128, 128), np.float32)
    run(G.matmul, (a, b, c, 32, 32, 16), (16,))
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    a, b = f32(2, 64, 32).astype(np.float16), f32(2, 32, 64).astype(np.float16)
    c = np.zeros((2, 64, 64), np.float16)
    run(G.batch_matmul, (a, b, c, 32, 32, 16), (2, 2, 2))
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)  # f32 accumulation
    np.testing.assert_allclose(c.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_softmax_layer_norm_rms_norm():
    x = f32(64, 128)
    y = np.zeros_like(x)
    run(N.softmax, (x, y, 128), (64,))
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    X, W, B = f32(32, 256), f32(256), f32(256)
    Y, M, R = np.zeros_like(X), np.zeros(32, np.float32), np.zeros(32, np.float32)
    run(N.layer_norm_fwd, (X, W, B, Y, M, R, 1e-5, 64), (32,))
    mu, var = X.mean(1), X.var(1)
    np.testing.assert_allclose(M, mu, atol=1e-5)
    np.testing.assert_allclose(R, 1 / np.sqrt(var + 1e-5), rtol=1e-4)
    np.testing.assert_allclose(Y, (X - mu[:, None]) / np.sqrt(var[:, None] + 1e-5) * W + B, rtol=1e-4, atol=1e-4)
    X, W = f32(32, 128), f32(128)
    Y = np.zeros_like(X)
    run(N.rms_norm, (X, W, Y, 1e-6, 128), (32,))
    np.testing.assert_allclose(Y, X / np.sqrt((X * X).mean(1, keepdims=True) + 1e-6) * W, rtol=1e-4, atol=1e-5)


def test_layer_norm_backward_with_spin_lock():
    DX, DY = np.zeros((32, 128), np.float32), f32(32, 128)
    DW, DB = np.zeros((8, 128), np.float32), np.zeros((8, 128), np.float32)
    X, W = f32(32, 128), f32(128)
    mean, rstd = X.mean(1).astype(np.float32), (1 / np.sqrt(X.var(1) + 1e-5)).astype(np.float32)
    locks = np.zeros(8, np.int32)
    run(N.layer_norm_bwd, (DX, DY, DW, DB, X, W, mean, rstd, locks, 64), (32,))
    xhat = (X - mean[:, None]) * rstd[:, None]
    want_dw, want_db = np.zeros_like(DW), np.zeros_like(DB)
    for r in range(32):
        want_dw[r % 8] += DY[r] * xhat[r]
        want_db[r % 8] += DY[r]
    np.testing.assert_allclose(DW, want_dw, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(DB, want_db, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(locks, 0)  # every lock released


def test_rope_and_flash_attention():
    X, C, S = f32(16, 64), f32(16, 32), f32(16, 32)
    Y = np.zeros_like(X)
    run(A.rope, (X, C, S, Y, 32), (16,))
    x1, x2 = X[:, :32], X[:, 32:]
    np.testing.assert_allclose(Y, np.concatenate([x1 * C - x2 * S, x2 * C + x1 * S], 1), rtol=1e-6, atol=1e-6)
    Q, K, V = (f32(2, 2, 64, 32).astype(np.float16) for _ in range(3))
    O = np.zeros_like(Q)
    run(A.flash_attention_fwd, (Q, K, V, O, 0.125, 32, 2, 32, 32), (2, 4))
    q, k, v = (t.astype(np.float32) for t in (Q, K, V))
    s = q @ k.transpose(0, 1, 3, 2) * 0.125
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(O.astype(np.float32), p / p.sum(-1, keepdims=True) @ v, rtol=2e-2, atol=2e-2)


def test_moe_scatter_and_atomics():
    x, rows = f32(64, 32), rng.permutation(64).astype(np.int32)
    out = np.zeros_like(x)
    run(T.moe_scatter, (x, rows, out, 16, 32), (4,), unsafe=True)  # safe only for distinct rows
    want = np.zeros_like(x)
    want[rows] = x
    np.testing.assert_array_equal(out, want)
    x = f32(1024)
    total = np.zeros(1, np.float32)
    run(T.sum_atomic_float, (x, total, 128), (8,))
    np.testing.assert_allclose(total, x.sum(keepdims=True), rtol=1e-4, atol=1e-4)
    bins = rng.integers(0, 16, 1024).astype(np.int32)
    hist = np.zeros(16, np.int32)
    run(T.histogram_atomic_int, (bins, hist, 128), (8,))
    np.testing.assert_array_equal(hist, np.bincount(bins, minlength=16))


def test_negative_gather_indices_read_padding():
    text = """entry @k(%p: tile<ptr<i32>>, %q: tile<ptr<i32>>) {
  %tok = make_token : token
  %idx = constant <i64: [-2, 0, 3, 9]> : tile<4xi64>
  %zero = constant <i64: 0> : tile<4xi64>
  %n = constant <i64: 4> : tile<4xi64>
  %ge = cmpi greater_than_or_equal %idx, %zero, signed : tile<4xi64> -> tile<4xi1>
  %lt = cmpi less_than %idx, %n, signed : tile<4xi64> -> tile<4xi1>
  %ok = andi %ge, %lt : tile<4xi1>
  %pad = constant <i32: -1> : tile<4xi32>
  %bp = broadcast %p : tile<ptr<i32>> -> tile<4xptr<i32>>
  %ptr = offset %bp, %idx : tile<4xptr<i32>>, tile<4xi64> -> tile<4xptr<i32>>
  %v, %t = load_ptr_tko weak %ptr, %ok, %pad token = %tok : tile<4xptr<i32>>, tile<4xi1>, tile<4xi32> -> tile<4xi32>, token
  %iota = iota : tile<4xi64>
  %bq = broadcast %q : tile<ptr<i32>> -> tile<4xptr<i32>>
  %dst = offset %bq, %iota : tile<4xptr<i32>>, tile<4xi64> -> tile<4xptr<i32>>
  %s = store_ptr_tko weak %dst, %v token = %tok : tile<4xptr<i32>>, tile<4xi32> -> token
  return
}
"""
    src, dst = np.array([10, 11, 12, 13], np.int32), np.zeros(4, np.int32)
    tilecheck.launch((1,), ir.parse(text), (src, dst), unsafe=True)  # no tensor view: bounds unknown
    np.testing.assert_array_equal(dst, [-1, 10, 13, -1])


def test_atomics_return_old_values():
    text = """entry @k(%p: tile<ptr<i32>>, %q: tile<ptr<i32>>) {
  %tok = make_token : token
  %zero = constant <i64: 0> : tile<4xi64>
  %bp = broadcast %p : tile<ptr<i32>> -> tile<4xptr<i32>>
  %ptr = offset %bp, %zero : tile<4xptr<i32>>, tile<4xi64> -> tile<4xptr<i32>>
  %one = constant <i32: 1> : tile<4xi32>
  %old, %t = atomic_rmw_tko relaxed device %ptr, add, %one token = %tok : tile<4xptr<i32>>, tile<4xi32> -> tile<4xi32>, token
  %iota = iota : tile<4xi64>
  %bq = broadcast %q : tile<ptr<i32>> -> tile<4xptr<i32>>
  %dst = offset %bq, %iota : tile<4xptr<i32>>, tile<4xi64> -> tile<4xptr<i32>>
  %s = store_ptr_tko weak %dst, %old token = %t : tile<4xptr<i32>>, tile<4xi32> -> token
  return
}
"""
    counter, olds = np.array([5], np.int32), np.zeros(4, np.int32)
    tilecheck.launch((1,), ir.parse(text), (counter, olds), unsafe=True)
    assert counter[0] == 9 and sorted(olds) == [5, 6, 7, 8]


def test_launch_refuses_races_and_unknowns():
    from corpus.kernels import inplace

    x = np.ones(1024, np.float32)
    with pytest.raises(tilecheck.RaceError) as info:
        tilecheck.launch((8,), inplace.inplace_halo, (x, 128))
    assert info.value.report.status == "race" and "read-write" in str(info.value)
    assert (x == 1).all()  # nothing ran
    tilecheck.launch((8,), inplace.inplace_halo, (x, 128), unsafe=True)
    assert not (x == 1).all()
    a = np.ones(1024, np.float32)
    with pytest.raises(tilecheck.AliasingError, match="overlaps argument"):
        tilecheck.launch((64,), E.vector_add, (a, a.copy(), a, 16))


def test_bad_arguments_and_unsupported_ops():
    text = """entry @k(%p: tile<ptr<f32>>) {
  %b0, %b1, %b2 = get_tile_block_id : tile<i32>
  %z = mystery_op %b0 : tile<i32> loc("k.py":3:4)
  return
}
"""
    with pytest.raises(tilecheck.TilecheckError, match="unsupported op 'mystery_op' at k.py:3"):
        tilecheck.launch((1,), ir.parse(text), (np.zeros(4, np.float32),), unsafe=True)
    module = ir.from_cutile(E.vector_add, (f32(64), f32(64), f32(64), 16))
    with pytest.raises(tilecheck.TilecheckError, match="argument 'b'.*float32 with 1 dimensions, got float64"):
        tilecheck.launch((4,), module, (f32(64), np.zeros(64), f32(64), 16), unsafe=True)
    with pytest.raises(tilecheck.TilecheckError, match="takes 4 arguments"):
        tilecheck.launch((4,), module, (f32(64),), unsafe=True)
    with pytest.raises(tilecheck.TilecheckError, match="grid must"):
        tilecheck.launch((0,), E.vector_add, (f32(64), f32(64), f32(64), 16))
    with pytest.raises(tilecheck.TilecheckError, match="cuda backend"):
        tilecheck.launch((4,), E.vector_add, (f32(64), f32(64), f32(64), 16), backend="cuda")


def test_out_of_bounds_pointer_access_is_an_error_naming_the_line():
    from corpus.kernels import inplace

    x, y = f32(1000), np.zeros(1000, np.float32)
    with pytest.raises(tilecheck.TilecheckError, match=r"out-of-bounds .* at .*inplace.py:\d+.*'x'"):
        tilecheck.launch((8,), inplace.gather_unchecked, (x, y, 128), unsafe=True)


def test_torch_cpu_tensors_are_updated_in_place():
    """torch CPU tensors go through DLPack: results land in the tensor (skips without torch)."""
    torch = pytest.importorskip("torch")
    a, b = torch.rand(1024), torch.rand(1024)
    c = torch.zeros(1024)
    tilecheck.launch((64,), E.vector_add, (a, b, c, 16))
    assert torch.equal(c, a + b)
    report = tilecheck.verify(A.head_permute_swapped, tuple(torch.from_numpy(x) if isinstance(x, np.ndarray) else x
                                                            for x in A._perm_args()), (8, 8, 1))
    assert report.status == "race"


def test_bfloat16_and_fp8_arrays_round_like_the_gpu():
    import ml_dtypes

    rng = np.random.default_rng(0)
    bf = ml_dtypes.bfloat16
    a, b = (rng.standard_normal(1024).astype(np.float32).astype(bf) for _ in range(2))
    c = np.zeros(1024, bf)
    tilecheck.launch((64,), E.vector_add, (a, b, c, 16))
    # f32 arithmetic on the widened values, rounded to nearest even on the store
    assert c.tobytes() == (a.astype(np.float32) + b.astype(np.float32)).astype(bf).tobytes()
    f8 = ml_dtypes.float8_e4m3fn
    x = rng.standard_normal((64, 64)).astype(np.float32).astype(f8)
    y = np.zeros((64, 64), f8)
    tilecheck.launch((4, 4, 1), E.copy_2d, (x, y, 16, 16))
    assert y.tobytes() == x.tobytes()


def test_torch_bfloat16_tensors_run_in_place():
    torch = pytest.importorskip("torch")
    a, b = torch.randn(1024).bfloat16(), torch.randn(1024).bfloat16()
    c = torch.zeros(1024, dtype=torch.bfloat16)
    tilecheck.launch((64,), E.vector_add, (a, b, c, 16))
    assert torch.equal(c, a + b)
