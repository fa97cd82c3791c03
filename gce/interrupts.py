"""Ctrl-C (SIGINT) on the command line: stop at once, except while a ledger commits.

The ``gce`` command (its console script and ``python -m gce``: :func:`gce.__main__.main`, before it imports
anything heavy) installs :func:`install`'s handler. A Ctrl-C then raises ``KeyboardInterrupt`` in the main thread wherever
it is (reading a file, a DuckDB query, a search), and the command turns it into exit status 130 and one line
on standard error, ``gce: interrupted``. Inside an ``import`` it waits until the import is done: an extension
module interrupted while it initialises may abort the whole process (DuckDB's nanobind: "Critical nanobind
error", SIGABRT) or fail to import with an ``ImportError``. Three kinds of section change when it is raised:

- :func:`deferred`, around what must not be cut in the middle (starting and stopping DuckDB's worker:
  :func:`gce.constraints.tables._guarded`): a Ctrl-C that arrives inside waits until the section ends.
- :func:`committing`, around a ledger's ``COMMIT`` (:meth:`gce.ledger.store.Store.transaction`): deferred,
  so a transaction is either rolled back (the Ctrl-C came before the section: nothing was recorded) or
  committed, and the interruption is raised after it.
- :func:`until_reported`, around a call whose commit the caller must report (``gce ledger spend`` and
  ``truncate``): once a :func:`committing` section has begun inside it, a Ctrl-C waits until this section
  ends too, so the caller holds the committed result (the entry's number, the answer) before
  ``KeyboardInterrupt`` is raised and can say what was recorded. Before the commit, a Ctrl-C is raised at
  once (a search is never waited for).

:func:`stop` says that the command is ending (it has its answer or its error line): later Ctrl-Cs are
ignored, so that the one line it writes is never followed by a second. An interruption that Python could
not raise where the handler ran (inside a ``__del__`` or a callback: "Exception ignored in ...") is not
printed but raised again at the next opportunity.

SIGTERM (``kill``, a job scheduler's stop) is handled as a Ctrl-C while its action is the default one: the
same line and status, a commit finished first.

What must never change: without :func:`install` (a script, a notebook, a test, another thread), every
function here is a no-op and Ctrl-C is Python's own; the library never installs a signal handler by itself,
and :func:`install` never replaces a handler that is not Python's default (an ignored SIGINT stays ignored).
Only the standard library is imported here: ``python -m gce`` installs the handler before numpy is imported.
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["install", "uninstall", "installed", "stop", "check", "deferred", "committing", "until_reported"]


class _State:
    """The handler's state (main thread only: signal handlers run there)."""

    def __init__(self) -> None:
        self.installed = False
        self.stopped = False  # the command is ending: a Ctrl-C is ignored
        self.pending = False  # a Ctrl-C waits for the end of a section
        self.after_import = False  # a Ctrl-C came inside an import and has not been raised yet
        self.term = False  # SIGTERM is handled as SIGINT (it had its default action: ending the process)
        self.holding = 0  # deferred() sections open
        self.reporting = 0  # until_reported() sections open
        self.sticky = False  # a commit began inside an until_reported() section: hold until it ends
        self.in_hook = False  # _unraisable() is running
        self.unraisable: Any = None  # the sys.unraisablehook that was there before install()


_state = _State()


def _handler(signum: int, frame: object) -> None:
    if _state.stopped:
        return
    if _state.holding or _state.sticky:
        _state.pending = True
        return
    if _state.in_hook:  # raised here, it would be lost again: once the hook has returned
        _redeliver(0.001)
        return
    if _importing(frame):  # an extension module's initialisation may abort on it: once the import is done
        _state.after_import = True
        _redeliver(_IMPORT_RETRY)
        return
    _state.after_import = False
    raise KeyboardInterrupt


#: Seconds between two looks at whether the import that a Ctrl-C arrived in has finished.
_IMPORT_RETRY = 0.005
_IMPORTLIB = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")


def _importing(frame: Any) -> bool:
    """Whether the main thread is inside an ``import`` (importlib's frames on its stack)."""
    while frame is not None:
        if frame.f_code.co_filename in _IMPORTLIB:
            return True
        frame = frame.f_back
    return False


def _redeliver(seconds: float) -> None:
    """Trip SIGINT again from another thread ``seconds`` later, so that the main thread runs the handler at
    its next check then, in the code it is running then. (Some never came in time: the command answered as if
    no Ctrl-C had come; :func:`check` raises what is still owed before the answer is written.)"""
    timer = threading.Timer(seconds, _thread.interrupt_main, (signal.SIGINT,))
    timer.daemon = True
    timer.start()


def check() -> None:
    """Raise the Ctrl-C that came inside an import and was not raised since (its redelivery not run yet):
    the command calls it before it writes its answer. A no-op unless :func:`install` ran, off the main
    thread, inside a section that holds Ctrl-C, and once the command is ending."""
    if _active() and _state.after_import and not _state.stopped and not _state.holding and not _state.sticky:
        _state.after_import = False
        raise KeyboardInterrupt


def _unraisable(unraisable: Any) -> None:
    """An interruption raised where Python cannot propagate it (``__del__``, a callback) is raised again at
    the next opportunity, silently; every other unraisable exception goes to the previous hook."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and _state.installed:
        if not _state.stopped:
            _state.in_hook = True
            try:
                _redeliver(0.001)
            finally:
                _state.in_hook = False
        return
    (_state.unraisable or sys.__unraisablehook__)(unraisable)


def install() -> bool:
    """Install the command line's SIGINT handler for the rest of the process; True if this call did.

    Nothing is done off the main thread, when it is already installed, or when SIGINT's handler is not
    Python's default (``SIG_IGN`` inherited from the shell, or an embedding program's own)."""
    if _state.installed or threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    signal.signal(signal.SIGINT, _handler)
    _state.__init__()
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:  # ``kill``: ended as a Ctrl-C is (a commit first)
        signal.signal(signal.SIGTERM, _handler)
        _state.term = True
    _state.installed = True
    _state.unraisable = sys.unraisablehook
    sys.unraisablehook = _unraisable
    return True


def uninstall() -> None:
    """Put Python's default SIGINT handler and the previous ``sys.unraisablehook`` back (after a
    :func:`gce.cli.main` called from Python, which installed them for its duration)."""
    if not _state.installed or threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if _state.term:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.unraisablehook is _unraisable:
        sys.unraisablehook = _state.unraisable or sys.__unraisablehook__
    _state.__init__()


def installed() -> bool:
    """Whether :func:`install` put the handler in place (then Ctrl-C follows this module's rules)."""
    return _state.installed


def stop() -> None:
    """The command is ending (its answer, its error or its interruption is being written): a Ctrl-C from
    now on is ignored (``SIG_IGN``, which Python keeps while the interpreter shuts down, where its default
    would kill the process), and one already waiting is dropped."""
    if not _active():
        return
    _state.stopped = True
    _state.pending = False
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if _state.term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _release() -> None:
    if _state.pending and not _state.holding and not _state.sticky and not _state.stopped:
        _state.pending = False
        raise KeyboardInterrupt


def _active() -> bool:
    return _state.installed and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A short section that must not be cut in the middle (stopping an engine, starting its thread): a
    Ctrl-C that arrives inside is raised when it ends. A no-op unless :func:`install` ran, and off the main
    thread."""
    if not _active():
        yield
        return
    _state.holding += 1
    try:
        yield
    finally:
        _state.holding -= 1
        _release()


@contextlib.contextmanager
def committing() -> Iterator[None]:
    """A commit: :func:`deferred`, and inside :func:`until_reported` a Ctrl-C waits until that section ends.
    A no-op unless :func:`install` ran, and off the main thread."""
    if not _active():
        yield
        return
    if _state.reporting:
        _state.sticky = True
    with deferred():
        yield


@contextlib.contextmanager
def until_reported() -> Iterator[None]:
    """A call whose commit the caller must report: from the start of a :func:`committing` section inside,
    a Ctrl-C waits until this section ends. A no-op unless :func:`install` ran, and off the main thread."""
    if not _active():
        yield
        return
    _state.reporting += 1
    try:
        yield
    finally:
        _state.reporting -= 1
        if not _state.reporting:
            _state.sticky = False
            _release()
