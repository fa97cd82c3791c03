"""Accuracy decides the work; the time limit only caps it (docs/design.md, "Same question, same answer").

Every computation that refines (allocation grids, batch-composition grids,
branch and bound, coupling LPs, bisections) follows a deterministic schedule
towards a requested relative accuracy ``rtol``: the same question gives the
same numbers, byte for byte, on any machine and under any load. The clock
enters in one place only, a :class:`Deadline`: before a step that would not
fit in the time left (its cost estimated from the question, not measured),
or when a solver's own time limit stops it, the computation keeps the last
completed step of the same schedule (a certified bracket, sound) and records
the stop on the deadline with :meth:`Deadline.stop`. The report then says
``time limit reached`` and what accuracy was reached.

The clock is injectable (:func:`clock`, :func:`slowed`) so that tests can run
a computation with time passing ten times faster and check that the answer is
the same while the limit is not reached.

Examples
--------
>>> with clock(slowed(10.0)):
...     deadline = Deadline(60.0)
>>> deadline.reached
False
>>> deadline.stop("allocation refinement (bracket 3.2% wide)")
>>> deadline.reached, deadline.stops
(True, ('allocation refinement (bracket 3.2% wide)',))
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time
from collections.abc import Callable, Iterator

from .errors import InvalidParameterError
from .validation import as_float, is_number, shown

__all__ = ["DEFAULT_RTOL", "MIN_RTOL", "MAX_RTOL", "check_rtol", "Deadline", "clock", "slowed", "current",
           "within", "relative_width", "describe_width", "Overdue", "interruptible", "checkpoint"]

#: The accuracy asked for by default: the certified bracket (lower, upper) around every reported number
#: has ``upper / lower - 1`` at most this (:func:`relative_width`: the reported upper end overstates the
#: exact value by at most this share of it), unless the time limit is reached (then the report says so).
DEFAULT_RTOL = 0.01
#: The finest accuracy accepted: below it the grids of the privacy-loss distributions would not fit in
#: memory for most questions, and round-off of the compositions dominates.
MIN_RTOL = 1e-6
#: The coarsest accuracy accepted (an upper end at most 1.5 times the lower).
MAX_RTOL = 0.5

#: The clock every new :class:`Deadline` reads (seconds, any origin).
_clock: contextvars.ContextVar[Callable[[], float]] = contextvars.ContextVar("gce_clock",
                                                                           default=time.perf_counter)
#: Whether the running step may be abandoned at a :func:`checkpoint` once the cap has passed (:func:`interruptible`).
_interruptible: contextvars.ContextVar[bool] = contextvars.ContextVar("gce_effort_interruptible", default=False)
#: The deadline of the computation running in this context (:func:`within`), None outside one.
_current: contextvars.ContextVar["Deadline | None"] = contextvars.ContextVar("gce_effort_deadline", default=None)


def check_rtol(value: object, field: str = "rtol") -> float:
    """A requested relative accuracy: a number in [:data:`MIN_RTOL`, :data:`MAX_RTOL`].

    >>> check_rtol(0.01)
    0.01
    >>> check_rtol(0)
    Traceback (most recent call last):
    ...
    gce.errors.InvalidParameterError: rtol: must be a relative accuracy in [1e-06, 0.5], got 0
    """
    if not is_number(value):
        raise InvalidParameterError(field, f"must be a number (a relative accuracy such as 0.01), got {shown(value)}")
    rtol = as_float(value)
    if not MIN_RTOL <= rtol <= MAX_RTOL:  # NaN fails too
        raise InvalidParameterError(field, f"must be a relative accuracy in [{MIN_RTOL:g}, {MAX_RTOL:g}], "
                                           f"got {shown(value)}")
    return rtol


def relative_width(lower: float, upper: float) -> float:
    """How wide the bracket (lower, upper) is: ``upper / lower - 1``, the most by which the upper end
    (what is reported) can overstate the exact value, as a share of it. 0 when the ends meet (or both are
    infinite); ``inf`` when the lower end is 0 or less (nothing certified above 0) or only the upper end is
    infinite.

    >>> relative_width(1.0, 1.01)
    0.010000000000000009
    >>> relative_width(0.0, 1e-9)
    inf
    """
    if upper <= lower:
        return 0.0
    if not math.isfinite(upper) or lower <= 0.0:
        return math.inf
    return upper / lower - 1.0


def describe_width(width: float | None) -> str:
    """``width`` (:func:`relative_width`) in words for notes and reports: ``"0.42%"``; ``"unbounded"`` when
    infinite."""
    if width is None or not math.isfinite(width):
        return "unbounded"
    return f"{100 * width:.3g}%"


@contextlib.contextmanager
def clock(read: Callable[[], float]) -> Iterator[None]:
    """Deadlines created inside read time from ``read`` (tests: :func:`slowed`)."""
    token = _clock.set(read)
    try:
        yield
    finally:
        _clock.reset(token)


def slowed(factor: float) -> Callable[[], float]:
    """A clock on which time passes ``factor`` times faster than on ``time.perf_counter``: a machine
    ``factor`` times slower, as far as any deadline can tell."""
    origin = time.perf_counter()
    return lambda: origin + factor * (time.perf_counter() - origin)


class Deadline:
    """A time cap on a computation, and the record of where it stopped a step.

    Parameters
    ----------
    seconds : float or None
        The cap; None: no cap (:meth:`left` is infinite, :meth:`fits` always true).

    Nothing but :meth:`fits`, :meth:`left` and :meth:`expired` reads the clock,
    and code that follows the accuracy contract calls them only to decide
    whether to *stop*, never how to refine: an answer that did not stop is the
    same on any machine.
    """

    def __init__(self, seconds: float | None = None) -> None:
        self._read = _clock.get()
        self.seconds = None if seconds is None else float(seconds)
        self.started = self._read()
        self._stops: list[str] = []

    def elapsed(self) -> float:
        """Seconds since the deadline was set, on its clock."""
        return self._read() - self.started

    def left(self) -> float:
        """Seconds left (negative once passed; ``inf`` without a cap)."""
        return math.inf if self.seconds is None else self.seconds - self.elapsed()

    def expired(self) -> bool:
        """Whether the cap has passed."""
        return self.left() <= 0.0

    def fits(self, estimate: float) -> bool:
        """Whether a step estimated at ``estimate`` seconds fits in the time left."""
        return self.seconds is None or estimate <= self.left()

    def stop(self, what: str) -> None:
        """Record that the cap stopped ``what`` (said once, in the report's first line and notes)."""
        if what not in self._stops:
            self._stops.append(what)

    def collecting(self) -> "Deadline":
        """A view with the same clock, start and cap whose stops are its own: the stages of one search
        record theirs there, and the search says them once on this deadline."""
        view = Deadline.__new__(Deadline)
        view._read, view.seconds, view.started, view._stops = self._read, self.seconds, self.started, []
        return view

    @property
    def reached(self) -> bool:
        """Whether the cap stopped any step: the answer is then a coarser (still certified) one."""
        return bool(self._stops)

    @property
    def stops(self) -> tuple[str, ...]:
        """What the cap stopped, in order."""
        return tuple(self._stops)

    def __repr__(self) -> str:
        cap = "no cap" if self.seconds is None else f"{self.seconds:g} s"
        return f"Deadline({cap}, reached={self.reached})"


def current() -> Deadline:
    """The deadline of the running computation (:func:`within`); a new one without a cap outside any."""
    deadline = _current.get()
    return Deadline(None) if deadline is None else deadline


@contextlib.contextmanager
def within(deadline: Deadline) -> Iterator[Deadline]:
    """Run the code inside under ``deadline`` (what :func:`current` returns there)."""
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)


class Overdue(Exception):
    """The cap passed while a step ran (raised by :func:`checkpoint` inside :func:`interruptible` only): the
    caller abandons the step and keeps its last completed one."""


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Inside, :func:`checkpoint` raises :class:`Overdue` once the running computation's cap has passed.

    Estimates decide whether a step starts (:meth:`Deadline.fits`); on a loaded machine a step can take
    several times its estimate, so long steps call :func:`checkpoint` between their parts, and a caller that
    can fall back to its last completed step runs them here: the overrun is then one part, not one step."""
    token = _interruptible.set(True)
    try:
        yield
    finally:
        _interruptible.reset(token)


def checkpoint() -> None:
    """Raise :class:`Overdue` when inside :func:`interruptible` and the cap of :func:`current` has passed."""
    if _interruptible.get():
        deadline = _current.get()
        if deadline is not None and deadline.seconds is not None and deadline.expired():
            raise Overdue
