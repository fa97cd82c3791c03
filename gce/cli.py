"""The ``gce`` command (docs/design.md, "Scenario files and the command line").

    gce solve FILE.toml [--delta D | --epsilon E] [--json] [--quiet] [--time-limit S] [--allow-outside-files]
    gce calibrate FILE.toml --target-epsilon E --target-delta D [--json] [--quiet] [--time-limit S]
                  [--allow-outside-files]
    gce calibrate --target-epsilon E --target-delta D --steps-per-epoch T --epochs N --sampling shuffled|poisson
                  [--rtol R] [--json] [--quiet] [--time-limit S]
    gce curve FILE.toml [--deltas D ...] [--plot out.png] [--json] [--quiet] [--time-limit S]
              [--allow-outside-files]
    gce membership TABLE [--query SQL] [--columns I D] [--scenario FILE.toml | --databases N] [--plot out.png]
                   [--json] [--truncate M --seed S --output OUT.parquet]
    gce ledger init FILE.toml --budget-epsilon E [--budget-delta D] [--filter basic|renyi|zcdp|gdp] [--ledger L]
    gce ledger check|spend --databases REFS --mechanism TABLE [--repeat R] [--analyst NAME] [--ledger L] [--json]
    gce ledger status|history [--ledger L] [--json] [--offline] [--limit N]
    gce ledger verify [--ledger L] [--json]
    gce ledger truncate --after N [--ledger L] [--json]

prints the report of :func:`gce.solving.solve`; with ``--json`` one JSON object
(:meth:`gce.report.Report.to_dict`). Bad input, in the file or on the command
line, gives exit status 2 and one line on stderr that names the field or the
flag; nothing is written to stdout.

Hardening: every number on the command line is checked for NaN,
infinity and its range before a file is read, naming the flag (``--time-limit``
at most :data:`MAX_TIME_LIMIT` seconds); ``--plot`` is checked before solving
(an existing folder, an image suffix; none means ``.png``, and the file written
is the one printed); ``from_data`` files outside the scenario's folder are read
only with ``--allow-outside-files``; and every line written to the terminal has
its control characters escaped (:func:`gce.report.terminal_text`), so a
scenario's title or a file name cannot send escape sequences. JSON output
escapes them by itself (``\\u001b``).

The contract of every command: exit status 0 with a well-formed answer, or one line
on stderr starting ``gce:`` and exit status 2 (bad input, or an answer that cannot
be written), 1 (a refused ledger request, whose answer is printed), 3 (``--strict``),
:data:`EXIT_UNREPORTED` = 4 or :data:`EXIT_INTERRUPTED` = 130. The entry point
(:func:`main_exit`, and :func:`main` for each call) owns what that takes, once for
every command:

- the output streams: standard output closed (``>&-``) is refused before anything
  is read or recorded; an answer that cannot be written (``> /dev/full``, a
  descriptor opened read-only) is one line, never a traceback, and the descriptor
  then points to ``os.devnull`` so that the interpreter's last flush cannot fail
  again (Python's "Note on SIGPIPE"); a reader that went away (``| head -1``) is not
  an error; a closed standard descriptor is given ``os.devnull`` before anything is
  opened, so that no ledger or table takes its number;
- the encodings: a character the streams' encoding lacks (``PYTHONIOENCODING=ascii``)
  is escaped (``Z\\xfcrich``), never fatal; JSON is ASCII by itself (``\\u00fc``);
- the ledger's changes: a command that changed the ledger (a spend or refusal
  recorded, a ledger created, entries deleted) and then cannot give its answer says
  what it recorded (``gce: error: cannot write the answer to standard output: No
  space left on device; the spend was recorded as entry 7 (admitted)``) and exits
  with :data:`EXIT_UNREPORTED`;
- Ctrl-C (:mod:`gce.interrupts`): at any moment from the entry point on (the ``gce``
  script and ``python -m gce`` run :func:`gce.__main__.main`, which installs the handler
  before this module and numpy are imported; only the interpreter's start and ``import
  gce`` come before it), exit status 130 and ``gce: interrupted``; a spend or truncation says
  whether it was recorded (``gce: interrupted; the spend was recorded as entry 7
  (admitted)`` or ``...; the spend was not recorded (the ledger is unchanged)``):
  a Ctrl-C during the ledger's commit waits until the entry is known;
- every other failure: one line (an operating-system error names the file; a bug
  says ``internal error, please report it``), never a traceback.

Every path read or written (the scenario file and its ``from_data`` files, TABLE,
``--scenario``, the ledger, ``--plot``, ``--output``) is checked by
:mod:`gce.files.paths` before anything opens it: a folder, a device or a named pipe
is refused with one line naming the flag or field, never opened or waited on (the
scenario file may be a pipe handed to gce: ``gce solve /dev/stdin``).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import NoReturn

from . import __version__
from .errors import GCEError, InvalidParameterError, UnsupportedCombinationError
from .report import terminal_text, to_json
from .solvers.base import MAX_TIME_LIMIT
from .validation import shown

__all__ = ["MAX_TIME_LIMIT", "main", "main_exit"]

#: Exit status for bad input (the convention of argparse and most Unix tools).
EXIT_USAGE = 2
#: Exit status of ``gce ledger check`` and ``spend`` when the query is refused (the answer is printed).
EXIT_REFUSED = 1
#: Exit status under ``--strict`` when the time limit stopped a refinement (the answer is printed).
EXIT_LIMIT = 3
#: Exit status when a command changed the ledger (a spend or a refusal recorded, a ledger created, entries
#: deleted) and then could not give its answer (standard output full or gone, an error after the commit): the
#: line on stderr says what was recorded (``...; the spend was recorded as entry 7 (admitted)``).
EXIT_UNREPORTED = 4
#: Exit status after Ctrl-C (SIGINT): 128 + 2, what a shell reports for a process the signal stopped.
EXIT_INTERRUPTED = 130
#: The least time a solve is given after reading the scenario took the rest of ``--time-limit`` (seconds).
_LEAST_SOLVE = 0.05
#: The estimated seconds of one epsilon(delta) of one curve in ``gce curve``'s table: a root search of the
#: curve, about 50 evaluations (a Gaussian curve 0.8 ms, batch and random-allocation curves 2.5 ms on a
#: shared two-core machine; exact closed forms and loss lists far less). The table's estimate is this
#: constant times the deltas times the curves (the GCE curve, its lower curve, the classic one): it is
#: set aside from the solve's time, and a table it says would not fit in the time limit is refused before
#: anything is computed. A constant, so that the clock never decides what the table holds.
SECONDS_PER_DELTA = 2e-3
#: The seconds past the time limit (plus this share of it) after which a table that outruns its estimate
#: (a classic curve of hundreds of mixed guarantees: 36 ms a delta) is stopped with an error, within
#: the contract's allowance of 1.1 x the limit + 0.5 s.
_TABLE_GRACE, _TABLE_GRACE_SHARE = 0.1, 0.1
#: How much of a path an error message shows (:func:`gce.validation.shown`: longer ones are cut, ending in ...).
_PATH_SHOWN = 200
_OUTSIDE_HELP = "let from_data constraints read files outside the scenario file's folder"
#: What argparse takes for a negative number rather than an option (no gce option looks like one).
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)


class _UsageError(Exception):
    """Bad command-line usage; the message is the one line to print."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage dump) and exit status 2, and every negative number
    (``-1e-3``, ``-inf``) is a value, so that its flag names it as out of range instead of a missing argument."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see {self.prog} --help)")


#: The abbreviations every report and help text uses, spelled out (the --help epilogue; docs/glossary.md has all).
GLOSSARY = """\
abbreviations:
  DP       differential privacy; (epsilon, delta): its two parameters
  HDP      hypothesis DP: a guarantee against an adversary testing two hypotheses (two membership
           sets, or two priors over them)
  GCE      the generalized composition experiment: mechanisms on several databases, membership limited
           by public constraints
  PLD      privacy-loss distribution (composed on a grid; pessimistic rounding gives the upper bound)
  RDP      Renyi DP; zCDP: zero-concentrated DP (rho); GDP: Gaussian DP (mu)
  MILP     mixed-integer linear program (the worst-case search, solved by HiGHS)
  top-m    the m databases with the most invocations (the worst case under at_most m)
  kairouz-III.3 and the like: the composition theorem that gave the answer (paper 002, Thm. III.3)
  witness  the worst-case pair of membership sets found (an allowed pair)
  bracket  certified (lower, upper) bounds on a number that is not exact
every term, and the papers 000-004: docs/glossary.md and docs/references.md in the gce repository"""
#: The epilogue of every subcommand's --help.
SEE_GLOSSARY = "abbreviations (HDP, PLD, RDP, zCDP, GDP, MILP, top-m, ...): gce --help"


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gce", description="Differential-privacy guarantees under the generalized "
                                              "composition experiment.", epilog=GLOSSARY,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"gce {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    solve = _scenario_command(commands, "solve", help="the HDP guarantee of a scenario file",
                                description="Find the worst-case pair of hypotheses and print the HDP "
                                            "guarantee, with the classic answer beside it.")
    target = solve.add_mutually_exclusive_group()
    target.add_argument("--delta", type=float, help="report epsilon at this total delta (overrides the file)")
    target.add_argument("--epsilon", type=float, help="report delta at this epsilon (overrides the file)")
    solve.add_argument("--quiet", action="store_true", help="no progress line on the terminal")
    _scenario_options(solve, _solve, "the table", "seconds the whole command may take (a cap: a refinement it "
                                                  "stops answers with its certified bound and says so)")

    calibrate = commands.add_parser(
        "calibrate", epilog=SEE_GLOSSARY,
        help="the largest per-invocation epsilon (or smallest sigma) meeting a target; the noise for training",
        description="With FILE: calibrate the common per-invocation epsilon (pure or approximate guarantees, "
                    "their deltas held) or the common Gaussian sigma (Poisson-subsampled or not) so that the "
                    "scenario's HDP guarantee meets the target; the classic-composition calibration is shown "
                    "beside it. Without FILE, the training form: the smallest noise multiplier sigma with which "
                    "--epochs epochs of --steps-per-epoch DP-SGD steps meet the target, batches shuffled "
                    "(each example in one batch an epoch) or Poisson-sampled (rate 1 / steps per epoch), with "
                    "the certified bracket of sigma (--rtol: its relative width, default 0.002; no time limit "
                    "unless --time-limit).")
    calibrate.add_argument("file", metavar="FILE", nargs="?", help="scenario file (TOML); none for the training form")
    calibrate.add_argument("--target-epsilon", type=float, required=True, metavar="E",
                           help="the total epsilon to meet: the HDP guarantee's (with FILE) or the training's")
    calibrate.add_argument("--target-delta", type=float, required=True, metavar="D",
                           help="the total delta at which --target-epsilon is met, in [0, 1)")
    calibrate.add_argument("--steps-per-epoch", type=int, default=None, metavar="T",
                           help="training form: steps (batches) per epoch")
    calibrate.add_argument("--epochs", type=int, default=None, metavar="N", help="training form: epochs")
    calibrate.add_argument("--sampling", default=None, metavar="S",
                           help="training form: shuffled (each example in one batch an epoch) or poisson (each "
                                "step samples each example at rate 1 / T); it must match the data loader")
    calibrate.add_argument("--quiet", action="store_true", help="no progress line on the terminal")
    _scenario_options(calibrate, _calibrate, "text", "seconds the whole calibration may take (a cap: the "
                                                      "search keeps the last value a solve confirmed)")

    curve = _scenario_command(
        commands, "curve", help="epsilon against delta for the GCE answer and the classic one",
        description="Print epsilon against delta for the scenario's HDP guarantee, with its certified bracket "
                    "(exact, or [lower, upper]), and for classic composition; with --plot, draw both (needs the "
                    "plot extra: pip install 'gce[plot]').")
    curve.add_argument("--deltas", type=float, nargs="+", metavar="D",
                       default=[1e-10, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2],
                       help="the deltas to tabulate (default 1e-10 ... 1e-2)")
    curve.add_argument("--quiet", action="store_true", help="no progress line on the terminal")
    curve.add_argument("--plot", metavar="PNG", help="also draw the two curves, from the smallest to the largest "
                                                      "of --deltas, into this image file (.png, .pdf, .svg, ...; "
                                                      "without a suffix, .png is added)")
    _scenario_options(curve, _curve, "the table", "seconds the whole command may take (a cap: a refinement it "
                                                  "stops answers with its certified bound and says so)")

    membership = commands.add_parser(
        "membership", epilog=SEE_GLOSSARY, help="memberships per individual in a table, candidate m and their epsilon; truncation",
        description="Read a membership table (individual, database) with DuckDB: CSV or Parquet (a file or a "
                    "quoted glob), or a DuckDB or SQLite database with --query. Print how many individuals are in "
                    "c databases, and for candidate m (90th, 99th, 99.9th percentiles, maximum) the share of "
                    "individuals covered, of memberships a truncation keeps and, with --scenario, the HDP epsilon "
                    "with at_most m in place of its from_data constraint. --truncate M writes the rows to keep: "
                    "for each individual the M databases first by md5('SEED:individual:index').")
    membership.add_argument("table", metavar="TABLE", help="CSV or Parquet file or glob, or a database file "
                                                             "with --query")
    membership.add_argument("--query", metavar="SQL", help="a SELECT returning (individual, database)")
    membership.add_argument("--columns", nargs=2, metavar=("INDIVIDUAL", "DATABASE"), help="the two columns read")
    membership.add_argument("--scenario", metavar="FILE", help="scenario file: its databases, and epsilon at each m")
    membership.add_argument("--databases", type=int, metavar="N", help="database ids are 0..N-1 (no --scenario)")
    membership.add_argument("--plot", metavar="PNG", help="draw epsilon against the share covered (--scenario)")
    membership.add_argument("--truncate", type=int, metavar="M", help="write the rows keeping at most M databases "
                                                                       "per individual (with --seed, --output)")
    membership.add_argument("--seed", type=int, metavar="S", help="the truncation's seed")
    membership.add_argument("--output", metavar="OUT", help="where --truncate writes (.parquet or .csv)")
    membership.add_argument("--quiet", action="store_true", help="no progress line on the terminal")
    _scenario_options(membership, _membership, "the table", "seconds the candidates' solves may take together "
                                                            "(a cap, said when reached)")
    _ledger_parser(commands)
    return parser


def _ledger_parser(commands) -> None:
    """``gce ledger``: the online accountant's subcommands (:mod:`gce.ledger`)."""
    ledger = commands.add_parser(
        "ledger", help="the online accountant: check and record queries against a budget",
        description="An online privacy accountant: a filter valid for adaptively chosen queries whose statistic "
                    "is the worst case over the membership sets the constraints allow, on a ledger (an SQLite "
                    "file or a postgresql:// URL). A refused check or spend exits with 1.", epilog=SEE_GLOSSARY)
    actions = ledger.add_subparsers(dest="action", required=True, parser_class=_Parser, metavar="ACTION")

    def common(action: argparse.ArgumentParser, run, *, json_flag: bool = True) -> None:
        action.add_argument("--ledger", default=DEFAULT_LEDGER, metavar="L",
                            help=f"the ledger: an SQLite file or a postgresql:// URL (default {DEFAULT_LEDGER})")
        if json_flag:
            action.add_argument("--json", action="store_true", help="print one JSON object")
        action.add_argument("--time-limit", type=float, default=None, metavar="S",
                            help="seconds the worst-case search may take when cheap bounds do not decide "
                                 "(init: reading the scenario file, too)")
        action.set_defaults(run=run)

    init = actions.add_parser("init", help="create a ledger for a scenario's databases and constraints",
                              description="Create a ledger: the scenario file's databases, constraints and "
                                          "neighbourhood, a budget and a filter; its invocations are the first "
                                          "spends.")
    init.add_argument("file", metavar="FILE", help="scenario file (TOML)")
    init.add_argument("--budget-epsilon", type=float, required=True, metavar="E",
                      help="the total epsilon every individual may spend, over all queries (> 0)")
    init.add_argument("--budget-delta", type=float, default=0.0, metavar="D",
                      help="the total delta, in [0, 1) (default 0: a pure budget, for pure guarantees under the "
                           "basic filter; the renyi, zcdp and gdp filters need a delta > 0)")
    init.add_argument("--filter", default="basic", metavar="F",
                      help="basic (sum eps, sum delta), renyi, zcdp or gdp (default basic)")
    init.add_argument("--allow-outside-files", action="store_true", help=_OUTSIDE_HELP)
    common(init, _ledger_init)
    for name, run, text in (("check", _ledger_check, "would this query be admitted now? (nothing recorded)"),
                            ("spend", _ledger_spend, "check and record in one transaction")):
        action = actions.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        action.add_argument("--databases", required=True, metavar="REFS",
                            help='"all", or database indices or names separated by commas')
        action.add_argument("--mechanism", required=True, metavar="TABLE",
                            help="the guarantee as in a scenario file, e.g. 'kind = \"pure\", epsilon = 0.1'")
        action.add_argument("--repeat", type=int, default=1, metavar="R", help="runs on each database (default 1)")
        if name == "spend":
            action.add_argument("--analyst", default="", metavar="NAME", help="who asks (recorded)")
        common(action, run)
    status = actions.add_parser("status", help="the budget and the worst-case spend",
                                description="The budget, the worst case spent (a certified bracket) and counts.")
    status.add_argument("--offline", action="store_true",
                        help="also compose the admitted workload optimally, as if fixed in advance (not valid for "
                             "admission)")
    common(status, _ledger_status)
    history = actions.add_parser("history", help="every recorded request and its answer",
                                 description="Every recorded request, oldest first, and the answer gce gave.")
    history.add_argument("--limit", type=int, default=None, metavar="N", help="the last N only")
    history.add_argument("--analyst", default=None, metavar="NAME", help="one analyst's requests only")
    common(history, _ledger_history)
    verify = actions.add_parser("verify", help="walk the whole hash chain: is the ledger intact?",
                                description="Check every entry's and checkpoint's hash and content from the first "
                                            "entry to the last, and print the head hash. A damaged ledger exits "
                                            "with 1, naming the first bad entry and the last good one.")
    common(verify, _ledger_verify)
    truncate = actions.add_parser("truncate", help="repair: keep the entries up to N, delete the rest",
                                  description="Keep entries 1..N (they must check) and delete every later one: the "
                                              "repair of a ledger damaged after entry N. What ran after N must be "
                                              "spent again, or the budget is under-counted.")
    truncate.add_argument("--after", type=int, required=True, metavar="N", help="the last entry to keep")
    common(truncate, _ledger_truncate)


def _scenario_command(commands, name: str, **kwargs) -> argparse.ArgumentParser:
    """A subcommand that reads one scenario file (its first argument)."""
    command = commands.add_parser(name, epilog=SEE_GLOSSARY, **kwargs)
    command.add_argument("file", metavar="FILE", help="scenario file (TOML)")
    return command


def _scenario_options(command: argparse.ArgumentParser, run, json_instead_of: str, time_help: str) -> None:
    """The options every scenario command shares (--json, --time-limit, --allow-outside-files) and its action."""
    command.add_argument("--json", action="store_true", help=f"print one JSON object instead of {json_instead_of}")
    command.add_argument("--time-limit", type=float, default=None, metavar="S", help=time_help)
    command.add_argument("--rtol", type=float, default=None, metavar="R",
                         help="relative accuracy of every refined number (its certified bracket's width; default "
                              "the file's rtol, else 0.01): it alone decides the work, so the same question gives "
                              "the same answer")
    command.add_argument("--strict", action="store_true",
                         help=f"exit with status {EXIT_LIMIT} when the time limit stopped a refinement (the "
                              f"certified, coarser answer is printed all the same)")
    command.add_argument("--memory-limit", default=None, metavar="BYTES",
                         help="refuse what would need more memory (e.g. 2GB, 512MiB; default $GCE_MEMORY_LIMIT, "
                              "else half the physical memory)")
    command.add_argument("--allow-outside-files", action="store_true", help=_OUTSIDE_HELP)
    command.set_defaults(run=run)


# ---------------------------------------------------------------------------
# Numbers on the command line: checked before any file is read, errors name the flag


def _probability(value: float | None, flag: str) -> None:
    """A delta: in [0, 1) (NaN fails every comparison, so it is refused too)."""
    if value is not None and not 0.0 <= value < 1.0:
        raise _UsageError(f"{flag}: must lie in [0, 1), got {shown(value)}")


def _epsilon(value: float | None, flag: str, *, positive: bool = False) -> None:
    """An epsilon: finite and >= 0 (> 0 when ``positive``)."""
    if value is not None and not (math.isfinite(value) and (value > 0.0 if positive else value >= 0.0)):
        raise _UsageError(f"{flag}: must be finite and {'>' if positive else '>='} 0, got {shown(value)}")


def _time_limit(args: argparse.Namespace) -> float:
    """``--time-limit``: finite, > 0 and at most :data:`MAX_TIME_LIMIT`; the solvers' default when absent."""
    from .solvers import DEFAULT_TIME_LIMIT

    seconds = args.time_limit
    if seconds is None:
        return DEFAULT_TIME_LIMIT
    if not (math.isfinite(seconds) and seconds > 0):
        raise _UsageError(f"--time-limit: must be a finite number of seconds > 0, got {shown(seconds)}")
    if seconds > MAX_TIME_LIMIT:
        raise _UsageError(f"--time-limit: must be at most {MAX_TIME_LIMIT:g} seconds (about "
                          f"{MAX_TIME_LIMIT / 86400:.1f} days), got {shown(seconds)}")
    return seconds


def _rtol(args: argparse.Namespace) -> float | None:
    """``--rtol``: a relative accuracy in [MIN_RTOL, MAX_RTOL], checked before any file is read."""
    from .effort import check_rtol

    if args.rtol is None:
        return None
    try:
        return check_rtol(args.rtol, "--rtol")
    except InvalidParameterError as error:
        raise _UsageError(str(error)) from None


def _limited(args: argparse.Namespace, text: str, reached: bool) -> str | tuple[str, int]:
    """The command's output, with :data:`EXIT_LIMIT` under ``--strict`` when the time limit was reached."""
    return (text, EXIT_LIMIT) if reached and getattr(args, "strict", False) else text


def _load(args: argparse.Namespace, time_limit: float | None = None):
    """The scenario file; with ``time_limit``, reading its data (DuckDB's queries) counts against it."""
    from .files.scenario import load_scenario
    from .resources import format_size, limits, stop_at_deadline

    try:
        size = f" ({format_size(os.stat(args.file).st_size)})" if os.path.isfile(args.file) else ""
    except (OSError, ValueError):
        size = ""
    with limits(time_limit=time_limit), stop_at_deadline("file", f"reading the scenario file{size} and its data"):
        return load_scenario(args.file, allow_outside_files=args.allow_outside_files)


def _left(time_limit: float, started: float) -> float:
    """What is left of ``time_limit`` seconds since ``started`` (``time.monotonic``): the solve's budget after
    the file and its data were read (at least :data:`_LEAST_SOLVE` seconds, so the solve can answer with
    its cheapest certified bound)."""
    return max(time_limit - (time.monotonic() - started), _LEAST_SOLVE)


def _memory_limit(args: argparse.Namespace) -> str | None:
    """``--memory-limit``: a size (bytes, or with a unit), checked before any file is read; without it, the
    environment's ``GCE_MEMORY_LIMIT`` is checked then too (every command refuses a bad one, not only those
    that come to read it)."""
    from .resources import memory_limit, parse_size

    value = getattr(args, "memory_limit", None)
    try:
        if value is not None:
            parse_size(value, "--memory-limit")
        else:
            memory_limit()
    except InvalidParameterError as error:
        raise _UsageError(str(error)) from None
    return value


# ---------------------------------------------------------------------------
# The commands


def _solve(args: argparse.Namespace) -> str:
    from .progress import Elapsed
    from .solving import solve

    _probability(args.delta, "--delta")
    _epsilon(args.epsilon, "--epsilon")
    time_limit = _time_limit(args)
    rtol = _rtol(args)
    started = time.monotonic()
    with Elapsed("solve", quiet=args.quiet or args.json) as progress:
        progress.stage("reading the scenario file")
        scenario = _load(args, time_limit)
        delta, epsilon = args.delta, args.epsilon
        if delta is None and epsilon is None:
            delta, epsilon = scenario.delta, scenario.epsilon
            if delta is None and epsilon is None:
                raise InvalidParameterError(
                    "delta", "is missing: give the target in the file (delta = ... or epsilon = ...) "
                             "or on the command line (--delta or --epsilon)")
        progress.stage("solving")
        report = solve(scenario, delta=delta, epsilon=epsilon, time_limit=_left(time_limit, started), rtol=rtol)
    if args.json:
        return _limited(args, to_json(report.to_dict()), report.time_limit_reached)
    return _limited(args, str(report), report.time_limit_reached)


def _calibrate(args: argparse.Namespace) -> str | tuple[str, int]:
    from .calibration import calibrate
    from .progress import Progress

    _epsilon(args.target_epsilon, "--target-epsilon", positive=True)
    _probability(args.target_delta, "--target-delta")
    training = {"--steps-per-epoch": args.steps_per_epoch, "--epochs": args.epochs, "--sampling": args.sampling}
    if args.file is not None and any(value is not None for value in training.values()):
        given = ", ".join(flag for flag, value in training.items() if value is not None)
        raise _UsageError(f"{given}: the training form takes no scenario file (FILE {shown(args.file, _PATH_SHOWN)} "
                          f"given)")
    if args.file is None:  # the training form (gce.training.calibrate_noise)
        from .training import SAMPLINGS, SIGMA_RTOL, calibrate_noise

        for flag, value in training.items():
            if value is None:
                raise _UsageError(f"{flag}: required without FILE (the training form), or give a scenario FILE")
        for flag in ("--steps-per-epoch", "--epochs"):
            if training[flag] < 1:
                raise _UsageError(f"{flag}: must be an integer >= 1, got {training[flag]}")
        if args.sampling not in SAMPLINGS:
            raise _UsageError(f"--sampling: must be shuffled or poisson, got {shown(args.sampling)}")
        if args.target_delta == 0.0:
            raise _UsageError("--target-delta: must lie in (0, 1): a Gaussian mechanism has no finite epsilon "
                              "at delta 0, got 0.0")
        rtol = _rtol(args)
        with Progress(label="calibrate", quiet=args.quiet or args.json) as progress:
            try:
                result = calibrate_noise(args.target_epsilon, args.target_delta,
                                         steps_per_epoch=args.steps_per_epoch, epochs=args.epochs,
                                         sampling=args.sampling, rtol=SIGMA_RTOL if rtol is None else rtol,
                                         time_limit=None if args.time_limit is None else _time_limit(args),
                                         progress=progress)
            except InvalidParameterError as error:
                raise _UsageError(f"--{error.field.replace('_', '-')}: {error.detail}") from None
        if args.json:
            return _limited(args, to_json(result.to_dict()), result.time_limit_reached)
        return _limited(args, str(result), result.time_limit_reached)
    time_limit = _time_limit(args)
    rtol = _rtol(args)
    started = time.monotonic()
    scenario = _load(args, time_limit)
    with Progress(label="calibrate", quiet=args.quiet or args.json) as progress:
        result = calibrate(scenario, target_epsilon=args.target_epsilon, target_delta=args.target_delta,
                           time_limit=_left(time_limit, started), rtol=rtol, progress=progress)
    if args.json:
        return _limited(args, to_json(result.to_dict()), result.time_limit_reached)
    return _limited(args, str(result), result.time_limit_reached)


def _plot_file(value: str | None):
    """``--plot``: the file to write, checked before solving (matplotlib installed, folder, format), or None."""
    import importlib.util

    from .plot import INSTALL_HINT, plot_file

    if value is None:
        return None
    if importlib.util.find_spec("matplotlib") is None:
        raise _UsageError(f"--plot: {INSTALL_HINT}")
    try:
        return plot_file(value)
    except InvalidParameterError as error:
        raise _UsageError(f"--plot: {error.detail}") from None


def _draw(report, plot, classic, deltas) -> None:
    """Draw the plot at ``deltas``; a file that cannot be written is named by the flag."""
    from .plot import plot_curves

    try:
        plot_curves(report, plot, classic=classic, deltas=deltas)
    except InvalidParameterError as error:
        if error.field != "path":
            raise
        raise _UsageError(f"--plot: {error.detail}") from None


def _table_seconds(deltas: int) -> float:
    """The estimated seconds of ``gce curve``'s table of ``deltas`` rows: :data:`SECONDS_PER_DELTA` for each
    delta and each of its three curves (the GCE curve, its lower curve, classic composition's). From the
    question alone, never from a measured timing."""
    return 3 * deltas * SECONDS_PER_DELTA


def _count_deltas(count: int) -> str:
    """``1 delta``, ``5,000 deltas``."""
    return f"{count:,} delta" + ("" if count == 1 else "s")


def _curve_rows(report, classic, deltas: list[float], time_limit: float, started: float) -> list:
    """The rows of ``gce curve`` (:func:`gce.plot.bracketed_table`): every delta, whatever the clock says.

    The table's time was set aside from the solve (:func:`_table_seconds`, checked against the limit before
    the solve); a table that outruns its estimate by more than the contract's allowance (past the limit
    plus :data:`_TABLE_GRACE` s and :data:`_TABLE_GRACE_SHARE` of it) is stopped with an error naming
    ``--deltas``, never cut short (docs/design.md, "Same question, same answer")."""
    from .errors import ResourceLimitError
    from .plot import bracketed_table
    from .resources import limits, stop_at_deadline

    left = max(time_limit - (time.monotonic() - started), 0.0)
    what = f"epsilon at {_count_deltas(len(deltas))}"
    try:
        with limits(time_limit=left + _TABLE_GRACE + _TABLE_GRACE_SHARE * time_limit), \
                stop_at_deadline("--deltas", what):
            return bracketed_table(report, classic, deltas)
    except ResourceLimitError as error:
        if error.field != "--deltas":
            raise
        raise ResourceLimitError("--deltas", f"{what} took longer than its estimate "
                                             f"({_table_seconds(len(deltas)):.3g} s) and was stopped at the time "
                                             f"limit of {time_limit:g} s (--time-limit): ask fewer deltas or give "
                                             f"more time") from None


def _classic_curve(scenario, seconds: float):
    """(curve, note) of classic composition (every invocation composed: 001, Alg. 1), the column beside the
    GCE one: :func:`gce.plot.classic_curve` when its estimated cost fits in ``seconds``, else a coarser sound
    composition and the note saying so (:func:`gce.accounting.theorems.compose_within`), which ``gce curve``
    reports as the time limit reached. Composed after the solve (the GCE answer comes first), which was given
    the time left less this composition's estimated cost (:func:`gce.accounting.theorems.composition_seconds`,
    from the question) and the table's."""
    from .accounting.theorems import compose_within
    from .model import invocation_multiset

    composition, note = compose_within(invocation_multiset(scenario.invocations), max(seconds, 0.0))
    return composition.curve, note


def _bracket_cell(row) -> str:
    """The ``bracket (GCE)`` column: ``exact``, ``[lower, upper]``, or ``-`` without a certified lower bound."""
    if row.exact:
        return "exact"
    return "-" if row.lower is None else f"[{row.lower:.6g}, {row.epsilon:.6g}]"


def _curve(args: argparse.Namespace) -> str | tuple[str, int]:
    from .accounting.theorems import composition_seconds
    from .model import invocation_multiset
    from .plot import deltas_spanning
    from .progress import Elapsed
    from .report import json_number
    from .resources import check_time, limits
    from .solving import solve

    for i, d in enumerate(args.deltas):
        _probability(d, f"--deltas[{i}]")
    time_limit = _time_limit(args)
    rtol = _rtol(args)
    plot = _plot_file(args.plot)
    if plot is not None and not any(d > 0 for d in args.deltas):
        raise _UsageError("--plot: needs a positive delta among --deltas (delta 0 has no place on a log axis)")
    drawn = None if plot is None else deltas_spanning(args.deltas)  # the range asked, not a default one
    table_seconds = _table_seconds(len(args.deltas))
    started = time.monotonic()
    with Elapsed("curve", quiet=args.quiet or args.json) as progress:
        progress.stage("reading the scenario file")
        scenario = _load(args, time_limit)
        with limits(time_limit=_left(time_limit, started)):
            check_time("--deltas", table_seconds, f"epsilon at {_count_deltas(len(args.deltas))} (3 curves, "
                                                  f"about {SECONDS_PER_DELTA * 1e3:g} ms a delta and curve)")
        # what follows the solve, estimated from the question and set aside: the classic composition, the
        # table and the plot's curves (the GCE curve, its lower curve and the classic one at the drawn deltas)
        after = table_seconds + (0.0 if drawn is None else _table_seconds(drawn.size))
        classic_seconds = composition_seconds(invocation_multiset(scenario.invocations))
        progress.stage(f"solving at delta {min(args.deltas):g}")
        report = solve(scenario, delta=min(args.deltas), rtol=rtol,
                       time_limit=max(_left(time_limit, started) - after - classic_seconds, _LEAST_SOLVE))
        progress.stage("composing the classic curve")
        classic, coarser = _classic_curve(scenario, _left(time_limit, started) - after)
        progress.stage(f"tabulating {_count_deltas(len(args.deltas))}")
        rows = _curve_rows(report, classic, args.deltas, time_limit, started)
        if plot is not None:
            progress.stage("plotting")
            _draw(report, plot, classic, drawn)
    notes = list(report.notes) + [note for note in scenario.notes if note not in report.notes]
    reached = report.time_limit_reached or coarser is not None
    if coarser is not None:
        notes.append(f"time limit reached: the classic column: {coarser.removeprefix('time limit: ')}")
    if args.json:
        table = [{"delta": r.delta, "epsilon": json_number(r.epsilon), "lower": json_number(r.lower),
                  "upper": json_number(r.epsilon), "classic_epsilon": json_number(r.classic)} for r in rows]
        data = {"title": report.title, "theorem": report.theorem, "exact": report.exact,
                "status": "time limit reached" if reached else "complete", "time_limit_reached": reached,
                "rtol": report.rtol, "curve": table, "plot": None if plot is None else str(plot), "notes": notes}
        return _limited(args, to_json(data), reached)
    lines = [f"time limit reached: a certified but coarser table ({100 * report.rtol:.3g}% asked; the "
             f"brackets and the notes say what was reached)"] if reached else []
    lines += [report.title] if report.title else []
    lines.append(f"{'delta':>10}  {'epsilon (GCE)':>14}  {'epsilon (classic)':>17}  bracket (GCE)")
    for r in rows:
        classic_cell = "-" if r.classic is None else format(r.classic, ".6g")
        lines.append(f"{r.delta:>10.3g}  {r.epsilon:>14.6g}  {classic_cell:>17}  {_bracket_cell(r)}")
    lines.append(f"theorem: {report.theorem}; exact: {'yes' if report.exact else 'no'}")
    lines += [f"note: {note}" for note in notes]  # e.g. a bound estimated from data (001, Sec. V-A)
    if plot is not None:
        lines.append(f"plot written to {plot}")
    return _limited(args, "\n".join(lines), reached)


def _membership_table(args: argparse.Namespace):
    """TABLE (a file, a glob or, with --query, a database file) as the engine reads it; the user's own paths."""
    import glob as globbing
    import os

    from .constraints.tables import MembershipTable

    from .files.paths import path_problem

    columns = None if args.columns is None else tuple(args.columns)
    problem = path_problem(args.table)  # a folder, a device, a named pipe: refused before DuckDB opens it
    if problem is not None:
        raise _UsageError(f"TABLE: {shown(args.table, _PATH_SHOWN)} {problem}")
    if args.query is not None:
        if not os.path.isfile(args.table):
            raise _UsageError(f"TABLE: {shown(args.table, _PATH_SHOWN)} is not a database file")
        return MembershipTable(database=args.table, query=args.query, columns=columns, label=args.table)
    files = sorted(f for f in globbing.glob(args.table, recursive=True) if os.path.isfile(f)) \
        if any(c in args.table for c in "*?[") else [args.table]
    if not files or not os.path.isfile(files[0]):
        raise _UsageError(f"TABLE: {shown(args.table, _PATH_SHOWN)} matches no file")
    return MembershipTable(tuple(files), columns=columns, label=args.table)


def _regular(path: str | None, flag: str, *, writing: bool = False) -> None:
    """A path given to ``flag``, if it exists, must be a regular file (:func:`gce.files.paths.check_path`)."""
    from .files.paths import check_path

    if path is not None:
        try:
            check_path(path, flag, writing=writing)
        except InvalidParameterError as error:
            raise _UsageError(str(error)) from None


def _glob_reaches(pattern: str, path: str) -> bool:
    """Whether the glob ``pattern`` matches ``path`` once it exists (``**`` spans folders, as in the recursive
    glob that reads the table); both taken from the working folder."""
    import fnmatch
    import os

    wanted, parts = os.path.abspath(pattern).split(os.sep), os.path.abspath(path).split(os.sep)

    def match(i: int, j: int) -> bool:
        if i == len(wanted):
            return j == len(parts)
        if wanted[i] == "**":
            return any(match(i + 1, k) for k in range(j, len(parts) + 1))
        return j < len(parts) and fnmatch.fnmatchcase(parts[j], wanted[i]) and match(i + 1, j + 1)

    return match(0, 0)


def _membership(args: argparse.Namespace) -> str:
    from .constraints.tables import truncate_membership
    from .membership import membership_coverage, plot_coverage
    from .progress import Progress

    if args.scenario is None and args.databases is None:
        raise _UsageError("--scenario or --databases: give one, to resolve the table's database ids")
    if args.scenario is not None and args.databases is not None:
        raise _UsageError("--databases: not with --scenario (its databases are used)")
    if args.databases is not None and args.databases < 1:
        raise _UsageError(f"--databases: must be a count >= 1, got {args.databases}")
    truncating = [flag for flag, value in (("--truncate", args.truncate), ("--seed", args.seed),
                                           ("--output", args.output)) if value is not None]
    if truncating and len(truncating) != 3:
        raise _UsageError("--truncate, --seed and --output: give all three to write a truncated table")
    if args.plot is not None and args.scenario is None:
        raise _UsageError("--plot: needs --scenario (it draws the epsilon of each candidate m)")
    time_limit = _time_limit(args)
    plot = _plot_file(args.plot)
    _regular(args.scenario, "--scenario")
    _regular(args.output, "--output", writing=True)
    table = _membership_table(args)
    databases = args.databases
    if truncating:
        if any(c in args.table for c in "*?[") and _glob_reaches(args.table, args.output):
            raise _UsageError(f"--output: {shown(args.output, _PATH_SHOWN)} would be matched by the table's glob "
                              f"{shown(args.table, _PATH_SHOWN)}, so "
                              f"the next run (or a scenario's source with that glob) would read the truncation "
                              f"as input; write it outside the glob's reach")
        if args.scenario is not None:
            databases = _load_at_most(args.scenario).databases
        with Progress(label="membership", quiet=args.quiet or args.json, stream=sys.stderr) as progress:
            done = truncate_membership(table, databases, args.truncate, args.seed, args.output, progress=progress)
        if args.json:
            return to_json(done.to_dict())
        return (f"wrote {done.output}: {done.rows_kept:,} of {done.rows:,} rows ({done.rows_kept / done.rows:.2%}), "
                f"{done.memberships_kept:,} of {done.memberships:,} memberships "
                f"({done.memberships_kept / done.memberships:.2%}); every one of the {done.individuals:,} "
                f"individuals keeps at most {done.m} databases (seed {done.seed})\n"
                f'state it in the scenario: kind = "from_data", source = "{done.output}", enforced = true')
    with Progress(label="membership", quiet=args.quiet or args.json, stream=sys.stderr) as progress:
        coverage = membership_coverage(table, databases, scenario=args.scenario, time_limit=time_limit,
                                       progress=progress)
    if plot is not None:
        try:
            plot_coverage(coverage, plot)
        except InvalidParameterError as error:  # a file that cannot be written: named by the flag
            if error.field != "path":
                raise
            raise _UsageError(f"--plot: {error.detail}") from None
    if args.json:
        return to_json(dict(coverage.to_dict(), plot=None if plot is None else str(plot)))
    return str(coverage) + ("" if plot is None else f"\nplot written to {plot}")


#: Where ``gce ledger`` looks without --ledger.
DEFAULT_LEDGER = "gce-ledger.sqlite"


def _ledger_time_limit(args: argparse.Namespace) -> float:
    from .ledger.accountant import DEFAULT_TIME_LIMIT

    return DEFAULT_TIME_LIMIT if args.time_limit is None else _time_limit(args)


def _is_url(location: str) -> bool:
    """A ``scheme://`` URL (a PostgreSQL ledger), as :func:`gce.ledger.store.open_store` tells them."""
    return re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", location) is not None


def _ledger_path(args: argparse.Namespace) -> None:
    """``--ledger``: a file path must be a regular file if it exists (a named pipe would block SQLite for
    ever); a ``postgresql://`` URL is not a path."""
    from .files.paths import check_path

    if not _is_url(args.ledger):
        try:
            check_path(args.ledger, "--ledger")
        except InvalidParameterError as error:
            raise _UsageError(str(error)) from None


def _open_ledger(args: argparse.Namespace):
    from .ledger import Accountant

    _ledger_path(args)
    return Accountant(args.ledger, time_limit=_ledger_time_limit(args))


def _ledger_init(args: argparse.Namespace) -> str:
    from .ledger import Accountant

    _epsilon(args.budget_epsilon, "--budget-epsilon", positive=True)
    _probability(args.budget_delta, "--budget-delta")
    from .ledger.filters import FILTERS

    if args.filter not in FILTERS:
        raise _UsageError(f"--filter: must be one of {', '.join(FILTERS)}, got {shown(args.filter)}")
    time_limit = _ledger_time_limit(args)
    _ledger_path(args)
    scenario = _load(args, time_limit)  # (the reading too: a file tomllib takes minutes to read is stopped)
    args.outcome.unchanged(_init_note(args.ledger, os.path.lexists(args.ledger)))
    try:
        with Accountant.create(args.ledger, scenario, budget_epsilon=args.budget_epsilon,
                               budget_delta=args.budget_delta, filter=args.filter, time_limit=time_limit) as ledger:
            args.outcome.recorded(f"the ledger {ledger.location} was created")
            status = ledger.status()
    except UnsupportedCombinationError as error:  # named by its invocation record: the file's table instead
        raise UnsupportedCombinationError(_as_table(str(error), scenario)) from None
    if args.json:
        return to_json(status.to_dict())
    return f"created {status.location}\n{status}"


def _as_table(message: str, scenario) -> str:
    """A message that names an invocation record, ``invocations[j]...`` (the Python scenario's index: a table
    of ``databases = "all"`` is n records), naming the file's ``[[invocations]]`` table instead: a file's
    tables are the scenario's groups, one each, and the ledger names a group by its first record."""
    found = re.match(r"invocations\[(\d+)\]", message)
    if found is None:
        return message
    first = 0
    for table, group in enumerate(scenario.invocations.groups):
        if first == int(found.group(1)):
            return f"invocations[{table}]{message[found.end():]}"
        first += len(group)
    return message


def _init_note(location: str, existed: bool):
    """What an interrupted ``gce ledger init`` left, worded when it is said: an SQLite ledger appears whole
    or not at all (:meth:`gce.ledger.Accountant.create`); on a server the tables are one transaction and the
    scenario's invocations are spent after it, so a Ctrl-C may leave a ledger without all of them."""
    def note() -> str:
        if _is_url(location):
            return (f"a ledger may have been created at {location} without all of the scenario's invocations: "
                    f"check it with gce ledger history")
        if not existed and os.path.lexists(location):
            return f"the ledger {location} was created"
        return "no ledger was created"

    return note


def _ledger_request(args: argparse.Namespace):
    """(databases, guarantee) of --databases and --mechanism; errors name the flag."""
    from .files.scenario import mechanism_from_dict, read_fragment
    from .validation import shown

    if not 1 <= args.repeat <= 2**53:  # (the ledger's own bound: a count exact as a double)
        raise _UsageError(f"--repeat: must be an integer in 1..2**53, got {shown(args.repeat)}")
    try:  # one TOML value, nothing after it (gce.files.scenario.read_fragment)
        table = read_fragment(args.mechanism, "--mechanism", table=True, example="'kind = \"pure\", epsilon = 0.1'")
        guarantee = mechanism_from_dict(table, "--mechanism")
    except InvalidParameterError as error:
        raise _UsageError(str(error)) from None
    refs = args.databases.strip()
    databases = "all" if refs == "all" else [part.strip() for part in refs.split(",")]
    if databases != "all" and any(not part for part in databases):
        raise _UsageError(f"--databases: an empty reference in {shown(args.databases)}")
    return databases, guarantee


def _ledger_decision(args: argparse.Namespace, spend: bool) -> tuple[str, int]:
    """check or spend; a spend says what it recorded even when it cannot answer (Ctrl-C, standard output
    full: :class:`_Outcome`), and a Ctrl-C during its commit waits until the entry is known
    (:func:`gce.interrupts.until_reported`)."""
    from .interrupts import until_reported

    databases, guarantee = _ledger_request(args)
    with _open_ledger(args) as ledger:
        try:
            if spend:
                args.outcome.unchanged("the spend was not recorded (the ledger is unchanged)")
                with until_reported():
                    decision = ledger.spend(databases, guarantee, analyst=args.analyst, repeat=args.repeat)
                    args.outcome.recorded(f"the spend was recorded as entry {decision.sequence} "
                                          f"({'admitted' if decision.admitted else 'refused'})")
            else:
                decision = ledger.check(databases, guarantee, repeat=args.repeat)
        except InvalidParameterError as error:
            if error.field.startswith("databases"):
                raise _UsageError(f"--{error}") from None
            raise
    text = to_json(decision.to_dict()) if args.json else str(decision)
    return text, 0 if decision.admitted else EXIT_REFUSED


def _ledger_check(args: argparse.Namespace):
    return _ledger_decision(args, spend=False)


def _ledger_spend(args: argparse.Namespace):
    return _ledger_decision(args, spend=True)


def _ledger_status(args: argparse.Namespace) -> str:
    with _open_ledger(args) as ledger:
        status = ledger.status()
        offline = ledger.offline(time_limit=_time_limit(args)) if args.offline else None
    if args.json:
        from .report import json_number

        out = status.to_dict()
        if offline is not None:
            out["offline"] = {"epsilon": json_number(offline.epsilon), "delta": offline.delta,
                              "theorem": offline.theorem, "valid": "only for a workload fixed in advance"}
        return to_json(out)
    text = str(status)
    if offline is not None:
        text += (f"\noffline (valid only for a workload fixed in advance, not for admission): epsilon "
                 f"{offline.epsilon:.6g} at delta {offline.delta:g} ({offline.theorem})")
    return text


def _ledger_history(args: argparse.Namespace) -> str:
    if args.limit is not None and args.limit < 1:
        raise _UsageError(f"--limit: must be an integer >= 1, got {args.limit}")
    with _open_ledger(args) as ledger:
        entries = ledger.history(limit=args.limit, analyst=args.analyst)
    if args.json:
        return to_json([e.to_dict() for e in entries])
    lines = [f"{'entry':>6}  {'time (UTC)':26}  {'analyst':10}  {'answer':8}  {'databases':16}  mechanism"]
    for e in entries:
        where = e.databases if e.databases == "all" else ",".join(map(str, e.databases))
        where = where if len(where) <= 16 else where[:13] + "..."
        mechanism = ", ".join(f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v:g}"
                              for k, v in e.mechanism.items() if not isinstance(v, dict))
        repeat = f" x{e.repeat}" if e.repeat != 1 else ""
        lines.append(f"{e.sequence:>6}  {e.time[:26]:26}  {e.analyst[:10]:10}  "
                     f"{'admitted' if e.admitted else 'refused':8}  {where:16}  {mechanism}{repeat}")
    return "\n".join(lines)


def _ledger_verify(args: argparse.Namespace):
    from .ledger.chain import DamagedLedgerError

    try:
        with _open_ledger(args) as ledger:
            verified = ledger.verify()
    except DamagedLedgerError as error:  # a verdict, printed as an answer (exit 1), not a usage error
        if args.json:
            return to_json({"ledger": args.ledger, "intact": False, "entry": error.entry,
                            "last_good": error.last_good, "reason": str(error)}), EXIT_REFUSED
        return str(error), EXIT_REFUSED
    return (to_json(verified.to_dict()) if args.json else str(verified)), 0


def _ledger_truncate(args: argparse.Namespace) -> str:
    if args.after < 0:
        raise _UsageError(f"--after: must be an entry number >= 0, got {args.after}")
    from .interrupts import until_reported

    with _open_ledger(args) as ledger:
        args.outcome.unchanged("nothing was deleted (the ledger is unchanged)")
        with until_reported():
            try:
                kept = ledger.truncate(args.after)
            except InvalidParameterError as error:  # (the ledger's own word for it is after)
                if error.field != "after":
                    raise
                raise _UsageError(f"--after: {error.detail}") from None
            args.outcome.recorded(f"the entries after entry {args.after} were deleted")
    if args.json:
        return to_json(kept.to_dict())
    return f"kept entries 1..{args.after}; every later entry deleted (spend again what ran since)\n{kept}"


def _load_at_most(path: str):
    from .files.scenario import load_scenario_at_most

    return load_scenario_at_most(path, 1)


#: The longest word (a run without spaces: a path, a value) and the longest message that an error line
#: shows; longer ones are cut, ending in ``...``. The messages show values through
#: :func:`gce.validation.shown`; these bounds also hold for what gce does not word itself (argparse's
#: ``invalid choice: '...'``, an engine's or the system's message quoting a path or a column).
_WORD_SHOWN, _LINE_SHOWN = 200, 2000


def _one_line(text: str) -> str:
    """An error message as one terminal-safe line, never echoing a huge input whole (:data:`_WORD_SHOWN`,
    :data:`_LINE_SHOWN`)."""
    line = " ".join(word if len(word) <= _WORD_SHOWN else word[:_WORD_SHOWN] + "..." for word in text.split())
    return terminal_text(line if len(line) <= _LINE_SHOWN else line[:_LINE_SHOWN] + "...")


def _terminal_lines(text: str) -> str:
    """Output for the terminal: its lines kept, control characters within them escaped."""
    return "\n".join(terminal_text(line) for line in text.split("\n"))


class _Outcome:
    """What the running command has recorded, for the line that ends it when it cannot give its answer.

    ``note`` completes ``gce: interrupted; ...`` and the error of an answer that could not be written (a
    string, or a function that words it then); ``changed`` says whether the ledger was changed, which makes
    any failure after it exit with :data:`EXIT_UNREPORTED`."""

    def __init__(self) -> None:
        self.note: object = None
        self.changed = False

    def unchanged(self, note: object) -> None:
        self.note, self.changed = note, False

    def recorded(self, note: str) -> None:
        self.note, self.changed = note, True

    def text(self) -> str | None:
        return self.note() if callable(self.note) else self.note


def _write(stream, text: str) -> None:
    """Write and flush ``text``; a character the stream's encoding lacks is escaped (``\\xe9``), never fatal."""
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "ascii"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding, "replace"))
    stream.flush()


def _say(line: str) -> None:
    """One line on standard error, when there is one to write to (never raises: it is the last word)."""
    if sys.stderr is None:
        return
    try:
        _write(sys.stderr, line + "\n")
    except (OSError, ValueError):
        pass


def _discard_stdout() -> None:
    """After a write to standard output failed: point its descriptor to ``os.devnull``, so that the
    interpreter's final flush of what is still buffered cannot fail again (Python's "Note on SIGPIPE")."""
    try:
        fd = sys.stdout.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except (AttributeError, OSError, ValueError):
        pass


def _interrupted(outcome: _Outcome) -> int:
    """Ctrl-C: ``gce: interrupted`` (and what was or was not recorded), exit status :data:`EXIT_INTERRUPTED`."""
    from . import interrupts

    interrupts.stop()
    note = outcome.text()
    _say("gce: interrupted" + (f"; {_one_line(note)}" if note else ""))
    return EXIT_INTERRUPTED


def _failed(message: str, outcome: _Outcome) -> int:
    """An error: one line, exit status :data:`EXIT_USAGE`, or :data:`EXIT_UNREPORTED` (and what was recorded)
    when the command had already changed the ledger."""
    from . import interrupts

    interrupts.stop()
    if outcome.changed:
        _say(f"gce: error: {_one_line(message)}; {_one_line(outcome.text() or 'the ledger was changed')}")
        return EXIT_UNREPORTED
    _say(f"gce: error: {_one_line(message)}")
    return EXIT_USAGE


def _delivered(status: int, outcome: _Outcome, text: str | None = None) -> int:
    """Write ``text`` (with its newline; None: only flush what argparse wrote) to standard output; ``status``
    when it was written, else one line on stderr and :data:`EXIT_USAGE` (:data:`EXIT_UNREPORTED` when the
    ledger was changed). A reader that went away (``gce ... | head -1``) is not an error of ours: ``status``,
    unless the ledger was changed."""
    from . import interrupts

    interrupts.check()  # a Ctrl-C still owed (it came inside an import): the interruption, not the answer
    try:
        _write(sys.stdout, "" if text is None else _terminal_lines(text) + "\n")
        interrupts.stop()  # written: a Ctrl-C from now on changes nothing
    except BrokenPipeError:
        _discard_stdout()
        if not outcome.changed:
            interrupts.stop()
            return status
        return _failed("cannot write the answer to standard output: the reader closed the pipe", outcome)
    except (OSError, ValueError) as error:  # ENOSPC (/dev/full), EBADF, EIO, a closed stream
        _discard_stdout()
        reason = getattr(error, "strerror", None) or str(error)
        return _failed(f"cannot write the answer to standard output: {reason}", outcome)
    return status


def _os_error(error: OSError) -> str:
    """An operating-system error as gce words it: the file and the reason."""
    reason = error.strerror or str(error)
    return f"{shown(error.filename, _PATH_SHOWN)}: {reason}" if error.filename is not None else reason


@contextlib.contextmanager
def _no_warnings(plots: bool) -> Iterator[None]:
    """No warning reaches standard error (the contract: the answer, or one ``gce:`` line): Python's warnings
    are ignored, and so are the messages matplotlib logs below an error when the command ``plots`` (a glyph a
    database's name needs and no font has, a configuration directory it cannot write). The library itself
    still warns its callers."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if not plots:
            yield
            return
        import logging  # (only for a plot: the other commands' start-up does not load it)

        quiet = logging.getLogger("matplotlib")
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            yield
        finally:
            quiet.setLevel(level)


def _run(argv: Sequence[str] | None, outcome: _Outcome) -> int:
    """The command: parsed, run and answered (the contract: the module's docstring)."""
    if sys.stdout is None:  # closed (>&-): refused before anything is read or recorded
        return _failed("standard output is closed: gce writes its answer there (redirect it to a file, or to "
                       "/dev/null to discard it)", outcome)
    args = None
    try:
        try:
            args = _parser().parse_args(argv)
        except SystemExit as done:  # --help or --version, written by argparse: flushed here, then argparse's exit
            code = done.code if isinstance(done.code, int) else EXIT_USAGE
            if _delivered(code, outcome) != code:
                return EXIT_USAGE
            raise
        args.outcome = outcome
        from .resources import limits

        with limits(memory=_memory_limit(args)), _no_warnings(getattr(args, "plot", None) is not None):
            output = args.run(args)
        status = 0
        if isinstance(output, tuple):  # (text, status): a refused ledger request is an answer, not an error
            output, status = output
    except _UsageError as error:
        return _failed(str(error), outcome)
    except GCEError as error:
        where = getattr(args, "file", None)
        return _failed((f"{where}: " if where else "") + str(error), outcome)
    except MemoryError:
        return _failed("out of memory (see --memory-limit)", outcome)
    except OSError as error:  # the machine's, not the input's: a disk full while writing a plot, say
        return _failed(_os_error(error), outcome)
    except Exception as error:  # noqa: BLE001 - a bug of gce's: still one line, never a traceback
        return _failed(f"internal error, please report it: {type(error).__name__}: {error}", outcome)
    return _delivered(status, outcome, output)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status.

    Ctrl-C is handled by :mod:`gce.interrupts` for the duration of the call (installed here unless
    :func:`main_exit` did it for the whole process), and turned into :data:`EXIT_INTERRUPTED`.
    """
    from . import interrupts

    outcome = _Outcome()
    mine = interrupts.install()
    try:
        try:
            return _run(argv, outcome)
        except KeyboardInterrupt:
            return _interrupted(outcome)
    except KeyboardInterrupt:  # a second Ctrl-C before the first one's line was written
        return _interrupted(outcome)
    finally:
        if mine:
            interrupts.uninstall()


def _standard_streams() -> None:
    """Before anything is opened: a closed standard descriptor (0, 1 or 2) gets ``os.devnull``, so that no file
    gce opens later (a ledger, a table) takes its number and receives what a library prints there; the
    standard streams escape what their encoding cannot represent (``PYTHONIOENCODING=ascii``)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDWR)
                if null != fd:
                    os.dup2(null, fd)
                    os.close(null)
            except OSError:
                pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, OSError, ValueError):
            pass


def main_exit() -> NoReturn:  # pragma: no cover - the command's process (tests run it as a process)
    """The ``gce`` command: :func:`main` in a process whose standard streams, encodings and SIGINT it owns;
    exits with :func:`main`'s status (the contract: the module's docstring). The console script enters
    through :func:`gce.__main__.main`, which installs the SIGINT handler before importing this module."""
    from . import interrupts

    status = EXIT_INTERRUPTED
    try:
        interrupts.install()
        _standard_streams()
        status = main()
    except KeyboardInterrupt:  # before main() took over
        interrupts.stop()
        status = _interrupted(_Outcome())
    interrupts.stop()  # from here on the process only ends: a late Ctrl-C is ignored
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError):
        _discard_stdout()
    sys.exit(status)


if __name__ == "__main__":  # pragma: no cover
    main_exit()
