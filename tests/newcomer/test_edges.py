"""Issue 50's edges: refusals name what they are, resource limits are read before a run, the Triton
compiler's cause is on the one-line error, and a file name that is not UTF-8 is a clear error with
the proof cache on."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilecheck
from tests.cli.conftest import in_a_subprocess


def test_an_out_of_bounds_refusal_is_an_out_of_bounds_error_and_still_a_race_error():
    from corpus.kernels.inplace import gather_unchecked

    args = (np.ones(1000, np.float32), np.zeros(1000, np.float32), 128)
    with pytest.raises(tilecheck.OutOfBoundsError, match="an access outside its arrays") as refused:
        tilecheck.launch((8, 1, 1), gather_unchecked, args)
    assert isinstance(refused.value, tilecheck.RaceError)  # existing except clauses keep working
    assert refused.value.report.status == "out-of-bounds"


def test_a_race_is_refused_as_a_race_error_only():
    from tests.verifier.test_shape_contract import same_tile

    with pytest.raises(tilecheck.RaceError) as refused:
        tilecheck.launch((2, 1, 1), same_tile, (np.zeros(64, np.float32), 16))
    assert not isinstance(refused.value, tilecheck.OutOfBoundsError)


LIMITED = """
import resource
import numpy as np, cuda.tile as ct, tilecheck
from tilecheck.interp.budget import MemoryBudgetError

@ct.kernel
def copy(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(y, index=(b,), tile=ct.load(x, index=(b,), shape=(T,)))

resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.RLIM_INFINITY))
grid = (1 << 26, 1, 1)  # 64M blocks: about 5 GiB of block ids, more than the 4 GiB the process may map
args = lambda: (np.ones(16, np.float32), np.zeros(16, np.float32), 16)
for name, call in [("detect", lambda: tilecheck.detect(copy, args(), grid)),
                   ("run_repeated", lambda: tilecheck.run_repeated(copy, args(), grid, runs=2)),
                   ("launch", lambda: tilecheck.launch(grid, copy, args(), unsafe=True))]:
    try:
        call()
        print(name, "ran")
    except MemoryBudgetError as exc:
        print(name, "refused:", "GiB is available" in str(exc))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc/self/status")
def test_the_memory_budget_reads_the_address_space_limit(tmp_path):
    script = tmp_path / "limited.py"
    script.write_text(LIMITED)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                         env={"TILECHECK_NO_CACHE": "1", "PATH": "/usr/bin:/bin"})
    assert out.stdout.split("\n")[:3] == ["detect refused: True", "run_repeated refused: True",
                                          "launch refused: True"], out.stdout + out.stderr


BAD_ARANGE = """
import numpy as np
import triton
import triton.language as tl
import tilecheck

@tilecheck.case(grid=(1,), args=lambda: (np.zeros(16, np.float32),))
@triton.jit
def bad_arange(x_ptr):
    offs = tl.arange(0, 10)
    tl.store(x_ptr + offs, offs.to(tl.float32))
"""


def test_the_triton_compilers_cause_is_on_the_one_line_error(tmp_path):
    pytest.importorskip("triton")
    (tmp_path / "bad.py").write_text(textwrap.dedent(BAD_ARANGE))
    out = in_a_subprocess("verify", "bad.py", cwd=tmp_path)
    last = out.stderr.strip().splitlines()[-1]
    assert "Triton could not compile kernel 'bad_arange': arange's range must be a power of 2" in last, out.stderr


def test_a_file_name_that_is_not_utf8_is_a_clear_error_with_the_cache_on(tmp_path):
    source = textwrap.dedent("""
        import numpy as np, cuda.tile as ct, tilecheck

        @tilecheck.case(grid=(4, 1, 1), args=lambda: (np.ones(64, np.float32), np.zeros(64, np.float32), 16))
        @ct.kernel
        def copy(x, y, T: ct.Constant[int]):
            b = ct.bid(0)
            ct.store(y, index=(b,), tile=ct.load(x, index=(b,), shape=(T,)))
        """)
    (tmp_path / "k\udcff.py").write_bytes(source.encode())
    env = {"TILECHECK_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "tilecheck", "verify", "."], cwd=tmp_path, capture_output=True,
                         text=True, errors="surrogateescape", env=env, timeout=300)
    assert "internal error" not in out.stderr
    assert "is not valid UTF-8 (rename the file)" in out.stderr, out.stderr
