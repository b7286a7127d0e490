"""Answering the questions: Z3 behind one boundary. Only this package imports z3 (``smt`` is its
face: term constructors, solvers within work limits, results); ``memory`` caps Z3's memory and
names its failures; ``z3walk`` walks terms in C through
Z3's public C API; ``bits`` and ``intervals`` spare a query where arithmetic alone decides it."""
