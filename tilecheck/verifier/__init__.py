"""The Z3-backed verifier: partition disjointness across blocks, token order inside a block."""
from tilecheck.verifier.api import verify
from tilecheck.verifier.preconditions import bounded, distinct, nondecreasing
from tilecheck.report import Finding, Report, Witness

__all__ = ["Finding", "Report", "Witness", "bounded", "distinct", "nondecreasing", "verify"]
