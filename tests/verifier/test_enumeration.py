"""Cross-block queries of a concrete case decided by enumerating tiles (verifier/concrete/enumeration.py):
the numpy evaluation agrees with Z3 term by term, a persistent kernel with a GEMM-style swizzle is
proved without the solver, and its mis-swizzled twin is still a race that replays."""
import cuda.tile as ct
import numpy as np
import z3
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tilecheck
from tests.tiers import examples
from tests.interp.kernels import misswizzled_copy, swizzled_args, swizzled_copy
from tests.verifier.generated import case_values
from tests.verifier.spies import given_case_questions
from tilecheck.verifier.concrete import enumeration, rows
from tilecheck.verifier.obligations import checker as obligations
from tilecheck.verifier.solver import smt

ConstInt = ct.Constant[int]


def test_a_persistent_swizzled_store_is_proved_by_enumeration(monkeypatch):
    asked = given_case_questions(monkeypatch)
    # the given case's enumeration (the contract over the shapes, searched first, is left out)
    report = tilecheck.verify(swizzled_copy, swizzled_args(), (4, 1, 1), every_shape=False)
    assert report.status == "verified" and report.level == "the given shapes and grid", report
    assert not any("across blocks" in q for q in asked), asked  # no solver query across blocks


def test_a_misswizzled_store_is_still_a_race_with_a_witness_that_replays():
    report = tilecheck.verify(misswizzled_copy, swizzled_args(), (4, 1, 1))
    assert report.status == "race", report
    race = report.races[0]
    assert race.kind == "write-write" and race.witness.array == "dst"
    assert tilecheck.replay(race).reproduced


def test_enumeration_declines_what_it_cannot_evaluate():
    # a tile index read from memory (a gather-style schedule) is the solver's to decide
    @ct.kernel
    def indexed(idx, src, dst, TM: ConstInt):
        row = ct.load(idx, index=(ct.bid(0),), shape=(1,)).item()
        ct.store(dst, index=(row, 0), tile=ct.load(src, index=(row, 0), shape=(TM, TM)))

    args = (np.array([0, 1, 2], np.int32), np.ones((96, 32), np.float32), np.zeros((96, 32), np.float32), 32)
    module = tilecheck.ir.from_cutile(indexed, args)
    from tilecheck.verifier.model.engine import execute

    with smt.own_context():
        fp = execute(module)
        store = next(a for a in fp.accesses if a.writes)
        assert not enumeration.disjoint(store, store, (3, 1, 1), [])


@ct.kernel
def scatter_by_index(idx, src, dst, T: ConstInt):
    offs = ct.load(idx, index=(ct.bid(0),), shape=(1,)).item() * T + ct.arange(T, dtype=np.int32)
    ct.scatter(dst, offs, ct.gather(src, offs))


def test_offsets_read_from_an_array_not_given_are_declined_before_any_lane_is_listed(monkeypatch):
    """A scatter at offsets read from memory, with no contents given: declined after block 0 alone
    (listing every lane of every block first cost 0.4 s on a grouped GEMM); with the contents given
    (a question about this launch's data), evaluated, the padding value of a read past the index
    array's end (an ite's branch no lane takes) left unevaluated."""
    args = (np.array([2, 0, 1], np.int32), np.ones(48, np.float32), np.zeros(48, np.float32), 16)
    module = tilecheck.ir.from_cutile(scatter_by_index, args)
    from tilecheck.verifier.model.engine import execute

    listed = []
    blocks = enumeration._blocks
    monkeypatch.setattr(enumeration, "_blocks",
                        lambda grid, only=None, within=None: listed.append(grid) or blocks(grid, only, within))
    with smt.own_context():
        fp = execute(module)
        store = next(a for a in fp.accesses if a.writes)
        concrete = case_values(fp, dict(zip(("idx", "src", "dst"), args)))
        assert enumeration.compare(store, store, (3, 1, 1), concrete) is None  # idx's contents unknown
        assert listed == [(1, 1, 1)]  # block 0 alone: never the whole grid
        memory = {func.name(): args[0] for func in fp.memory.values()}
        assert enumeration.compare(store, store, (3, 1, 1), concrete, memory) is True
        assert listed[-1] == (3, 1, 1)
        memory = {func.name(): np.array([2, 0, 2], np.int32) for func in fp.memory.values()}
        assert isinstance(enumeration.compare(store, store, (3, 1, 1), concrete, memory), enumeration.Clash)


# ---- the evaluator against Z3 ------------------------------------------------------------------
CTX = z3.Context()  # its own: the verifier's contexts come and go per verify
X, Y = z3.Int("ex", CTX), z3.Int("ey", CTX)


def _val(v: int):
    return z3.IntVal(v, CTX)


def _terms():
    leaves = st.one_of(st.sampled_from([X, Y]), st.integers(-9, 9).map(_val))

    def grow(children):
        ints = children
        ops = st.sampled_from(["+", "-", "*", "div", "mod", "neg", "ite"])
        return st.tuples(ops, ints, ints, ints).map(_build)
    return st.recursive(leaves, grow, max_leaves=8)


def _build(parts):
    op, a, b, c = parts
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "div":
        return a / z3.If(b == 0, _val(1), b)
    if op == "mod":
        return a % z3.If(b == 0, _val(-3), b)
    if op == "neg":
        return -a
    return z3.If(z3.Or(a < b, z3.And(a == c, z3.Not(b > 2))), b, c)


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(term=_terms(), xs=st.lists(st.integers(-50, 50), min_size=1, max_size=6), data=st.data())
def test_the_evaluator_agrees_with_z3_on_integer_terms(term, xs, data):
    """Where the numpy evaluator gives a value, it is Z3's value."""
    ys = data.draw(st.lists(st.integers(-50, 50), min_size=len(xs), max_size=len(xs)))
    env = {"ex": np.array(xs, np.int64), "ey": np.array(ys, np.int64)}
    try:
        got = rows.Evaluator(env, []).ints(term, len(xs))
    except rows.Unsupported:
        # it may decline (both sides of an if are evaluated, and Z3's simplifier can move a
        # division under an if whose other side divides by zero): declining is sound, a wrong
        # value is not
        assert "/" in str(term) or "%" in str(term) or "div" in str(term) or "mod" in str(term), term
        return
    for i, (x, y) in enumerate(zip(xs, ys)):
        want = z3.simplify(z3.substitute(term, (X, _val(x)), (Y, _val(y))))
        assert got[i] == want.as_long(), (term, x, y)


def test_a_condition_mixing_one_value_and_per_row_values_is_evaluated_row_by_row():
    # a read at a constant index is one value, a block's term one value per row: under an `or`
    # they broadcast (numpy refused the list of both as an inhomogeneous array: a traceback
    # out of verify on TileGym's fmha_bwd_dkdv under a smaller search budget)
    m = z3.Function("m", z3.IntSort(CTX), z3.IntSort(CTX))
    env = {"ex": np.array([-9, 0, 3], np.int64), "ey": np.array([2, 2, 2], np.int64)}
    evaluator = rows.Evaluator(env, [], {"m": np.array([5, 6])})
    both = z3.Or(z3.And(X > 0, m(_val(0)) > 1), X < -5)
    assert evaluator.condition(both, 3).tolist() == [True, False, True]
    either = z3.And(z3.Or(X > 0, m(_val(1)) < 1), Y > 0)
    assert evaluator.condition(either, 3).tolist() == [False, False, True]


# ---- bit-vector terms (exact bitwise and/or/xor, as the symbolic engine encodes them) ----------
def _bitwise(parts):
    op, a, b = parts
    fn = {"xor": lambda p, q: p ^ q, "and": lambda p, q: p & q, "or": lambda p, q: p | q}[op]
    return z3.BV2Int(fn(z3.Int2BV(a, 32), z3.Int2BV(b, 32)), is_signed=True)


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(op=st.sampled_from(["xor", "and", "or"]), c=st.integers(-2**31, 2**31 - 1),
       xs=st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=6), constant=st.booleans())
def test_the_evaluator_agrees_with_z3_on_bitwise_terms(op, c, xs, constant):
    """x op y on 32-bit patterns, with y a symbol or (as at a given case) a constant that Z3's
    simplifier turns into extracts, concats and bit complements: the evaluator gives Z3's value."""
    term = _bitwise((op, X, Y)) + 3 * X
    env = {"ex": np.array(xs, np.int64), "ey": np.full(len(xs), c, np.int64)}
    concrete = [(Y, _val(c))] if constant else []
    got = rows.Evaluator(env, concrete).ints(term, len(xs))
    for x, value in zip(xs, got.tolist()):
        want = z3.simplify(z3.substitute(term, (X, _val(x)), (Y, _val(c))))
        assert value == want.as_long(), (op, x, c)


# ---- gathers and scatters at computed offsets, element by element ------------------------------
@ct.kernel
def partner_exchange(work, k, j, M, T: ConstInt):
    # one compare-exchange step of a bitonic sort: lane i pairs with i ^ j; the lower of the pair
    # writes both, the other routes its writes past the end (dropped)
    offs = ct.bid(0) * T + ct.arange(T, dtype=np.int32)
    ixj = offs ^ j
    active = (ixj > offs) & (ixj < M) & (offs < M)
    a = ct.gather(work, offs, padding_value=0.0)
    b = ct.gather(work, ixj, padding_value=0.0)
    swap = ct.where((offs & k) == 0, a > b, a < b)
    ct.scatter(work, ct.where(active, offs, M), ct.where(swap, b, a))
    ct.scatter(work, ct.where(active, ixj, M), ct.where(swap, a, b))


@ct.kernel
def partner_exchange_unrouted(work, k, j, M, T: ConstInt):
    # racy: every lane writes its own element, active or not, so across a block boundary (j >= T)
    # the upper partner's block writes the element the lower partner's block also writes
    offs = ct.bid(0) * T + ct.arange(T, dtype=np.int32)
    ixj = offs ^ j
    active = (ixj > offs) & (ixj < M) & (offs < M)
    a = ct.gather(work, offs, padding_value=0.0)
    b = ct.gather(work, ixj, padding_value=0.0)
    ct.scatter(work, offs, ct.where(active, ct.minimum(a, b), a))
    ct.scatter(work, ct.where(active, ixj, M), ct.maximum(a, b))


def test_an_xor_partner_exchange_inside_blocks_is_proved_element_by_element(monkeypatch):
    asked = given_case_questions(monkeypatch)
    work = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    report = tilecheck.verify(partner_exchange, (work, 2, 1, 64, 16), (4, 1, 1), every_shape=False)
    assert report.status == "verified" and report.level == "the given shapes and grid", report
    # both the cross-block and the in-block questions were decided without the solver
    assert not any("across blocks" in q or "inside a block" in q for q in asked), asked


def test_an_xor_partner_exchange_across_blocks_writing_both_ends_is_still_a_race():
    work = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    report = tilecheck.verify(partner_exchange_unrouted, (work, 64, 32, 64, 16), (4, 1, 1), every_shape=False)
    assert report.status == "race", report
    race = next(f for f in report.races if f.kind == "write-write")
    assert tilecheck.replay(race).reproduced
    # inside one block (j < T) the same kernel writes each element from one block only
    inside = tilecheck.verify(partner_exchange_unrouted, (work, 2, 1, 64, 16), (4, 1, 1), every_shape=False)
    assert not [f for f in inside.races if f.kind == "write-write"], inside


def test_two_lanes_of_one_scatter_on_one_element_are_not_proved_apart():
    @ct.kernel
    def halve_into(src, dst, T: ConstInt):
        offs = ct.bid(0) * T + ct.arange(T, dtype=np.int32)
        ct.scatter(dst, offs // 2, ct.gather(src, offs))  # lanes 2i and 2i + 1 write element i

    args = (np.arange(32, dtype=np.float32), np.zeros(32, np.float32), 8)
    report = tilecheck.verify(halve_into, args, (4, 1, 1), every_shape=False)
    assert report.status == "race" and any(f.kind == "unordered-in-block" for f in report.races), report


def test_two_blocks_enumeration_finds_sharing_an_element_pin_the_solvers_query(monkeypatch):
    # the lower partner's block writes work[i ^ j], which the upper partner's block reads (j >= T):
    # enumeration finds the first such element and its two blocks, and the solver is asked about
    # those two only (xor-indexed partners over a whole grid cost it minutes at TileBench's sizes)
    asked: list[tuple[str, bool, str]] = []
    solve = obligations.Checker.solve

    def spy(self, constraints, what, locs, key=None, **kw):
        result = solve(self, constraints, what, locs, key, **kw)
        if self.level.grid is not None and "across blocks" in what:
            asked.append((what, kw.get("tentative", False), type(result).__name__))
        return result

    monkeypatch.setattr(obligations.Checker, "solve", spy)
    work = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    report = tilecheck.verify(partner_exchange, (work, 64, 32, 64, 16), (4, 1, 1), every_shape=False)
    assert report.status == "race", report
    race = next(f for f in report.races if f.kind == "read-write")
    assert "block (0, 0, 0) writes work[32], and block (2, 0, 0) reads it too" in tilecheck.report.describe(race.witness)
    assert tilecheck.replay(race).reproduced
    assert asked and all(tentative and answer == "Sat" for _, tentative, answer in asked), asked


def test_a_clash_is_the_first_shared_element_and_two_of_its_blocks():
    # element keys of two accesses: x touches 5 from blocks 0 and 1, y touches 5 from block 1 and
    # 7 from block 2; the first shared key is 5, and x's block 0 with y's block 1 share it
    keys_x, blocks_x = np.array([[9], [5], [5]]), np.array([3, 0, 1])
    keys_y, blocks_y = np.array([[7], [5]]), np.array([2, 1])
    clash = enumeration._clash(keys_x, blocks_x, lambda i: {"row": i}, keys_y, blocks_y, lambda j: {"row": j})
    assert clash == enumeration.Clash({"row": 1}, {"row": 1})
    # one block alone on every key: nothing shared across blocks
    assert enumeration._clash(keys_x[:2], blocks_x[:2], dict, keys_y[:1], blocks_y[:1], dict) is True
    # the only sharer of key 5 on y's side is x's first block: x's other block is taken
    clash = enumeration._clash(np.array([[5], [5]]), np.array([1, 0]), lambda i: {"x": i},
                               np.array([[5]]), np.array([1]), lambda j: {"y": j})
    assert clash == enumeration.Clash({"x": 1}, {"y": 0})


def _overflow_questions(monkeypatch) -> list[tuple[bool, str]]:
    asked: list[tuple[bool, str]] = []
    solve = obligations.Checker.solve

    def spy(self, constraints, what, locs, key=None, **kw):
        result = solve(self, constraints, what, locs, key, **kw)
        if self.level.grid is not None and what == "integer overflow":
            asked.append((kw.get("tentative", False), type(result).__name__))
        return result

    monkeypatch.setattr(obligations.Checker, "solve", spy)
    return asked


def test_overflow_obligations_of_a_swizzle_are_proved_by_enumeration(monkeypatch):
    # t % size, size = min(num_m - first, GROUP): interval arithmetic cannot keep the divisor
    # positive; every block and iteration of the given case, evaluated, stays in int32
    asked = _overflow_questions(monkeypatch)
    report = tilecheck.verify(swizzled_copy, swizzled_args(), (4, 1, 1), every_shape=False)
    assert report.status == "verified", report
    assert asked == [], asked


def test_an_overflow_enumeration_finds_is_the_witness_of_a_pinned_query(monkeypatch):
    from tests.interp import kernels as K

    asked = _overflow_questions(monkeypatch)
    args = (np.arange(8 * 4, dtype=np.float32), np.zeros(1024 * 4, np.float32), 4)
    report = tilecheck.verify(K.truncated_index, args, (8, 1, 1), every_shape=False)
    (finding,) = [f for f in report.findings if f.kind == "overflow"]
    assert "trunci computes 128 in block (2, 0, 0)" in finding.message  # the least block that wraps
    assert asked == [(True, "Sat")], asked  # one question, about the instance enumeration found


def _symbolic_bitwise_limits(monkeypatch) -> list[int]:
    """The work limits of the solver queries with bit-vector arithmetic asked at a level with
    symbolic shapes (a contract search's tiers), in order."""
    symbolic, limits = [False], []
    check, solve = smt.check, obligations.Checker.solve

    def spy_check(constraints, rlimit=smt.DEFAULT_RLIMIT, assumptions=()):
        if symbolic[0] and smt.bitwise(smt.And(*constraints)):
            limits.append(rlimit)
        return check(constraints, rlimit, assumptions)

    def spy_solve(self, constraints, what, locs, key=None, **kw):
        symbolic[0] = self.level.shapes is None
        try:
            return solve(self, constraints, what, locs, key, **kw)
        finally:
            symbolic[0] = False

    monkeypatch.setattr(smt, "check", spy_check)
    monkeypatch.setattr(obligations.Checker, "solve", spy_solve)
    return limits


def test_bitwise_queries_at_symbolic_levels_get_a_short_try(monkeypatch):
    """Z3 bit-blasts xor-indexed addresses, and at the all-shapes level a work unit of that costs
    far more time than arithmetic's (TileBench's bitonic sort: seconds per query): such queries get
    ``SYMBOLIC_BITWISE_RLIMIT``, and the given case, which enumerates them, decides the launch."""
    limits = _symbolic_bitwise_limits(monkeypatch)
    work = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    report = tilecheck.verify(partner_exchange, (work, 2, 1, 64, 16), (4, 1, 1))
    assert report.status == "verified" and report.level == "the given shapes and grid", report
    assert limits and max(limits) <= obligations.SYMBOLIC_BITWISE_RLIMIT
    racy = tilecheck.verify(partner_exchange_unrouted, (work, 64, 32, 64, 16), (4, 1, 1))
    assert racy.status == "race"
    assert tilecheck.replay(next(f for f in racy.races if f.kind == "write-write")).reproduced


def test_only_kernels_with_bit_vector_arithmetic_are_marked_bitwise():
    from tilecheck.ir.cutile import module_for
    from tilecheck.verifier.model.engine import execute

    work = np.zeros(64, np.float32)
    exchange, _ = module_for(partner_exchange, (work, 2, 1, 64, 16))
    assert execute(exchange).bitwise
    masked, _ = module_for(swizzled_copy, swizzled_args())  # div and mod only
    assert not execute(masked).bitwise


@ct.kernel
def digit_scatter(src, dst, base, shift, K, T: ConstInt):
    # a radix sort's scatter, reduced: each element goes to its digit's base for this block plus
    # its rank among the block's elements of that digit (here: each block holds one digit)
    bid = ct.bid(0)
    vals = ct.load(src, index=(bid,), shape=(T,))
    digit = (vals >> shift) & 3
    start = ct.gather(base, digit * K + bid, padding_value=0)
    ct.scatter(dst, start + ct.arange(T, dtype=np.int32), vals)


def _digit_case(bases):
    vals = np.repeat(np.array([1, 2], np.int32) << 4, 16)  # block 0: digit 1, block 1: digit 2
    base = np.zeros(8, np.int32)
    base[[1 * 2 + 0, 2 * 2 + 1]] = bases  # digit d of block b at d * K + b, K = 2
    return vals, np.zeros(32, np.int32), base, 4, 2, 16


def _bitwise_limits(monkeypatch) -> list[int]:
    """The work limits of every solver query with bit-vector arithmetic that follows, in order."""
    limits = []
    check = smt.check

    def spy_check(constraints, rlimit=smt.DEFAULT_RLIMIT, assumptions=()):
        if smt.bitwise(smt.And(*constraints)):
            limits.append(rlimit)
        return check(constraints, rlimit, assumptions)

    monkeypatch.setattr(smt, "check", spy_check)
    return limits


def test_bitwise_queries_the_exact_detector_decides_get_a_short_try(monkeypatch):
    """At a given case whose launch verify's exact detector runs, a query with bit-vector arithmetic
    (a radix digit: shifts and masks of loaded values) gets the short try as well: the detector
    decides the launch on its data (TileBench's radix scatter: 2M units and 2.8 s per query before)."""
    from tilecheck.verifier.data import data_step

    limits = _bitwise_limits(monkeypatch)
    ok = tilecheck.verify(digit_scatter, _digit_case([0, 16]), (2, 1, 1))
    assert ok.status == "verified", ok
    assert limits and max(limits) <= obligations.SYMBOLIC_BITWISE_RLIMIT
    racy = tilecheck.verify(digit_scatter, _digit_case([0, 8]), (2, 1, 1))  # rows 8..15 written twice
    assert racy.status == "race" and racy.level == data_step.launch_data.LEVEL, racy


def test_bitwise_queries_no_detector_decides_get_the_bitwise_budget(monkeypatch):
    """Past the launches verify's detector runs, a question with bit-vector arithmetic still gets
    no more than ``BITWISE_RLIMIT`` (TileBench's radix scatter at 19,532 blocks: four 2M-unit
    queries, 1.6-2.1 s each, all unknown): the verdict is unknown sooner, with the reason."""
    from tilecheck.verifier.data import data_step

    monkeypatch.setattr(data_step, "DATA_DETECT_BLOCKS", 1)  # the launch is past what verify runs
    limits = _bitwise_limits(monkeypatch)
    report = tilecheck.verify(digit_scatter, _digit_case([0, 16]), (2, 1, 1))
    assert report.status in ("verified", "unknown"), report
    assert limits and max(limits) <= obligations.BITWISE_RLIMIT
    assert max(limits) > obligations.SYMBOLIC_BITWISE_RLIMIT  # the short try is for where the detector runs


def test_arithmetic_past_int64_is_not_evaluated():
    """A product or sum whose operands' bounds leave int64's exact range is the solver's: numpy
    would wrap it around silently (2**40 * 2**40 is 0 in int64), and a wrapped offset could hide a
    shared element or invent one."""
    X, Y = z3.Int("ex"), z3.Int("ey")
    env = {"ex": np.array([1 << 40, 3], np.int64), "ey": np.array([1 << 40, 5], np.int64)}
    for term in (X * Y, X * Y + 1, (X + X) * (Y + Y), X * (1 << 30) * Y):
        try:
            value = rows.Evaluator(env, []).ints(term, 2)
        except rows.Unsupported:
            continue
        raise AssertionError(f"{term} evaluated to {value.tolist()}")
    small = rows.Evaluator(env, []).ints(X * 4 + Y, 2)
    assert small.tolist() == [(1 << 42) + (1 << 40), 17]


def test_a_clashs_rows_come_from_its_blocks_alone():
    """The variable values of a clash's two rows are computed again for their two blocks only, not
    for every block of the grid: the same rows as listing the whole grid gives."""
    work = np.zeros(256, np.float32)
    module = tilecheck.ir.from_cutile(partner_exchange_unrouted, (work, 256, 128, 256, 16))
    from tilecheck.verifier.model.engine import execute

    with smt.own_context():
        fp = execute(module)
        scatters = [a for a in fp.accesses if a.writes]
        info = next(iter(fp.arrays.values()))
        concrete = [(sym, smt.IntVal(v)) for sym, v in zip((*info.shape, *info.strides), (256, 1))
                    if smt.is_const(sym)]
        concrete += [(sym, smt.IntVal(v)) for sym, v in zip(fp.scalars.values(), (256, 128, 256))]
        grid = (16, 1, 1)
        listed = enumeration.compare(scatters[0], scatters[1], grid, concrete)
        alone = enumeration.compare(scatters[0], scatters[1], grid, concrete, cache={})
        assert isinstance(listed, enumeration.Clash) and listed == alone
        assert listed.x["bid0"] != listed.y["bid0"]


_side = st.lists(st.tuples(st.integers(0, 12), st.integers(0, 3)), min_size=1, max_size=12).map(
    lambda rows: sorted(rows, key=lambda r: r[1]))  # rows are block-major, as listed


@given(_side, _side, st.booleans(), st.booleans())
@settings(max_examples=examples(300), deadline=None, derandomize=True)
def test_a_clash_is_the_least_key_two_blocks_share(x, y, offset_y, summarised):
    """``_clash`` on element offsets, each side summarised per offset (``_span``) or both grouped
    by sorting (offsets spanning more than ``DIRECT_SPAN``), against the definition: the least
    offset that both sides touch and that two different blocks touch, with its first x row and a y
    row of another block (else the first y row and another block's x row)."""
    if offset_y:
        y = [(k + 40, b) for k, b in y]  # sides apart: nothing shared
    keys_x, blocks_x = np.array([[k] for k, _ in x], np.int64), np.array([b for _, b in x], np.int64)
    keys_y, blocks_y = np.array([[k] for k, _ in y], np.int64), np.array([b for _, b in y], np.int64)
    span, enumeration.DIRECT_SPAN = enumeration.DIRECT_SPAN, enumeration.DIRECT_SPAN if summarised else 0
    try:
        got = enumeration._clash(keys_x, blocks_x, lambda i: {"i": i}, keys_y, blocks_y, lambda j: {"j": j})
    finally:
        enumeration.DIRECT_SPAN = span
    shared = sorted({k for k, _ in x} & {k for k, _ in y})
    clashing = [k for k in shared if len({b for kk, b in x + y if kk == k}) > 1]
    if not clashing:
        assert got is True
        return
    k = clashing[0]
    xs = [i for i, (kk, _) in enumerate(x) if kk == k]
    ys = [j for j, (kk, _) in enumerate(y) if kk == k]
    others = [j for j in ys if y[j][1] != x[xs[0]][1]]
    i, j = (xs[0], others[0]) if others else (next(i for i in xs if x[i][1] != y[ys[0]][1]), ys[0])
    assert got == enumeration.Clash({"i": i}, {"j": j})


_ELEMENTS_TOGETHER = enumeration._elements_together


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(k=st.sampled_from([2, 4, 64]), j=st.sampled_from([1, 2, 3, 5, 8, 16, 32]), blocks=st.integers(2, 6),
       chunk=st.sampled_from([1, 16, 40, 1 << 18]), routed=st.booleans())
def test_accesses_listed_together_are_each_listed_as_alone(monkeypatch, k, j, blocks, chunk, routed):
    # the accesses of one array outside loops are listed together, a few lanes at a time with one
    # evaluator (_elements_together): each one's offsets and blocks are those it has listed alone
    assume(j < 16 * blocks)  # a partner inside the array: some lanes are active
    monkeypatch.setattr(enumeration, "CHUNK_ROWS", chunk)
    together = _ELEMENTS_TOGETHER  # (the fixture outlives one example: not the patched one)
    calls = []
    monkeypatch.setattr(enumeration, "_elements_together",
                        lambda *a, **kw: calls.append((a, out := together(*a, **kw))) and out or out)
    kernel = partner_exchange if routed else partner_exchange_unrouted
    work = np.zeros(16 * blocks, np.float32)
    report = tilecheck.verify(kernel, (work, k, j, 16 * blocks, 16), (blocks, 1, 1), every_shape=False)
    assert report.status in ("verified", "race"), report
    assert calls and len(calls[0][0][0]) == 4, "the four accesses of 'work' were not listed together"
    for (accesses, grid, concrete, memory), listed in calls:
        for access, found in zip(accesses, listed):
            keys, blocks_alone, _ = enumeration._elements(access, grid, concrete, memory)
            assert found is not None
            assert np.array_equal(found[0], keys) and np.array_equal(found[1], blocks_alone), access.op.name


def _given_case_listing(kernel, args, grid):
    """``enumeration.compare`` of the kernel's store with itself at the given case, with the given
    contents of its small index arrays (what a pinned question is listed by)."""
    from tilecheck.ir.cutile import module_for
    from tilecheck.verifier.pipeline import levels_of as _levels
    from tilecheck.verifier.obligations.confirm import confirmer
    from tilecheck.verifier.model.engine import execute

    module, _ = module_for(kernel, args)
    with smt.own_context():
        fp = execute(module)
        level = _levels(fp, module.params, args, grid)[-1]
        ch = obligations.Checker(fp, None, [], [], level, confirm=confirmer(module, args, grid))
        store = next(a for a in fp.accesses if a.writes)
        return enumeration.compare(store, store, grid, ch.concrete, ch.enumerated_functions(given=True))


@settings(max_examples=examples(40), deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(-2, 14)), min_size=1, max_size=4))
def test_tiles_of_views_sliced_at_given_offsets_are_listed_as_the_detector_decides(batches):
    # a ragged batch's rows (a prefill's sequences): each block copies rows [offset, offset + len) tile
    # by tile through views sliced there, in a helper that returns early; tiles off a common grid
    # are compared as boxes clipped to the slice, so overlapping batches clash and others do not
    from tests.interp.kernels import ragged_rows, ragged_rows_args

    offsets, lens = [o for o, _ in batches], [min(n, 64 - o) for o, n in batches]
    args, grid = ragged_rows_args(offsets, lens), (len(batches), 1, 1)
    found = _given_case_listing(ragged_rows, args, grid)
    exact = tilecheck.detect(ragged_rows, args, grid)
    assert (found is True) == (exact.status == "verified"), (batches, found, str(exact))
    if found is not True:
        assert isinstance(found, enumeration.Clash) and found.x["bid0"] != found.y["bid0"]
