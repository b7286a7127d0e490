"""The term walks in C (``z3walk.c``) against the Python walk they replace: the same uninterpreted
applications in the same order, whatever the terms share and whatever was seen before."""
import os
import subprocess
import sys
import textwrap

import pytest
import z3
from hypothesis import given, settings, strategies as st

from tests.tiers import examples
from tilecheck.verifier.solver import smt, z3walk

native = pytest.mark.skipif(not z3walk.native(), reason=f"no C walk here: {z3walk.why_not_native()}")


@st.composite
def term_pools(draw):
    """A few Boolean terms over shared integer subterms, uninterpreted functions and constants."""
    f = z3.Function("f", z3.IntSort(), z3.IntSort())
    g = z3.Function("g", z3.IntSort(), z3.IntSort(), z3.IntSort())
    pool = [z3.Int(f"x{i}") for i in range(3)] + [z3.IntVal(draw(st.integers(-3, 3)))]
    for _ in range(draw(st.integers(1, 25))):
        a, b = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
        op = draw(st.sampled_from(["add", "mul", "f", "g", "ite", "div"]))
        pool.append({"add": lambda: a + b, "mul": lambda: a * b, "f": lambda: f(a), "g": lambda: g(a, b),
                     "ite": lambda: z3.If(a < b, a, b + 1), "div": lambda: a / 3}[op]())
    terms = [draw(st.sampled_from(pool)) > draw(st.sampled_from(pool)) for _ in range(draw(st.integers(1, 4)))]
    return terms, draw(st.integers(0, len(terms)))


def _ids(found):
    return [(smt.term_id(t), n) for t, n in found]


@native
@settings(max_examples=examples(300), deadline=None)
@given(term_pools())
def test_the_c_walk_finds_what_the_python_walk_finds_in_its_order(case):
    terms, split = case
    # a first walk over some terms, then the rest skipping what it saw (as applications_of does)
    native, python = z3walk.Seen(), set()
    first_c = _ids(z3walk.uninterpreted(terms[:split], native))
    first_py = _ids(z3walk._python_walk(terms[:split], python)) if split else []
    assert first_c == first_py
    assert _ids(z3walk.uninterpreted(terms[split:], native)) == _ids(z3walk._python_walk(terms[split:], python))
    for t in terms:  # every node walked is in both sets
        assert (smt.term_id(t) in native) == (smt.term_id(t) in python)
    # only the applications (no constants), in the same order, from either walk
    applied = _ids(z3walk.uninterpreted(terms, z3walk.Seen(), applied=True))
    assert applied == [(i, n) for i, n in _ids(z3walk._python_walk(terms, set())) if n > 0]
    with_python = z3walk.Seen.__new__(z3walk.Seen)
    with_python.ids, with_python.handle, with_python.lib = set(), None, None
    assert _ids(z3walk.uninterpreted(terms, with_python, applied=True)) == applied


@settings(max_examples=examples(300), deadline=None)
@given(term_pools(), st.sampled_from([{"f"}, {"g"}, {"f", "g"}, set()]))
def test_the_walk_for_named_functions_finds_their_applications_in_the_walks_order(case, names):
    """``named_applications`` (the keying of loop-carried values) against the walk it filters, in C
    and in Python: the same applications, in the same order, with their functions' names."""
    terms, _ = case
    expected = [(t.decl().name(), smt.term_id(t)) for t, _ in z3walk.uninterpreted(terms, applied=True)
                if t.decl().name() in names]
    assert [(n, smt.term_id(t)) for n, t in z3walk.named_applications(terms, names)] == expected
    with_python = z3walk.Seen.__new__(z3walk.Seen)
    with_python.ids, with_python.handle, with_python.lib = set(), None, None
    assert [(n, smt.term_id(t)) for n, t in z3walk.named_applications(terms, names, with_python)] == expected


@settings(max_examples=examples(200), deadline=None)
@given(term_pools(), st.sampled_from([{"f"}, {"g"}, {"f", "g"}, set()]))
def test_applications_of_named_functions_are_the_unnamed_walks_restricted_to_them(case, names):
    """``smt.applications_of`` with ``names`` (what ``content_facts`` asks: the array-contents
    functions) is the whole walk's answer restricted to those names, shared conjuncts or not."""
    terms, split = case
    shared = {smt.term_id(t) for t in terms[:split]}
    whole = smt.applications_of(terms, {}, shared)
    named = smt.applications_of(terms, {}, shared, frozenset(names))
    expected = {n: [smt.term_id(a) for a in apps] for n, apps in whole.items() if n in names}
    assert {n: [smt.term_id(a) for a in apps] for n, apps in named.items()} == expected


@native
def test_a_union_of_seen_sets_skips_what_either_saw():
    x, y = z3.Ints("x y")
    f = z3.Function("f", z3.IntSort(), z3.IntSort())
    fx, fy = f(x), f(y)  # alive: Z3 gives a dead term's id to the next new one
    left, right, both = z3walk.Seen(), z3walk.Seen(), z3walk.Seen()
    assert _ids(z3walk.uninterpreted([fx > 0], left)) == [(smt.term_id(fx), 1), (smt.term_id(x), 0)]
    list(z3walk.uninterpreted([fy > 0], right))
    assert smt.term_id(fy) not in left
    both.update(left)
    both.update(right)
    assert list(z3walk.uninterpreted([fx + fy > 0], both)) == []
    assert smt.term_id(fy) in both and smt.term_id(fx) in both


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300)


_PROBE = """
    import z3
    from tilecheck.verifier.solver import smt, z3walk
    f = z3.Function("f", z3.IntSort(), z3.IntSort())
    x = z3.Int("x")
    print(z3walk.native(), [str(t) for t, n in z3walk.uninterpreted([f(f(x)) > x])])
    print(z3walk.why_not_native())
"""


def test_without_the_built_walk_the_walk_is_the_python_one():
    """As an install without a C compiler leaves it: the extension is not there."""
    probe = _PROBE.replace("from tilecheck.verifier.solver import smt, z3walk",
                           "from tilecheck.verifier.solver import smt, z3walk\n"
                           "    z3walk.EXTENSION = 'tilecheck.verifier.solver._not_built'")
    done = _run(probe)
    assert done.returncode == 0, done.stderr
    first, why = done.stdout.splitlines()
    assert first == "False ['x', 'f(f(x))', 'f(x)']"
    assert "not built when tilecheck was installed" in why


@native
def test_the_walk_calls_the_libz3_z3_solver_loaded():
    """The C walk is handed the functions of the libz3 that z3-solver loaded (not a second copy):
    the same version, and terms made through z3-solver walk in it."""
    assert z3walk._LIBZ3.Z3_get_full_version().decode() == z3.get_full_version()
    x = z3.Int("x")
    assert z3walk.C.Z3_get_ast_id(x.ctx.ref(), x.as_ast()) == x.get_id()


@pytest.mark.slow
def test_an_install_without_a_c_compiler_builds_without_the_walk(tmp_path):
    """``setup.py``'s extension is optional: with no working compiler the install's build step
    succeeds without it (and the walk is then Python's, as above)."""
    import shutil

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(os.path.join(root, name), tmp_path / name)
    shutil.copytree(os.path.join(root, "tilecheck"), tmp_path / "tilecheck",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "CC": "/bin/false", "LDSHARED": "/bin/false"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "tilecheck.verifier.solver._z3walk" in done.stderr + done.stdout  # said, not silent
    assert not list((tmp_path / "tilecheck").rglob("*.so"))


@st.composite
def tracked_queries(draw):
    """Nested conjunctions of comparisons and implications, some of tracked flags, some not."""
    xs = z3.Ints("x0 x1 x2")
    flags = [z3.Bool(f"rule!{i}") for i in range(draw(st.integers(0, 4)))]
    other = z3.Bool("p")

    def atom():
        a, b = draw(st.sampled_from(xs)), draw(st.sampled_from(xs))
        return draw(st.sampled_from([a < b, a <= b + 1, a == b * 2, a >= draw(st.integers(-2, 2))]))

    def conjunct(depth):
        kind = draw(st.sampled_from(["atom", "and", "implies"] if depth < 2 else ["atom", "implies"]))
        if kind == "and":
            return z3.And(*[conjunct(depth + 1) for _ in range(draw(st.integers(2, 3)))])
        if kind == "implies":
            return z3.Implies(draw(st.sampled_from([*flags, other])), atom())
        return atom()
    return [conjunct(0) for _ in range(draw(st.integers(1, 5)))], flags


@native
@settings(max_examples=examples(200), deadline=None)
@given(tracked_queries())
def test_asserting_in_c_asserts_what_the_python_walk_asserts_in_its_order(case):
    constraints, flags = case
    asserted = []
    for walk in ("c", "python"):
        solver = z3.Solver()
        solver.set("unsat_core", True)
        ids = {smt.term_id(f): f.as_ast() for f in flags}
        try:  # Z3 refuses a flag that tracks two assertions (a search names each rule once)
            if walk == "c":
                used = z3walk.assert_tracking(solver, constraints, ids)
            else:
                used = smt._assert_tracking_python(solver, constraints, ids)
        except z3.Z3Exception as exc:
            asserted.append(str(exc))
            continue
        answer = solver.check(*flags)
        core = sorted(map(str, solver.unsat_core())) if answer == z3.unsat else None
        asserted.append(([a.sexpr() for a in solver.assertions()], used, str(answer), core))
    assert asserted[0] == asserted[1]


@st.composite
def mixed_terms(draw):
    """A Boolean term over integers, an uninterpreted function, bit-vectors and their conversions."""
    f = z3.Function("f", z3.IntSort(), z3.IntSort())
    b = z3.BitVec("b", 8)
    ints = [z3.Int(f"x{i}") for i in range(3)] + [z3.IntVal(draw(st.integers(-4, 4)))]
    for _ in range(draw(st.integers(1, 20))):
        a, c = draw(st.sampled_from(ints)), draw(st.sampled_from(ints))
        ints.append(draw(st.sampled_from([
            a + c, a * c, a - c, -a, a / 4, a % 3, f(a), z3.If(a <= c, a, c),
            z3.BV2Int(z3.Int2BV(a, 8) ^ b), z3.BV2Int(z3.Extract(3, 0, b) & z3.Int2BV(c, 4)),
            z3.BV2Int(z3.Concat(z3.Extract(1, 0, b), z3.BitVecVal(3, 2)))])))
    atoms = [draw(st.sampled_from(ints)) < draw(st.sampled_from(ints)) for _ in range(draw(st.integers(1, 4)))]
    atoms += [z3.Not(atoms[0]), z3.BoolVal(draw(st.booleans())), z3.ULT(b, 3)]
    return z3.And(*atoms) if draw(st.booleans()) else z3.Or(*atoms)


@native
@settings(max_examples=examples(300), deadline=None)
@given(mixed_terms())
def test_the_c_dag_is_the_python_dag_node_for_node_in_its_order(term):
    from tilecheck.verifier.solver import term_dag

    root, nodes = term_dag.dag(term)
    expected_root, expected = term_dag._python_dag(term)
    assert root == expected_root and list(nodes.items()) == list(expected.items())


@st.composite
def nested_conjunctions(draw):
    """Conjunctions nested a few deep over comparisons, some subterms shared between them, and a
    set of ids ("shared" conjuncts) a flattening keeps whole."""
    xs = z3.Ints("x0 x1 x2")
    atoms = [draw(st.sampled_from(xs)) < draw(st.integers(-2, 2)) for _ in range(4)]

    def conj(depth):
        if depth > 2 or draw(st.booleans()):
            return draw(st.sampled_from(atoms))
        return z3.And(*[conj(depth + 1) for _ in range(draw(st.integers(1, 3)))])
    terms = [conj(0) for _ in range(draw(st.integers(1, 4)))]
    pool = [t for t in terms] + [c for t in terms if z3.is_and(t) for c in t.children()]
    shared = {smt.term_id(t) for t in pool if draw(st.booleans())}
    return terms, shared


@native
@settings(max_examples=examples(300), deadline=None)
@given(nested_conjunctions())
def test_the_c_flattening_of_conjunctions_is_the_python_one_in_its_order(case):
    terms, shared = case
    expected = [(smt.term_id(t), key) for t, key in smt._python_conjuncts(terms, shared)]
    found = z3walk.conjuncts(terms, sorted(shared))
    ids = [(smt.term_id(smt._expr(p, terms)), key) for p, key in found]
    assert ids == expected and all(i == key for i, key in ids)
