"""The C term walk (tilecheck/verifier/solver/z3walk.c) is built at install time as an optional
extension: where it cannot be compiled (no C compiler), the install goes on without it and the walks
run in Python, with the same results (docs/architecture.md, "The solver's boundary"). Everything
else about the package is in pyproject.toml."""
from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "tilecheck.verifier.solver._z3walk",
    sources=["tilecheck/verifier/solver/z3walk.c", "tilecheck/verifier/solver/z3walk_module.c"],
    extra_compile_args=["-O2"],
    optional=True,
)])
