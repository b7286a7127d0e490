"""Fuzzing the command line in-process (issue 14): argument vectors and file contents.

Whatever the input: no traceback (without --debug), no exception out of ``main``, an exit status
of 0-3, and exit 1 only with a race in the output. A few hundred examples here; scripts/fuzz_cli.py
runs the same inputs for as long as one likes.
"""
import itertools
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli import fuzz_inputs as F
from tests.tiers import examples

_FOLDERS = Path(tempfile.mkdtemp(prefix="tilecheck-fuzz-"))
_COUNT = itertools.count()

PROJECTS = st.builds(lambda k, t, b, p: F.Project(Path(), k, t, b, p),
                     F.kernel_file(), F.tileir_text(), F.tileir_bytes(), F.PYPROJECTS)


@settings(max_examples=examples(150), deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(project=PROJECTS, args=F.argv())
def test_the_cli_never_crashes_and_exits_1_only_for_a_race(project, args):
    folder = _FOLDERS / str(next(_COUNT))  # a new path each time: imported modules are cached by path
    F.write_project(folder, project)
    args = F.resolve(args, folder)
    status, out, err = F.run_main(args, folder)
    assert not F.problems(args, status, out, err, folder), (args, status, out[-3000:], err[-3000:])


@settings(max_examples=examples(120), deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(project=PROJECTS, command=st.sampled_from([["verify", "D", "-j", "1", "--timeout", "2"],
                                                  ["verify", "D", "-j", "1", "--format", "json", "--grid", "4"],
                                                  ["ir", "D"]]))
def test_every_file_content_is_verified_or_an_error(project, command):
    """The argument vector is sound; only the files vary (every file is collected)."""
    folder = _FOLDERS / str(next(_COUNT))
    F.write_project(folder, project)
    status, out, err = F.run_main(command, folder)
    assert not F.problems(command, status, out, err, folder), (command, status, out[-3000:], err[-3000:])
