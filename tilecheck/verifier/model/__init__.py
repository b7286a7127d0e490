"""The model: symbolic execution of a Tile IR function into access footprints (which elements of
which array each memory op touches, as formulas over block ids, loop variables and lanes)."""
