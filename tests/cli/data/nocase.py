import cuda.tile as ct


@ct.kernel
def undeclared(x):
    ct.store(x, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(4,)))
