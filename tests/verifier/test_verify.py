"""tilecheck.verify on the corpus: races with witnesses, race-free twins, levels, assumptions."""
import json
import os
import subprocess
import sys
from pathlib import Path

import cuda.tile as ct
import numpy as np
import pytest

import tilecheck
from tilecheck.verifier.contracts.levels import EVERY_SHAPE_LEVEL
from corpus.kernels import atomics, attention, elementwise, gemm, inplace, norms
from tests.conftest import ROOT, source_line
from tilecheck import ir
from tilecheck.verifier.solver import smt


def check(kernel, **kw):
    """verify at the kernel's first case, for every index content at its shapes (data=False: the
    corpus labels are about the kernel, not about one launch's data)."""
    case = tilecheck.cases_of(kernel)[0]
    kw.setdefault("data", False)
    return tilecheck.verify(kernel, case.make_args(), case.grid, **kw)


def kinds(report):
    return sorted(f.kind for f in report.findings)


# ---- the paper's head permutation ---------------------------------------------------------
SHAPES = [(1, 8, 128, 64, 32, 64), (2, 16, 256, 128, 64, 128)]


@pytest.mark.parametrize("shape", SHAPES, ids=["small", "large"])
def test_swapped_destination_index_races_between_blocks_differing_in_h1(shape):
    B, H = shape[0], shape[1]
    args = attention._perm_args(*shape)
    report = tilecheck.verify(attention.head_permute_swapped, args, (B * H, H, 1))
    assert report.status == "race" and kinds(report) == ["write-write"]
    w = report.findings[0].witness
    (x0, y0, _), (x1, y1, _) = w.first.block, w.second.block
    assert x0 // H == x1 // H and y0 == y1 and x0 % H != x1 % H  # same b and h2, different h1
    assert report.findings[0].loc.line == source_line("attention", "ct.store(dst, index=(b, m, h2, 0)")
    assert w.grid == (B * H, H, 1) and w.shapes["dst"] == (B, H, shape[2], shape[3])


@pytest.mark.parametrize("shape", SHAPES, ids=["small", "large"])
def test_the_store_the_paper_calls_correct_also_races_with_its_grid(shape):
    B, H = shape[0], shape[1]
    report = tilecheck.verify(attention.head_permute_paper_fix, attention._perm_args(*shape), (B * H, H, 1))
    assert report.status == "race" and kinds(report) == ["write-write"]
    (x0, y0, _), (x1, y1, _) = (s.block for s in (report.findings[0].witness.first,
                                                  report.findings[0].witness.second))
    assert y0 == y1 and x0 // H == x1 // H and x0 != x1


@pytest.mark.parametrize("shape", SHAPES, ids=["small", "large"])
def test_bijective_head_permutation_twin_is_verified(shape):
    B, H = shape[0], shape[1]
    report = tilecheck.verify(attention.head_permute_safe, attention._perm_args(*shape), (B * H, 1, 1))
    assert report.status == "verified", report
    assert report.level in (EVERY_SHAPE_LEVEL, "the given shapes and grid")
    if report.level == EVERY_SHAPE_LEVEL:  # its contract keeps the unread axis at 1
        assert "grid[1] == 1" in str(report.launch_contract)
    # with a 2-D grid the same kernel races (blocks that differ only in bid(1))
    racy = tilecheck.verify(attention.head_permute_safe, attention._perm_args(*shape), (B * H, 2, 1))
    assert racy.status == "race"


# ---- each finding kind: a racy kernel and its fixed twin -----------------------------------
@pytest.mark.parametrize("racy, safe, kind", [
    (attention.head_permute_swapped, attention.head_permute_safe, "write-write"),
    (inplace.inplace_halo, inplace.halo_out_of_place, "read-write"),
    (inplace.gather_unchecked, inplace.gather_checked, "out-of-bounds"),
    (norms.partial_sums_lock_too_early, norms.layer_norm_bwd, "read-write"),
    (atomics.moe_scatter, None, "write-write"),
])
def test_racy_kernel_and_fixed_twin(racy, safe, kind):
    report = check(racy)
    # an out-of-bounds access alone is its own status, not a race (it fails CI the same way)
    assert report.status == ("out-of-bounds" if kind == "out-of-bounds" else "race") and kind in kinds(report), report
    assert report.failed
    for f in report.findings:
        assert f.loc.is_known() and f.witness is not None
    if safe is not None:
        fixed = check(safe)
        assert fixed.status == "verified", fixed


def test_in_place_update_of_own_tile_is_verified():
    assert check(inplace.inplace_scale).status == "verified"


def test_spin_lock_orders_the_critical_section():
    report = check(norms.layer_norm_bwd)
    assert report.status == "verified"
    assert any("spin lock on 'Locks'" in a for a in report.assumptions)
    broken = check(norms.partial_sums_lock_too_early)
    ww = next(f for f in broken.findings if f.kind == "write-write")
    assert ww.loc.line == source_line("norms", "ct.store(DW, index=(group, j), tile=acc)")


def test_float_atomics_warn_but_int_atomics_do_not():
    report = check(atomics.sum_atomic_float)
    assert report.status == "verified" and kinds(report) == ["order-dependent-atomic"]
    assert "warning: order-dependent-atomic" in str(report)
    assert kinds(check(atomics.histogram_atomic_int)) == []


def test_distinct_precondition_makes_moe_scatter_safe():
    racy = check(atomics.moe_scatter)
    assert {"write-write", "unordered-in-block"} <= set(kinds(racy))
    safe = check(atomics.moe_scatter, assume=[tilecheck.distinct("dest_rows")])
    assert safe.status == "verified", safe
    assert any("'dest_rows' holds no duplicate values" in a for a in safe.assumptions)


def test_bounded_precondition_is_listed_and_used():
    case = tilecheck.cases_of(atomics.moe_scatter)[0]
    x, _, out, tm, td = case.make_args()
    zeros = np.zeros(64, np.int32)  # meets bounded(0, 0)
    report = tilecheck.verify(atomics.moe_scatter, (x, zeros, out, tm, td), case.grid,
                              assume=[tilecheck.bounded("dest_rows", 0, 0)])
    assert report.status == "race"  # every row goes to row 0: certainly racy
    assert any("lie in [0, 0]" in a for a in report.assumptions)


def test_a_precondition_the_given_arguments_break_is_a_finding_not_an_assumption():
    report = check(atomics.moe_scatter, assume=[tilecheck.bounded("dest_rows", 0, 0)])  # dest_rows is 0..63
    (broken,) = [f for f in report.findings if f.kind == "assumption-violated"]
    assert "'dest_rows'" in broken.message and "value 1 at flat position 1" in broken.message
    assert not any("lie in [0, 0]" in a for a in report.assumptions)
    assert report.status == "race"  # verified without it: duplicates in dest_rows race


def test_aliasing_arguments_and_stride_zero_outputs():
    x = np.ones(1024, np.float32)
    report = tilecheck.verify(elementwise.vector_add, (x, np.ones_like(x), x, 16), (64, 1, 1))
    assert report.status == "race" and "aliasing" in kinds(report)
    zero = np.broadcast_to(np.zeros(1, np.float32), (1024,))
    report = tilecheck.verify(elementwise.vector_add, (x, x.copy(), zero, 16), (64, 1, 1))
    f = next(f for f in report.findings if f.kind == "aliasing")
    assert "share one address" in f.message and f.witness.element is not None


def test_token_order_pass_disabled_gives_unordered_accesses():
    script = ("import tilecheck; from corpus.kernels import inplace as m; k = m.store_then_reload; "
              "c = tilecheck.cases_of(k)[0]; r = tilecheck.verify(k, c.make_args(), c.grid); "
              "print(r.status, sorted({f.kind for f in r.findings}))")
    env = dict(os.environ, CUDA_TILE_TESTING_DISABLE_TOKEN_ORDER="1", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT,
                         check=False)
    assert out.stdout.strip() == "race ['unordered-in-block']", out.stderr[-2000:]
    assert check(inplace.store_then_reload).status == "verified"


# ---- hand-written Tile IR: what Python cannot express --------------------------------------
TILEIR = ROOT / "corpus" / "tileir"


def test_tileir_store_reload_without_token_is_unordered():
    racy = tilecheck.verify(ir.parse((TILEIR / "reload_no_token.tileir").read_text()), grid=(4, 1, 1))
    assert racy.status == "race" and kinds(racy) == ["unordered-in-block"]
    safe = tilecheck.verify(ir.parse((TILEIR / "reload_with_token.tileir").read_text()), grid=(4, 1, 1))
    assert safe.status == "verified", safe


def test_loop_carried_token_orders_iterations():
    text = (TILEIR / "accumulate_loop.tileir").read_text()
    assert tilecheck.verify(ir.parse(text), grid=(4, 1, 1)).status == "verified"
    broken = text.replace("token = %acc_tok", "token = %root")
    report = tilecheck.verify(ir.parse(broken), grid=(4, 1, 1))
    assert report.status == "race" and set(kinds(report)) == {"unordered-in-block"}
    loops = [f.witness.first.loops for f in report.findings]
    assert all(len(set(l.values()) | set(f.witness.second.loops.values())) == 2
               for l, f in zip(loops, report.findings))  # two different iterations


# ---- levels, unknown, reports --------------------------------------------------------------
def test_levels():
    # a launch: its contract over the shapes first (tests/verifier/test_shape_contract.py)
    assert check(gemm.batch_matmul).level == EVERY_SHAPE_LEVEL
    every = check(elementwise.vector_add, contract=True)
    assert every.level == EVERY_SHAPE_LEVEL and "grid[1] == 1 and grid[2] == 1" in str(every.launch_contract)
    # without it, the levels of one launch
    assert check(gemm.batch_matmul, every_shape=False).level == "all grids and shapes"
    report = check(elementwise.vector_add, contract=True, every_shape=False)
    assert report.level == "the given shapes and grid"
    # the given shapes race for other grids: the contract says for which (issue 13), not a vague note
    assert not any("more general level" in n for n in report.notes)
    assert report.contract is not None and report.contract.reads == (True, False, False)
    assert report.contract.extents[1:] == (1, 1)
    # a module with symbolic shapes and any grid
    module = ir.from_cutile(gemm.batch_matmul, tilecheck.cases_of(gemm.batch_matmul)[0].make_args())
    assert tilecheck.verify(module).level == "all grids and shapes"


def test_unknown_op_gives_unknown_not_verified():
    text = (TILEIR / "reload_with_token.tileir").read_text().replace(
        "  return", "  %z = mystery_op %b0 : tile<i32>\n  return")
    report = tilecheck.verify(ir.parse(text), grid=(4, 1, 1))
    assert report.status == "unknown" and any("mystery_op" in r for r in report.reasons)


def test_solver_timeout_gives_unknown():
    report = check(gemm.matmul, timeout_s=0.001)
    assert report.status == "unknown" and any("unknown" in r for r in report.reasons)


def test_a_backstop_that_runs_out_is_unknown_and_says_it_was_time():
    """The wall-clock backstop covers the whole verification; when it runs out the verdict is
    unknown, never verified and never a race, and the reason says it was time (issue 21)."""
    for kernel in (gemm.matmul, attention.head_permute_swapped):
        report = check(kernel, timeout_s=1e-9)
        assert report.status == "unknown", (kernel, report.status)
        assert any("wall-clock backstop" in r for r in report.reasons), report.reasons


def test_a_work_budget_that_runs_out_is_unknown_deterministically():
    """The solver work of a whole verify is bounded (issue 21): past the budget the verdict is
    unknown, never verified, with a reason naming the budget. Z3's rlimit counts work, not time;
    the work one formula takes still varies with what the process solved before
    (docs/semantics/reproducible-verdicts.md: up to a quarter on one TileGym kernel), so a second
    run is compared by its answer."""
    full = check(gemm.matmul)
    assert full.status == "verified" and 0 < full.stats["work"]
    small = check(gemm.matmul, work=max(full.stats["work"] // 4, 1))
    assert small.status == "unknown", small
    assert any("work budget of this verification ran out" in r for r in small.reasons), small.reasons
    assert small.stats["work"] <= full.stats["work"] // 4 + smt.DEFAULT_RLIMIT, (small.stats, full.stats)
    again = check(gemm.matmul)
    assert (again.status, again.level, again.findings) == (full.status, full.level, full.findings)
    assert again.stats["work"] > 0
    with pytest.raises(tilecheck.TilecheckError, match=r"work=.*(must be at least 1|takes an int)"):
        check(gemm.matmul, work=0)


def test_report_reads_like_a_compiler_error_and_serialises():
    report = check(attention.head_permute_swapped)
    text = str(report)
    assert text.startswith("race: head_permute_swapped")
    assert "ct.store(dst, index=(b, m, h2, 0), tile=t)" in text and "witness: block" in text
    data = json.loads(report.to_json())
    assert data["status"] == "race" and data["findings"][0]["kind"] == "write-write"
    assert data["findings"][0]["loc"]["line"] == report.findings[0].loc.line
    assert len(data["assumptions"]) >= 3


def test_bad_arguments():
    with pytest.raises(tilecheck.TilecheckError, match="pass the launch arguments"):
        tilecheck.verify(elementwise.vector_add)
    with pytest.raises(tilecheck.TilecheckError, match="grid must"):
        tilecheck.verify(elementwise.vector_add, tilecheck.cases_of(elementwise.vector_add)[0].make_args(),
                         grid=(0, 1))
    with pytest.raises(tilecheck.TilecheckError, match="not an array argument"):
        check(atomics.moe_scatter, assume=[tilecheck.distinct("nope")])


def test_witness_names_loop_iterations():
    report = check(attention.head_permute_swapped)
    loops = report.findings[0].witness.first.loops
    assert list(loops) == [f"for@line{source_line('attention', 'for m in range(ct.num_tiles(src')}"]


assert Path(TILEIR).name == "tileir"


def test_unchained_loop_token_does_not_order_earlier_iterations():
    """A loop result orders the ops of every iteration only through a carried chain: here each
    iteration's store takes the root token, so the reload after the loop waits for the last store
    only, and the earlier iterations' stores stay unordered with it."""
    view = "partition_view<tile=(64), tensor_view<256xf32, strides=[1]>>"
    text = f"""entry @k(%p: tile<ptr<f32>>) {{
  %root = make_token : token
  %tv = make_tensor_view %p, shape = [], strides = [] : -> tensor_view<256xf32, strides=[1]>
  %pv = make_partition_view %tv : {view}
  %b0, %b1, %b2 = get_tile_block_id : tile<i32>
  %c0 = constant <i32: 0> : tile<i32>
  %c1 = constant <i32: 1> : tile<i32>
  %c4 = constant <i32: 4> : tile<i32>
  %v = constant <f32: 1.0> : tile<64xf32>
  %out = for %i in (%c0 to %c4, step %c1) : tile<i32> iter_values(%t = %root) -> (token) {{
    %st = store_view_tko weak %v, %pv[%b0] token = %root : tile<64xf32>, {view}, tile<i32> -> token loc("k.py":5:4)
    continue %st : token
  }}
  %x, %lt = load_view_tko weak %pv[%b0] token = %out : {view}, tile<i32> -> tile<64xf32>, token loc("k.py":7:4)
  return
}}
"""
    report = tilecheck.verify(ir.parse(text), grid=(4, 1, 1))
    pairs = {(f.loc.line, f.related_locs[0].line) for f in report.findings if f.kind == "unordered-in-block"}
    assert (5, 7) in pairs or (7, 5) in pairs, str(report)
    chained = text.replace("token = %root : tile<64xf32>", "token = %t : tile<64xf32>")
    assert tilecheck.verify(ir.parse(chained), grid=(4, 1, 1)).status == "verified"


def test_loop_carried_index_with_a_constant_increment():
    """``idx += 1`` in a loop: the carried index has a closed form, so the per-iteration stores are
    disjoint (a havoc'd index would report a false unordered-in-block race)."""
    view = "partition_view<tile=(32), tensor_view<1024xf32, strides=[1]>>"
    text = f"""entry @k(%p: tile<ptr<f32>>) {{
  %root = make_token : token
  %tv = make_tensor_view %p, shape = [], strides = [] : -> tensor_view<1024xf32, strides=[1]>
  %pv = make_partition_view %tv : {view}
  %b0, %b1, %b2 = get_tile_block_id : tile<i32>
  %c0 = constant <i32: 0> : tile<i32>
  %c1 = constant <i32: 1> : tile<i32>
  %c4 = constant <i32: 4> : tile<i32>
  %start = muli %b0, %c4 : tile<i32>
  %v = constant <f32: 1.0> : tile<32xf32>
  %out = for %i in (%c0 to %c4, step %c1) : tile<i32> iter_values(%idx = %start) -> (tile<i32>) {{
    %st = store_view_tko weak %v, %pv[%idx] token = %root : tile<32xf32>, {view}, tile<i32> -> token
    %next = addi %idx, %STEP : tile<i32>
    continue %next : tile<i32>
  }}
  return
}}
"""
    ok = tilecheck.verify(ir.parse(text.replace("%STEP", "%c1")), grid=(8, 1, 1))
    assert ok.status == "verified", ok
    # an increment of 0 stores the same tile every iteration, with no token between the stores
    same = tilecheck.verify(ir.parse(text.replace("%STEP", "%c0")), grid=(8, 1, 1))
    assert same.status == "race" and {f.kind for f in same.findings} == {"unordered-in-block"}
    # an increment of 2 makes block b's later tiles overlap block b + 1's (4 tiles per block, stride 2)
    wide = tilecheck.verify(ir.parse(text.replace("%STEP", "%c2").replace(
        "%c4 = constant <i32: 4> : tile<i32>", "%c4 = constant <i32: 4> : tile<i32>\n  %c2 = constant <i32: 2> : tile<i32>")),
        grid=(8, 1, 1))
    assert wide.status == "race" and "write-write" in {f.kind for f in wide.findings}


def test_bounded_with_marker_values_and_its_text_form():
    from tilecheck.verifier.contracts.preconditions import parse

    spec = parse("bounded:target:0:63:-100")
    assert spec == tilecheck.bounded("target", 0, 63, also=(-100,))
    assert spec.describe() == "values of 'target' lie in [0, 63] or equal -100 (precondition)"
    assert parse("bounded:idx::7") == tilecheck.bounded("idx", None, 7)
    for bad in ("bounded:target:0:63:x", "bounded:target:0", "between:idx:0:1"):
        with pytest.raises(tilecheck.TilecheckError, match="unknown precondition"):
            parse(bad)
    # the marker value is allowed only where the kernel has returned before indexing with it
    case = tilecheck.cases_of(norms.cross_entropy_ignore_index)[0]
    args = case.make_args()
    assert tilecheck.verify(norms.cross_entropy_ignore_index, args, case.grid, assume=case.assume).status == "verified"
    wider = [tilecheck.bounded("target", 0, 64, also=(-100,))]
    report = tilecheck.verify(norms.cross_entropy_ignore_index, args, case.grid, assume=wider, data=False)
    assert [f.kind for f in report.findings] == ["out-of-bounds"]


@ct.kernel
def _ignore_row_by_sum(logits, target, loss, V: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(target, index=(row,), shape=(1,))
    if ct.sum(t) == -100:  # a 1-element reduction: the element itself
        ct.store(loss, index=(row,), tile=ct.full((1,), 0.0, dtype=ct.float32))
        return
    picked = ct.gather(logits, (row, ct.sum(t)), check_bounds=False)
    ct.store(loss, index=(row,), tile=ct.reshape(picked, (1,)))


def test_a_reduction_over_one_element_is_that_element():
    args = (np.ones((8, 64), np.float32), np.array([3, -100, 63, 0, 17, -100, 5, 9], np.int32),
            np.zeros(8, np.float32), 64)
    contract = [tilecheck.bounded("target", 0, 63, also=(-100,))]
    assert tilecheck.verify(_ignore_row_by_sum, args, (8, 1, 1), assume=contract).status == "verified"
    assert kinds(tilecheck.verify(_ignore_row_by_sum, args, (8, 1, 1), data=False)) == ["out-of-bounds"]
