"""The pytest plugin, tested with pytester."""
import pytest

KERNELS = '''
import numpy as np
import cuda.tile as ct
import tilecheck


def _args():
    return np.arange(256, dtype=np.float32), np.zeros(256, np.float32), 32


@tilecheck.case(grid=(8, 1, 1), args=_args)
@ct.kernel
def copy_ok(src, dst, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(dst, index=(b,), tile=ct.load(src, index=(b,), shape=(T,)))


@tilecheck.case(grid=(8, 1, 1), args=_args)
@ct.kernel
def copy_racy(src, dst, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(dst, index=(b // 2,), tile=ct.load(src, index=(b,), shape=(T,)))
'''


@pytest.fixture
def project(pytester):
    pytester.makepyfile(kernels=KERNELS)
    pytester.syspathinsert()
    return pytester


def test_declared_cases_become_test_items(project):
    project.makepyfile(test_cases="from kernels import copy_ok, copy_racy\n")
    result = project.runpytest_subprocess("--tilecheck", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*copy_ok[[]tilecheck0[]] PASSED*", "*copy_racy[[]tilecheck0[]] FAILED*",
                                 "*write-write*", "*witness: block*"])


def test_no_items_without_the_option(project):
    project.makepyfile(test_cases="from kernels import copy_ok\n\ndef test_nothing():\n    pass\n")
    project.runpytest_subprocess().assert_outcomes(passed=1)


def test_a_suite_that_launched_nothing_is_not_reported_as_checked(project):
    # ops dispatched past the launch paths tilecheck intercepts: the tests pass, and the summary
    # says that no launch was checked rather than saying nothing
    project.makepyfile(test_plain="def test_plain():\n    assert 1 + 1 == 2\n")
    result = project.runpytest_subprocess("--tilecheck-launches", "--tilecheck-backend=cpu", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*tilecheck*", "no kernel launch was checked*"])
    quiet = project.runpytest_subprocess("-p", "no:cacheprovider")  # not asked to check: silent
    assert "no kernel launch was checked" not in quiet.stdout.str()


def test_launches_are_checked_and_run_on_the_cpu(project):
    project.makepyfile(test_launch='''
import numpy as np
import cuda.tile as ct
from kernels import copy_ok, copy_racy, _args

def test_safe_launch_runs_on_cpu():
    src, dst, t = _args()
    ct.launch(None, (8, 1, 1), copy_ok, (src, dst, t))
    assert (dst == src).all()

def test_racy_launch_fails():
    src, dst, t = _args()
    ct.launch(None, (8, 1, 1), copy_racy, (src, dst, t))
''')
    result = project.runpytest_subprocess("--tilecheck-launches", "--tilecheck-backend=cpu")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*RaceError: refusing to launch copy_racy*", "*witness: block*",
                                 "*= tilecheck =*", "*1 kernel launch check(s) verified*"])


def test_race_free_marker_checks_one_test(project):
    project.makepyfile(test_marked='''
import pytest
import cuda.tile as ct
from kernels import copy_racy, copy_ok, _args

@pytest.mark.race_free
def test_marked():
    src, dst, t = _args()
    ct.launch(None, (8, 1, 1), copy_racy, (src, dst, t))

@pytest.mark.race_free
def test_marked_safe():
    src, dst, t = _args()
    ct.launch(None, (8, 1, 1), copy_ok, (src, dst, t))
    assert (dst == src).all()
''')
    result = project.runpytest_subprocess("--tilecheck-backend=cpu", "--strict-markers")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_marked - tilecheck.runtime.launcher.RaceError*"])


def test_assertion_helpers(project):
    project.makepyfile(test_asserts='''
import tilecheck
from kernels import copy_ok, copy_racy, _args

def test_race_free_ok():
    tilecheck.assert_race_free(copy_ok, _args(), (8, 1, 1))

def test_race_free_fails():
    tilecheck.assert_race_free(copy_racy, _args(), (8, 1, 1))

def test_deterministic_fails():
    tilecheck.assert_deterministic(copy_racy, _args(), (8, 1, 1), runs=6)
''')
    result = project.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*AssertionError: race: copy_racy has 1 data race(s)*",
                                 "*AssertionError: copy_racy: NONDETERMINISTIC over 6 runs*"])


def test_unknown_verdicts_are_decided_at_the_launch_and_listed(project):
    project.makepyfile(test_raw='''
import numpy as np
import cuda.tile as ct

@ct.kernel
def raw_copy(x, y, T: ct.Constant[int]):
    # raw pointer offsets: bounds cannot be proved, the verdict is unknown
    b = ct.bid(0)
    t = x.get_raw_memory().load_offset(b * T + ct.arange(T, dtype=ct.int32))
    ct.store(y, index=(b,), tile=t)

def test_raw():
    x, y = np.arange(256, dtype=np.float32), np.zeros(256, np.float32)
    ct.launch(None, (8, 1, 1), raw_copy, (x, y, 32))
    assert (y == x).all()
''')
    result = project.runpytest_subprocess("--tilecheck-launches", "--tilecheck-backend=cpu")
    result.assert_outcomes(passed=1)
    # not verified statically; decided at the launch on its own data (verify's data step), and said so
    result.stdout.fnmatch_lines(["*= tilecheck =*", "*race-free at the launch only (on its own data, or run by "
                                 "tilecheck.detect): test_raw.py::test_raw: raw_copy: the static check could not "
                                 "verify it*; not at this launch: verified on its own contents*"])


# three pytest runs under xdist; the fast tier covers the summary lines of one process
# (test_unknown_verdicts_are_decided_at_the_launch_and_listed) and the merge of verdicts across
# processes through the CLI's -j (tests/cli/test_robustness.py)
@pytest.mark.slow
def test_under_xdist_the_workers_summaries_are_merged(project):
    pytest.importorskip("xdist")
    tests = "\n".join(f'''
def test_copy_{i}():
    src, dst, t = _args()
    ct.launch(None, (8, 1, 1), copy_ok, (src, dst, t))
    assert (dst == src).all()
''' for i in range(4))
    project.makepyfile(test_dist='''
import cuda.tile as ct
from kernels import copy_ok, copy_racy, _args
''' + tests + '''
def test_racy():
    src, dst, t = _args()
    ct.launch(None, (8, 1, 1), copy_racy, (src, dst, t))
''')
    result = project.runpytest_subprocess("-n", "2", "--tilecheck-launches", "--tilecheck-backend=cpu",
                                          "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, failed=1)
    # the controller ran no test: every line below came from the workers
    result.stdout.fnmatch_lines(["*= tilecheck =*", "4 kernel launch check(s) verified",
                                 "1 launch(es) refused (1 race); 0 tilecheck could not check", "copy_ok: 4 verified",
                                 "copy_racy: 1 refused (a race)",
                                 "  refused (a race): test_dist.py::test_racy: refusing to launch copy_racy*"])
    assert "created: 2/2 workers" in result.stdout.str()


def test_unchecked_runs_every_launch_and_verifies_none(project):
    # --tilecheck-unchecked: the baseline a suite's checks are measured against (docs/ci.md)
    project.makepyfile(test_base='''
import cuda.tile as ct
from kernels import copy_ok, copy_racy, _args

def test_copy():
    src, dst, t = _args()
    ct.launch(None, (8, 1, 1), copy_ok, (src, dst, t))
    assert (dst == src).all()

def test_racy_runs_unchecked():
    src, dst, t = _args()
    ct.launch(None, (8, 1, 1), copy_racy, (src, dst, t))
''')
    result = project.runpytest_subprocess("--tilecheck-launches", "--tilecheck-backend=cpu", "--tilecheck-unchecked",
                                          "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*= tilecheck =*", "--tilecheck-unchecked: 2 launch(es) ran on the interpreter, "
                                 "none verified"])
    refused = project.runpytest_subprocess("--tilecheck-launches", "--tilecheck-unchecked", "-p", "no:cacheprovider")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR  # the GPU backend has no unchecked mode


UNKNOWN_ON_DEVICE = '''
import numpy as np
import cuda.tile as ct
import conftest
from tilecheck.runtime.cuda import SimulatedDriver, to_device, use_driver

@ct.kernel
def raw_copy(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    t = x.get_raw_memory().load_offset(b * T + ct.arange(T, dtype=ct.int32))
    ct.store(y, index=(b,), tile=t)

def test_unknown_on_device():
    with use_driver(SimulatedDriver(seed=1)) as sim:
        x, y = to_device(sim, np.arange(256, dtype=np.float32)), to_device(sim, np.zeros(256, np.float32))
        ct.launch(None, (8, 1, 1), raw_copy, (x, y, 32))
    assert conftest.LAUNCHED == ["raw_copy"]
'''

FAKE_GPU_LAUNCH = '''
import cuda.tile as ct

LAUNCHED = []

def fake_launch(stream, grid, kernel, args):  # no GPU here: the launch the plugin lets through is recorded
    LAUNCHED.append(kernel._pyfunc.__name__)

ct.launch = fake_launch
'''


def test_an_unknown_verdict_is_refused_unless_allowed(pytester):
    pytester.makeconftest(FAKE_GPU_LAUNCH)
    pytester.makepyfile(test_unknown=UNKNOWN_ON_DEVICE)
    refused = pytester.runpytest_subprocess("--tilecheck-launches", "-p", "no:cacheprovider")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(["*UnverifiedError: refusing to launch raw_copy: it could not be verified*",
                                  "*= tilecheck =*", "raw_copy: 1 refused (unknown)",
                                  "  refused (unknown): test_unknown.py::test_unknown_on_device: unknown, not launched (*); "
                                  "allow it with --tilecheck-allow-unknown or ?tool.tilecheck? allow-unknown"])
    allowed = pytester.runpytest_subprocess("--tilecheck-launches", "--tilecheck-allow-unknown",
                                            "-p", "no:cacheprovider")
    allowed.assert_outcomes(passed=1)
    allowed.stdout.fnmatch_lines(["raw_copy: 1 unknown",
                                  "  unknown (not verified; launched: allowed by configuration): "
                                  "test_unknown.py::test_unknown_on_device: raw_copy: *"])
    (pytester.path / "pyproject.toml").write_text(
        '[tool.tilecheck]\nallow-unknown = ["some_other_kernel", "test_unknown.py::raw_copy"]\n')
    by_name = pytester.runpytest_subprocess("--tilecheck-launches", "-p", "no:cacheprovider")
    by_name.assert_outcomes(passed=1)


def test_a_session_without_tilecheck_options_never_reads_its_configuration(pytester):
    (pytester.path / "pyproject.toml").write_text("[tool.tilecheck]\nno-such-key = 1\n")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)



SCATTER = '''
import numpy as np
import cuda.tile as ct
import tilecheck


def _args(duplicate=False):
    idx = np.random.default_rng(0).permutation(64).astype(np.int32)  # distinct rows
    if duplicate:
        idx[40] = idx[1]
    return np.ones((64, 32), np.float32), idx, np.zeros((64, 32), np.float32), 16, 32


@ct.kernel
def scatter(x, idx, out, TM: ct.Constant[int], TD: ct.Constant[int]):
    b = ct.bid(0)
    dst = ct.gather(idx, b * TM + ct.arange(TM, dtype=ct.int32))
    cols = ct.arange(TD, dtype=ct.int32)
    ct.scatter(out, (dst[:, None], cols[None, :]), ct.load(x, index=(b, 0), shape=(TM, TD)))


@tilecheck.requires(tilecheck.distinct("idx"))
@ct.kernel
def scatter_required(x, idx, out, TM: ct.Constant[int], TD: ct.Constant[int]):
    b = ct.bid(0)
    dst = ct.gather(idx, b * TM + ct.arange(TM, dtype=ct.int32))
    cols = ct.arange(TD, dtype=ct.int32)
    ct.scatter(out, (dst[:, None], cols[None, :]), ct.load(x, index=(b, 0), shape=(TM, TD)))


def test_scatter():
    ct.launch(None, (4, 1, 1), scatter, _args())


def test_scatter_duplicate():
    ct.launch(None, (4, 1, 1), scatter, _args(duplicate=True))


def test_scatter_required():
    ct.launch(None, (4, 1, 1), scatter_required, _args())


def test_scatter_required_duplicate():
    ct.launch(None, (4, 1, 1), scatter_required, _args(duplicate=True))
'''
DISTINCT_IDX = "'idx' holds no duplicate values (precondition)"
BROKEN_IDX = "*note: the given 'idx' violates its precondition: value * appears at flat positions 1 and 40"


# four pytest runs; the fast tier covers the same through tilecheck.launch, which the plugin's check calls
# (test_requirements.py: test_launch_honours_the_decorator_and_the_pyproject_table,
# test_the_configured_table_adds_to_the_kernels_own), and the plugin reading the rootdir's pyproject.toml
# (test_an_unknown_verdict_is_refused_unless_allowed)
@pytest.mark.slow
def test_checked_launches_honour_the_pyproject_table_and_the_decorator(pytester):
    pytester.makepyfile(test_scatter=SCATTER)
    options = ("--tilecheck-launches", "--tilecheck-backend=cpu", "-p", "no:cacheprovider")
    # the duplicate launches race whatever is assumed; their reports say what was assumed and broken
    plain = pytester.runpytest_subprocess(*options, "-k", "not required")
    plain.assert_outcomes(passed=1, failed=1)
    assert DISTINCT_IDX not in plain.stdout.str() and "violates its precondition" not in plain.stdout.str()
    required = pytester.runpytest_subprocess(*options, "-k", "required")
    required.assert_outcomes(passed=1, failed=1)
    required.stdout.fnmatch_lines(["*RaceError: refusing to launch scatter_required*", BROKEN_IDX,
                                   f"*assumptions: *{DISTINCT_IDX}*", "*= tilecheck =*",
                                   "scatter_required: 1 verified, 1 refused (*)"])
    (pytester.path / "pyproject.toml").write_text('[tool.tilecheck.assume]\nscatter = ["distinct:idx"]\n')
    table = pytester.runpytest_subprocess(*options, "-k", "not required")
    table.assert_outcomes(passed=1, failed=1)
    table.stdout.fnmatch_lines(["*RaceError: refusing to launch scatter*", BROKEN_IDX,
                                f"*assumptions: *{DISTINCT_IDX}*", "*= tilecheck =*",
                                "scatter: 1 verified, 1 refused (*)"])
    (pytester.path / "pyproject.toml").write_text('[tool.tilecheck.assume]\nscatter = ["distinct"]\n')
    broken = pytester.runpytest_subprocess(*options, "-k", "not required")
    broken.assert_outcomes(failed=2)
    # a configuration tilecheck cannot read is its error, not a verdict on the kernel
    broken.stdout.fnmatch_lines(["*unknown precondition 'distinct'*", "scatter: 2 error"])
