"""tilecheck: race detection and verification for tile-based GPU kernels."""
from tilecheck.cases import Case, case, cases_of
from tilecheck.errors import TilecheckError
from tilecheck.verifier import Finding, Report, Witness, bounded, distinct, verify

__version__ = "0.1.0"
__all__ = ["Case", "Finding", "Report", "TilecheckError", "Witness", "bounded", "case", "cases_of", "distinct",
           "verify"]
