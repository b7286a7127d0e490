"""Issue 23: the exit status never lies, whatever happens to the streams, the signals, the paths and
the configuration. Each test runs the real command line (a subprocess, where the streams or signals
matter; else ``run_cli``, tests/cli/conftest.py) and asserts the status the verdict demands: a race is
never 0.
"""
import errno
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from tests.tiers import examples, slow_unless

HEADER = "import cuda.tile as ct\nimport numpy as np\n\nimport tilecheck\n"
CASE = "@tilecheck.case(grid=(4, 1, 1), args=lambda: (np.ones(16, np.float32), np.zeros(16, np.float32)))\n"
RACY = HEADER + CASE + '''@ct.kernel
def racy_copy(x, y):
    ct.store(y, index=(0,), tile=ct.load(x, index=(ct.bid(0),), shape=(4,)))
'''
SAFE = HEADER + CASE + '''@ct.kernel
def good_copy(x, y):
    ct.store(y, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(4,)))
'''


def tilecheck(*args, cwd, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "tilecheck", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, check=False, env=env, **kw)


def _write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# ---- streams ---------------------------------------------------------------------------------------
def _close(fd):
    return lambda: os.close(fd)


@pytest.mark.parametrize("command", [["verify", "racy.py", "-j", "1"], ["run", "racy.py::racy_copy", "--repeat", "3"]])
def test_a_broken_pipe_keeps_the_race_status(tmp_path, command):
    """`tilecheck verify racy.py | head -1` with a reader that has gone: exit 1, not 0."""
    _write(tmp_path, "racy.py", RACY)
    proc = subprocess.Popen([sys.executable, "-m", "tilecheck", *command], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read().decode()
    assert proc.wait(120) == 1, err
    assert "Traceback" not in err
    assert "stdout was lost (Broken pipe)" in err


def _closed_streams():
    """Each command with stdout (1) or stderr (2) closed. The fast tier closes stdout under verify -j 2
    and stderr under run; the other combinations are slow (for verify -j 1, the property below closes
    either stream before the start, as `>&-` leaves it: None)."""
    commands = {"verify-j1": ["verify", "racy.py", "-j", "1"], "verify-j2": ["verify", "racy.py", "-j", "2"],
                "run": ["run", "racy.py::racy_copy", "--repeat", "3"]}
    fast = {("verify-j2", 1), ("run", 2)}
    return [pytest.param(fd, command, id=f"{name}-fd{fd}", marks=slow_unless((name, fd) in fast))
            for name, command in commands.items() for fd in (1, 2)]


@pytest.mark.parametrize("fd, command", _closed_streams())
def test_a_closed_stream_keeps_the_race_status(tmp_path, fd, command):
    """`>&-` and `2>&-`: the output is lost, never the status; no internal error."""
    _write(tmp_path, "racy.py", RACY)
    out = tilecheck(*command, cwd=tmp_path, preexec_fn=_close(fd))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "internal error" not in out.stdout + out.stderr


def test_the_report_file_is_written_with_stdout_closed(tmp_path):
    _write(tmp_path, "racy.py", RACY)
    out = tilecheck("verify", "racy.py", "-j", "1", "--format", "json", "-o", "report.json", cwd=tmp_path,
                    preexec_fn=_close(1))
    assert out.returncode == 1
    assert json.loads((tmp_path / "report.json").read_text())["summary"]["race"] == 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_an_unwritable_report_file_is_exit_3_naming_it(tmp_path, run_cli):
    _write(tmp_path, "good.py", SAFE)
    out = run_cli("verify", "good.py", "-j", "1", "-o", "/dev/full", cwd=tmp_path)
    assert out.returncode == 3
    assert "cannot write the report to /dev/full: No space left on device" in out.stderr


# ---- signals ---------------------------------------------------------------------------------------
def test_sigterm_stops_verify_like_ctrl_c_and_reaps_the_workers(tmp_path):
    """The process a CI runner cancels: exit 143, the summary of what finished on stderr, and no
    worker left holding stdout and stderr open (reading them to EOF returns)."""
    for n in range(6):
        _write(tmp_path, f"k{n}.py", RACY.replace("racy_copy", f"racy_{n}") + SAFE.replace("good_copy", f"good_{n}")
               .replace(HEADER, ""))
    # A case whose arguments take minutes to build holds one worker, so the run cannot finish before
    # the signal on a fast machine (it did on CI: exit 1, the races' status, and nothing to test).
    _write(tmp_path, "slow.py", HEADER.replace("import cuda", "import time\nimport cuda")
           + CASE.replace("np.ones(16, np.float32)", "time.sleep(600) or np.ones(16, np.float32)")
           + SAFE.split(CASE)[1].replace("good_copy", "slow_copy"))
    proc = subprocess.Popen([sys.executable, "-m", "tilecheck", "verify", ".", "-j", "2"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until the workers exist
        children = subprocess.run(["ps", "--ppid", str(proc.pid), "-o", "pid="], capture_output=True, text=True)
        if len(children.stdout.split()) >= 2:
            break
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)  # EOF on both pipes: every worker has exited
    assert proc.returncode == 143, err.decode()
    assert "tilecheck: terminated (SIGTERM):" in err.decode()
    assert "case(s) finished" in err.decode()


# ---- module identity -------------------------------------------------------------------------------
def test_two_files_whose_paths_end_alike_are_two_modules(tmp_path):
    _write(tmp_path, "v1/kernels/ops/copy.py", SAFE)
    _write(tmp_path, "v2/kernels/ops/copy.py", RACY)
    out = tilecheck("verify", "v1", "v2", "-j", "1", "--format", "json", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    found = {(r["file"], r["kernel"], r["status"]) for r in json.loads(out.stdout)["results"]}
    assert found == {(os.path.join("v1", "kernels", "ops", "copy.py"), "good_copy", "verified"),
                     (os.path.join("v2", "kernels", "ops", "copy.py"), "racy_copy", "race")}


def test_a_module_that_changes_directory_at_import_moves_no_later_path(tmp_path):
    _write(tmp_path, "a_wanders.py", "import os\nos.chdir('/')\n" + SAFE)
    _write(tmp_path, "b_racy.py", RACY)
    out = tilecheck("verify", "a_wanders.py", "b_racy.py", "-j", "1", "-o", "report.txt", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    report = (tmp_path / "report.txt").read_text()
    assert "2 kernel case(s): 1 verified, 1 racy" in report


# ---- configuration, one rule -------------------------------------------------------------------------
STALE = {
    "pyproject": ('[tool.tilecheck.assume]\nracy_copy = ["distinct:nope"]\n', RACY,
                  "[tool.tilecheck.assume] racy_copy in "),
    "decorator": (None, RACY.replace("@ct.kernel", "@tilecheck.requires(tilecheck.distinct(\"nope\"))\n@ct.kernel"),
                  "@tilecheck.requires at "),
}


@pytest.mark.parametrize("where", sorted(STALE))
@pytest.mark.parametrize("command", [["verify", "racy.py", "-j", "1"], ["run", "racy.py::racy_copy", "--repeat", "2"],
                                     ["explain", "racy.py::racy_copy"]])
def test_a_stale_precondition_is_exit_3_naming_its_source_under_every_command(tmp_path, where, command,
                                                                              run_cli):
    pyproject, kernel, source = STALE[where]
    if pyproject:
        _write(tmp_path, "pyproject.toml", pyproject)
    _write(tmp_path, "racy.py", kernel)
    out = run_cli(*command, cwd=tmp_path)
    assert out.returncode == 3, out.stdout + out.stderr
    [line] = [x for x in out.stderr.splitlines() if x.startswith("tilecheck: error:")]
    assert source in line and "names 'nope', which is not an array argument of racy_copy (x, y)" in line
    if where == "decorator":
        assert "racy.py:6" in line  # the decorator's line


def test_run_of_a_name_that_is_not_a_kernel_says_so(tmp_path, run_cli):
    _write(tmp_path, "k.py", SAFE + "\nhelper = 42\n")
    out = run_cli("run", "k.py::helper", cwd=tmp_path)
    assert out.returncode == 3
    assert "'helper' is not a kernel but a int" in out.stderr


# ---- machine-readable output -----------------------------------------------------------------------
LOUD = HEADER.replace("import tilecheck\n", "import tilecheck\n\nprint('loading kernels (numpy backend)')\n") + \
    CASE.replace("args=lambda: (", "args=lambda: print('making args') or (") + '''@ct.kernel
def racy_copy(x, y):
    ct.store(y, index=(0,), tile=ct.load(x, index=(ct.bid(0),), shape=(4,)))
'''


# the fast tier runs each format and each jobs count once: json with -j 1, sarif with -j 2
@pytest.mark.parametrize("fmt, jobs", [("json", "1"), pytest.param("json", "2", marks=pytest.mark.slow),
                                       pytest.param("sarif", "1", marks=pytest.mark.slow), ("sarif", "2")])
def test_json_and_sarif_on_stdout_survive_a_module_that_prints(tmp_path, fmt, jobs):
    _write(tmp_path, "loud.py", LOUD)
    _write(tmp_path, "quiet.py", SAFE)
    out = tilecheck("verify", "loud.py", "quiet.py", "-j", jobs, "--format", fmt, cwd=tmp_path)
    assert out.returncode == 1
    json.loads(out.stdout)  # nothing else on stdout
    assert "loading kernels (numpy backend)" in out.stderr and "making args" in out.stderr


# ---- bounded paths ---------------------------------------------------------------------------------
FOREVER = HEADER + CASE + '''@ct.kernel
def forever(x, y):
    i = 0
    while i < 1:
        i = i - 1
    ct.store(y, index=(ct.bid(0) + i + 1,), tile=ct.load(x, index=(ct.bid(0),), shape=(4,)))
'''


def test_run_of_a_loop_that_never_ends_stops_at_its_trip_budget(tmp_path):
    _write(tmp_path, "forever.py", FOREVER)
    out = tilecheck("run", "forever.py::forever", "--repeat", "2", "--max-trips", "300", cwd=tmp_path, timeout=120)
    assert out.returncode == 3
    assert "forever.py:9:4: this 'loop' loop ran 300 trips without ending" in out.stderr


def test_every_cpu_run_has_a_trip_budget_by_default():
    from tilecheck.interp.schedule import LOOP_TRIPS, Schedule

    assert Schedule().max_trips == LOOP_TRIPS and Schedule(seed=3).max_trips == LOOP_TRIPS
    assert Schedule(max_trips=7).max_trips == 7


def test_a_memory_error_under_run_names_the_case(tmp_path, monkeypatch, capsys):
    from tilecheck import cli
    from tilecheck import runtime

    _write(tmp_path, "good.py", SAFE)
    monkeypatch.chdir(tmp_path)

    def exhausted(*a, **k):
        raise MemoryError()

    monkeypatch.setattr(runtime, "run_repeated", exhausted)
    assert cli.main(["run", "good.py::good_copy"]) == 3
    err = capsys.readouterr().err
    assert "tilecheck: error: good.py::good_copy[0]: out of memory (MemoryError)" in err


def test_an_unsupported_heatmap_format_is_a_usage_error_before_the_runs(tmp_path, run_cli):
    _write(tmp_path, "good.py", SAFE)
    out = run_cli("run", "good.py::good_copy", "--heatmap", "x.jpg2", cwd=tmp_path)
    assert out.returncode == 3
    assert "'.jpg2' is not an image format" in out.stderr and "internal error" not in out.stderr
    assert "runs" not in out.stdout  # refused before running


@pytest.mark.parametrize("shard, message", [("[]", "report 1 is a JSON list"),
                                            ('{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": '
                                             '"tilecheck"}}, "results": null}]}', "'results' is null, not a list")])
def test_merge_of_a_corrupt_shard_is_exit_3_naming_it(tmp_path, shard, message, run_cli):
    _write(tmp_path, "a.json", shard)
    _write(tmp_path, "b.json", shard)
    out = run_cli("merge", "a.json", "b.json", cwd=tmp_path)
    assert out.returncode == 3
    assert message in out.stderr and "internal error" not in out.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="file names are bytes on Linux")
def test_a_non_utf8_file_name_costs_only_its_own_cases(tmp_path):
    folder = os.fsencode(tmp_path)
    with open(os.path.join(folder, b"k\xff.py"), "w") as f:
        f.write(SAFE)
    _write(tmp_path, "racy.py", RACY)
    out = tilecheck("verify", ".", "-j", "1", cwd=tmp_path, env=os.environ | {"PYTHONIOENCODING": "utf-8"})
    assert out.returncode == 3  # the file cuTile cannot compile is an error; the race is still reported
    assert "internal error" not in out.stderr
    assert "race" in out.stdout and "racy_copy" in out.stdout
    assert "is not valid UTF-8 (rename the file)" in out.stderr


# ---- the property: whatever the streams, the status is the verdict's ----------------------------------
class _Stream(io.TextIOBase):
    """stdout or stderr in some state: working, or failing with ``exc`` after ``room`` characters."""

    def __init__(self, room, exc):
        super().__init__()
        self.room, self.exc, self.text = room, exc, []

    def writable(self):
        return True

    def write(self, text):
        if self.exc is not None and sum(map(len, self.text)) + len(text) > self.room:
            raise self.exc
        self.text.append(text)
        return len(text)

    def flush(self):
        if self.exc is not None and self.room == 0:
            raise self.exc


STREAMS = st.one_of(
    st.just(None),  # closed before the process started (`>&-`): sys.stdout is None
    st.builds(_Stream, st.integers(0, 400), st.sampled_from([
        None, BrokenPipeError(errno.EPIPE, "Broken pipe"), OSError(errno.EBADF, "Bad file descriptor"),
        OSError(errno.ENOSPC, "No space left on device"), OSError(errno.EIO, "Input/output error"),
        ValueError("I/O operation on closed file.")])))
VERDICT_FILES = {
    "race": ("racy.py", RACY),
    "verified": ("good.py", SAFE),
    "unknown": ("unknown.tileir", (ROOT / "tests" / "cli" / "data" / "unknown_kernel.tileir").read_text()),
    "error": ("broken.py", "raise RuntimeError('at import')\n"),
}
_PROPERTY_DIR = Path(tempfile.mkdtemp(prefix="tilecheck-exit-"))
for _name, _text in VERDICT_FILES.values():
    (_PROPERTY_DIR / _name).write_text(_text)


def _demanded(verdicts, allow_unknown):
    if "error" in verdicts:
        return 3
    if "race" in verdicts:
        return 1
    return 2 if "unknown" in verdicts and not allow_unknown else 0


@settings(max_examples=examples(30), deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(verdicts=st.lists(st.sampled_from(sorted(VERDICT_FILES)), min_size=1, max_size=3, unique=True),
       fmt=st.sampled_from(["text", "json", "sarif"]), to_file=st.booleans(), allow_unknown=st.booleans(),
       stdout=STREAMS, stderr=STREAMS)
def test_the_exit_status_is_the_verdicts_whatever_the_streams(verdicts, fmt, to_file, allow_unknown, stdout, stderr):
    from tilecheck import cli

    argv = ["verify", *[VERDICT_FILES[v][0] for v in verdicts], "-j", "1", "--format", fmt]
    argv += ["-o", "report.out"] * to_file + ["--allow-unknown"] * allow_unknown
    cwd = os.getcwd()
    saved = sys.stdout, sys.stderr
    os.chdir(_PROPERTY_DIR)
    sys.stdout, sys.stderr = stdout, stderr
    try:
        status = cli.main(argv)
    finally:
        sys.stdout, sys.stderr = saved
        os.chdir(cwd)
    assert status == _demanded(verdicts, allow_unknown), (argv, stdout, stderr)
    written = "".join(stdout.text) if isinstance(stdout, _Stream) and stdout.exc is None else None
    if written is not None and not to_file and fmt != "text":
        json.loads(written)  # a stream that works gets the whole report, and nothing else


def test_a_sigterm_that_lands_in_a_finalizer_is_delivered_again(capsys):
    """A signal's exception raised inside a finalizer cannot propagate: Python prints it ("Exception
    ignored in ...", a traceback) and goes on. Under tilecheck the signal comes again instead."""
    from tilecheck.console import Terminated, sigterm_as_interrupt

    class Finalized:
        def __del__(self):  # SIGTERM arrives while this finalizer runs: its handler raises in here
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                pass

    with pytest.raises(Terminated):
        with sigterm_as_interrupt():
            Finalized()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:  # the redelivered signal stops the main thread here
                pass
    assert "Exception ignored" not in capsys.readouterr().err


def test_a_negative_seed_is_a_usage_error(tmp_path, run_cli):
    _write(tmp_path, "good.py", SAFE)
    out = run_cli("run", "good.py::good_copy", "--seed", "-1", cwd=tmp_path)
    assert out.returncode == 3 and "expected an integer >= 0" in out.stderr
