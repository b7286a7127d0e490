"""The op table, the symbolic registry and the interpreter registry stay in step, and the two
semantics agree on random concrete inputs."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tilecheck.ir import Op, Value
from tilecheck.ir import types as T
from tilecheck.ir.opdefs import OPS
from tilecheck.interp import ops as _interp_ops  # noqa: F401
from tilecheck.interp.registry import RULES as INTERP
from tilecheck.interp.registry import UNSUPPORTED
from tilecheck.verifier.solver import smt
from tilecheck.verifier.model import ops as _symbolic_ops  # noqa: F401
from tilecheck.verifier.model.engine import State
from tilecheck.verifier.model.registry import OPAQUE
from tilecheck.verifier.model.registry import RULES as SYMBOLIC
from tilecheck.verifier.model.values import BoolTile, IntTile

from tests.tiers import examples

TERMINATORS = {name for name, d in OPS.items() if d.terminator}


def test_every_op_has_symbolic_semantics_or_is_declared_opaque():
    assert set(OPS) == set(SYMBOLIC) | OPAQUE | TERMINATORS
    assert not set(SYMBOLIC) & OPAQUE


def test_every_op_runs_on_the_interpreter_or_is_declared_unsupported():
    assert set(OPS) == set(INTERP) | UNSUPPORTED | TERMINATORS
    assert not set(INTERP) & UNSUPPORTED


I32, I1 = T.TileType((), T.I32), T.TileType((), T.I1)
BINARY = [("addi", {"overflow": "none"}), ("subi", {"overflow": "none"}), ("muli", {"overflow": "none"}),
          ("divi", {"signedness": "signed", "rounding": "zero"}),
          ("divi", {"signedness": "signed", "rounding": "negative_inf"}),
          ("divi", {"signedness": "signed", "rounding": "positive_inf"}),
          ("remi", {"signedness": "signed"}), ("maxi", {"signedness": "signed"}), ("mini", {"signedness": "signed"})]
CMP = ["equal", "not_equal", "less_than", "less_than_or_equal", "greater_than", "greater_than_or_equal"]


class _Ctx:
    width = 1
    active = np.ones(1, bool)


def _op(name, attrs, operand_types, result_type):
    operands = tuple(Value(t) for t in operand_types)
    return Op(name, operands, (Value(result_type),), attrs, segments=(("lhs", 1), ("rhs", 1)))


def _symbolic(op, *values):
    state = State(None, None, {}, set())
    (result,) = SYMBOLIC[op.name](state, op, *(IntTile(smt.IntVal(v)) for v in values))
    term = smt.simplify(result.term)
    return term.as_long() if isinstance(result, IntTile) else smt.is_true(term)


def _interpreted(op, *values):
    arrays = [np.array([v], np.int32) for v in values]
    (result,) = INTERP[op.name](None, _Ctx(), op, *arrays)
    return result[0].item()


small = st.integers(-2**15, 2**15)


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(a=small, b=small.filter(lambda x: x != 0), which=st.integers(0, len(BINARY) - 1))
def test_integer_ops_agree(a, b, which):
    name, attrs = BINARY[which]
    op = _op(name, attrs, (I32, I32), I32)
    assert _symbolic(op, a, b) == _interpreted(op, a, b), (name, attrs, a, b)


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(a=st.integers(-2**31, 2**31 - 1), b=st.integers(-2**31, 2**31 - 1), pred=st.sampled_from(CMP),
       sign=st.sampled_from(["signed", "unsigned"]))
def test_comparisons_agree_including_unsigned(a, b, pred, sign):
    op = _op("cmpi", {"comparison_predicate": pred, "signedness": sign}, (I32, I32), I1)
    assert _symbolic(op, a, b) == _interpreted(op, a, b), (pred, sign, a, b)


@settings(max_examples=examples(100), deadline=None, derandomize=True)
@given(c=st.booleans(), a=small, b=small)
def test_select_agrees(c, a, b):
    op = Op("select", (Value(I1), Value(I32), Value(I32)), (Value(I32),), {})
    state = State(None, None, {}, set())
    (sym,) = SYMBOLIC["select"](state, op, BoolTile(smt.BoolVal(c)), IntTile(smt.IntVal(a)), IntTile(smt.IntVal(b)))
    (num,) = INTERP["select"](None, _Ctx(), op, np.array([c]), np.array([a], np.int32), np.array([b], np.int32))
    assert smt.simplify(sym.term).as_long() == num[0]
