"""What a proof may assume and what it covers: levels (the shapes, grid and rules a query assumes),
the user's preconditions, contracts over the grid and contracts over the shapes."""
