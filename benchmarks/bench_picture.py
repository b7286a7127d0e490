"""The picture of the partition (``tilecheck.picture``): time and size for launches up to 2^20
elements, a race-free one (vector add) and a racy one (half of the blocks write their neighbour's
tile too), drawn whole (one cell an element) where that fits and in cells otherwise.

    python benchmarks/bench_picture.py

Each figure is the median of 5 draws in one process (the launch's run on the interpreter included).
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import cuda.tile as ct  # noqa: E402

import tilecheck  # noqa: E402
from benchmarks.timing import median_seconds  # noqa: E402
from corpus.kernels import elementwise  # noqa: E402


@ct.kernel
def neighbour_overwrite(a, c, TILE: ct.Constant[int]):
    """Each block writes its own tile, and even blocks also their right neighbour's: a race."""
    bid = ct.bid(0)
    tile = ct.load(a, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=tile)
    if bid % 2 == 0:
        ct.store(c, index=(bid + 1,), tile=tile * 2.0)


def main() -> int:
    print("| launch | elements | cells drawn | draw (median of 5) | SVG size |")
    print("|---|---|---|---|---|")
    for log2 in (12, 16, 20):
        n, tile = 1 << log2, 1 << max(log2 - 8, 4)
        a, c = np.ones(n, np.float32), np.zeros(n, np.float32)
        for name, kernel, args in (("vector_add", elementwise.vector_add, (a, a, c, tile)),
                                   ("neighbour_overwrite (racy)", neighbour_overwrite, (a, c, tile))):
            grid = (n // tile, 1, 1)
            pic = tilecheck.picture(kernel, args, grid)
            seconds = median_seconds(lambda: tilecheck.picture(kernel, args, grid).svg(), 5)
            cells = pic.panels[-1].owner.size
            print(f"| {name} | 2^{log2} | {cells} | {seconds * 1000:.0f} ms | "
                  f"{len(pic.svg().encode()) / 1024:.0f} KiB |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
