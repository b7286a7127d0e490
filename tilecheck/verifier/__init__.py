"""The Z3-backed verifier: partition disjointness across blocks, token order inside a block."""
from tilecheck.report import Finding, Report, Witness
from tilecheck.verifier.api import verify
from tilecheck.verifier.contracts.preconditions import bounded, distinct, nondecreasing

__all__ = ["Finding", "Report", "Witness", "bounded", "distinct", "nondecreasing", "verify"]
