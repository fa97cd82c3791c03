"""A one-line progress reporter for long runs (calibration loops, large searches).

The reporter rewrites a single line on a terminal (carriage return, then the
line, then "erase to end of line") and says nothing at all when its stream is
not a terminal or when it is quiet: piped output, logs and ``--json`` stay
clean. It is a callable, so any loop that accepts a ``progress`` callback
(e.g. :func:`gce.calibration.calibrate`) can take one, and a context manager that
ends its line on exit.

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
import time
from collections.abc import Callable
from typing import IO, Protocol

from .errors import InvalidParameterError
from .report import terminal_text

__all__ = ["Progress", "ProgressCallback", "MIN_INTERVAL"]

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


class Progress:
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
            raise InvalidParameterError("min_interval", f"must be a finite number >= 0, got {min_interval!r}")
        self._stream = stream
        self.quiet = bool(quiet)
        self.label = str(label)
        self.min_interval = float(min_interval)
        self._last_draw = -math.inf
        self._drawn = False

    @property
    def stream(self) -> IO[str]:
        """The stream written to (``sys.stderr`` unless one was given)."""
        return sys.stderr if self._stream is None else self._stream

    @property
    def active(self) -> bool:
        """Whether calls write anything: not quiet and the stream is a terminal."""
        return not self.quiet and _is_tty(self.stream)

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
