"""tilecheck: race detection and verification for tile-based GPU kernels."""
from tilecheck.assertions import assert_deterministic, assert_race_free
from tilecheck.cases import Case, case, cases_of
from tilecheck.errors import TilecheckError
from tilecheck.interp.detect import detect
from tilecheck.requirements import requires
from tilecheck.runtime.picture import Picture, picture
from tilecheck.runtime import (
    AliasingError,
    DeviceOp,
    LaunchWarning,
    NondeterminismReport,
    OutOfBoundsError,
    RaceError,
    Schedule,
    UnverifiedError,
    device_op,
    launch,
    replay,
    run_repeated,
)
from tilecheck.verifier import Finding, Report, Witness, bounded, distinct, nondecreasing, verify
from tilecheck.version import __version__

__all__ = [
    "AliasingError",
    "Case",
    "DeviceOp",
    "Finding",
    "LaunchWarning",
    "NondeterminismReport",
    "OutOfBoundsError",
    "Picture",
    "RaceError",
    "Report",
    "Schedule",
    "TilecheckError",
    "UnverifiedError",
    "Witness",
    "assert_deterministic",
    "assert_race_free",
    "bounded",
    "case",
    "cases_of",
    "detect",
    "device_op",
    "distinct",
    "launch",
    "nondecreasing",
    "picture",
    "replay",
    "requires",
    "run_repeated",
    "verify",
]
