"""``smt.check``: one query through Z3's preprocessing, with the assumptions a contract search
tracks (the rules, as ``Implies(flag, rule)`` anywhere in nested conjunctions) named in its unsat
cores."""
import z3
from hypothesis import given, settings, strategies as st

from tests.tiers import examples
from tilecheck.verifier.solver import smt


def test_a_core_names_the_tracked_rules_a_proof_used_inside_nested_conjunctions():
    x, y = z3.Ints("x y")
    a, b, c = z3.Bools("a b c")
    formula = z3.And(z3.And(z3.Implies(a, x == y + 1), z3.Implies(b, y >= 0)), z3.Implies(c, x <= 100), x <= 0)
    result = smt.check([formula], assumptions=[a, b, c])
    assert isinstance(result, smt.Unsat) and result.core == {"a", "b"}
    # an assumption no implication names still holds
    assert smt.check([z3.Not(c), x == 1], assumptions=[c]) == smt.Unsat(frozenset({"c"}))
    assert isinstance(smt.check([formula], assumptions=[a, c]), smt.Sat)  # without b: x = y + 1 = 0


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.sampled_from(["<=", "==", ">="]), st.integers(-3, 3)),
                min_size=1, max_size=6), st.integers(-4, 4))
def test_the_answer_and_core_agree_with_z3s_own_solver(rules, target):
    # random linear rules over x, y, each tracked: the same sat/unsat as Z3's default solver with
    # assumptions, and a core that is itself unsatisfiable with the question
    x, y = z3.Ints("x y")
    flags = [z3.Bool(f"r{i}") for i in range(len(rules))]
    ops = {"<=": lambda p, q: p <= q, "==": lambda p, q: p == q, ">=": lambda p, q: p >= q}
    terms = [z3.Implies(f, ops[op](x + k * y, m)) for f, (k, op, m) in zip(flags, rules)]
    question = z3.And(x == target, y >= -2, y <= 2)
    result = smt.check([z3.And(*terms), question], assumptions=flags)
    reference = z3.Solver()
    reference.add(*terms, question)
    expected = reference.check(*flags)
    assert (expected == z3.unsat) == isinstance(result, smt.Unsat)
    assert (expected == z3.sat) == isinstance(result, smt.Sat)
    if isinstance(result, smt.Unsat):
        again = z3.Solver()
        again.add(*terms, question, *[f for f in flags if str(f) in result.core])
        assert again.check() == z3.unsat


@settings(max_examples=examples(50), deadline=None)
@given(st.lists(st.sampled_from(["x", "y", "x + 1", "y * 2", "7", "x - y"]), min_size=1, max_size=4))
def test_argument_ids_are_the_arguments_term_ids(args):
    """``smt.argument_ids`` reads through the C API what ``app.arg(i)``'s term ids are (the keys of
    loop-carried values)."""
    x, y = z3.Ints("x y")
    terms = [eval(a, {"x": x, "y": y}) for a in args]  # noqa: S307 - a fixed vocabulary
    terms = [z3.IntVal(t) if isinstance(t, int) else t for t in terms]
    f = z3.Function("f", *([z3.IntSort()] * (len(terms) + 1)))
    app = f(*terms)
    assert smt.argument_ids(app, len(terms)) == tuple(smt.term_id(app.arg(i)) for i in range(len(terms)))
    assert smt.argument_ids(app, 1) == (smt.term_id(app.arg(0)),)
