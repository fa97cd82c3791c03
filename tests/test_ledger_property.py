"""A property test of the online accountant against a brute force that shares nothing with gce.

Random scenarios of up to 6 databases whose invocations repeat themselves in every way a scenario can
say so (the same :class:`gce.Invocation` twice, overlapping and identical tables, ``repeat``, an
:class:`gce.InvocationGroup` listing a database twice), random membership constraints of every kind,
both neighbourhoods, every filter, a random budget; then :meth:`gce.Accountant.create` and a random
sequence of spends. After every step the reference recomputes, from the inputs alone:

* the allowed membership sets (2^n subsets, each kind's rule written here from its documented meaning),
  the allowed pairs (unbounded: (empty, b); bounded: (b, b')) and where each pair differs;
* the per-database sums of each filter component over the scenario's invocations (every record, every
  repeat) and the admitted requests, with the statistics written here from the papers (basic: epsilon
  and delta; zCDP: rho, eps^2 / 2, mu^2 / 2; GDP: mu^2; Renyi: alpha rho, alpha mu^2 / 2, randomized
  response's divergence for a pure epsilon), cross-checked against gce's for every guarantee drawn;
* the worst case over allowed pairs of each component, and the filter's rule on it (every component
  within its budget; Renyi: some order within its own).

and asserts: what was admitted fits (relative tolerance 1e-9), what was refused would not have fitted,
no refusal is the time limit's, ``create`` fails exactly when the scenario alone exceeds the budget, and
``status()`` brackets the worst case. The zCDP and GDP budgets are gce's, checked by hand per example
(GDP: the closed-form delta of DRS22 with scipy's normal law; zCDP: CKS20 Prop. 12 over a grid of orders,
and no smaller than the classic rho + 2 sqrt(rho log(1/delta)) conversion of BS16 Prop. 1.3).

Default tier: ``GCE_LEDGER_PROPERTY_DEFAULT`` examples (default 12, under 5 s); the ``slow`` twin draws
``GCE_LEDGER_PROPERTY_EXAMPLES`` (default 400).
"""

from __future__ import annotations

import itertools
import math
import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, event, note, settings
from hypothesis import strategies as st
from scipy import stats

import gce
from gce.errors import InfeasibleConstraintsError, InvalidParameterError
from gce.ledger import Accountant, LedgerError

import tiers

DEFAULT_EXAMPLES = int(os.environ.get("GCE_LEDGER_PROPERTY_DEFAULT", "12"))
SLOW_EXAMPLES = int(os.environ.get("GCE_LEDGER_PROPERTY_EXAMPLES", "400"))
#: Relative slack between the reference's sums and gce's (round-off of sums added in another order).
TOLERANCE = 1e-9
#: The Renyi filter's orders (fixed by gce when a ledger is created; asserted equal to gce's below).
ORDERS = np.array([1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 32.0, 64.0])
MAX_DATABASES = 6

# ---------------------------------------------------------------------------
# The reference: membership sets, statistics, budgets, the filter's rule


def _allowed(member: tuple[int, ...], constraint: tuple) -> bool:
    """Whether the membership set ``member`` (a 0/1 tuple) satisfies one constraint, from the kinds' meanings:
    at_most |b & among| <= m; exclusive |b & group| <= 1; together all or none of group; conflicts never
    both ends of an edge; patterns b empty or one of the listed sets."""
    kind, *args = constraint
    inside = {i for i, x in enumerate(member) if x}
    if kind == "at_most":
        m, among = args
        return len(inside if among is None else inside & set(among)) <= m
    if kind == "exclusive":
        return len(inside & set(args[0])) <= 1
    if kind == "together":
        return len(inside & set(args[0])) in (0, len(args[0]))
    if kind == "conflicts":
        return not any(u in inside and v in inside for u, v in args[0])
    if kind == "patterns":
        return not inside or any(inside == set(p) for p in args[0])
    raise AssertionError(kind)


def differing(n: int, constraints: list[tuple], neighborhood: str) -> np.ndarray:
    """One 0/1 row per allowed pair (b0, b1): where the two sets differ."""
    sets = [s for s in itertools.product((0, 1), repeat=n) if all(_allowed(s, c) for c in constraints)]
    rows = np.array(sets, dtype=bool)
    if neighborhood == "unbounded":
        return rows  # (empty, b): b itself
    return (rows[:, None, :] ^ rows[None, :, :]).reshape(-1, n)


def _randomized_response(eps: float, alpha: np.ndarray) -> np.ndarray:
    """Renyi divergence of order alpha between Bernoulli(p) and Bernoulli(1 - p), p = e^eps / (1 + e^eps)
    (the canonical pair of a pure epsilon)."""
    p, q = math.exp(eps) / (1 + math.exp(eps)), 1 / (1 + math.exp(eps))
    return np.log(p ** alpha * q ** (1 - alpha) + q ** alpha * p ** (1 - alpha)) / (alpha - 1)


def statistic(filter_name: str, guarantee: tuple) -> np.ndarray:
    """One invocation's filter statistic, from the guarantee's description (kind, parameters)."""
    kind, *p = guarantee
    if filter_name == "basic":
        return {"pure": lambda: np.array([p[0], 0.0]), "approx": lambda: np.array([p[0], p[1]]),
                "laplace": lambda: np.array([p[1] / p[0], 0.0])}[kind]()
    if filter_name == "gdp":
        return {"gdp": lambda: np.array([p[0] ** 2]), "gaussian": lambda: np.array([(p[1] / p[0]) ** 2])}[kind]()
    rho = {"pure": lambda: p[0] ** 2 / 2, "zcdp": lambda: p[0], "gdp": lambda: p[0] ** 2 / 2,
           "gaussian": lambda: (p[1] / p[0]) ** 2 / 2}[kind]()
    if filter_name == "zcdp":
        return np.array([rho])
    if kind == "pure":  # the canonical pair's divergence, or alpha eps^2 / 2 where smaller
        return np.minimum(_randomized_response(p[0], ORDERS), ORDERS * rho)
    return ORDERS * rho


def budgets_by_hand(filter_name: str, epsilon: float, delta: float, gce_budgets: np.ndarray) -> np.ndarray:
    """Basic: (epsilon, delta); Renyi: epsilon - log(k / delta) / (alpha - 1) per order (Ville plus a union
    bound over the k orders). zCDP and GDP: gce's bisection, checked here against the papers' formulas."""
    if filter_name == "basic":
        return np.array([epsilon, delta])
    if filter_name == "renyi":
        if delta == 0.0:
            return np.full(ORDERS.size, -math.inf)
        return epsilon - math.log(ORDERS.size / delta) / (ORDERS - 1.0)
    value = float(gce_budgets[0])
    if delta == 0.0:
        assert value == 0.0
        return np.array([0.0])
    if filter_name == "gdp":  # DRS22 Cor. 2.13: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
        def gdp_delta(mu: float) -> float:
            return float(stats.norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * stats.norm.cdf(-epsilon / mu - mu / 2))
        mu = math.sqrt(value)
        assert gdp_delta(mu) <= delta * (1 + 1e-9) and gdp_delta(mu * (1 + 1e-6)) > delta
        return np.array([value])
    # zCDP, CKS20 Prop. 12 over a grid of orders (any order gives a valid bound: the grid's eps is >= the exact)
    alpha = np.exp(np.linspace(np.log(1.0001), np.log(1e5), 20001))

    def cks(rho: float) -> float:
        return float(np.min(rho * alpha + np.log1p(-1 / alpha) - (math.log(delta) + np.log(alpha)) / (alpha - 1)))

    classic = (math.sqrt(math.log(1 / delta) + epsilon) - math.sqrt(math.log(1 / delta))) ** 2
    assert classic <= value * (1 + 1e-9), (classic, value)
    assert cks(value) <= epsilon + 1e-6 and cks(value * 1.001) > epsilon, (value, cks(value))
    return np.array([value])


def within(filter_name: str, values: np.ndarray, budgets: np.ndarray, slack: float) -> bool:
    """The filter's rule with budgets moved by ``slack`` (relative): every component within its budget,
    or for Renyi some order within its own."""
    moved = np.where(np.isfinite(budgets), budgets + slack * np.abs(budgets), budgets)
    inside = values <= moved
    return bool(inside.any() if filter_name == "renyi" else inside.all())


# ---------------------------------------------------------------------------
# Building gce's inputs from the descriptions


def guarantee_object(guarantee: tuple):
    kind, *p = guarantee
    return {"pure": lambda: gce.PureDP(p[0]), "approx": lambda: gce.ApproxDP(p[0], p[1]),
            "laplace": lambda: gce.LaplaceMechanism(scale=p[0], sensitivity=p[1]),
            "zcdp": lambda: gce.ZCDP(p[0]), "gdp": lambda: gce.GaussianDP(p[0]),
            "gaussian": lambda: gce.GaussianMechanism(sigma=p[0], sensitivity=p[1])}[kind]()


def constraint_object(constraint: tuple):
    kind, *args = constraint
    if kind == "at_most":
        return gce.AtMost(args[0], among=args[1])
    return {"exclusive": gce.Exclusive, "together": gce.Together, "conflicts": gce.Conflicts,
            "patterns": gce.Patterns}[kind](args[0])


def scenario_items(n: int, items: list[tuple]) -> tuple[list, list[tuple[int, tuple, int]]]:
    """gce's invocation items and, for the reference, every (database, guarantee, repeat) they stand for."""
    objects, flat = [], []
    for shape, databases, guarantee, repeat in items:
        listed = list(range(n)) if databases == "all" else list(databases)
        g = guarantee_object(guarantee)
        if shape == "records":  # a table written as one Invocation per listed database
            objects += [gce.Invocation(i, g, repeat) for i in listed]
        elif shape == "group":
            objects.append(gce.InvocationGroup(range(n) if databases == "all" else listed, g, repeat))
        flat += [(i, guarantee, repeat) for i in listed]
    return objects, flat


# ---------------------------------------------------------------------------
# Strategies

PARAMETERS = {  # few values, so that equal guarantees recur across tables (the case grouping got wrong)
    "pure": st.tuples(st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.3, 0.5])),
    "approx": st.tuples(st.sampled_from([0.0, 0.1, 0.25]), st.sampled_from([0.0, 0.0, 1e-8, 1e-7])),
    "laplace": st.tuples(st.sampled_from([2.0, 5.0, 10.0]), st.sampled_from([0.5, 1.0])),
    "zcdp": st.tuples(st.sampled_from([0.0, 0.001, 0.01, 0.05])),
    "gdp": st.tuples(st.sampled_from([0.0, 0.05, 0.1, 0.3])),
    "gaussian": st.tuples(st.sampled_from([2.0, 5.0, 10.0]), st.sampled_from([0.5, 1.0])),
}
KINDS = {"basic": ["pure", "approx", "laplace"], "gdp": ["gdp", "gaussian"],
         "zcdp": ["pure", "zcdp", "gdp", "gaussian"], "renyi": ["pure", "zcdp", "gdp", "gaussian"]}


def guarantees(filter_name: str) -> st.SearchStrategy[tuple]:
    return st.sampled_from(KINDS[filter_name]).flatmap(lambda k: PARAMETERS[k].map(lambda p: (k, *p)))


def subsets(n: int, min_size: int = 1) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(st.integers(0, n - 1), min_size=min_size, max_size=n, unique=True).map(tuple)


@st.composite
def constraint_lists(draw, n: int) -> list[tuple]:
    out = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["at_most", "exclusive", "together", "conflicts", "patterns"]))
        if kind == "at_most":
            out.append(("at_most", draw(st.integers(0, n)), draw(st.none() | subsets(n).map(sorted).map(tuple))))
        elif kind in ("exclusive", "together"):
            out.append((kind, draw(subsets(n))))
        elif kind == "conflicts":
            edges = list(itertools.combinations(range(n), 2))
            out.append(("conflicts", tuple(draw(st.lists(st.sampled_from(edges), unique=True, max_size=6)))
                        if edges else ()))
        else:
            out.append(("patterns", tuple(draw(st.lists(subsets(n).map(frozenset), min_size=1, max_size=4,
                                                         unique=True)))))
    return out


@st.composite
def runs(draw) -> dict:
    n = draw(st.integers(1, MAX_DATABASES))
    filter_name = draw(st.sampled_from(["basic", "basic", "zcdp", "gdp", "renyi"]))
    g = guarantees(filter_name)
    items: list[tuple] = []
    for _ in range(draw(st.integers(1, 4))):
        if items and draw(st.integers(0, 3)) == 0:
            items.append(draw(st.sampled_from(items)))  # the same table again
            continue
        shape = draw(st.sampled_from(["records", "group"]))
        if shape == "group":  # a database may be listed twice
            databases = draw(st.just("all") | st.lists(st.integers(0, n - 1), min_size=1, max_size=2 * n)
                             .map(tuple))
        else:
            databases = draw(st.just("all") | subsets(n) | st.lists(st.integers(0, n - 1), min_size=1,
                                                                     max_size=2 * n).map(tuple))
        items.append((shape, databases, draw(g), draw(st.sampled_from([1, 1, 1, 2, 3]))))
    spends = draw(st.lists(st.tuples(st.just("all") | st.integers(0, n - 1) | subsets(n), g,
                                     st.sampled_from([1, 1, 1, 2, 5])), max_size=10))
    delta = draw(st.sampled_from([0.0, 1e-6, 1e-3] if filter_name == "basic" else [1e-6, 1e-3, 1e-3, 1e-3, 1e-3, 0.0]))
    epsilon = draw(st.sampled_from([0.05, 0.3, 1.0, 2.5, 5.0]) | st.floats(0.01, 8.0))
    return {"n": n, "constraints": draw(constraint_lists(n)), "neighborhood": draw(st.sampled_from(["unbounded",
            "bounded"])), "filter": filter_name, "items": items, "spends": spends, "epsilon": epsilon,
            "delta": delta}


# ---------------------------------------------------------------------------
# The property


def _worst(masks: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """Per component, the largest sum any allowed pair sees."""
    return (masks.astype(float) @ sums.T).max(axis=0)


def _check_status(ledger: Accountant, worst: np.ndarray) -> None:
    status = ledger.status()
    slack = TOLERANCE * np.maximum(np.abs(worst), 1e-12)
    assert np.all(np.array(status.upper) >= worst - slack), (status.upper, worst)
    assert np.all(np.array(status.lower) <= worst + slack), (status.lower, worst)


def _run(run: dict, directory: str) -> None:
    n, name = run["n"], run["filter"]
    note(repr(run))
    masks = differing(n, run["constraints"], run["neighborhood"])
    objects, flat = scenario_items(n, run["items"])
    constraints = gce.ConstraintSet(n, [constraint_object(c) for c in run["constraints"]])
    if not masks.any():  # nothing to protect: gce refuses the scenario
        with pytest.raises(InfeasibleConstraintsError):
            gce.Scenario(n, objects, constraints, neighborhood=run["neighborhood"])
        return
    scenario = gce.Scenario(n, objects, constraints, neighborhood=run["neighborhood"])
    weights = {}
    for _, g, _ in flat + [(None, g, None) for _, g, _ in run["spends"]]:
        weights[g] = statistic(name, g)
    sums = np.zeros((weights[flat[0][1]].size, n))
    for database, g, repeat in flat:
        sums[:, database] += repeat * weights[g]
    path = os.path.join(directory, "ledger.sqlite")
    try:
        ledger = Accountant.create(path, scenario, budget_epsilon=run["epsilon"], budget_delta=run["delta"],
                                   filter=name)
    except LedgerError as error:
        # refused: the scenario alone must exceed the budget, and never for want of time
        assert "not certified" not in str(error), error
        with Accountant(path) as partial:
            budgets = budgets_by_hand(name, run["epsilon"], run["delta"], partial.budgets)
        assert not within(name, _worst(masks, sums), budgets, -TOLERANCE), (_worst(masks, sums), budgets, error)
        event(f"create refused: the scenario exceeds the budget ({name}, delta {run['delta']:g})")
        return
    with ledger:
        assert ledger.filter.components and np.array_equal(ORDERS, np.array(gce.ledger.filters.RENYI_FILTER_ORDERS))
        for g, w in weights.items():  # the statistics written here agree with gce's
            assert ledger.filter.weights(guarantee_object(g)) == pytest.approx(w, rel=TOLERANCE, abs=1e-15), g
        budgets = budgets_by_hand(name, run["epsilon"], run["delta"], ledger.budgets)
        assert ledger.budgets == pytest.approx(budgets, rel=TOLERANCE)
        worst = _worst(masks, sums)
        assert within(name, worst, budgets, TOLERANCE), (worst, budgets)  # the scenario alone fits
        _check_status(ledger, worst)
        for databases, g, repeat in run["spends"]:
            members = list(range(n)) if databases == "all" else [databases] if isinstance(databases, int) \
                else list(databases)
            added = sums.copy()
            added[:, members] += repeat * weights[g][:, None]
            checked = ledger.check(databases if databases == "all" or isinstance(databases, int) else
                                   list(databases), guarantee_object(g), repeat=repeat)
            decision = ledger.spend(databases if databases == "all" or isinstance(databases, int) else
                                    list(databases), guarantee_object(g), repeat=repeat)
            assert checked.admitted == decision.admitted, (checked, decision)
            after = _worst(masks, added)
            event(f"spend {'admitted' if decision.admitted else 'refused'}")
            if decision.admitted:
                sums = added
            else:  # refused only if it would not have fitted, never for want of time at this size
                assert "not certified" not in decision.reason, decision
                assert not within(name, after, budgets, -TOLERANCE), (after, budgets, decision)
            worst = _worst(masks, sums)
            assert within(name, worst, budgets, TOLERANCE), (worst, budgets, decision)
            _check_status(ledger, worst)
        if n > 1:  # a database listed twice is an error that records nothing
            entries = ledger.status().entries
            with pytest.raises(InvalidParameterError, match="listed twice"):
                ledger.spend([0, 1, 0], guarantee_object(run["items"][0][2]))
            assert ledger.status().entries == entries


_SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@tiers.given(DEFAULT_EXAMPLES, SLOW_EXAMPLES, runs(), settings=settings(_SETTINGS, derandomize=True,
                                                                           database=None))
def _accountant_matches_brute_force(run):
    with tempfile.TemporaryDirectory() as directory:
        _run(run, directory)


test_accountant_matches_brute_force, test_accountant_matches_brute_force_slow = _accountant_matches_brute_force


def test_reference_by_hand():
    """The reference's pieces on cases worked by hand."""
    # at most 1 of 3, 0 and 1 together: allowed {}, {2}; with (0, 1) together and at most 2: {}, {2}, {0, 1}
    assert differing(3, [("at_most", 1, None), ("together", (0, 1))], "unbounded").astype(int).tolist() == \
        [[0, 0, 0], [0, 0, 1]]
    rows = differing(3, [("at_most", 2, None), ("together", (0, 1))], "bounded")
    assert sorted(map(tuple, rows.astype(int).tolist())) == sorted(
        [(0, 0, 0), (0, 0, 1), (1, 1, 0), (0, 0, 1), (0, 0, 0), (1, 1, 1), (1, 1, 0), (1, 1, 1), (0, 0, 0)])
    assert differing(2, [("patterns", (frozenset({0, 1}),))], "unbounded").astype(int).tolist() == \
        [[0, 0], [1, 1]]
    assert differing(3, [("conflicts", ((0, 1), (1, 2)))], "unbounded").sum(axis=1).max() == 2  # {0, 2}
    # pure 0.3: zCDP 0.045; Renyi at order 2 of randomized response: log(p^2/q + q^2/p) = log(cosh-like)
    assert statistic("zcdp", ("pure", 0.3)).tolist() == pytest.approx([0.045])
    p = math.exp(0.3) / (1 + math.exp(0.3))
    assert statistic("renyi", ("pure", 0.3))[1] == pytest.approx(math.log(p * p / (1 - p) + (1 - p) ** 2 / p))
    assert statistic("gdp", ("gaussian", 2.0, 1.0)).tolist() == [0.25]
    assert statistic("basic", ("laplace", 4.0, 2.0)).tolist() == [0.5, 0.0]
    assert within("renyi", np.array([5.0, 0.1]), np.array([1.0, 0.2]), 0.0)
    assert not within("basic", np.array([5.0, 0.1]), np.array([1.0, 0.2]), 0.0)
