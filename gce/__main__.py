"""The ``gce`` command's entry point: the console script (``gce = "gce.__main__:main"``) and ``python -m gce``.

This module imports nothing at its top but :mod:`sys` (loaded before any script runs), so that the one thing
the process does before :func:`main` is importing the package ``gce`` itself (the standard library's
``importlib`` and ``os``, both loaded by then; a millisecond). :func:`main` installs the SIGINT handler of
:mod:`gce.interrupts` (standard library only) before :mod:`gce.cli` and what it imports (argparse, numpy)
are loaded, so a Ctrl-C while they load ends as any other: ``gce: interrupted`` on standard error and exit
status 130, never a traceback. A Ctrl-C that comes before :func:`main` runs is outside any program's reach:
before the interpreter installed its own handler the process is ended by the signal (what a shell shows as
status 130, with nothing written); while the interpreter imports its ``site`` module Python reports it
itself; and in the millisecond of ``import gce`` it is Python's ``KeyboardInterrupt``.
"""

import sys


def main() -> None:
    """Run the command line (:func:`gce.cli.main_exit`) with the SIGINT handler installed first; exits."""
    try:
        from . import interrupts

        interrupts.install()
        from .cli import main_exit
    except KeyboardInterrupt:  # while the command line loads: the one line, exit status 130
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # ending: a second Ctrl-C must not interrupt the line
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
