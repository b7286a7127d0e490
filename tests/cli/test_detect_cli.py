"""`tilecheck run` and `explain` show what the exact detector finds at the case's launch."""
import textwrap

from tilecheck.cli import main

KERNEL = textwrap.dedent('''
    import numpy as np
    import cuda.tile as ct
    import tilecheck

    @tilecheck.case(grid=(4, 1, 1), args=lambda: (np.arange(16, dtype=np.float32), np.zeros(16, np.float32), 16))
    @ct.kernel
    def same_values(x, y, T: ct.Constant[int]):
        ct.store(y, index=(0,), tile=ct.load(x, index=(0,), shape=(T,)))

    @tilecheck.case(grid=(4, 1, 1), args=lambda: (np.arange(64, dtype=np.float32), np.zeros(64, np.float32), 16))
    @ct.kernel
    def own_tile(x, y, T: ct.Constant[int]):
        b = ct.bid(0)
        ct.store(y, index=(b,), tile=ct.load(x, index=(b,), shape=(T,)))
''')


def test_run_exits_1_for_a_race_the_outputs_cannot_show(tmp_path, capsys):
    path = tmp_path / "k.py"
    path.write_text(KERNEL)
    assert main(["run", f"{path}::same_values", "--repeat", "3"]) == 1
    out = capsys.readouterr().out
    assert "deterministic over 3 runs" in out
    assert "tilecheck.detect, this launch: 1 race(s)" in out and "write-write" in out
    assert "block (0, 0, 0) writes y[0], and block (1, 0, 0) writes it too" in out


def test_run_and_explain_of_a_race_free_launch(tmp_path, capsys):
    path = tmp_path / "k.py"
    path.write_text(KERNEL)
    assert main(["run", f"{path}::own_tile", "--repeat", "3"]) == 0
    assert "no race under any schedule of these arguments" in capsys.readouterr().out
    assert main(["explain", f"{path}::own_tile"]) == 0
    assert "no race under any schedule" in capsys.readouterr().out
