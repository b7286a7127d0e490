"""The reuse oracle of issue 49 (``tests/oracle_reuse.py``) as a hypothesis property over the oracle's
generated kernels: the proof cache warm, as a new process finds it, and after an edit of the kernel's
file, against fresh proofs and the exact detector."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.oracle_kernels import cases, grids
from tests.oracle_relation import load
from tests.oracle_reuse import Question, other_contents, other_layout, trial
from tests.tiers import examples


@st.composite
def reuse_cases(draw):
    base, edit = draw(cases()), draw(cases())
    more = draw(st.lists(st.tuples(grids(), st.sampled_from(["same", "permute", "duplicate", "pad"]),
                                   st.sampled_from(["same", "same", "prefix", "strided", "half"]), st.booleans()),
                         min_size=1, max_size=3))
    return base, edit, more, draw(st.integers(0, 2**31 - 1))


@settings(max_examples=examples(60, fast=4), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=reuse_cases())
def test_a_reused_verdict_says_no_more_than_a_fresh_proof(case, tmp_path_factory):
    base_case, edit_case, more, seed = case
    folder = tmp_path_factory.mktemp("reuse")
    base = load(base_case, folder)
    rng = np.random.default_rng(seed)
    questions = [Question("base", base.args, base.grid, True), Question("base, any contents", base.args, base.grid, False)]
    for n, (grid, how, layout, data) in enumerate(more):
        args = other_layout(other_contents(base.args, how, rng), layout)
        questions.append(Question(f"launch {n}: grid {grid}, contents {how}, layout {layout}, data={data}", args,
                                  grid, data))
    found = trial(base, edit_case.source, questions, folder / "cache")
    assert not found, base_case.source + "\n\n" + "\n\n".join(d.describe() for d in found)
