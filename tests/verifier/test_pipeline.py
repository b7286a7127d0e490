"""``verify``'s pipeline (docs/architecture.md): each step a function whose result can be looked at
on its own, and the steps composed give what ``verify`` gives."""
import tilecheck
from corpus.kernels import attention, elementwise
from tilecheck.report import LEVELS
from tilecheck.verifier import pipeline, search
from tilecheck.verifier.contracts.levels import EVERY_SHAPE_LEVEL
from tilecheck.verifier.solver import smt
from tilecheck.verifier.steps import Model, Proof


def _case(kernel):
    case = tilecheck.cases_of(kernel)[0]
    return case.make_args(), case.grid


def test_each_step_hands_on_its_typed_result():
    args, grid = _case(elementwise.vector_add)
    with smt.own_context():
        model = pipeline.model_of(elementwise.vector_add, args, ())
        assert isinstance(model, Model) and len(model.fp.accesses) == 3 and not model.locks
        report, kept, broken = pipeline.opened(model, (), args)
        assert report.status == "unknown" and report.assumptions and kept == [] and broken == []
        levels = pipeline.levels_of(model.fp, model.params, args, grid)
        assert [level.label for level in levels] == [LEVELS[1], LEVELS[2], LEVELS[3]]
        every = search.every_shape(model, [], args, grid, True, ())
        assert every.contract.proved  # vector_add is race-free for every shape under its contract
        levels, results = pipeline.after_search(levels, every, contract=False)
        assert [r.level.label for r in results] == [EVERY_SHAPE_LEVEL]
        proof = pipeline.prove_levels(model, levels, results, [], args, grid, searched=True, data_follows=False)
        assert isinstance(proof, Proof) and proof.checker is None  # the search's proof was the answer
        done = pipeline.concluded(report, model, proof, proof.results[-1], (elementwise.vector_add, args, grid),
                                  [], every, None)
    assert done.status == "verified" and done.level == EVERY_SHAPE_LEVEL


def test_the_steps_composed_are_verify():
    for kernel in (elementwise.vector_add, attention.head_permute_swapped, attention.head_permute_safe):
        args, grid = _case(kernel)
        via_steps = pipeline.prove(kernel, args, grid, assume=(), data=True, contract=None)
        public = tilecheck.verify(kernel, args, grid, cache=False)
        assert (via_steps.status, via_steps.level, [f.kind for f in via_steps.findings]) == \
            (public.status, public.level, [f.kind for f in public.findings])
