"""The CPU runtime: a numpy interpreter of Tile IR, schedules, the differential runner, replay,
and the launcher."""
from tilecheck.runtime.deviceop import DeviceOp, Graph, device_op
from tilecheck.runtime.differential import ArrayDiff, NondeterminismReport, run_repeated
from tilecheck.interp.engine import InterpreterError
from tilecheck.runtime.launcher import (
    AliasingError,
    LaunchWarning,
    OutOfBoundsError,
    RaceError,
    UnverifiedError,
    launch,
)
from tilecheck.runtime.replay import ReplayResult, replay
from tilecheck.interp.schedule import Schedule

__all__ = [
           "AliasingError",
           "ArrayDiff",
           "DeviceOp",
           "Graph",
           "InterpreterError",
           "LaunchWarning",
           "NondeterminismReport",
           "OutOfBoundsError",
           "RaceError",
           "ReplayResult",
           "Schedule",
           "UnverifiedError",
           "device_op",
           "launch",
           "replay",
           "run_repeated",
]
