"""The given case: what a concrete launch (shapes, strides, scalars, grid, small index arrays) lets a
query decide, by pinning contents or by enumerating the blocks' tiles."""
