import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.fuzz_inputs import run_main
from tests.conftest import ROOT


def in_a_subprocess(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    """``tilecheck ARGS`` as a user runs it: a new interpreter."""
    return subprocess.run([sys.executable, "-m", "tilecheck", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, check=False)


def in_this_process(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    """``tilecheck ARGS`` as ``tilecheck.cli.main`` answers it in this process (in ``cwd``, with stdout
    and stderr captured): the same status and output, without an interpreter's start."""
    argv = [str(a) for a in args]
    status, out, err = run_main(argv, Path(cwd))
    assert not isinstance(status, BaseException), f"{type(status).__name__} escaped main: {status}"
    return subprocess.CompletedProcess(argv, status, out, err)


@pytest.fixture(params=["in-process", pytest.param("subprocess", marks=pytest.mark.slow)])
def run_cli(request):
    """Runs the command line for a probe of what it answers (exit status and messages), where the
    process itself is not the subject: ``cli.main`` in this process in the fast tier (a new
    interpreter spends two seconds on imports), and a real subprocess in the thorough tier. The probes
    of the process itself (streams, signals, pipes, exit codes of ``python -m tilecheck``) always run
    a subprocess."""
    return in_this_process if request.param == "in-process" else in_a_subprocess
