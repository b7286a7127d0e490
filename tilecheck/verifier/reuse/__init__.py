"""Reuse of proofs: the proof cache on disk and what a launch asks of it before proving."""
