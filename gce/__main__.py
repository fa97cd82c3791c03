"""The ``gce`` command's entry point: the console script (``gce = "gce.__main__:main"``) and ``python -m gce``.

This module imports nothing at its top but :mod:`sys` and the interpreter's built-in ``_signal`` (both loaded
before any script runs), so that the one thing the process does before it is importing the package ``gce``
itself (the standard library's ``importlib`` and ``os``, both loaded by then; a millisecond).

- Imported by the ``gce`` console script (pip's wrapper, whose ``__main__`` is a file named ``gce``), it
  notes a Ctrl-C from that moment on instead of letting it raise in the wrapper's own lines (which compile a
  regular expression before they call :func:`main`): :func:`main` then ends as for any Ctrl-C. It does so
  only while SIGINT has Python's default handler (an ignored SIGINT stays ignored), and nothing else that
  imports this module is changed.
- :func:`main` installs the SIGINT handler of :mod:`gce.interrupts` (standard library only) before
  :mod:`gce.cli` and what it imports (argparse, numpy) are loaded, so a Ctrl-C while they load ends as any
  other: ``gce: interrupted`` on standard error and exit status 130, never a traceback.

A Ctrl-C that comes before this module runs is outside any program's reach: before the interpreter installed
its own handler the process is ended by the signal (what a shell shows as status 130, with nothing written);
while the interpreter starts (its standard streams, its ``site`` module) Python reports it itself; and in the
millisecond of ``import gce`` it is Python's ``KeyboardInterrupt``, or, when it falls inside the import
system's module-lock callback (where no exception can propagate), Python's "Exception ignored" report on
standard error, after which the command runs to its answer.
"""

import _signal
import sys

#: Whether a Ctrl-C came between this module's import by the console script and :func:`main`.
_noted = False


def _note(signum: int, frame: object) -> None:
    global _noted
    _noted = True


def _console_script() -> bool:
    """Whether the process is the ``gce`` console script importing this module (not ``python -m gce``, which
    runs it as ``__main__``, and not a program or a test that imports it)."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None) or ""
    name = main_file.replace("\\", "/").rpartition("/")[2]
    return __name__ == "gce.__main__" and name in ("gce", "gce-script.py")


if _console_script() and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _note)


def main() -> None:
    """Run the command line (:func:`gce.cli.main_exit`) with the SIGINT handler installed first; exits."""
    try:
        if _signal.getsignal(_signal.SIGINT) is _note:  # Python's handler back, for gce.interrupts to replace
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        if _noted:
            raise KeyboardInterrupt
        from . import interrupts

        interrupts.install()
        from .cli import main_exit
    except KeyboardInterrupt:  # while the command line loads: the one line, exit status 130
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # ending: a second Ctrl-C must not interrupt the line
        try:
            if sys.stderr is not None:
                sys.stderr.write("gce: interrupted\n")
                sys.stderr.flush()
        except (OSError, ValueError):
            pass
        sys.exit(130)
    main_exit()


if __name__ == "__main__":
    main()
