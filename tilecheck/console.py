"""The command line's hold on its process: standard streams that cannot change the exit status,
and SIGTERM handled like Ctrl-C.

In CI the exit status is the verdict, so nothing that happens to the streams may change it: a
reader that went away (``tilecheck verify | head -1``), a stream closed at start (``>&-``), a full
disk or a file name the terminal's encoding cannot show loses output, never the status.
``guarded_streams`` installs ``GuardedStream`` wrappers over ``sys.stdout``/``sys.stderr`` for the
duration of one command and says afterwards what was lost. ``stdout_to_stderr`` keeps stdout for
the report alone while user code (kernel modules, argument factories) runs.
The exit statuses and ``write_file`` (a report written to a file, or an error naming it) are here
too, for every command.
"""
from __future__ import annotations

import contextlib
import errno
import io
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from tilecheck.errors import TilecheckError

# exit statuses (docs/ci.md): the verdict, whatever happened to the streams
EXIT_OK, EXIT_RACE, EXIT_UNKNOWN, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143, as a shell reports a process ended by SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: a ``KeyboardInterrupt``, so every path that stops cleanly on Ctrl-C (workers
    ended and reaped, the finished summary printed) does the same on a CI runner's cancel."""


class GuardedStream(io.TextIOBase):
    """A text stream whose writes never raise. A write that fails with an ``OSError`` (EPIPE, EBADF,
    ENOSPC, EIO) or on a closed file marks the stream lost and drops it and every later write; a
    character the encoding cannot show is written escaped. ``None`` (a stream closed before the
    process started) is a stream lost from the start."""

    def __init__(self, stream: TextIO | None, name: str) -> None:
        super().__init__()
        self._stream = stream
        self.name = name
        self.lost: str | None = None if stream is not None else "closed when tilecheck started"

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        return "backslashreplace"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.lost is None and self._guard(lambda: self._stream.isatty(), False)  # type: ignore[union-attr]

    def fileno(self) -> int:
        if self.lost is not None or self._stream is None:
            raise io.UnsupportedOperation(f"{self.name} is not available ({self.lost})")
        return self._stream.fileno()

    def write(self, text: str) -> int:
        if self.lost is None:
            self._guard(lambda: self._write(text), None)
        return len(text)

    def flush(self) -> None:
        if self.lost is None:
            self._guard(lambda: self._stream.flush(), None)  # type: ignore[union-attr]

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)  # type: ignore[union-attr]
        except UnicodeEncodeError:  # e.g. a non-UTF-8 file name under PYTHONIOENCODING=utf-8
            encoding = self.encoding
            self._stream.write(text.encode(encoding, "backslashreplace").decode(encoding))  # type: ignore[union-attr]

    def _guard(self, action: Any, default: Any) -> Any:
        try:
            return action()
        except (OSError, ValueError) as exc:  # ValueError: I/O on a closed file
            self._lose(exc)
            return default

    def _lose(self, exc: BaseException) -> None:
        reason = os.strerror(exc.errno) if isinstance(exc, OSError) and exc.errno else str(exc) or type(exc).__name__
        self.lost = reason
        if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
            _silence(self._stream)


def _silence(stream: Any) -> None:
    """Point a stream whose reader has gone at /dev/null, so that the bytes still buffered in it do
    not fail again when the interpreter flushes it on exit (Python would then exit 120)."""
    try:
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


@contextlib.contextmanager
def guarded_streams() -> Iterator[tuple[GuardedStream, GuardedStream]]:
    """``sys.stdout`` and ``sys.stderr`` as ``GuardedStream``s for the duration of the block; the
    originals come back, flushed, afterwards (a failed flush is one more loss, never an error)."""
    saved = sys.stdout, sys.stderr
    out = saved[0] if isinstance(saved[0], GuardedStream) else GuardedStream(saved[0], "stdout")
    err = saved[1] if isinstance(saved[1], GuardedStream) else GuardedStream(saved[1], "stderr")
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        out.flush()
        err.flush()
        sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Whatever user code prints while the block runs goes to stderr: stdout carries the report
    alone, so ``--format json`` or ``sarif`` stays machine-readable."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM raises ``Terminated`` and SIGINT ``KeyboardInterrupt`` in the
    main thread (only the main thread can handle signals; elsewhere this does nothing).

    A signal's exception can land where it cannot propagate: in a finalizer or another callback,
    where Python prints it ("Exception ignored in ...", a traceback) and goes on as if no signal
    had come. Then the signal is sent again, from a helper thread, until one of its exceptions
    propagates (or the block ends). Once a signal has come, the finalizers of objects it cut short
    (a half-built solver context) may fail: those failures are not printed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    state = {"raised": 0, "swallowed": 0, "signum": signal.SIGTERM, "done": False, "resending": False}

    def interrupt(signum: int, frame: Any) -> None:
        state["raised"] += 1
        state["signum"] = signum
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    def resend() -> None:  # while every exception raised so far was swallowed
        while not state["done"] and state["raised"] == state["swallowed"]:
            os.kill(os.getpid(), state["signum"])
            time.sleep(0.02)
        state["resending"] = False

    def unraisable(info: Any) -> None:
        try:
            if isinstance(info.exc_value, KeyboardInterrupt):  # Terminated too: it did not propagate
                state["swallowed"] += 1
                if not state["resending"]:
                    state["resending"] = True
                    threading.Thread(target=resend, daemon=True).start()
            elif not state["raised"]:
                hook(info)
        except KeyboardInterrupt:  # a signal sent again arrived while this hook ran: swallowed as well
            state["swallowed"] += 1

    hook = sys.unraisablehook
    previous = {signum: signal.signal(signum, interrupt) for signum in (signal.SIGTERM, signal.SIGINT)}
    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        state["done"] = True
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sys.unraisablehook = hook


def write_file(path: str | Path, text: str, what: str) -> None:
    """Write ``text`` to ``path``; a ``TilecheckError`` naming the file and ``what`` it was for when
    that fails (a full disk, a folder, no permission): the run's exit status is then 3."""
    try:
        Path(path).write_text(text, encoding="utf-8", errors="backslashreplace")  # e.g. a non-UTF-8 file name
    except OSError as exc:
        raise TilecheckError(f"cannot write {what} to {path}: {exc.strerror or exc}") from None
