"""A one-line progress reporter for long runs (calibration loops, large searches).

The reporter rewrites a single line on a terminal (carriage return, then the
line, then "erase to end of line") and says nothing at all when its stream is
not a terminal or when it is quiet: piped output, logs and ``--json`` stay
clean. It is a callable, so any loop that accepts a ``progress`` callback
(e.g. :func:`gce.calibration.calibrate`) can take one, and a context manager that
ends its line on exit.

:class:`Elapsed` is the reporter of commands that have no steps to count
(``gce solve``, ``gce curve``): once the run has lasted :data:`ELAPSED_AFTER`
seconds, a background thread draws the stage it is in and the seconds elapsed,
about once a second, until the command ends. It only shows time; it never
decides anything (docs/design.md, "Same question, same answer").

What must never change: a reporter never writes to a stream whose
``isatty()`` is false, never writes when ``quiet`` is true, and writes no
control characters but its own (carriage return, erase to end of line, the
final newline).

Examples
--------
>>> import io
>>> with Progress(stream=io.StringIO(), label="calibrate") as progress:
...     progress(1, 10, "epsilon 0.5")
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Protocol

from .errors import InvalidParameterError
from .report import terminal_text
from .validation import shown

__all__ = ["Progress", "ProgressCallback", "MIN_INTERVAL", "Elapsed", "ELAPSED_AFTER", "ELAPSED_EVERY"]

#: Seconds between two redraws; calls in between are dropped (the first and the
#: last step of a known total are always drawn).
MIN_INTERVAL = 0.1

#: ANSI "erase to end of line": clears what a longer previous line left behind.
_ERASE = "\x1b[K"


class ProgressCallback(Protocol):
    """What long-running functions accept as ``progress``."""

    def __call__(self, step: int, total: int | None = None, message: str = "") -> None: ...


def _is_tty(stream: IO[str]) -> bool:
    isatty: Callable[[], bool] | None = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (ValueError, OSError):  # a closed stream is not a terminal
        return False


class _TerminalLine:
    """What both reporters share: the stream (``sys.stderr`` unless one was given) and whether they draw."""

    _stream: IO[str] | None
    quiet: bool

    @property
    def stream(self) -> IO[str]:
        """The stream drawn on (``sys.stderr`` unless one was given)."""
        return sys.stderr if self._stream is None else self._stream

    @property
    def active(self) -> bool:
        """Whether anything is drawn: not quiet and the stream is a terminal."""
        return not self.quiet and _is_tty(self.stream)


class Progress(_TerminalLine):
    """Report progress on one updating line of a terminal.

    Parameters
    ----------
    stream : text stream, optional
        Where to write; ``None`` (default) means ``sys.stderr`` at the time of
        each call (so redirection set up later is honoured).
    quiet : bool
        Never write anything.
    label : str
        Printed in front of every line, e.g. ``"calibrate"``.
    min_interval : float
        Seconds between redraws (default :data:`MIN_INTERVAL`); 0 draws every call.

    Examples
    --------
    >>> import io
    >>> class Terminal(io.StringIO):
    ...     def isatty(self):
    ...         return True
    >>> out = Terminal()
    >>> with Progress(stream=out, label="search", min_interval=0) as p:
    ...     p(3, 4, "bisecting")
    >>> out.getvalue()
    '\\rsearch 3/4 (75%) bisecting\\x1b[K\\n'
    """

    def __init__(
        self, stream: IO[str] | None = None, *, quiet: bool = False, label: str = "",
        min_interval: float = MIN_INTERVAL,
    ) -> None:
        if not (isinstance(min_interval, (int, float)) and min_interval >= 0 and math.isfinite(min_interval)):
            raise InvalidParameterError("min_interval", f"must be a finite number >= 0, got {shown(min_interval)}")
        self._stream = stream
        self.quiet = bool(quiet)
        self.label = str(label)
        self.min_interval = float(min_interval)
        self._last_draw = -math.inf
        self._drawn = False

    def line(self, step: int, total: int | None = None, message: str = "") -> str:
        """The text of one progress line; control characters in the label or message are escaped
        (:func:`gce.report.terminal_text`), so only the reporter's own carriage return and erase reach the
        terminal."""
        parts = [terminal_text(self.label)] if self.label else []
        if total:
            parts.append(f"{step}/{total} ({100.0 * step / total:.0f}%)")
        else:
            parts.append(f"step {step}")
        if message:
            parts.append(terminal_text(message))
        return " ".join(parts)

    def __call__(self, step: int, total: int | None = None, message: str = "") -> None:
        """Redraw the line at ``step`` (of ``total``, when known), with ``message``."""
        if not self.active:
            return
        now = time.monotonic()
        last = total is not None and step >= total
        if self._drawn and not last and now - self._last_draw < self.min_interval:
            return
        stream = self.stream
        stream.write("\r" + self.line(step, total, message) + _ERASE)
        stream.flush()
        self._last_draw, self._drawn = now, True

    def close(self) -> None:
        """End the line (a newline) if anything was drawn; idempotent."""
        if self._drawn and self.active:
            self.stream.write("\n")
            self.stream.flush()
        self._drawn = False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


#: Seconds a command runs before :class:`Elapsed` draws its first line (shorter runs stay silent).
ELAPSED_AFTER = 2.0
#: Seconds between two redraws of :class:`Elapsed`.
ELAPSED_EVERY = 1.0


class Elapsed(_TerminalLine):
    """A line ``solve: solving (3 s)`` on a terminal for a command that runs longer than ``after`` seconds.

    A context manager: on entry a daemon thread starts (only when the stream is a terminal and not
    quiet); from ``after`` seconds on it redraws the label, the current :meth:`stage` and the whole
    seconds elapsed every ``every`` seconds; on exit the thread stops and the line is ended. Nothing is
    written otherwise, so standard output and piped standard error are never touched.

    Parameters
    ----------
    label : str
        The command, e.g. ``"curve"``.
    stream : text stream, optional
        Where to draw; ``None`` means ``sys.stderr`` at entry.
    quiet : bool
        Never write anything (``--quiet``, ``--json``).
    after, every : float, optional
        Seconds before the first line and between lines; default (read when the reporter is made)
        :data:`ELAPSED_AFTER` and :data:`ELAPSED_EVERY`.

    Examples
    --------
    >>> import io
    >>> with Elapsed("solve", stream=io.StringIO()) as elapsed:  # not a terminal: silent
    ...     elapsed.stage("solving")
    >>> elapsed.line(3.4)
    'solve: solving (3 s)'
    """

    def __init__(self, label: str, *, stream: IO[str] | None = None, quiet: bool = False,
                 after: float | None = None, every: float | None = None) -> None:
        after = ELAPSED_AFTER if after is None else after
        every = ELAPSED_EVERY if every is None else every
        for name, value in (("after", after), ("every", every)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise InvalidParameterError(name, f"must be a finite number of seconds >= 0, got {shown(value)}")
        self.label = str(label)
        self._stream = stream
        self.quiet = bool(quiet)
        self.after, self.every = float(after), float(every)
        self._stage = ""
        self._started = time.monotonic()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._drawn = False

    def stage(self, name: str) -> None:
        """Say what the command is doing now (shown from the next redraw)."""
        self._stage = str(name)

    def line(self, seconds: float) -> str:
        """The text drawn after ``seconds``: label, stage and whole seconds, control characters escaped."""
        parts = [terminal_text(self.label) + ":"] if self.label else []
        if self._stage:
            parts.append(terminal_text(self._stage))
        parts.append(f"({seconds:.0f} s)")
        return " ".join(parts)

    def _run(self) -> None:
        if self._stopped.wait(self.after):
            return
        while True:
            stream = self.stream
            try:
                stream.write("\r" + self.line(time.monotonic() - self._started) + _ERASE)
                stream.flush()
            except (ValueError, OSError):  # the terminal went away: stop drawing
                return
            self._drawn = True
            if self._stopped.wait(self.every):
                return

    def __enter__(self) -> "Elapsed":
        if self._stream is None:
            self._stream = sys.stderr
        self._started = time.monotonic()
        if self.active:
            self._thread = threading.Thread(target=self._run, name=f"gce {self.label} progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._drawn:
            try:
                self.stream.write("\n")
                self.stream.flush()
            except (ValueError, OSError):
                pass
            self._drawn = False
