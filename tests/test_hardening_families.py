"""Issue 38, families 4-7: depth and size of structured input, TOML fragments, the user's names in errors,
extremes reaching the numerics and the engines.

The contract: Python API misuse raises a documented exception type (gce's own errors, ``ValueError``,
``TypeError``) whose message names the field, in the user's vocabulary and at most a few hundred characters;
never ``RecursionError``, ``OverflowError``, ``MemoryError`` or a third-party error (``GceAccountant.compose``
raises dp-accounting's ``UnsupportedEventError``, as every ``PrivacyAccountant`` does, as a subclass of gce's).
On the command line: exit 2 with exactly one ``gce:`` line on stderr, the ledger unchanged.

4. Every recursive input is read without recursion (:func:`gce.validation.fold_tree` for events,
   :func:`gce.validation.walk_data` for a file's tables: at most ``MAX_NESTING`` levels of events and
   ``MAX_TABLE_NESTING`` of tables, a tree inside itself refused, a shared subtree read once) and every message that echoes a value shows it through one helper
   (:func:`gce.validation.shown`).
5. A TOML fragment is one value with nothing after it (:func:`gce.files.scenario.read_fragment`).
6. A guarantee record's refusal deep in an event tree is given in the event's field names, at its place.
7. Extreme but valid Opacus histories answer (certified, closed forms where no grid reaches), counts and
   limits an engine cannot represent are refused or clamped.

Each family is swept over its entry points: ``from_dp_event``, ``GceAccountant.compose``, a record that takes
an event (``Invocation``), the scenario reader (``scenario_from_dict``, ``mechanism_from_dict``),
``gce ledger spend|check --mechanism``, the Opacus accountants' ``step`` / ``get_epsilon``. The default tier
runs representative cases (a few seconds); ``-m slow`` runs the whole sweeps.
"""

from __future__ import annotations

import math
import pathlib
import random
import time
import warnings

import attr
import pytest
from hypothesis import strategies as st
from dp_accounting import dp_event as de
from dp_accounting import privacy_accountant as pa

import tiers
from gce import constraints as gce_constraints
from gce import resources
from gce.accounting.guarantees import GaussianMechanism, PureDP, Subsampled
from gce.accounting.theorems import compose
from gce.bridges.accountant import EventRefusedError, GceAccountant
from gce.bridges.dp_events import UnsupportedEventError, from_dp_event
from gce.bridges.opacus import AllocationAccountant, PoissonAccountant
from gce.cli import main
from gce.errors import GCEError, InvalidParameterError, InvalidScenarioError
from gce.files.scenario import MAX_DEPTH, load_scenario, mechanism_from_dict, read_fragment, scenario_from_dict
from gce.ledger import Accountant
from gce.model import Invocation
from gce.validation import MAX_NESTING, MAX_TABLE_NESTING, SHOWN_CHARACTERS, fold_tree, shown, walk_data

#: The longest message any refusal here may have ("a few hundred characters").
LONGEST = 400

EpsilonDeltaDpEvent = getattr(de, "EpsilonDeltaDpEvent", None)
if EpsilonDeltaDpEvent is None:  # dp-accounting 0.6.0 lacks it (tests/test_dp_events.py)
    @attr.define(frozen=True)
    class EpsilonDeltaDpEvent(de.DpEvent):  # type: ignore[no-redef]
        epsilon: float
        delta: float


def short(error: BaseException) -> str:
    """The error's message, checked to be short and to be one line."""
    text = str(error)
    assert len(text) <= LONGEST and "\n" not in text, (len(text), text[:500])
    return text


# ---------------------------------------------------------------------------
# The entry points a tree of events reaches


def read_by_from_dp_event(event):
    return from_dp_event(event)


def read_by_accountant(event):
    accountant = GceAccountant()
    accountant.compose(event)
    return accountant.guarantees


def read_by_invocation(event):
    return Invocation(0, event).guarantee


EVENT_READERS = {"from_dp_event": read_by_from_dp_event, "GceAccountant.compose": read_by_accountant,
                 "Invocation": read_by_invocation}
#: Where each entry point puts the event's place (Invocation names its own field first).
PREFIX = {"from_dp_event": "event", "GceAccountant.compose": "event", "Invocation": "mechanism.event"}


def refusal(reader: str, event) -> InvalidParameterError:
    """What ``reader`` raises for ``event``: a documented type (GceAccountant's is dp-accounting's too)."""
    with pytest.raises(InvalidParameterError) as info:
        EVENT_READERS[reader](event)
    if reader == "GceAccountant.compose":
        assert isinstance(info.value, EventRefusedError) and isinstance(info.value, pa.UnsupportedEventError)
    short(info.value)
    return info.value


def nest(kind: str, depth: int, leaf=None):
    """``leaf`` (a Gaussian) inside ``depth`` events of ``kind``."""
    event = leaf or de.GaussianDpEvent(1.0)
    for _ in range(depth):
        event = {"composed": lambda e: de.ComposedDpEvent([e]),
                 "self": lambda e: de.SelfComposedDpEvent(e, 1),
                 "poisson": lambda e: de.PoissonSampledDpEvent(0.999, e)}[kind](event)
    return event


# ---------------------------------------------------------------------------
# 4. Depth and size of structured input


@tiers.parametrize("kind, depth", [(k, d) for d in (3000, 10000) for k in ("composed", "self", "poisson")],
                   default=[0, 1, 2])
@pytest.mark.parametrize("reader", list(EVENT_READERS))
def test_an_event_tree_nested_thousands_deep_is_refused_naming_its_place(reader, kind, depth):
    error = refusal(reader, nest(kind, depth))
    assert error.field.startswith(PREFIX[reader] + (".events[0]" if kind == "composed" else ".event"))
    assert error.detail.startswith(f"nested deeper than {MAX_NESTING}")
    assert "levels>" in error.field  # the middle of the place elided


@pytest.mark.parametrize("reader", list(EVENT_READERS))
def test_an_event_tree_at_the_documented_depth_is_read(reader):
    for kind in ("composed", "self"):
        assert EVENT_READERS[reader](nest(kind, MAX_NESTING)) in ({GaussianMechanism(1.0): 1}, GaussianMechanism(1.0))
        refusal(reader, nest(kind, MAX_NESTING + 1))


@pytest.mark.parametrize("reader", list(EVENT_READERS))
def test_a_composed_event_that_contains_itself_is_refused(reader):
    event = de.ComposedDpEvent([de.GaussianDpEvent(1.0), de.LaplaceDpEvent(1.0)])
    event.events.append(event)  # mutated after construction: a cycle
    error = refusal(reader, event)
    assert error.field == PREFIX[reader] + ".events[2]" and "contains itself" in error.detail
    deeper = de.SelfComposedDpEvent(de.ComposedDpEvent([de.GaussianDpEvent(1.0)]), 3)
    deeper.event.events.append(deeper)
    assert "contains itself" in refusal(reader, deeper).detail


def test_a_self_composition_of_nothing_is_nothing_for_every_reader():
    # dp-accounting's own ledger refuses a count of 0 under a self-composition (ValueError): the accountant
    # reads it as gce does, nothing
    event = de.SelfComposedDpEvent(de.SelfComposedDpEvent(de.GaussianDpEvent(1.0), 0), 3)
    assert from_dp_event(event) == {} and read_by_accountant(event) == {}
    assert GceAccountant().compose(event).get_epsilon(1e-5) == 0.0


def test_a_subtree_met_twice_is_read_once():
    event = de.GaussianDpEvent(2.0)
    for _ in range(50):  # 2^50 leaves as a tree, 51 objects as given
        event = de.ComposedDpEvent([event, event])
    assert from_dp_event(event) == {GaussianMechanism(2.0): 2**50}
    for _ in range(4):  # 2^54 runs: beyond 2^53, refused naming where the count passes it
        event = de.ComposedDpEvent([event, event])
    error = refusal("from_dp_event", event)  # (2^51, 2^52, 2^53 are read; the root's 2^54 is not)
    assert "more than 2**53 times" in error.detail and error.field == "event"


def wrapped_around(n: int, unsupported_at_end: bool):
    gaussians = [de.GaussianDpEvent(1.0 + i) for i in range(n)]
    if unsupported_at_end:
        return de.ComposedDpEvent(gaussians + [de.NonPrivateDpEvent()])
    return de.SampledWithReplacementDpEvent(1000, 10, de.ComposedDpEvent(gaussians))


@tiers.parametrize("unsupported_at_end", [False, True], default=[0])
@pytest.mark.parametrize("reader", ["from_dp_event", "GceAccountant.compose"])
def test_an_unsupported_event_around_200000_gaussians_has_a_short_message(reader, unsupported_at_end):
    error = refusal(reader, wrapped_around(200_000, unsupported_at_end))
    assert isinstance(error, UnsupportedEventError)
    assert error.field == ("event.events[200000]" if unsupported_at_end else "event")
    assert ("NonPrivateDpEvent" if unsupported_at_end else "SampledWithReplacementDpEvent") in error.detail


def test_a_sampled_composition_of_20000_mechanisms_names_a_few():
    event = de.PoissonSampledDpEvent(0.1, de.ComposedDpEvent([de.GaussianDpEvent(1.0 + i) for i in range(20_000)]
                                                             + [de.LaplaceDpEvent(1.0)]))
    error = refusal("from_dp_event", event)
    assert "(19998 more)" in error.detail


def deep_table(depth: int) -> dict:
    table: dict = {"kind": "pure", "epsilon": 0.1}
    for _ in range(depth):
        table = {"kind": "subsampled", "rate": 0.5, "mechanism": table}
    return table


@pytest.mark.parametrize("depth", [MAX_DEPTH, 1000, 100_000])
def test_the_scenario_reader_refuses_deep_mechanism_tables(depth):
    with pytest.raises(InvalidScenarioError) as info:
        mechanism_from_dict(deep_table(depth), "invocations[0].mechanism")
    assert info.value.field.startswith("invocations[0].mechanism.mechanism")
    assert info.value.detail == f"nests tables or arrays more than {MAX_DEPTH} levels deep"
    short(info.value)
    scenario = {"databases": 2, "delta": 1e-6, "invocations": [{"databases": "all", "mechanism": deep_table(depth)}]}
    with pytest.raises(InvalidScenarioError, match="levels deep"):
        scenario_from_dict(scenario)
    assert mechanism_from_dict(deep_table(MAX_DEPTH - 1), "m") is not None  # (the 32nd table is the leaf)


def test_cyclic_and_shared_python_tables():
    table: dict = {"kind": "subsampled", "rate": 0.5}
    table["mechanism"] = table
    with pytest.raises(InvalidScenarioError, match="contains itself") as info:
        mechanism_from_dict(table, "mechanism")
    assert info.value.field == "mechanism.mechanism"
    shared: list = [1]
    for _ in range(MAX_DEPTH - 2):  # 2^30 paths, 30 lists: read once each
        shared = [shared, shared]
    with pytest.raises(InvalidScenarioError, match="invocations"):  # (read past the tree check)
        scenario_from_dict({"databases": 2, "delta": 1e-6, "invocations": [], "x": shared})


def test_subsampled_guarantees_nest_at_most_the_documented_depth():
    guarantee = PureDP(0.1)
    for _ in range(MAX_TABLE_NESTING):
        guarantee = Subsampled(0.5, guarantee)
    with pytest.raises(InvalidParameterError, match="nested deeper than 32") as info:
        Subsampled(0.5, guarantee)
    assert info.value.field == "mechanism"


@pytest.fixture
def ledger(tmp_path) -> str:
    scenario = tmp_path / "s.toml"
    scenario.write_text('databases = 3\ndelta = 1e-6\n[[invocations]]\ndatabases = "all"\n'
                        'mechanism = { kind = "pure", epsilon = 0.1 }\n')
    path = str(tmp_path / "l.sqlite")
    assert main(["ledger", "init", str(scenario), "--budget-epsilon", "10", "--budget-delta", "1e-5",
                 "--ledger", path]) == 0
    return path


def entries(path: str) -> int:
    with Accountant(path) as accountant:
        return accountant.status().entries


def refused_on_the_command_line(capsys, ledger: str, mechanism: str, action: str = "spend") -> str:
    capsys.readouterr()
    before = entries(ledger)
    assert main(["ledger", action, "--ledger", ledger, "--databases", "all", "--mechanism", mechanism]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and captured.err.startswith("gce: ")
    assert len(captured.err) <= LONGEST and "Traceback" not in captured.err
    assert entries(ledger) == before
    return captured.err


def fragment(depth: int) -> str:
    text = 'kind = "pure", epsilon = 0.1'
    for _ in range(depth):
        text = f'kind = "subsampled", rate = 0.5, mechanism = {{ {text} }}'
    return text


@tiers.parametrize("depth, action", [(1000, "spend"), (1000, "check"), (MAX_DEPTH, "spend"), (300, "check")],
                   default=[0, 1, 2])
def test_a_mechanism_of_1000_nested_subsampled_tables_on_the_ledger(capsys, ledger, depth, action):
    err = refused_on_the_command_line(capsys, ledger, fragment(depth), action)
    assert f"more than {MAX_DEPTH} levels deep" in err and "--mechanism" in err


def test_the_ledger_takes_a_mechanism_within_the_depth(capsys, ledger):
    before = entries(ledger)
    assert main(["ledger", "spend", "--ledger", ledger, "--databases", "all", "--mechanism",
                 fragment(MAX_DEPTH - 1)]) == 0
    assert entries(ledger) == before + 1


def test_ledger_init_of_a_file_tomllib_reads_for_minutes_stops_at_the_time_limit(capsys, tmp_path):
    """100,000 dotted keys (200 kB): tomllib takes minutes (its cost grows with the square of the depth); the
    reading counts against ``--time-limit`` as a solve's does, and nothing is created."""
    scenario = tmp_path / "dotted.toml"
    scenario.write_text('databases = 3\ndelta = 1e-6\n[[invocations]]\ndatabases = "all"\n'
                        'mechanism = { kind = "pure", epsilon = 0.1 }\n' + ".".join(["a"] * 100_000) + " = 1\n")
    path = tmp_path / "new.sqlite"
    capsys.readouterr()
    started = time.monotonic()
    assert main(["ledger", "init", str(scenario), "--budget-epsilon", "1", "--ledger", str(path),
                 "--time-limit", "0.5"]) == 2
    assert time.monotonic() - started < 3 * 0.5 + 5.0  # (3x the limit, and the alarm's own lateness)
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.endswith(
        "file: reading the scenario file (200 kB) and its data was stopped at the time limit of 0.5 s "
        "(--time-limit)\n")
    assert not path.exists()


@pytest.mark.parametrize("huge", [2**63, 10**100])
def test_entry_numbers_beyond_the_stores_integers(capsys, ledger, huge):
    """``--limit`` and ``--after`` past SQLite's 64-bit integers: every entry, and no such entry (named by its
    flag), not OverflowError or a ledger called damaged ("datatype mismatch")."""
    with Accountant(ledger) as accountant:
        everything = accountant.history()
        assert accountant.history(limit=huge) == everything
        with pytest.raises(InvalidParameterError, match=f"^after: the ledger has no entry .* \\(its last is "
                                                        f"{len(everything)}\\)$"):
            accountant.truncate(huge)
    capsys.readouterr()
    assert main(["ledger", "history", "--limit", str(huge), "--ledger", ledger]) == 0
    assert main(["ledger", "truncate", "--after", str(huge), "--ledger", ledger]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gce: error: --after: the ledger has no entry ") and err.count("\n") == 1
    assert entries(ledger) == len(everything)


def test_a_ledger_entry_nested_beyond_what_json_reads_is_damage_not_a_recursion_error(ledger):
    with Accountant(ledger) as accountant:
        weights = accountant._expected_weights("[" * 100_000 + "]" * 100_000, 1)
    assert weights is None


SHOWN_CASES = {
    "a long list": list(range(10**6)),
    "a long string": "x" * 10**7,
    "a huge integer": 10**5000,
    "control characters": "\x1b[31mred\u202e\n",
    "a deep list": None,  # built below
    "a list inside itself": None,
    "a dict inside itself": None,
    "a deep event": nest("self", 5000),
    "200,000 events": de.ComposedDpEvent([de.GaussianDpEvent(1.0)] * 200_000),
    "a bytes value": b"\x00" * 10**6,
    "an object whose repr fails": type("Bad", (), {"__repr__": lambda self: 1 / 0})(),
}


def _cases():
    cases = dict(SHOWN_CASES)
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    cases["a deep list"] = deep
    loop: list = [1]
    loop.append(loop)
    cases["a list inside itself"] = loop
    table: dict = {"a": 1}
    table["b"] = table
    cases["a dict inside itself"] = table
    return cases


@pytest.mark.parametrize("spelling", ["python", "json", "toml"])
def test_one_helper_shortens_every_value_a_message_shows(spelling):
    for name, value in _cases().items():
        for limit in (10, SHOWN_CHARACTERS, 200):
            text = shown(value, limit, spelling=spelling)
            assert len(text) <= 2 * limit + 3, (name, text)
            assert "\x1b" not in text and "\u202e" not in text and "\n" not in text, (name, text)
    assert shown("abc") == repr("abc") and shown([1.5, None]) == "[1.5, None]"
    assert shown(GaussianMechanism(1.1)) == repr(GaussianMechanism(1.1))
    assert shown(de.GaussianDpEvent(1.0)) == repr(de.GaussianDpEvent(1.0))


def test_a_message_never_echoes_a_huge_input_whole():
    # a sweep of public entry points given a value of a million elements where a small one belongs
    huge = list(range(10**6))
    for call in (lambda: PureDP(huge), lambda: Subsampled(huge, PureDP(1.0)), lambda: compose({PureDP(1.0): huge}),
                 lambda: Invocation(huge, PureDP(1.0)), lambda: mechanism_from_dict({"kind": "pure", "epsilon": huge}, "m"),
                 lambda: from_dp_event(de.GaussianDpEvent(huge)), lambda: from_dp_event(huge),
                 lambda: GceAccountant().compose(de.GaussianDpEvent(1.0), huge),
                 lambda: PoissonAccountant().step(noise_multiplier=huge, sample_rate=0.1),
                 lambda: load_scenario("x" * 10**6), lambda: resources.parse_size(huge, "memory")):
        with pytest.raises((GCEError, ValueError, TypeError)) as info:
            call()
        short(info.value)


@tiers.given(5, 50, st.randoms(use_true_random=False))
def _random_trees_are_read_or_refused(rng):
    # a random tree of events (composed, self-composed, sampled, leaves), sometimes too deep, sometimes with a
    # cycle or a bad leaf: every reader answers the same or refuses with a short, placed message
    def build(depth: int):
        roll = rng.random()
        if depth <= 0 or roll < 0.3:
            return rng.choice([de.GaussianDpEvent(1.0 + rng.random()), de.LaplaceDpEvent(2.0), de.NoOpDpEvent()])
        if roll < 0.55:
            return de.ComposedDpEvent([build(depth - 1) for _ in range(rng.randint(1, 3))])
        if roll < 0.8:
            return de.SelfComposedDpEvent(build(depth - 1), rng.randint(0, 4))
        return de.PoissonSampledDpEvent(rng.random(), build(depth - 1))
    event = build(rng.choice([3, 6, 10]))
    for _ in range(rng.choice([0, 0, MAX_NESTING + 5])):  # sometimes too deep
        event = de.ComposedDpEvent([event])
    if rng.random() < 0.2:
        inner = de.ComposedDpEvent([event])
        inner.events.append(inner)
        event = inner
    outcomes = {}
    for reader in EVENT_READERS:
        try:
            outcomes[reader] = ("read", EVENT_READERS[reader](event))
        except (InvalidParameterError, ValueError, TypeError) as error:
            short(error)
            outcomes[reader] = ("refused", str(error).split(": ", 1)[-1])
    assert outcomes["from_dp_event"] == outcomes["GceAccountant.compose"]
    kind, value = outcomes["from_dp_event"]
    assert outcomes["Invocation"][0] == ("read" if kind == "read" and len(value) == 1 else "refused")


test_random_event_trees, test_random_event_trees_slow = _random_trees_are_read_or_refused


# ---------------------------------------------------------------------------
# 5. Fragments of TOML on the command line

TRAILING = [" } junk = { ", "\njunk = 1", " }\n[x]\ny = 1", " }, { kind = \"pure\", epsilon = 0.5 ", " } #",
            " }\n# a comment\nother = { kind = \"pure\", epsilon = 9.0 }", " } ]", " } mechanism = { "]


@pytest.mark.parametrize("trailing", TRAILING)
def test_a_fragment_is_one_value_with_nothing_after_it(trailing):
    text = 'kind = "pure", epsilon = 0.1' + trailing
    with pytest.raises(InvalidScenarioError) as info:
        read_fragment(text, "--mechanism", table=True)
    assert info.value.field == "--mechanism"
    assert "text follows it" in info.value.detail or "}" not in trailing  # (else: a table never closed)
    short(info.value)
    braced = '{ kind = "pure", epsilon = 0.1 }' + trailing.replace(" }", "", 1)
    if braced.strip() != '{ kind = "pure", epsilon = 0.1 }':
        with pytest.raises(InvalidScenarioError):
            read_fragment(braced, "--mechanism", table=True)


@pytest.mark.parametrize("text, why", [('kind = "pure", epsilon = 0.1 # a note', "a comment cannot follow a table"),
                                       ('kind = "pure",\n epsilon = 0.1', "is written on one line"),
                                       ('kind = "pure",\r\n epsilon = 0.1', "is written on one line"),
                                       ('"pure"\n', None)])
def test_a_comment_or_a_line_break_in_a_fragment_is_named(text, why):
    """The two slips of a fragment typed or pasted on the command line are refused with the reason, not only
    tomllib's words about the braces gce added ("Unclosed inline table")."""
    with pytest.raises(InvalidScenarioError) as info:
        read_fragment(text, "--mechanism", table=True)
    assert info.value.field == "--mechanism"
    assert (why in info.value.detail) if why else ("one line" not in info.value.detail)  # (a trailing newline: stripped)


@pytest.mark.parametrize("text", ['kind = "pure", epsilon = 0.1', '{ kind = "pure", epsilon = 0.1 }',
                                  '  kind = "pure" , epsilon = 0.1  ', 'kind = "approx", epsilon = 1, delta = 1e-9',
                                  'kind="subsampled", rate=0.5, mechanism={kind="gaussian", sigma=1.0}'])
def test_a_well_formed_fragment_is_read(text):
    table = read_fragment(text, "--mechanism", table=True)
    assert isinstance(table, dict) and mechanism_from_dict(table, "--mechanism") is not None


def test_a_fragment_is_read_as_a_file_value_is():
    for text, message in (('kind = "pure", epsilon = 1e999', "--mechanism.epsilon: must be finite, got inf"),
                          ("kind = 'pure', epsilon = " + "9" * 5000, "--mechanism: holds a number"),
                          ("pure 0.1", "--mechanism: not a TOML table"),
                          ("1.5", "--mechanism: not a TOML table"),
                          (fragment(5000), f"--mechanism: nests tables or arrays more than {MAX_DEPTH} levels")):
        with pytest.raises(InvalidScenarioError) as info:
            read_fragment(text, "--mechanism", table=True)
        assert short(info.value).startswith(message), str(info.value)
    assert read_fragment("[1, 2]", "--x") == [1, 2]
    with pytest.raises(InvalidScenarioError, match="text follows"):
        read_fragment("[1, 2] 3", "--x")


@tiers.parametrize("trailing, action", [(t, a) for t in TRAILING for a in ("spend", "check")],
                   default=[0, 3, 4])
def test_text_after_the_mechanism_is_refused_and_nothing_spent(capsys, ledger, trailing, action):
    err = refused_on_the_command_line(capsys, ledger, 'kind = "pure", epsilon = 0.1' + trailing, action)
    assert "--mechanism" in err


# ---------------------------------------------------------------------------
# 6. Names in errors are the user's names

#: (event with a bad field, the event's field named, what the message says)
BAD_LEAVES = [
    (lambda: de.GaussianDpEvent(math.inf), "noise_multiplier", "must be finite, got inf"),
    (lambda: de.LaplaceDpEvent(math.inf), "noise_multiplier", "must be finite, got inf"),
    (lambda: de.GaussianDpEvent(-1.0), "noise_multiplier", "got -1.0"),
    (lambda: de.GaussianDpEvent(math.nan), "noise_multiplier", "got nan"),
    (lambda: de.RandomizedResponseDpEvent(5e-324, 2), "noise_parameter", "must be finite, got inf"),
    (lambda: de.ZCDpEvent(math.inf), "rho", "must be finite, got inf"),
    (lambda: EpsilonDeltaDpEvent(math.inf, 1e-6), "epsilon", "must be finite, got inf"),
    (lambda: de.PoissonSampledDpEvent(2.0, de.GaussianDpEvent(1.0)), "sampling_probability", "got 2.0"),
    (lambda: de.SelfComposedDpEvent(de.GaussianDpEvent(1.0), -1), "count", "got -1"),
    (lambda: de.DiscreteLaplaceDpEvent(math.nan, 1), "noise_parameter", "got nan"),
    (lambda: de.GaussianDpEvent(10**400), "noise_multiplier", "a double can hold, got <an integer of 1329 bits>"),
    (lambda: de.PoissonSampledDpEvent(10**400, de.GaussianDpEvent(1.0)), "sampling_probability", "a double can hold"),
]


def placed(leaf, rng: random.Random) -> tuple[object, str]:
    """``leaf`` at a random place of a tree, and the place's suffix."""
    event, place = leaf, ""
    for _ in range(rng.randint(0, 4)):
        roll = rng.random()
        if roll < 0.5:
            at = rng.randint(0, 3)
            event = de.ComposedDpEvent([de.GaussianDpEvent(1.0)] * at + [event] + [de.LaplaceDpEvent(1.0)])
            place = f".events[{at}]" + place
        elif roll < 0.8:
            event = de.SelfComposedDpEvent(event, 3)
            place = ".event" + place
        else:
            event = de.PoissonSampledDpEvent(0.5, event)
            place = ".event" + place
    return event, place


def test_the_issue_example_names_noise_multiplier_at_its_place():
    event = de.ComposedDpEvent([de.GaussianDpEvent(1.0)] * 3 + [de.GaussianDpEvent(math.inf)])
    with pytest.raises(InvalidParameterError) as info:
        from_dp_event(event)
    assert str(info.value) == "event.events[3].noise_multiplier: must be finite, got inf"
    assert info.value.field == "event.events[3].noise_multiplier"


@tiers.parametrize("seed", range(12), default=[0, 1])
@pytest.mark.parametrize("reader", list(EVENT_READERS))
def test_a_bad_field_deep_in_a_tree_is_named_in_the_events_words(reader, seed):
    rng = random.Random(seed)
    for make, name, says in BAD_LEAVES:
        event, place = placed(make(), rng)
        error = refusal(reader, event)
        assert error.field == f"{PREFIX[reader]}{place}.{name}", (error.field, place, name)
        assert says in error.detail, error.detail
        assert not any(word in str(error) for word in ("sigma", "scale", ": rate", ".rate"))


def test_a_composition_too_small_a_noise_together_is_named_by_the_event():
    # several Gaussians on one sample: one Gaussian of sqrt(sum mu^2), with no overflow of mu^2
    event = de.PoissonSampledDpEvent(0.5, de.ComposedDpEvent([de.GaussianDpEvent(1e-200)] * 2))
    (guarantee, count), = from_dp_event(event).items()
    assert count == 1 and guarantee.rate == 0.5 and guarantee.mechanism.sigma == pytest.approx(1e-200 / math.sqrt(2))


@pytest.mark.parametrize("values, field", [
    (dict(noise_multiplier=math.inf, sample_rate=0.1), "noise_multiplier"),
    (dict(noise_multiplier=-1.0, sample_rate=0.1), "noise_multiplier"),
    (dict(noise_multiplier=1.0, sample_rate=0.0), "sample_rate"),
    (dict(noise_multiplier=1.0, sample_rate=math.nan), "sample_rate"),
    (dict(noise_multiplier=1.0, sample_rate=1.5), "sample_rate"),
])
@pytest.mark.parametrize("cls", [PoissonAccountant, AllocationAccountant])
def test_opacus_refusals_name_opacus_fields(cls, values, field):
    with pytest.raises(InvalidParameterError) as info:
        cls().step(**values)
    assert info.value.field == field
    short(info.value)


def test_ledger_init_names_the_files_invocation_table(capsys, tmp_path):
    """The ledger names a refused guarantee by its first invocation record (a table of ``databases = "all"``
    is n of them); the command names the file's ``[[invocations]]`` table (it said invocations[4] of 2)."""
    scenario = tmp_path / "s.toml"
    scenario.write_text('databases = 4\n[[invocations]]\ndatabases = "all"\nmechanism = { kind = "pure", epsilon = 0.1 }'
                        '\n[[invocations]]\ndatabases = [0, 1]\nmechanism = { kind = "pure", epsilon = 0.2 }\n'
                        '[[invocations]]\ndatabases = 3\nmechanism = { kind = "zcdp", rho = 0.1 }\n')
    capsys.readouterr()
    assert main(["ledger", "init", str(scenario), "--budget-epsilon", "9", "--ledger", str(tmp_path / "l")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gce: error: {scenario}: invocations[2].mechanism: the basic filter needs") and \
        err.count("\n") == 1
    with pytest.raises(GCEError, match=r"^invocations\[6\]\.mechanism: "):  # the Python scenario's record
        Accountant.create(str(tmp_path / "m"), load_scenario(scenario), budget_epsilon=9.0)


def test_scenario_refusals_name_the_files_keys():
    for table, field in (({"kind": "gaussian", "sigma": math.inf}, "m.sigma"),
                         ({"kind": "subsampled", "rate": 0.5, "mechanism": {"kind": "laplace", "scale": -1}},
                          "m.mechanism.scale"),
                         ({"kind": "subsampled", "rate": 2.0, "mechanism": {"kind": "pure", "epsilon": 1}}, "m.rate")):
        with pytest.raises(InvalidScenarioError) as info:
            mechanism_from_dict(table, "m")
        assert info.value.field == field


# ---------------------------------------------------------------------------
# 7. Extremes reaching the numerics and the engines

SIGMAS = [5e-324, 1e-300, 1e-10, 0.02, 1.0, 1e10, 1e300]
RATES = [5e-324, 1e-300, 1e-20, 1e-9, 0.01, 1 - 1e-16, 1.0]


def answer(cls, sigma: float, rate: float, steps: int = 1, delta: float = 1e-5) -> tuple[float, float]:
    accountant = cls(time_limit=20)
    for _ in range(steps):
        accountant.step(noise_multiplier=sigma, sample_rate=rate)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        low, high = accountant.get_epsilon_bracket(delta)
        assert accountant.get_epsilon(delta) == high
    assert 0.0 <= low <= high
    return low, high


@pytest.mark.parametrize("sigma, rate, expected", [
    (1.0, 5e-324, 0.0), (1.0, 1e-300, 0.0), (1e300, 0.01, 0.0), (1e-300, 0.01, math.inf), (1e-300, 1e-300, 0.0)])
def test_the_issues_extreme_poisson_steps_answer(sigma, rate, expected):
    low, high = answer(PoissonAccountant, sigma, rate)
    assert high == expected and (low == 0.0 or low == expected)  # (below, a step beyond the grids is left out)


def test_a_rate_just_below_one_is_the_rate_one():
    for cls in (PoissonAccountant, AllocationAccountant):
        near = answer(cls, 1.0, 1 - 1e-16)
        assert near == pytest.approx(answer(cls, 1.0, 1.0), rel=1e-3)


@pytest.mark.parametrize("rate", [5e-324, 1e-300, 1e-20])
def test_a_shuffled_epoch_beyond_the_grids_is_bounded_by_closed_forms(rate):
    low, high = answer(AllocationAccountant, 1.0, rate)
    assert low == 0.0 and high == pytest.approx(answer(PoissonAccountant, 1.0, 1.0)[1], rel=1e-3)  # one Gaussian


def test_a_tiny_rate_among_other_steps_is_certified_at_its_floor():
    accountant = PoissonAccountant()
    for rate in (0.01, 1e-300):
        accountant.step(noise_multiplier=1.0, sample_rate=rate)
    alone = PoissonAccountant()
    alone.step(noise_multiplier=1.0, sample_rate=0.01)
    low, high = accountant.get_epsilon_bracket(1e-5)
    alone_low, alone_high = alone.get_epsilon_bracket(1e-5)
    assert low == alone_low and alone_low <= high <= alone_high * 1.01  # (the upper: on its own lattice)


@tiers.parametrize("sigma, rate", [(s, r) for s in SIGMAS for r in RATES],
                   default=lambda sigma, rate: sigma in (1e-300, 1.0, 1e300) and rate in (5e-324, 1e-20, 0.01))
@pytest.mark.parametrize("cls", [PoissonAccountant, AllocationAccountant])
def test_every_extreme_opacus_step_answers(cls, sigma, rate):
    answer(cls, sigma, rate, steps=3)


@tiers.parametrize("event", [
    de.PoissonSampledDpEvent(5e-324, de.GaussianDpEvent(1.0)), de.PoissonSampledDpEvent(1e-300, de.GaussianDpEvent(1.0)),
    de.PoissonSampledDpEvent(0.01, de.GaussianDpEvent(1e300)), de.PoissonSampledDpEvent(0.01, de.GaussianDpEvent(1e-300)),
    de.PoissonSampledDpEvent(1e-300, de.GaussianDpEvent(1e10)), de.GaussianDpEvent(5e-324),
    de.SelfComposedDpEvent(de.PoissonSampledDpEvent(0.01, de.GaussianDpEvent(1.0)), 2**53),
    de.DiscreteLaplaceDpEvent(1e300, 2)], default=[0, 2, 3, 5])
def test_gce_accountant_at_extremes_answers_or_refuses_as_documented(event):
    accountant = GceAccountant(time_limit=20).compose(event)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            low, high = accountant.get_epsilon_bracket(1e-5)
        except GCEError as error:  # (a NumericalLimitError naming what no engine reaches)
            short(error)
            return
    assert 0.0 <= low <= high


HUGE = 10**400  # an integer no double holds: float() raises OverflowError

HUGE_CASES = {
    "epsilon": lambda: PureDP(HUGE),
    "sigma": lambda: GaussianMechanism(HUGE),
    "target_epsilon": lambda: GceAccountant().compose(de.GaussianDpEvent(1.0)).get_delta(HUGE),
    "target_epsilon ": lambda: __import__("gce").calibrate_noise(HUGE, 1e-5, steps_per_epoch=10, epochs=1,
                                                                  sampling="poisson"),
    "rtol": lambda: __import__("gce").calibrate_noise(1.0, 1e-5, steps_per_epoch=10, epochs=1, sampling="poisson",
                                                        rtol=HUGE),
    "time_limit": lambda: __import__("gce").solve(__import__("gce").Scenario(2, [Invocation(0, PureDP(1.0))]),
                                                  time_limit=HUGE),
    "event.noise_multiplier": lambda: from_dp_event(de.LaplaceDpEvent(HUGE)),
}


@pytest.mark.parametrize("field", list(HUGE_CASES))
def test_an_integer_beyond_a_double_is_refused_naming_its_field(field):
    """``10**400`` passes ``0 < x < inf`` (Python compares an int exactly) and then broke ``float()``."""
    with pytest.raises(InvalidParameterError) as info:
        HUGE_CASES[field]()
    assert info.value.field == field.strip() and "<an integer of 1329 bits>" in str(info.value)


@pytest.mark.parametrize("repeat", [1, 3])
def test_a_laplace_of_a_denormal_scale_answers_without_a_warning(repeat):
    """``LaplaceMechanism(1e-320)`` is epsilon inf: its canonical pairs' composition put ``0 * inf`` (nan) at the
    balanced count, with a RuntimeWarning; that outcome has no loss (and no mass)."""
    from gce import Invocation as Inv, LaplaceMechanism, Scenario, solve
    from gce.accounting.theorems import _group

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss, log_mass, _ = _group(math.inf, 4)
        report = solve(Scenario(4, [Inv(i, LaplaceMechanism(1e-320), repeat=repeat) for i in range(4)],
                                gce_constraints.AtMost(2), delta=1e-6), time_limit=20)
    assert loss.tolist() == [math.inf, math.inf, 0.0, -math.inf, -math.inf] and log_mass[0] == 0.0
    assert report.epsilon == math.inf


def test_counts_a_double_cannot_hold_are_refused():
    with pytest.raises(InvalidParameterError) as info:
        compose({PureDP(0.1): 2**1001})
    assert info.value.field == "guarantees[0].count"
    short(info.value)
    assert math.isfinite(compose({PureDP(0.1): 2**1000}).epsilon(1e-6))
    for count in (2**53 + 1, -1, 1.5):
        with pytest.raises(EventRefusedError) as caught:
            GceAccountant().compose(de.GaussianDpEvent(1.0), count)
        assert caught.value.field == "count"
    with pytest.raises(InvalidParameterError, match="count"):
        from_dp_event(de.SelfComposedDpEvent(de.GaussianDpEvent(1.0), 10**400))


def test_a_memory_limit_duckdb_cannot_represent_is_clamped(monkeypatch, tmp_path, capsys):
    import duckdb

    monkeypatch.setenv(resources.MEMORY_LIMIT_ENV, "1e30")
    assert resources.engine_memory() == resources.ENGINE_MEMORY_MAX
    duckdb.connect(":memory:", config={"memory_limit": f"{resources.engine_memory() // 2**20}MiB"}).close()
    table = tmp_path / "m.csv"
    table.write_text("individual,database\n1,0\n2,1\n")
    for argv in (["membership", str(table), "--databases", "3"],
                 ["membership", str(table), "--databases", "3", "--memory-limit", "1e300"]):
        assert main(argv) == 0, capsys.readouterr().err
    assert "Traceback" not in capsys.readouterr().err


def test_a_time_budget_no_clock_can_represent_is_clamped():
    with resources.limits(time_limit=1e300):
        assert resources.seconds_left() <= resources.TIME_LIMIT_MAX
        with resources.stop_at_deadline("x", "nothing"):
            pass


def test_the_walks_read_without_recursion_and_name_the_place():
    def read(node, field):
        if isinstance(node, int):
            if node < 0:
                raise InvalidParameterError(field, f"must be >= 0, got {node}")
            return node
        values = yield [(item, f"[{i}]") for i, item in enumerate(node)]
        return sum(values)

    assert fold_tree([1, [2, [3]]], "x", read) == 6
    with pytest.raises(InvalidParameterError, match=r"^x\[1\]\[1\]\[0\]: must be >= 0, got -3$"):
        fold_tree([1, [2, [-3]]], "x", read)
    deep: list = [None]
    for _ in range(10**5):
        deep = [deep]
    with pytest.raises(InvalidParameterError, match="nested deeper than 8") as info:
        walk_data({"a": deep}, "", lambda value: None, limit=8)
    assert info.value.field == "a" + "[0]" * 7
    with pytest.raises(InvalidParameterError, match=r"^a\.b\[1\]: must not be None$"):
        walk_data({"a": {"b": [1, None]}}, "", lambda v: None if v is not None else "must not be None", limit=8)


@pytest.mark.parametrize("sampling", ["poisson", "shuffled"])
def test_a_target_epsilon_that_needs_almost_no_noise_is_answered(sampling, capsys):
    """At a target of 1e308 the search reaches a noise beyond every grid (mu >= 40); that step is read in closed
    form (the composition without amplification above), not refused as 'mu: must be in [0, 40)'."""
    import gce

    c = gce.calibrate_noise(1e308, 1e-5, steps_per_epoch=100, epochs=2, sampling=sampling)
    assert 0.0 < c.sigma < 0.025 and c.epsilon_high <= 1e308
    capsys.readouterr()
    assert main(["calibrate", "--target-epsilon", "1e308", "--target-delta", "1e-5", "--steps-per-epoch", "100",
                 "--epochs", "2", "--sampling", sampling]) == 0
    assert capsys.readouterr().err == ""


EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("value, says", [("abc", "must be a number of bytes"), ("0", "must be at least 1 MB"),
                                         ("nan", "must be a number of bytes")])
def test_every_command_refuses_a_bad_memory_limit_in_the_environment(capsys, monkeypatch, value, says):
    """``GCE_MEMORY_LIMIT`` was read only by the commands that came to check memory (membership refused it,
    solve ran on): every command checks it before it reads anything, as it checks ``--memory-limit``."""
    monkeypatch.setenv("GCE_MEMORY_LIMIT", value)
    for args in (["solve", str(EXAMPLES / "hospitals.toml")], ["curve", str(EXAMPLES / "hospitals.toml")]):
        capsys.readouterr()
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"gce: error: GCE_MEMORY_LIMIT: {says}") and err.count("\n") == 1
    assert main(["solve", str(EXAMPLES / "hospitals.toml"), "--memory-limit", "2GB"]) == 0  # the flag overrides


@pytest.mark.parametrize("repeat", ["0", "-3", str(2**53 + 1), str(10**400)])
def test_a_repeat_out_of_range_is_named_by_its_flag(capsys, ledger, repeat):
    """``--repeat`` beyond 2**53 was named ``repeat:`` (the ledger's word), below 1 ``--repeat:``: both the flag."""
    capsys.readouterr()
    assert main(["ledger", "check", "--databases", "0", "--mechanism", 'kind = "pure", epsilon = 0.1', "--repeat",
                 repeat, "--ledger", ledger]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gce: error: --repeat: must be an integer in 1..2**53, got ") and err.count("\n") == 1
