"""The ``gce`` command (DESIGN.md, "Scenario files and the command line").

    gce solve FILE.toml [--delta D | --epsilon E] [--json] [--time-limit S]

prints the report of :func:`gce.solve.solve`; with ``--json`` one JSON object
(:meth:`gce.report.Report.to_dict`). Bad input, in the file or on the command
line, gives exit status 2 and one line on stderr that names the field; nothing
is written to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import NoReturn

from . import __version__
from .errors import GCEError, InvalidParameterError
from .model import check_target

__all__ = ["main", "main_exit"]

#: Exit status for bad input (the convention of argparse and most Unix tools).
EXIT_USAGE = 2


class _UsageError(Exception):
    """Bad command-line usage; the message is the one line to print."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage dump) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see {self.prog} --help)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gce", description="Differential-privacy guarantees under the generalized "
                                              "composition experiment.")
    parser.add_argument("--version", action="version", version=f"gce {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    solve = commands.add_parser("solve", help="the HDP guarantee of a scenario file",
                                description="Find the worst-case pair of hypotheses and print the HDP "
                                            "guarantee, with the classic answer beside it.")
    solve.add_argument("file", metavar="FILE", help="scenario file (TOML)")
    target = solve.add_mutually_exclusive_group()
    target.add_argument("--delta", type=float, help="report epsilon at this total delta (overrides the file)")
    target.add_argument("--epsilon", type=float, help="report delta at this epsilon (overrides the file)")
    solve.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    solve.add_argument("--time-limit", type=float, default=None, metavar="S",
                       help="seconds a MILP may search before answering with its certified bound")
    solve.set_defaults(run=_solve)
    return parser


def _solve(args: argparse.Namespace) -> str:
    from .scenario import load_scenario
    from .solve import solve
    from .solvers import DEFAULT_TIME_LIMIT

    try:
        check_target(args.delta, args.epsilon)
    except InvalidParameterError as error:
        raise _UsageError(f"--{error.field}: {error.detail}") from None
    if args.time_limit is not None and not args.time_limit > 0:
        raise _UsageError(f"--time-limit: must be > 0, got {args.time_limit!r}")
    scenario = load_scenario(args.file)
    delta, epsilon = args.delta, args.epsilon
    if delta is None and epsilon is None:
        delta, epsilon = scenario.delta, scenario.epsilon
        if delta is None and epsilon is None:
            raise InvalidParameterError(
                "delta", "is missing: give the target in the file (delta = ... or epsilon = ...) "
                         "or on the command line (--delta or --epsilon)")
    report = solve(scenario, delta=delta, epsilon=epsilon,
                   time_limit=DEFAULT_TIME_LIMIT if args.time_limit is None else args.time_limit)
    if args.json:
        return json.dumps(report.to_dict(), indent=2, allow_nan=False)
    return str(report)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    try:
        args = _parser().parse_args(argv)
        output = args.run(args)
    except _UsageError as error:
        print(f"gce: error: {_one_line(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    except GCEError as error:
        where = getattr(args, "file", None)
        prefix = f"{where}: " if where else ""
        print(f"gce: error: {prefix}{_one_line(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("gce: interrupted", file=sys.stderr)
        return 130
    print(output)
    return 0


def main_exit() -> None:  # pragma: no cover - the console-script entry point
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    main_exit()
