"""``python -m gce`` runs the command line (:mod:`gce.cli`).

The SIGINT handler of :mod:`gce.interrupts` (standard library only) is installed before :mod:`gce.cli` and
what it imports (numpy, scipy) are loaded, so a Ctrl-C while they load ends as any other: ``gce:
interrupted`` on standard error and exit status 130, never a traceback. (What runs before this file, the
interpreter's start and ``import gce``, is outside its reach: a Ctrl-C there is Python's.)
"""

import sys

try:
    from . import interrupts

    interrupts.install()
    from .cli import main_exit
except KeyboardInterrupt:
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
