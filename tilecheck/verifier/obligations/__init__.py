"""The proof obligations (DESIGN §4): the questions asked of the model, across blocks and inside a
block, under locks and synchronisation; their witnesses, confirmed on the interpreter."""
