"""Fuzz suite (hardening): random valid and invalid input through every entry point.

Scenario documents (every field, every kind, numbers from the extremes: 0,
5e-324, 1e-308, 1e308, inf, nan, huge integers, wrong types, missing and unknown
keys; tests/fuzz_strategies.py) go through ``load_scenario`` + ``solve`` and
through the ``gce`` command; the guarantee records and ``compose`` are fuzzed
directly. Every outcome must be a sound answer or the project's own error
(:class:`gce.errors.GCEError`):

* no other exception, and no warning (numpy RuntimeWarnings included) escapes;
* a report's numbers are not NaN, epsilon >= 0, delta in [0, 1], the target is
  kept, and the answer is a valid guarantee: the delta of concrete mechanisms
  satisfying the stated guarantees (tests/fuzz_strategies.py, independent of
  gce) never exceeds the reported one; where the reference is the exact worst
  case (pure, approximate, randomized response) an ``exact`` report equals it;
* the command exits 0 with output on stdout and nothing on stderr, or 2 with
  exactly one line ``gce: error: ...`` on stderr and nothing on stdout;
* every call answers within ``GCE_FUZZ_CAP`` seconds (default 10; solves get
  ``time_limit=2``), size extremes included (databases = 10**9, repeat = 10**12).

The default run is derandomized with few examples and no shrinking (well under
20 s once the suite passes); the ``slow`` variants draw many more examples and
shrink failures (``pytest -m slow tests/test_fuzz.py``; ``GCE_FUZZ_EXAMPLES``
scales them). Both tiers draw the same examples every run; ``GCE_FUZZ_RANDOM=1``
draws fresh ones for the slow tier.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import pathlib
import resource
import shlex
import signal
import subprocess
import sys
import tempfile
import warnings

import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import event as _event
from hypothesis.control import currently_in_test_context
from hypothesis import strategies as st

import fuzz_strategies as fz
import gce
from gce.cli import main
from gce.errors import GCEError

#: Seconds any single call (load + solve, a command, a composition) may take.
CAP = float(os.environ.get("GCE_FUZZ_CAP", "10"))
#: Bytes of address space any single call may add (the machine must survive a runaway allocation).
MEMORY = int(float(os.environ.get("GCE_FUZZ_MEMORY", str(4 * 2**30))))
#: The solver's own budget in the fuzzed solves.
TIME_LIMIT = 2.0
SLOW_EXAMPLES = int(os.environ.get("GCE_FUZZ_EXAMPLES", "400"))
TOLERANCE = (1e-9, 1e-12)  # relative, absolute: the reference's round-off

DEFAULT = settings(deadline=None, derandomize=True, database=None, print_blob=True,
                   phases=(Phase.explicit, Phase.generate),
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                          HealthCheck.filter_too_much])
#: The slow tier draws the same examples every run (CI must not fail at random); GCE_FUZZ_RANDOM=1
#: draws fresh ones, to explore by hand.
RANDOM = os.environ.get("GCE_FUZZ_RANDOM", "") not in ("", "0")
SLOW = settings(deadline=None, print_blob=True, derandomize=not RANDOM, **({} if RANDOM else {"database": None}),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


def fuzz(default_examples: int, slow_examples: int = SLOW_EXAMPLES, **strategies):
    """A default-run test and a ``slow`` one with many more examples, from one body."""

    def decorate(body):
        fast = settings(DEFAULT, max_examples=default_examples)(given(**strategies)(body))
        slow = pytest.mark.slow(settings(SLOW, max_examples=slow_examples)(given(**strategies)(body)))
        return fast, slow

    return decorate


# ---------------------------------------------------------------------------
# Guards: wall time, warnings, outcomes


class Overtime(Exception):
    """A call ran past the cap (a hang or an unbounded computation)."""


def _address_space() -> int | None:
    try:
        with open("/proc/self/status") as status:
            line = next(x for x in status if x.startswith("VmSize:"))
        return int(line.split()[1]) * 1024
    except (OSError, StopIteration, ValueError):
        return None


@contextlib.contextmanager
def capped(what: str, seconds: float = CAP):
    """Fail (not hang, not exhaust the machine) when ``what`` runs past ``seconds`` or allocates
    more than ``GCE_FUZZ_MEMORY`` bytes (a MemoryError then fails the example)."""

    def expire(signum, frame):
        raise Overtime(f"{what} took more than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    used, limits = _address_space(), resource.getrlimit(resource.RLIMIT_AS)
    if used is not None:
        cap = used + MEMORY
        if limits[1] != resource.RLIM_INFINITY:
            cap = min(cap, limits[1])
        resource.setrlimit(resource.RLIMIT_AS, (cap, limits[1]))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        resource.setrlimit(resource.RLIMIT_AS, limits)


#: Warnings Python hides by default when they come from third-party code (never printed to stderr).
_HIDDEN = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)
_THIRD_PARTY_QUIET = ("absl", "dp_accounting")


def escaping(caught) -> list[str]:
    out = []
    for w in caught:
        if issubclass(w.category, _HIDDEN) and any(p in str(w.filename) for p in _THIRD_PARTY_QUIET):
            continue
        out.append(f"{w.category.__name__} at {w.filename}:{w.lineno}: {w.message}")
    return list(dict.fromkeys(out))


@contextlib.contextmanager
def no_warnings(what: str = ""):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    leaked = escaping(caught)
    assert not leaked, f"warnings escaped{' from ' + what if what else ''}: {leaked}"


def event(label: str) -> None:
    """Hypothesis' outcome statistics (``--hypothesis-show-statistics``); a no-op in plain tests."""
    if currently_in_test_context():
        _event(label)


def is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(x)


def check_curve(curve, epsilon: float, delta: float) -> None:
    """The report's curve is a privacy curve (values in [0, 1], non-increasing) that certifies the answer.

    It is probed from 0 to 1e308; at infinity it may also refuse with the project's own error."""
    points = sorted({0.0, 1e-300, 0.5, 2.0, 50.0, 1e308} | ({epsilon} if math.isfinite(epsilon) else set()))
    values = [float(curve.delta(e)) for e in points]
    try:
        values.append(float(curve.delta(math.inf)))
        points.append(math.inf)
    except GCEError:
        pass
    assert all(is_number(v) and 0.0 <= v <= 1.0 for v in values), f"curve.delta at {points}: {values}"
    assert all(b <= a * (1 + 1e-9) + 1e-15 for a, b in zip(values, values[1:])), f"curve not monotone: {values}"
    if math.isfinite(epsilon):
        at = float(curve.delta(epsilon))
        assert at <= delta * (1 + 1e-6) + 1e-12, f"curve.delta({epsilon!r}) = {at!r} > reported delta {delta!r}"


def check_report(scenario, report, delta_target, epsilon_target) -> None:
    """A report is a sound answer: sane numbers, the target kept, no delta below the reference's."""
    assert isinstance(report, gce.Report), f"solve returned {type(report)}"
    eps, delta = report.epsilon, report.delta
    assert is_number(eps) and eps >= 0.0, f"epsilon {eps!r}"
    assert is_number(delta) and 0.0 <= delta <= 1.0, f"delta {delta!r}"
    if epsilon_target is not None:
        assert eps == epsilon_target, f"asked at epsilon {epsilon_target!r}, got {eps!r}"
    else:
        assert delta == delta_target, f"asked at delta {delta_target!r}, got {delta!r}"
    for name, b in report.baselines.items():
        assert is_number(b.epsilon) and b.epsilon >= 0.0, f"baseline {name} epsilon {b.epsilon!r}"
        assert is_number(b.delta) and 0.0 <= b.delta <= 1.0, f"baseline {name} delta {b.delta!r}"
    with warnings.catch_warnings():  # the reference's own round-off is not under test
        warnings.simplefilter("ignore")
        reference = fz.reference_for(scenario)
        truth = None if reference is None or math.isinf(eps) else reference.delta(eps)
    event("checked against the reference" if truth is not None else "no reference (too large or inf)")
    if truth is not None:
        rel, absolute = TOLERANCE
        assert truth <= delta * (1 + rel) + absolute, (
            f"unsound: concrete mechanisms reach delta {truth!r} at epsilon {eps!r}, reported delta {delta!r} "
            f"({report.theorem}, exact={report.exact})")
        if reference.complete and report.exact and epsilon_target is not None:
            assert delta <= truth * (1 + 1e-6) + absolute, (
                f"claimed exact: delta {delta!r} at epsilon {eps!r}, but the worst case is {truth!r} "
                f"({report.theorem})")


def check_report_output(report) -> None:
    """What the command line prints, and the curve every report carries."""
    json.dumps(report.to_dict(), allow_nan=False)
    assert str(report)
    check_curve(report.curve, report.epsilon, report.delta)


# ---------------------------------------------------------------------------
# Scenario files through load_scenario + solve


def solve_file(text: str, files: dict[str, str], binary: bool = False) -> None:
    note(text)
    note(repr(files))
    with tempfile.TemporaryDirectory() as folder:
        path = fz.write_scenario(folder, text, files, binary=binary)
        with no_warnings("load_scenario"), capped("load_scenario"):
            try:
                scenario = gce.load_scenario(path)
            except GCEError as error:
                assert str(error).strip()
                event("load_scenario refused")
                return
    note(repr(scenario))
    delta_target, epsilon_target = scenario.delta, scenario.epsilon
    with no_warnings("solve"), capped(f"solve(time_limit={TIME_LIMIT})"):
        try:
            report = gce.solve(scenario, time_limit=TIME_LIMIT)
        except GCEError as error:
            assert str(error).strip()
            event(f"solve refused: {type(error).__name__}")
            return
    event(f"report ({'composite' if scenario.hypotheses else scenario.neighborhood})")
    note(f"epsilon={report.epsilon!r} delta={report.delta!r} theorem={report.theorem} exact={report.exact}")
    with capped("checking the report"):
        check_report(scenario, report, delta_target, epsilon_target)
    with no_warnings("the report (to_dict, str, curve.delta from 0 to inf)"), capped("the report's output"):
        check_report_output(report)


@fuzz(10, document=fz.scenario_texts(), binary=st.integers(0, 30).map(lambda i: i == 30))
def _scenarios(document, binary):
    text, files = document
    solve_file(text, files, binary)


test_scenario_files_load_and_solve, test_scenario_files_load_and_solve_slow = _scenarios


@fuzz(3, document=fz.valid_documents(max_n=5).map(lambda d: (fz.toml_dumps(d[0]), d[1])))
def _valid_scenarios(document):
    """Only well-formed tiny documents: the soundness check sees many answers."""
    solve_file(*document)


test_valid_scenarios_are_sound, test_valid_scenarios_are_sound_slow = _valid_scenarios


# ---------------------------------------------------------------------------
# The command line, in process


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with no_warnings(), capped(f"gce {' '.join(argv)}", 3 * CAP):
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(argv)
            except SystemExit as exit_:  # argparse's own exits count as statuses
                status = exit_.code if isinstance(exit_.code, int) else 1
    return status, out.getvalue(), err.getvalue()


def check_cli(status: int, out: str, err: str, json_output: bool) -> None:
    event(f"exit {status}")
    if status == 0:
        assert err == "", f"exit 0 but stderr: {err!r}"
        assert out.strip(), "exit 0 with nothing on stdout"
        if json_output:
            data = json.loads(out)
            for key in ("epsilon", "delta"):
                if key in data:
                    value = data[key]
                    assert value == "inf" or (is_number(value) and value >= 0), f"{key}: {value!r}"
    else:
        assert status == 2, f"exit status {status}; stderr {err!r}"
        assert out == "", f"exit 2 but stdout: {out!r}"
        assert err.startswith("gce: error: "), f"stderr: {err!r}"
        assert err.endswith("\n") and err.count("\n") == 1, f"stderr is not one line: {err!r}"
        assert "Traceback" not in err


@st.composite
def cli_arguments(draw, path: str) -> tuple[list[str], bool]:
    command = draw(st.sampled_from(["solve", "solve", "solve", "curve", "calibrate"]))
    argv = [command, path]
    limit = draw(st.integers(0, 7))
    if limit < 6:
        argv += ["--time-limit", "1"]
    elif limit == 6:
        argv += ["--time-limit", draw(fz.float_flags)]
    as_json = draw(st.booleans())
    if as_json:
        argv.append("--json")
    if command == "solve":
        target = draw(st.integers(0, 4))
        if target in (1, 3):
            argv += ["--delta", draw(st.one_of(fz.float_flags, st.sampled_from(["1e-6", "0.01"])))]
        if target in (2, 3):
            argv += ["--epsilon", draw(st.one_of(fz.float_flags, st.sampled_from(["0.5", "2"])))]
    elif command == "curve":
        argv += ["--deltas", *draw(st.lists(st.one_of(fz.float_flags, st.sampled_from(["1e-6", "1e-3"])),
                                            min_size=1, max_size=4))]
    else:
        argv += ["--target-epsilon", draw(st.one_of(fz.float_flags, st.just("1")))]
        argv += ["--target-delta", draw(st.one_of(fz.float_flags, st.just("1e-6")))]
        if draw(st.booleans()):
            argv.append("--quiet")
    if draw(st.integers(0, 20)) == 20:
        argv.insert(draw(st.integers(0, len(argv))), draw(st.sampled_from(["--bogus", "-x", "--", "--json=1"])))
    return argv, as_json


@fuzz(5, slow_examples=SLOW_EXAMPLES // 2, document=fz.scenario_texts(max_n=4), data=st.data())
def _cli(document, data):
    text, files = document
    note(text)
    with tempfile.TemporaryDirectory() as folder:
        path = str(fz.write_scenario(folder, text, files))
        path = data.draw(st.sampled_from([path] * 12 + [folder, os.path.join(folder, "absent.toml"), ""]))
        argv, as_json = data.draw(cli_arguments(path))
        note(repr(argv))
        check_cli(*run_cli(argv), json_output=as_json)


test_cli_in_process, test_cli_in_process_slow = _cli


# ---------------------------------------------------------------------------
# The command line, as a process: what a user's terminal sees

GCE = pathlib.Path(sys.executable).with_name("gce")
#: The installed console script (``GCE_FUZZ_COMMAND`` overrides it, e.g. "python -m gce").
COMMAND = (shlex.split(os.environ["GCE_FUZZ_COMMAND"]) if os.environ.get("GCE_FUZZ_COMMAND")
           else [str(GCE)] if GCE.exists() else [sys.executable, "-m", "gce"])

PROCESS_CASES = {
    # a valid file through the PLD and composite routes (numerical warnings would show here)
    "valid": ('title = "fuzz"\ndatabases = ["a", "b", "c"]\ndelta = 1e-308\n'
              '[[invocations]]\ndatabases = "all"\nrepeat = 2\n'
              'mechanism = { kind = "subsampled", rate = 5e-324, mechanism = { kind = "laplace", scale = 1e308 } }\n'
              '[[invocations]]\ndatabases = "b"\nmechanism = { kind = "approx", epsilon = 1e-308, delta = 5e-324 }\n'
              '[hypotheses]\nh0 = { kind = "point", members = [] }\nh1 = { kind = "uniform", min_members = 1 }\n',
              ["--json"]),
    "extreme": ('databases = 2\nepsilon = 0\n[[invocations]]\ndatabases = [0, 1]\nrepeat = 1000000000000\n'
                'mechanism = { kind = "pure", epsilon = nan }\n', []),
}


def run_process(text: str, flags: list[str], folder: str, command: str = "solve") -> tuple[int, str, str]:
    path = pathlib.Path(folder) / "scenario.toml"
    path.write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONWARNINGS")}
    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30 + MEMORY, resource.getrlimit(resource.RLIMIT_AS)[1]))

    done = subprocess.run([*COMMAND, command, str(path), *flags], capture_output=True, text=True, timeout=120,
                          env=env, stdin=subprocess.DEVNULL, preexec_fn=limit_memory)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("case", sorted(PROCESS_CASES))
def test_cli_fixed_cases_in_process(case, tmp_path):
    """The fast twin of the next test: the same files through gce.cli.main in this interpreter."""
    text, flags = PROCESS_CASES[case]
    path = tmp_path / "scenario.toml"
    path.write_text(text, encoding="utf-8")
    check_cli(*run_cli(["solve", str(path), *flags]), json_output="--json" in flags)


@pytest.mark.slow  # a fresh interpreter: 1 s each
@pytest.mark.parametrize("case", sorted(PROCESS_CASES))
def test_cli_process_fixed_cases(case, tmp_path):
    text, flags = PROCESS_CASES[case]
    check_cli(*run_process(text, flags, str(tmp_path)), json_output="--json" in flags)


@pytest.mark.slow
@settings(SLOW, max_examples=max(SLOW_EXAMPLES // 10, 10))
@given(document=fz.scenario_texts(max_n=4), data=st.data())
def test_cli_process_slow(document, data):
    text, files = document
    note(text)
    with tempfile.TemporaryDirectory() as folder:
        for name, content in files.items():
            (pathlib.Path(folder) / name).write_text(content, encoding="utf-8")
        argv, as_json = data.draw(cli_arguments("PLACEHOLDER"))
        note(repr(argv))
        command, flags = argv[0], [a for a in argv[1:] if a != "PLACEHOLDER"]
        check_cli(*run_process(text, flags, folder, command), json_output=as_json)


# ---------------------------------------------------------------------------
# Guarantee records and compose, directly

GOOD = st.sampled_from([0.1, 0.5, 1.0, 2.0, 1e-3])
PARAMETER = st.one_of(GOOD, GOOD, fz.anything_bad)
RATE = st.one_of(st.sampled_from([0.5, 0.01, 1.0]), fz.anything_bad)


@st.composite
def guarantees(draw, depth: int = 0):
    """(constructor call as text, thunk building it)."""
    kind = draw(st.sampled_from(["PureDP", "ApproxDP", "ZCDP", "GaussianDP", "GaussianMechanism",
                                 "LaplaceMechanism", "RandomizedResponse"] + (["Subsampled"] if depth < 2 else [])))
    cls = getattr(gce, kind)
    if kind == "Subsampled":
        rate = draw(RATE)
        inner_text, inner = draw(guarantees(depth + 1))
        return f"Subsampled({rate!r}, {inner_text})", lambda: cls(rate, inner())
    if kind == "ApproxDP":
        args = (draw(PARAMETER), draw(st.one_of(st.sampled_from([1e-6, 0.0, 1e-3]), fz.anything_bad)))
    elif kind in ("GaussianMechanism", "LaplaceMechanism") and draw(st.booleans()):
        args = (draw(PARAMETER), draw(PARAMETER))
    else:
        args = (draw(PARAMETER),)
    return f"{kind}{args!r}".replace(",)", ")"), lambda: cls(*args)


COUNTS = st.one_of(st.sampled_from([1, 2, 3, 5, 365]),
                   st.sampled_from([10**6, 10**9, 0, -1, 2**63, 10**30, 1.5, True, math.inf]))
DELTAS = [0.0, 1e-300, 1e-6, 0.5]
EPSILONS = [0.0, 1e-300, 10.0, 1e308]
BAD_DELTAS = [math.nan, -1.0, 1.5, -math.inf, math.inf]
BAD_EPSILONS = [math.nan, -1.0, -1e-300, -math.inf]


def query(call, what: str):
    """The value of ``call()``, or None when it raised the project's own error."""
    try:
        with capped(what):
            return call()
    except GCEError:
        return None


@fuzz(8, first=guarantees(), second=st.one_of(st.none(), guarantees()), k=COUNTS, j=COUNTS)
def _constructors(first, second, k, j):
    text, build = first
    note(text)
    with no_warnings():
        try:
            g = build()
        except GCEError:
            event("constructor refused")
            return
        counts = {g: k}
        if second is not None:
            try:
                h = second[1]()
            except GCEError:
                h = None
            if h is not None and h != g:
                counts[h] = j
                note(f"second: {second[0]} x {j!r}")
        note(f"compose({counts!r})")
        composed = query(lambda: gce.compose(counts), "compose")
        single = query(lambda: gce.compose({g: 1}), "compose single")
        event("compose refused" if composed is None else "composed")
        if composed is None:
            return
        for d in DELTAS:
            best = query(lambda: composed.at_delta(d), f"at_delta({d!r})")
            if best is None:
                continue
            eps = query(lambda: composed.epsilon(d), f"epsilon({d!r})")
            assert best.delta == d and best.theorem and eps == best.epsilon, f"at_delta({d!r}) = {best!r}, {eps!r}"
            assert is_number(eps) and eps >= 0.0, f"epsilon({d!r}) = {eps!r}"
            one = None if single is None else query(lambda: single.epsilon(d), f"single epsilon({d!r})")
            if one is not None and math.isfinite(one) and math.isfinite(eps) and len(counts) == 1 and k >= 1:
                assert eps >= one * (1 - 1e-9) - 1e-12, (
                    f"{k} copies give epsilon {eps!r} < one copy's {one!r} at delta {d!r}")
            if math.isfinite(eps):
                truth = fz.composition_lower_bound([(x, min(c, 6)) for x, c in counts.items()], eps) \
                    if all(isinstance(c, int) and c >= 1 for c in counts.values()) else None
                back = query(lambda: composed.delta(eps), f"delta({eps!r})")
                if truth is not None:
                    assert truth <= d * (1 + TOLERANCE[0]) + TOLERANCE[1], (
                        f"unsound: concrete mechanisms reach delta {truth!r} at epsilon {eps!r} > {d!r}")
                if back is not None:
                    assert back <= d * (1 + 1e-6) + 1e-12, f"delta(epsilon({d!r}) = {eps!r}) = {back!r}"
        for e in EPSILONS:
            delta = query(lambda: composed.delta(e), f"delta({e!r})")
            if delta is None:
                continue
            assert is_number(delta) and 0.0 <= delta <= 1.0, f"delta({e!r}) = {delta!r}"
            one = None if single is None else query(lambda: single.delta(e), f"single delta({e!r})")
            if one is not None and len(counts) == 1 and k >= 1:
                assert delta >= one * (1 - 1e-9) - 1e-12, (
                    f"{k} copies give delta {delta!r} < one copy's {one!r} at epsilon {e!r}")
            if all(isinstance(c, int) and c >= 1 for c in counts.values()):
                truth = fz.composition_lower_bound([(x, min(c, 6)) for x, c in counts.items()], e)
                if truth is not None:
                    assert truth <= delta * (1 + TOLERANCE[0]) + TOLERANCE[1], (
                        f"unsound: concrete mechanisms reach delta {truth!r} at epsilon {e!r} > {delta!r}")
        for d in BAD_DELTAS:
            got = query(lambda: composed.epsilon(d), f"epsilon({d!r})")
            assert got is None, f"epsilon({d!r}) answered {got!r} instead of an error"
        for e in BAD_EPSILONS:
            got = query(lambda: composed.delta(e), f"delta({e!r})")
            assert got is None, f"delta({e!r}) answered {got!r} instead of an error"


test_guarantees_and_compose, test_guarantees_and_compose_slow = _constructors
