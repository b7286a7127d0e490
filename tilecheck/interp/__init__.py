"""Execution of Tile IR on the CPU: the numpy interpreter, schedules, and the exact race detector.

Depends on ``tilecheck.ir`` only (DESIGN §2), so the verifier may run blocks here to confirm a
witness, and the runtime (launcher, differential runner) builds on it.
"""
from tilecheck.interp.detect import detect
from tilecheck.interp.engine import Interpreter, InterpreterError
from tilecheck.interp.memory import ArgumentError
from tilecheck.interp.schedule import Schedule

__all__ = ["ArgumentError", "Interpreter", "InterpreterError", "Schedule", "detect"]
