"""Issue 50: the README's main command on a machine without an optional frontend. A Triton entry is
"skipped: needs tilecheck[triton]", never an error, and `tilecheck eval` exits 0 when every decided
entry is right."""
import sys
import textwrap

from tests.cli.conftest import in_this_process


def _corpus(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "tri.py").write_text("import triton\n")
    (tmp_path / "kernels" / "cut.py").write_text(textwrap.dedent("""
        import numpy as np
        import cuda.tile as ct
        import tilecheck

        @tilecheck.case(grid=(4, 1, 1), args=lambda: (np.ones(64, np.float32), np.zeros(64, np.float32), 16))
        @ct.kernel
        def copy(x, y, T: ct.Constant[int]):
            b = ct.bid(0)
            ct.store(y, index=(b,), tile=ct.load(x, index=(b,), shape=(T,)))
        """))
    (tmp_path / "manifest.toml").write_text(textwrap.dedent("""
        [[kernel]]
        file = "kernels/cut.py"
        kernel = "copy"
        expect = "verified"
        kinds = []

        [[kernel]]
        file = "kernels/tri.py"
        kernel = "k"
        expect = "race"
        kinds = ["write-write"]
        """))
    return tmp_path


def test_a_missing_optional_frontend_is_skipped_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "triton", None)  # import triton: ModuleNotFoundError
    out = in_this_process("eval", _corpus(tmp_path), cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "-- skipped   kernels/tri.py::k  (needs tilecheck[triton])" in out.stdout
    assert "1 skipped: needs tilecheck[triton]" in out.stdout
    assert "1 kernels: 0 racy, 1 race-free" in out.stdout


def test_another_missing_module_is_still_an_error(tmp_path):
    corpus = _corpus(tmp_path)
    (corpus / "kernels" / "tri.py").write_text("import no_such_module_here\n")
    out = in_this_process("eval", corpus, cwd=tmp_path)
    assert out.returncode == 1 and "no_such_module_here" in out.stdout
