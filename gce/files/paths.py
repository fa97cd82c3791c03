"""What a path is, checked before gce opens it: gce reads and writes regular files only.

A named pipe (FIFO) blocks whoever opens it until its other end is opened (``gce ledger status`` on a FIFO
given as ``--ledger`` waited for ever); a device never ends (``/dev/zero``) or swallows what is written
(``/dev/null``); a folder or a socket cannot be opened as a file at all. So every path gce reads or writes
goes through this module before anything opens it:

- :func:`check_path` for a path another library opens (SQLite opens the ledger, DuckDB the tables and the
  truncated ``--output``, matplotlib the ``--plot``): the path is examined with ``os.stat`` (a symbolic
  link is followed), never opened, and refused when it exists and is not a regular file;
- :func:`open_regular` for a file gce reads itself (the scenario file, a ``from_data`` CSV): the same
  check, then the file is opened without blocking (``O_NONBLOCK``) and the opened descriptor is checked
  again, so what is checked is what is read.

The one exception: the scenario file may be a pipe or a file this process was handed on a descriptor,
named as ``/dev/stdin``, ``/dev/fd/N`` or ``/proc/self/fd/N`` (``gce solve /dev/stdin < s.toml``,
``gce solve <(make-scenario)``): :func:`open_regular` with ``pipes=True`` reads that descriptor itself,
so it never waits for a writer to appear.

The command line names the flag or field in the refusal (``--ledger: 'l' is a named pipe (FIFO), not a
regular file (gce reads only regular files)``); the library raises the caller's error type with its field.
A path that does not exist is left to the caller, which says it in its own words ("no ledger here",
"cannot read ..."); a path gce will create (``--plot``, ``--output``, a new ledger) may not exist yet.

Examples
--------
>>> path_problem(".")
'is a folder, not a regular file (gce reads only regular files)'
>>> path_problem("no/such/file") is None
True
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from typing import BinaryIO

from ..errors import InvalidParameterError
from ..validation import shown

__all__ = ["what_it_is", "path_problem", "check_path", "open_regular", "inherited_descriptor"]

#: The names of a descriptor this process already holds: standard input, /dev/fd/N, /proc/self/fd/N.
_DESCRIPTOR = re.compile(r"^/(?:dev/stdin|dev/fd/(\d+)|proc/self/fd/(\d+))$")


def what_it_is(mode: int) -> str:
    """What a file of this ``st_mode`` is, for a message: ``a folder``, ``a named pipe (FIFO)``, ..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _refusal(mode: int, writing: bool) -> str:
    return f"is {what_it_is(mode)}, not a regular file (gce {'writes' if writing else 'reads'} only regular files)"


def path_problem(path: str | os.PathLike[str], *, writing: bool = False) -> str | None:
    """What is wrong with ``path`` as a file gce reads (``writing``: writes), or None.

    None for a regular file, and for a path ``os.stat`` cannot examine (it does not exist, a NUL character,
    no permission): opening it fails, and the caller says so in its own words. Otherwise the message, e.g.
    ``is a folder, not a regular file (gce reads only regular files)``."""
    try:
        info = os.stat(path)
    except (OSError, ValueError, TypeError):
        return None
    return None if stat.S_ISREG(info.st_mode) else _refusal(info.st_mode, writing)


def _shown(path: str | os.PathLike[str]) -> str:
    return shown(os.fspath(path) if isinstance(path, (str, os.PathLike)) else path, 200)


def _detail(path: str | os.PathLike[str], problem: str, shown: str | None) -> str:
    shown = _shown(path) if shown is None else shown
    return f"{shown} {problem}" if shown else problem


def check_path(path: str | os.PathLike[str], field: str, *, writing: bool = False,
               error: Callable[[str, str], Exception] = InvalidParameterError, shown: str | None = None) -> None:
    """Refuse ``path`` unless it is a regular file or cannot be examined (see :func:`path_problem`).

    ``shown`` names the path in the message (default its ``repr``; ``""`` when ``field`` already names it).

    Raises
    ------
    InvalidParameterError (or ``error(field, detail)``)
        ``field: '/dev/zero' is a device, not a regular file (gce reads only regular files)``.
    """
    problem = path_problem(path, writing=writing)
    if problem is not None:
        raise error(field, _detail(path, problem, shown))


def inherited_descriptor(path: str | os.PathLike[str]) -> int | None:
    """The descriptor ``/dev/stdin``, ``/dev/fd/N`` or ``/proc/self/fd/N`` names, or None."""
    match = _DESCRIPTOR.match(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else None
    if match is None:
        return None
    number = match.group(1) or match.group(2)
    return 0 if number is None else int(number)


def open_regular(path: str | os.PathLike[str], field: str, *, pipes: bool = False,
                 error: Callable[[str, str], Exception] = InvalidParameterError,
                 shown: str | None = None) -> BinaryIO:
    """``path`` opened for binary reading: a regular file (``pipes``: or a pipe or file this process
    holds on the descriptor the path names), checked before and after it is opened, never waited on;
    ``shown`` as in :func:`check_path`.

    Raises
    ------
    InvalidParameterError (or ``error(field, detail)``)
        The path is not a regular file (:func:`check_path`).
    OSError, ValueError
        It cannot be opened (missing, no permission, a NUL character): the caller words it.
    """
    descriptor = inherited_descriptor(path) if pipes else None
    if descriptor is not None:
        try:
            mode = os.fstat(descriptor).st_mode
        except OSError:
            mode = None
        if mode is not None and (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
            return os.fdopen(os.dup(descriptor), "rb")
    check_path(path, field, error=error, shown=shown)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # changed between the check and the open
            raise error(field, _detail(path, _refusal(mode, False), shown))
        if hasattr(os, "O_NONBLOCK"):
            os.set_blocking(fd, True)  # reads of a regular file never block; the flag goes with the check
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")
