"""One resource policy for everything that grows with the input: a memory limit and a time budget.

A few bytes of input can ask for gigabytes (10^6 allowed patterns on 2,000 databases as a dense matrix is
16 GB) or for hours (a DuckDB query over a range of 10^10 rows). ``gce`` never finds that out by exhausting
the machine: before it builds something whose size grows with the input, it estimates the bytes and calls
:func:`check_memory`, which refuses with a :class:`~gce.errors.ResourceLimitError` naming the input field,
what would be built, the estimate and the limit. Work that is slow rather than big reads the time left
(:func:`seconds_left`) and stops, or refuses up front with an estimate of the time (:func:`check_time`).

The memory limit, first found wins:

1. :func:`limits` ``(memory=...)`` (the command line's ``--memory-limit``), for the code run inside it;
2. the environment variable ``GCE_MEMORY_LIMIT`` (bytes, or with a unit: ``512MB``, ``2GiB``);
3. :data:`MEMORY_SHARE` of the machine's physical memory (``os.sysconf``), or :data:`FALLBACK_MEMORY`
   when the machine does not say.

The time budget is the one of :func:`limits` ``(time_limit=...)`` (the command's ``--time-limit``, which
covers reading the scenario's data and solving); outside it nothing is timed here and each function
takes its own ``time_limit``.

What must never change: a refusal happens *before* the allocation or the query, and a check never lets
through an estimate above the limit; estimates are of the structure's own size (the Python objects around
it may add a constant share), never of the input's size in the file.

Examples
--------
>>> with limits(memory="100MB"):
...     check_memory("constraints[0].allowed", 8 * 10**5 * 2000, "patterns: 100,000 sets x 2,000 databases "
...                   "as a dense matrix")
Traceback (most recent call last):
...
gce.errors.ResourceLimitError: constraints[0].allowed: patterns: 100,000 sets x 2,000 databases as a dense matrix needs about 1.6 GB, more than the memory limit of 100 MB (--memory-limit)
>>> parse_size("2GiB", "GCE_MEMORY_LIMIT")
2147483648
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator

from .errors import InvalidParameterError, ResourceLimitError
from .validation import is_number, shown

__all__ = ["MEMORY_LIMIT_ENV", "MEMORY_SHARE", "FALLBACK_MEMORY", "MIN_MEMORY_LIMIT", "ENGINE_MEMORY_SHARE",
           "ENGINE_MEMORY_MAX", "TIME_LIMIT_MAX",
           "parse_size", "format_size", "physical_memory", "memory_limit", "engine_memory", "limits",
           "seconds_left", "check_memory", "check_time", "stop_at_deadline", "own_clock", "heap_kept"]

#: The environment variable that sets the memory limit (bytes, or a number with a unit).
MEMORY_LIMIT_ENV = "GCE_MEMORY_LIMIT"
#: The default limit's share of physical memory: the machine is shared (other processes, DuckDB's own).
MEMORY_SHARE = 0.5
#: The default limit when the machine's memory cannot be read (4 GiB).
FALLBACK_MEMORY = 4 * 2**30
#: The smallest limit accepted (1 MB): below it not even the interpreter fits; tests use a few MiB.
MIN_MEMORY_LIMIT = 10**6
#: The share of the limit DuckDB may hold (``SET memory_limit``): it spills to disk beyond it, and the rest is
#: the Python side's (what the engine returns, the solvers).
ENGINE_MEMORY_SHARE = 0.25
#: The smallest memory limit DuckDB is given (its operators need a few pages to run at all).
ENGINE_MEMORY_MIN = 64 * 2**20
#: The largest memory limit DuckDB is given (1 EiB): DuckDB refuses one it cannot represent (2**64 bytes and
#: more: ``Memory value out of range``), and any machine's memory is far below this; a larger limit (say
#: ``GCE_MEMORY_LIMIT=1e30``) is clamped to it, not passed on.
ENGINE_MEMORY_MAX = 2**60
#: The longest time budget :func:`limits` keeps (about 31 years): the clocks it is handed to (an interval timer,
#: a thread's wait) cannot represent 1e300 seconds, so a larger budget is clamped to this one, which no
#: computation reaches.
TIME_LIMIT_MAX = 1e9

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)

#: (bytes, where it came from) set by :func:`limits`; None: the environment or the default.
_memory: contextvars.ContextVar[tuple[int, str] | None] = contextvars.ContextVar("gce_memory", default=None)
#: The ``time.monotonic()`` deadline set by :func:`limits`, and the budget it came from.
_deadline: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar("gce_deadline",
                                                                                        default=None)


def parse_size(value: object, field: str) -> int:
    """A number of bytes: an integer, or a string with an optional unit (kB, MB, GB, KiB, MiB, GiB).

    Raises
    ------
    InvalidParameterError
        Naming ``field`` when the value is not a size or is below :data:`MIN_MEMORY_LIMIT`.

    Examples
    --------
    >>> parse_size("1.5GB", "memory"), parse_size(4096 * 1024, "memory")
    (1500000000, 4194304)
    """
    if isinstance(value, bool):
        raise InvalidParameterError(field, f"must be a number of bytes (e.g. 2GB, 512MiB), got {shown(value)}")
    if isinstance(value, (int, float)):
        number, unit = float(value), ""
    else:
        match = _SIZE.match(str(value))
        if match is None or match.group(2).lower() not in _UNITS:
            raise InvalidParameterError(field, f"must be a number of bytes (e.g. 2GB, 512MiB), got {shown(value)}")
        number, unit = float(match.group(1)), match.group(2).lower()
    size = number * _UNITS[unit]
    if not math.isfinite(size) or size < MIN_MEMORY_LIMIT:
        raise InvalidParameterError(field, f"must be at least {format_size(MIN_MEMORY_LIMIT)}, got {shown(value)}")
    return int(size)


def format_size(size: float) -> str:
    """Bytes for a reader: ``1.6 GB``, ``512 MB``, ``20 kB`` (powers of 1000, two significant digits).

    >>> format_size(1.6e9), format_size(2**20), format_size(12)
    ('1.6 GB', '1 MB', '12 bytes')
    """
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.2g} {unit}" if size / scale < 100 else f"{size / scale:,.0f} {unit}"
    return f"{int(size)} bytes"


def physical_memory() -> int | None:
    """The machine's physical memory in bytes (``os.sysconf``), or None where it cannot be read."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * size if pages > 0 and size > 0 else None


def _limit() -> tuple[int, str]:
    """The memory limit and where it comes from (for the error message)."""
    chosen = _memory.get()
    if chosen is not None:
        return chosen
    text = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if text:
        return parse_size(text, MEMORY_LIMIT_ENV), MEMORY_LIMIT_ENV
    machine = physical_memory()
    if machine is None:
        return FALLBACK_MEMORY, "the default"
    return max(int(MEMORY_SHARE * machine), MIN_MEMORY_LIMIT), f"{MEMORY_SHARE:.0%} of physical memory"


def memory_limit() -> int:
    """The memory limit in bytes (see the module's docstring for where it comes from).

    Raises
    ------
    InvalidParameterError
        Naming ``GCE_MEMORY_LIMIT`` when the environment variable is not a size.
    """
    return _limit()[0]


def engine_memory() -> int:
    """What DuckDB may hold (``SET memory_limit``): :data:`ENGINE_MEMORY_SHARE` of the limit, at least
    :data:`ENGINE_MEMORY_MIN`, at most :data:`ENGINE_MEMORY_MAX` (what DuckDB can represent)."""
    return min(max(int(ENGINE_MEMORY_SHARE * memory_limit()), ENGINE_MEMORY_MIN), ENGINE_MEMORY_MAX)


@contextlib.contextmanager
def limits(*, memory: int | str | None = None, time_limit: float | None = None) -> Iterator[None]:
    """Run the code inside under a memory limit and a time budget (each optional).

    Parameters
    ----------
    memory : int or str, optional
        Bytes, or a size with a unit (``"2GB"``); overrides ``GCE_MEMORY_LIMIT`` and the default.
    time_limit : float, optional
        Seconds from now that the code inside may take; :func:`seconds_left` counts them down (at most
        :data:`TIME_LIMIT_MAX`: a larger budget is clamped to it).

    Raises
    ------
    InvalidParameterError
        Naming ``memory`` or ``time_limit`` when invalid.
    """
    memory_token = time_token = None
    if memory is not None:
        memory_token = _memory.set((parse_size(memory, "memory"), "--memory-limit"))
    if time_limit is not None:
        if not is_number(time_limit) or not 0 < time_limit < math.inf:
            raise InvalidParameterError("time_limit", f"must be a finite number of seconds > 0, got {shown(time_limit)}")
        budget = min(float(time_limit), TIME_LIMIT_MAX)
        time_token = _deadline.set((time.monotonic() + budget, budget))
    try:
        yield
    finally:
        if time_token is not None:
            _deadline.reset(time_token)
        if memory_token is not None:
            _memory.reset(memory_token)


def seconds_left() -> float | None:
    """Seconds left of the budget of the enclosing :func:`limits` (0 when spent), or None outside one."""
    deadline = _deadline.get()
    return None if deadline is None else max(deadline[0] - time.monotonic(), 0.0)


def time_budget() -> float | None:
    """The whole budget of the enclosing :func:`limits` in seconds, or None outside one."""
    deadline = _deadline.get()
    return None if deadline is None else deadline[1]


def check_memory(field: str, size: float, what: str) -> None:
    """Refuse, before it is built, a structure of ``size`` bytes above the memory limit.

    Parameters
    ----------
    field : str
        The input that asks for it (``"databases"``, ``"constraints[0].allowed"``, ``"--deltas"``).
    size : float
        The estimate in bytes of what is about to be built.
    what : str
        What it is, for the reader: ``"patterns: 10^6 sets x 2,000 databases as a dense matrix"``.

    Raises
    ------
    ResourceLimitError
        ``field: what needs about 16 GB, more than the memory limit of 11 GB (50% of physical memory)``.
    """
    limit, source = _limit()
    if size > limit:
        raise ResourceLimitError(field, f"{what} needs about {format_size(size)}, more than the memory limit of "
                                        f"{format_size(limit)} ({source})")


def check_time(field: str, seconds: float, what: str) -> None:
    """Refuse, before it starts, work estimated at ``seconds`` when more than the budget's time is left.

    Outside :func:`limits` with a time limit, nothing is refused.

    Raises
    ------
    ResourceLimitError
        ``field: what takes about 110 s, more than the 4.2 s left of the time limit (5 s)``.
    """
    left = seconds_left()
    if left is not None and seconds > left:
        raise ResourceLimitError(field, f"{what} takes about {seconds:.3g} s, more than the {left:.2g} s left of "
                                        f"the time limit ({time_budget():.3g} s; --time-limit)")


#: Seconds after the deadline at which :func:`stop_at_deadline` rings: code with a clock of its own (DuckDB's
#: guard) stops first and names what it was doing more precisely.
_ALARM_LATE = 0.25


#: How many :func:`own_clock` sections are running (in the main thread: the alarm's).
_own_clocks = 0


@contextlib.contextmanager
def own_clock() -> Iterator[None]:
    """Code inside keeps the deadline itself (DuckDB's guard): the alarm of :func:`stop_at_deadline` waits
    until it ends, so the error it raises names what it was doing."""
    global _own_clocks
    _own_clocks += 1
    try:
        yield
    finally:
        _own_clocks -= 1


class _OutOfTime(BaseException):
    """Raised by the alarm of :func:`stop_at_deadline` (a BaseException: no ``except Exception`` swallows it)."""


@contextlib.contextmanager
def stop_at_deadline(field: str, what: str) -> Iterator[None]:
    """Stop the Python code inside at the deadline of the enclosing :func:`limits`, with one clear error.

    For work that is slow rather than big and has no clock of its own (parsing a TOML file of 10^6
    patterns: pure Python, about 4 s a megabyte on a loaded machine). An interval timer (``SIGALRM``)
    raises inside the work at the deadline; the code inside must hold nothing that outlives the error
    (the command line's reading of a scenario file). A no-op outside :func:`limits`, off the main
    thread, or where ``signal.setitimer`` does not exist.

    Raises
    ------
    ResourceLimitError
        ``field: what was stopped at the time limit of 5 s (--time-limit)``.
    """
    left = seconds_left()
    if left is None or threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "setitimer"):
        yield
        return

    def ring(signum: int, frame: object) -> None:
        if _own_clocks:  # code that keeps the deadline itself is stopping: let it say why
            signal.setitimer(signal.ITIMER_REAL, _ALARM_LATE)
            return
        raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, ring)
    try:
        signal.setitimer(signal.ITIMER_REAL, left + _ALARM_LATE)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _OutOfTime as alarm:
        if isinstance(alarm.__context__, ResourceLimitError):  # rang while a more precise stop was on its way
            raise alarm.__context__ from None
        raise ResourceLimitError(field, f"{what} was stopped at the time limit of {time_budget():.3g} s "
                                        f"(--time-limit)") from None
    finally:
        signal.signal(signal.SIGALRM, previous)


#: While :func:`heap_kept` runs, glibc's ``malloc`` serves arrays up to this size from its heap (``mallopt``
#: ``M_MMAP_THRESHOLD``) and keeps up to :data:`HEAP_TRIM_BYTES` of freed memory (``M_TRIM_THRESHOLD``).
HEAP_KEPT_BYTES = 2**30
HEAP_TRIM_BYTES = 2**31 - 1
#: Afterwards: the thresholds glibc's own rule reaches once it has freed an array of its largest mapped size
#: (32 MiB on 64-bit machines; the trim threshold twice that), then the freed memory is given back.
HEAP_AFTER_BYTES = (32 * 2**20, 64 * 2**20)
#: ``mallopt``'s parameters (glibc's ``malloc.h``).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: The environment variables by which a user sets glibc's thresholds: then :func:`heap_kept` leaves them alone.
_MALLOC_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")
#: The environment variable by which a user sets numpy's advice of huge pages: then :func:`heap_kept` leaves it.
_HUGEPAGE_ENV = "NUMPY_MADVISE_HUGEPAGE"
_heap_lock = threading.Lock()
_heap_depth = 0
_hugepage_before = None  # (numpy's switch, its state before the outermost section), or None: untouched


def _numpy_multiarray():
    """numpy's ``multiarray`` module, which holds its switch of huge pages (``numpy.core`` before numpy 2)."""
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy 1
        from numpy.core import multiarray
    return multiarray


def _hugepage_switch():
    """numpy's switch of its advice of huge pages (``_set_madvise_hugepage``: it returns the previous state) on
    Linux where the user has not set it (:data:`_HUGEPAGE_ENV`); else None."""
    if not sys.platform.startswith("linux") or _HUGEPAGE_ENV in os.environ:
        return None
    return getattr(_numpy_multiarray(), "_set_madvise_hugepage", None)


def _glibc():
    """The C library where it is glibc and the user has not set its thresholds; else None."""
    if any(name in os.environ for name in _MALLOC_ENV):
        return None
    return _c_library()


@functools.lru_cache(maxsize=1)
def _c_library():
    """The process's C library where it is glibc (musl has ``mallopt``, and it does nothing); else None."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except (OSError, AttributeError):
        return None


@contextlib.contextmanager
def heap_kept() -> Iterator[None]:
    """Large arrays freed inside are kept by the process for the next ones, instead of being given back to the
    system, and numpy does not ask for huge pages; when the outermost of these sections ends, the usual
    thresholds and numpy's advice return and the freed memory is given back (``malloc_trim``). Only the speed
    changes, never a number.

    * glibc's ``malloc`` maps every array above its threshold (at most 32 MiB) afresh and unmaps it when freed,
      so the next one is faulted in page by page again. The grids of random allocation allocate and free arrays
      of tens to hundreds of megabytes thousands of times a computation.
    * numpy advises the kernel to back every array of 4 MiB and more by huge pages (``madvise``
      ``MADV_HUGEPAGE``). Where the kernel's ``transparent_hugepage/defrag`` is ``madvise`` (a common default),
      a page fault in such an array waits for the kernel to compact memory into a huge page, and the advice
      stays on the heap's memory after the array is freed (numpy issue 31590). On the 2-core machine of the
      benchmarks (2026-12) 1 GiB of new memory took 7.7 to 10.7 s to touch with the advice and 0.41 to 0.49 s
      without it; at sigma 2.2, 4 of 22, delta 1e-8, the blocks of two at the grid ratio 1.01 took 3.7 to 3.9 s
      with it (2.2 s with their memory reused) and the bracket 0.94% to 2.93% wide within the default 5 s from
      run to run; without it 0.94% in 4.0 s.
    * Both together: 40 rounds of two operations on arrays of 27 MB took 0.87 to 0.96 s as numpy and glibc do by
      default, 1.33 s without huge pages, 0.69 s with the heap kept, and 0.28 to 0.34 s with both.

    A no-op off Linux; the thresholds are left where the C library is not glibc or the user set them
    (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``, ``GLIBC_TUNABLES``), numpy's advice where the user
    set it (``NUMPY_MADVISE_HUGEPAGE``). Nested and threaded sections count as one.

    Examples
    --------
    >>> import numpy as np
    >>> with heap_kept():
    ...     float(np.ones(2**24).sum())
    16777216.0
    """
    global _heap_depth, _hugepage_before
    libc, hugepage = _glibc(), _hugepage_switch()
    if libc is None and hugepage is None:
        yield
        return
    with _heap_lock:
        if _heap_depth == 0:
            if libc is not None:
                libc.mallopt(_M_MMAP_THRESHOLD, HEAP_KEPT_BYTES)
                libc.mallopt(_M_TRIM_THRESHOLD, HEAP_TRIM_BYTES)
            if hugepage is not None:
                _hugepage_before = (hugepage, bool(hugepage(False)))
        _heap_depth += 1
    try:
        yield
    finally:
        with _heap_lock:
            _heap_depth -= 1
            if _heap_depth == 0:
                if _hugepage_before is not None:
                    switch, state = _hugepage_before
                    switch(state)
                    _hugepage_before = None
                if libc is not None:
                    libc.mallopt(_M_MMAP_THRESHOLD, HEAP_AFTER_BYTES[0])
                    libc.mallopt(_M_TRIM_THRESHOLD, HEAP_AFTER_BYTES[1])
                    libc.malloc_trim(0)
