import cuda.tile as ct

import tilecheck


@tilecheck.case(grid=(4, 1, 1), args=lambda: (1, 2))  # wrong arguments: not arrays
@ct.kernel
def needs_arrays(x, y):
    ct.store(y, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(4,)))
