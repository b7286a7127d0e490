"""tilecheck: race detection and verification for tile-based GPU kernels."""
from tilecheck.cases import Case, case, cases_of
from tilecheck.errors import TilecheckError

__version__ = "0.1.0"
__all__ = ["Case", "TilecheckError", "case", "cases_of"]
