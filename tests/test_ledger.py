"""The online accountant (gce.ledger): filters, the incremental worst case, the ledger and its command.

References are independent of gce's solvers: every allowed membership set is listed by brute force
(2^n subsets checked with ``ConstraintSet.satisfied``), and the filters' budgets are re-derived from
the papers' formulas (Rogers et al. 2016: sum eps, sum delta; Feldman and Zrnic 2021 with a union
bound over the orders; Whitehouse et al. 2023 and Smith and Thakurta 2022 through gce's curves,
which tests/test_theorems.py checks against brute force).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import sqlite3

import numpy as np
import pytest

import gce
from gce.accounting.curves import GaussianCurve, ZCDPCurve
from gce.cli import main
from gce.constraints import AtMost, Conflicts, ConstraintSet, Exclusive, Patterns, Together
from gce.errors import InvalidParameterError, UnsupportedCombinationError
from gce.ledger import Accountant, LedgerError
from gce.ledger.filters import FILTERS, RENYI_FILTER_ORDERS
from gce.ledger.store import BACKENDS, Backend, Store, is_url, open_store
from gce.ledger.worst import packing_bracket, reach

import tiers

# ---------------------------------------------------------------------------
# References


def allowed_sets(constraints: ConstraintSet) -> list[frozenset[int]]:
    n = constraints.n
    subsets = (frozenset(s) for k in range(n + 1) for s in itertools.combinations(range(n), k))
    return [s for s in subsets if constraints.satisfied(s)]


def differing_masks(constraints: ConstraintSet, neighborhood: str) -> np.ndarray:
    """One row per allowed pair: where (b0, b1) differ (unbounded: b0 empty)."""
    sets = allowed_sets(constraints)
    masks = np.zeros((len(sets), constraints.n), dtype=bool)
    for row, s in enumerate(sets):
        masks[row, list(s)] = True
    if neighborhood == "unbounded":
        return masks
    return np.array([a ^ b for a in masks for b in masks])


def brute_max(constraints: ConstraintSet, neighborhood: str, weights: np.ndarray) -> float:
    return float((differing_masks(constraints, neighborhood) @ np.asarray(weights, dtype=float)).max())


def random_constraints(rng: random.Random, n: int) -> ConstraintSet:
    """One to three constraints of random kinds (the packing kinds often, to reach the quick bracket)."""
    out = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["at_most", "at_most", "exclusive", "conflicts", "conflicts", "together", "patterns"])
        group = tuple(rng.sample(range(n), rng.randint(2, n)))
        if kind == "at_most":
            out.append(AtMost(rng.randint(1, n), among=group if rng.random() < 0.3 else None))
        elif kind == "exclusive":
            out.append(Exclusive(group))
        elif kind == "conflicts":
            pairs = [p for p in itertools.combinations(range(n), 2) if rng.random() < 0.3]
            if pairs:
                out.append(Conflicts(tuple(pairs)))
        elif kind == "together":
            out.append(Together(group[:2]))
        else:
            out.append(Patterns(tuple({frozenset(rng.sample(range(n), rng.randint(1, n))) for _ in range(3)})))
    cs = ConstraintSet(n, tuple(out))
    return cs if cs.has_nonempty_allowed() else ConstraintSet(n, (AtMost(1),))


def scenario(n: int, constraints: ConstraintSet | None = None, neighborhood: str = "unbounded",
             guarantee=None) -> gce.Scenario:
    return gce.Scenario(n, [gce.Invocation(0, guarantee or gce.PureDP(0.0))], constraints,
                        neighborhood=neighborhood)


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "ledger.sqlite")


# ---------------------------------------------------------------------------
# Filters: statistics and budgets from the papers' formulas


def test_basic_filter_statistics_and_budget():
    basic = FILTERS["basic"]
    assert basic.weights(gce.ApproxDP(0.5, 1e-6)).tolist() == [0.5, 1e-6]
    assert basic.weights(gce.LaplaceMechanism(scale=4.0, sensitivity=2.0)).tolist() == [0.5, 0.0]
    assert basic.budgets(1.0, 1e-5).tolist() == [1.0, 1e-5]
    assert basic.admits(np.array([1.0, 1e-5]), np.array([1.0, 1e-5]))
    assert not basic.admits(np.array([1.0000001, 0.0]), np.array([1.0, 1e-5]))
    with pytest.raises(UnsupportedCombinationError, match="basic filter needs an"):
        basic.weights(gce.ZCDP(0.1))


def test_zcdp_and_gdp_budgets_meet_the_target_and_no_more():
    rho = FILTERS["zcdp"].budgets(1.0, 1e-6)[0]
    assert float(ZCDPCurve(rho).epsilon(1e-6)) <= 1.0 < float(ZCDPCurve(rho * 1.001).epsilon(1e-6))
    # re-derived: CKS20 Prop. 12 minimised over a fine grid of orders (docs/design.md, zcdp) meets 1 at rho
    alpha = np.exp(np.linspace(np.log(1.0001), np.log(1e4), 200_001))
    cks = lambda r: float(np.min(r * alpha + np.log1p(-1 / alpha) - (np.log(1e-6) + np.log(alpha)) / (alpha - 1)))
    assert cks(rho) <= 1.0 + 1e-9 and cks(rho * 1.001) > 1.0 - 1e-6
    # and it is looser than the classic rho + 2 sqrt(rho log(1/delta)) (BS16 Prop. 1.3), solved by hand
    assert rho >= (math.sqrt(math.log(1e6) + 1) - math.sqrt(math.log(1e6))) ** 2
    mu2 = FILTERS["gdp"].budgets(1.0, 1e-6)[0]
    mu = math.sqrt(mu2)
    assert float(GaussianCurve(mu).delta(1.0)) <= 1e-6 < float(GaussianCurve(mu * 1.001).delta(1.0))
    assert FILTERS["gdp"].weights(gce.GaussianMechanism(sigma=2.0, sensitivity=1.0)).tolist() == [0.25]
    assert FILTERS["zcdp"].weights(gce.PureDP(0.2)).tolist() == pytest.approx([0.02])  # eps^2/2 (BS16 Prop 1.4)
    with pytest.raises(UnsupportedCombinationError, match="gdp filter needs a GDP mu"):
        FILTERS["gdp"].weights(gce.PureDP(0.2))


def test_renyi_filter_budget_and_statistics_by_hand():
    renyi = FILTERS["renyi"]
    alphas = np.array(RENYI_FILTER_ORDERS)
    k = alphas.size
    assert renyi.budgets(2.0, 1e-6) == pytest.approx(2.0 - math.log(k / 1e-6) / (alphas - 1.0))
    # Gaussian: alpha mu^2 / 2; pure eps: randomized response's divergence, never above alpha eps^2 / 2 or eps
    assert renyi.weights(gce.GaussianDP(0.5)) == pytest.approx(alphas * 0.125)
    eps = 0.3
    p, q = math.exp(eps) / (1 + math.exp(eps)), 1 / (1 + math.exp(eps))
    rr = np.log(p ** alphas * q ** (1 - alphas) + q ** alphas * p ** (1 - alphas)) / (alphas - 1)
    assert renyi.weights(gce.PureDP(eps)) == pytest.approx(np.minimum(rr, alphas * eps * eps / 2))
    assert np.all(renyi.weights(gce.PureDP(eps)) <= eps + 1e-12)
    with pytest.raises(UnsupportedCombinationError, match="renyi filter"):
        renyi.weights(gce.ApproxDP(0.3, 1e-9))
    assert renyi.admits(np.array([9.0] * (k - 1) + [0.0]), renyi.budgets(2.0, 1e-6))  # one order suffices


# ---------------------------------------------------------------------------
# The worst case: quick bracket and reach against brute force


@tiers.parametrize("seed", range(200), default=25)
def test_packing_bracket_and_reach_hold_the_brute_force_maximum(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 7)
    out = []
    if rng.random() < 0.7:
        out.append(AtMost(rng.randint(1, n)))
    pairs = [p for p in itertools.combinations(range(n), 2) if rng.random() < 0.35]
    if pairs:
        out.append(Conflicts(tuple(pairs)))
    cs = ConstraintSet(n, tuple(out))
    for neighborhood in ("unbounded", "bounded"):
        w = np.array([rng.choice([0.0, rng.random(), 1.0]) for _ in range(n)])
        bracket = packing_bracket(cs, w, neighborhood)
        exact = brute_max(cs, neighborhood, w)
        assert bracket.lower <= exact + 1e-12 <= bracket.upper + 2e-12
        assert float(w[bracket.witness].sum()) == pytest.approx(bracket.lower)
        members = np.array(sorted(rng.sample(range(n), rng.randint(1, n))), dtype=np.intp)
        ones = np.zeros(n)
        ones[members] = 1.0
        assert reach(cs, neighborhood, members, 1.0) >= brute_max(cs, neighborhood, ones)


def test_packing_bracket_is_exact_on_a_conflict_matched_at_the_top():
    # weights 5 > 4 > 3 > 2, at most 2, 0-1 conflict: greedy {0, 2} = 8, partition {0,1}: top 2 of 5, 3, 2 = 8
    cs = ConstraintSet(4, (AtMost(2), Conflicts(((0, 1),))))
    bracket = packing_bracket(cs, np.array([5.0, 4.0, 3.0, 2.0]), "unbounded")
    assert (bracket.lower, bracket.upper, bracket.exact) == (8.0, 8.0, True)
    assert packing_bracket(ConstraintSet(4, (Together((0, 1)),)), np.ones(4), "unbounded") is None


# ---------------------------------------------------------------------------
# Soundness: random scenarios, adaptive sequences, brute force over allowed sets


def _guarantee(rng: random.Random, name: str, scale: float):
    if name == "basic":
        return rng.choice([gce.PureDP(round(scale * rng.random(), 3)),
                           gce.ApproxDP(round(scale * rng.random(), 3), rng.choice([0.0, 1e-7, 3e-7])),
                           gce.LaplaceMechanism(scale=1.0 / max(scale * rng.random(), 1e-3))])
    if name == "gdp":
        return rng.choice([gce.GaussianDP(round(scale * rng.random(), 3)),
                           gce.GaussianMechanism(sigma=1.0 / max(scale * rng.random(), 1e-3))])
    return rng.choice([gce.PureDP(round(scale * rng.random(), 3)), gce.ZCDP(round(scale * scale * rng.random(), 4)),
                       gce.GaussianDP(round(scale * rng.random(), 3))])


def _adaptive_run(seed: int, path: str, steps: int):
    """A random scenario and an adaptive sequence: each step's database, kind and size are drawn from
    coin flips seeded by the answers so far (a refusal halves the next request, an admission doubles it).
    Returns the ledger, the admitted (members, statistic) and the refused requests with the sums then."""
    rng = random.Random(seed)
    n = rng.randint(2, 6)
    cs = random_constraints(rng, n)
    neighborhood = rng.choice(["unbounded", "bounded"])
    name = rng.choice(["basic", "basic", "renyi", "zcdp", "gdp"])
    budget = (rng.choice([0.5, 1.0, 2.0]), rng.choice([1e-6, 1e-5]) if name != "basic" or rng.random() < 0.7
              else 0.0)
    placeholder = gce.GaussianDP(0.0) if name == "gdp" else gce.PureDP(0.0)
    ledger = Accountant.create(path, scenario(n, cs, neighborhood, placeholder), budget_epsilon=budget[0],
                               budget_delta=budget[1], filter=name)
    sums = np.zeros((len(ledger.filter.components), n))
    admitted, refused = [], []
    scale = budget[0] / 2
    for _ in range(steps):
        members = sorted(rng.sample(range(n), rng.choice([1, 1, 1, rng.randint(1, n)])))
        g = _guarantee(rng, name, scale)
        weights = ledger.filter.weights(g)
        decision = ledger.spend(members, g, analyst=f"a{rng.randint(0, 2)}")
        mask = np.zeros(n, dtype=bool)
        mask[members] = True
        if decision.admitted:
            sums[:, mask] += weights[:, None]
            admitted.append((members, g))
            scale *= 2.0 if rng.random() < 0.5 else 1.0
        else:
            refused.append((mask, weights, sums.copy()))
            scale /= 2.0
    return ledger, cs, neighborhood, sums, refused


@tiers.parametrize("seed", range(300), default=8)
def test_filter_never_admits_beyond_the_budget_for_any_allowed_pair(seed, tmp_path):
    ledger, cs, neighborhood, sums, refused = _adaptive_run(seed, str(tmp_path / "l.sqlite"), steps=25)
    with ledger:
        masks = differing_masks(cs, neighborhood)
        per_pair = masks @ sums.T  # (pairs, components): the sums each allowed pair sees
        worst = per_pair.max(axis=0)
        rule, budgets = ledger.filter, ledger.budgets
        # the filter's own rule on the exact maxima (for Renyi: some order within budget for every pair)
        assert rule.admits(worst, budgets), (worst, budgets)
        # and the guarantee it stands for, pair by pair, from the papers' theorems
        for row in per_pair:
            if rule.name == "basic":
                assert row[0] <= ledger.budget_epsilon + 1e-9 and row[1] <= ledger.budget_delta + 1e-15
            elif rule.name == "zcdp":
                assert float(ZCDPCurve(row[0]).epsilon(ledger.budget_delta)) <= ledger.budget_epsilon + 1e-9
            elif rule.name == "gdp":
                assert float(GaussianCurve(math.sqrt(row[0])).delta(ledger.budget_epsilon)) <= \
                    ledger.budget_delta * (1 + 1e-9)
        # every refusal was needed: small instances are decided exactly (quick bracket or solver)
        for mask, weights, before in refused:
            after = before + np.outer(weights, mask)
            assert not rule.admits((masks @ after.T).max(axis=0), budgets)
        # the recorded bracket holds the exact worst case
        status = ledger.status()
        assert np.all(np.array(status.lower) <= worst + 1e-9) and np.all(worst <= np.array(status.upper) + 1e-9)


# ---------------------------------------------------------------------------
# The Accountant: hand-derived values, check vs spend, errors


def test_hospitals_by_hand_refused_when_the_worst_patient_would_exceed(path):
    # 10 hospitals, nobody in more than 3; each day every hospital asks 0.05: the worst patient pays 0.15/day.
    with Accountant.create(path, scenario(10, ConstraintSet(10, (AtMost(3),))), budget_epsilon=1.0,
                           budget_delta=0.0) as ledger:
        days = 0
        while ledger.spend("all", gce.PureDP(0.05), analyst="daily").admitted:
            days += 1
        assert days == 6  # 6 x 0.15 = 0.9 <= 1 < 7 x 0.15 = 1.05
        status = ledger.status()
        assert status.upper[0] == pytest.approx(0.9) and status.lower[0] == pytest.approx(0.9)
        assert (status.entries, status.admitted) == (8, 7)  # the scenario's own invocation, 6 days, 1 refusal
        # a query on one hospital still fits: 0.3 + 0.3 + 0.3 + 0.1 on the worst 3... 0.4 > 0.3, so 1.0
        assert ledger.check(4, gce.PureDP(0.1)).admitted
        assert not ledger.check(4, gce.PureDP(0.11)).admitted
        assert ledger.status().entries == 8  # check records nothing
    # the same days with a filter ignoring the constraint (every hospital counts): refused on day 2
    with Accountant.create(path + "2", scenario(10), budget_epsilon=1.0, budget_delta=0.0) as plain:
        assert [plain.spend("all", gce.PureDP(0.05)).admitted for _ in range(3)] == [True, True, False]


def test_bounded_pairs_and_names(path):
    cs = ConstraintSet(3, (Exclusive((0, 1, 2)),))
    s = gce.Scenario(gce.Databases(3, ("north", "south", "east")), [gce.Invocation(0, gce.PureDP(0.4))], cs,
                     neighborhood="bounded")
    with Accountant.create(path, s, budget_epsilon=1.0, budget_delta=0.0) as ledger:
        # bounded: max over i != j of eps_i + eps_j (001 Ex. 2): 0.4 + 0.5
        d = ledger.spend(["south"], gce.PureDP(0.5))
        assert d.admitted and d.upper[0] == pytest.approx(0.9) and d.worst_set == frozenset({0, 1})
        assert not ledger.spend("east", gce.PureDP(0.6)).admitted  # 0.5 + 0.6 > 1
        with pytest.raises(InvalidParameterError, match="databases.*unknown database 'west'"):
            ledger.spend(["west"], gce.PureDP(0.1))
        history = ledger.history()
        assert [(e.analyst, e.databases, e.admitted) for e in history] == \
            [("scenario", [0], True), ("", [1], True), ("", [2], False)]
        assert history[1].mechanism == {"kind": "pure", "epsilon": 0.5}
        assert history[2].answer["reason"].startswith("the worst-case individual")


def test_offline_composition_beside_is_labelled_and_not_used(path):
    with Accountant.create(path, scenario(4, ConstraintSet(4, (AtMost(2),))), budget_epsilon=5.0,
                           budget_delta=1e-6) as ledger:
        for _ in range(3):
            assert ledger.spend("all", gce.ApproxDP(0.5, 1e-8)).admitted
        report = ledger.offline()
        # 6 invocations of (0.5, 1e-8) on the worst pair, composed optimally (Kairouz) vs 3.0 by the filter
        assert report.epsilon < 3.0 == pytest.approx(ledger.status().upper[0])
        assert report.epsilon == pytest.approx(gce.compose({gce.ApproxDP(0.5, 1e-8): 6}).at_delta(1e-6).epsilon)


def test_create_refuses_bad_budgets_filters_and_existing_files(path):
    s = scenario(3)
    with pytest.raises(InvalidParameterError, match="budget_epsilon"):
        Accountant.create(path, s, budget_epsilon=0.0, budget_delta=0.0)
    with pytest.raises(InvalidParameterError, match="budget_delta"):
        Accountant.create(path, s, budget_epsilon=1.0, budget_delta=1.0)
    with pytest.raises(InvalidParameterError, match="filter: must be one of basic, renyi, zcdp, gdp"):
        Accountant.create(path, s, budget_epsilon=1.0, budget_delta=0.0, filter="pld")
    assert not os.path.exists(path)
    Accountant.create(path, s, budget_epsilon=1.0, budget_delta=0.0).close()
    with pytest.raises(LedgerError, match="already exists"):
        Accountant.create(path, s, budget_epsilon=1.0, budget_delta=0.0)
    with pytest.raises(LedgerError, match="exceed the budget"):
        Accountant.create(path + "x", gce.Scenario(2, [gce.Invocation(0, gce.PureDP(2.0))]),
                          budget_epsilon=1.0, budget_delta=0.0)


def test_checkpoints_and_reopening_give_the_same_sums(path, monkeypatch):
    monkeypatch.setattr("gce.ledger.accountant.CHECKPOINT_EVERY", 5)
    rng = random.Random(3)
    cs = ConstraintSet(6, (AtMost(2), Conflicts(((0, 1), (2, 3)))))
    with Accountant.create(path, scenario(6, cs), budget_epsilon=50.0, budget_delta=1e-5) as ledger:
        for _ in range(23):
            ledger.spend(sorted(rng.sample(range(6), rng.randint(1, 3))),
                         gce.ApproxDP(round(rng.random(), 2), 1e-7))
        ledger.check(0, gce.PureDP(0.0))
        expected = ledger._tracker.sums.copy()
        worst = brute_max(cs, "unbounded", expected[0])
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT COUNT(*) FROM gce_checkpoints").fetchone()[0] in (1, 2)
    with Accountant(path) as reopened:
        decision = reopened.check(5, gce.PureDP(0.0))
        assert np.allclose(reopened._tracker.sums, expected)
        assert decision.lower[0] <= worst + 1e-9 <= decision.upper[0] + 2e-9


def test_incremental_spends_do_not_solve(path):
    # 2,000 databases, at most 50, 1,000 random conflicts: spends far from the budget only update sums
    rng = np.random.default_rng(5)
    n = 2000
    edges = {tuple(sorted(map(int, rng.choice(n, 2, replace=False)))) for _ in range(1000)}
    cs = ConstraintSet(n, (AtMost(50), Conflicts(tuple(sorted(edges)))))
    with Accountant.create(path, scenario(n, cs), budget_epsilon=1e6, budget_delta=0.0) as ledger:
        ledger.check(0, gce.PureDP(0.0))  # warm-up: the brackets of the loaded sums
        before = ledger.solves
        for i in rng.integers(n, size=60).tolist():
            assert ledger.spend(i, gce.PureDP(float(rng.random()))).admitted
        assert ledger.solves - before <= 12  # only when the gap exceeds 1% of the budget (never here) or ties
        status = ledger.status()
        sums = ledger._tracker.sums[0]
        # lower: the weight of an allowed set (so at most the relaxation without conflicts); far from the
        # budget the upper bound may stay loose (narrowed only once the gap passes 1% of the budget)
        witness = np.flatnonzero(ledger._tracker.witness[0])
        assert ledger.constraints.satisfied(witness.tolist())
        assert status.lower[0] == pytest.approx(sums[witness].sum())
        assert status.lower[0] <= np.sort(sums)[-50:].sum() + 1e-9 and status.lower[0] <= status.upper[0]


# ---------------------------------------------------------------------------
# Foreign, truncated and damaged files


def _ledger_with_entries(path: str, entries: int = 60) -> None:
    with Accountant.create(path, scenario(50, ConstraintSet(50, (AtMost(5),))), budget_epsilon=1e6,
                           budget_delta=0.0) as ledger:
        for i in range(entries):
            ledger.spend(i % 50, gce.PureDP(0.01), analyst="x" * 200)


def test_truncated_and_foreign_files_give_clear_errors(tmp_path):
    good = str(tmp_path / "good.sqlite")
    _ledger_with_entries(good)
    data = open(good, "rb").read()
    assert len(data) > 8192
    cases = {
        "half.sqlite": (data[: len(data) // 2], "truncated"),
        "header.sqlite": (data[:50], "truncated"),
        "empty.sqlite": (b"", "is empty"),
        "text.sqlite": (b"title = 'a scenario, not a ledger'\n" * 10, "not an SQLite database"),
        "zip.sqlite": (b"PK\x03\x04" + bytes(500), "not an SQLite database"),
    }
    for name, (content, message) in cases.items():
        target = tmp_path / name
        target.write_bytes(content)
        with pytest.raises(LedgerError, match=message):
            Accountant(str(target))
        status = main(["ledger", "status", "--ledger", str(target)])
        assert status == 2
    other = str(tmp_path / "other.sqlite")
    with sqlite3.connect(other) as raw:
        raw.execute("CREATE TABLE people (name TEXT)")
    with pytest.raises(LedgerError, match="not a gce ledger .a database without gce's tables"):
        Accountant(other)
    newer = str(tmp_path / "newer.sqlite")
    _ledger_with_entries(newer, 1)
    with sqlite3.connect(newer) as raw:
        raw.execute("UPDATE gce_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(LedgerError, match="newer gce .ledger schema 99"):
        Accountant(newer)
    with pytest.raises(LedgerError, match="no ledger here"):
        Accountant(str(tmp_path / "missing.sqlite"))


def test_cli_errors_are_one_line(tmp_path, capsys):
    target = tmp_path / "text.sqlite"
    target.write_bytes(b"hello" * 100)
    assert main(["ledger", "status", "--ledger", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gce: error: ") and "not an SQLite database" in err


def test_back_ends_by_scheme_are_store_classes_named_not_imported():
    """Every scheme in the table names a Store subclass (the PostgreSQL one imports without psycopg); a
    module that cannot be imported says what to install; a path that is not module.Class is refused."""
    assert set(BACKENDS) == {"postgresql", "postgres"}
    for scheme, backend in BACKENDS.items():
        store = backend.load()
        assert issubclass(store, Store) and store is not Store and store.__name__ == "PostgresStore", scheme
        assert backend.install == "pip install 'gce[postgres]'"
    with pytest.raises(LedgerError, match=r"gce_no_such_module.Store cannot be imported .*: pip install nothing"):
        Backend("gce_no_such_module.Store", "pip install nothing").load()
    with pytest.raises(LedgerError, match="gce.ledger.store.FORMAT is not a ledger store"):
        Backend("gce.ledger.store.FORMAT", "").load()
    with pytest.raises(InvalidParameterError, match="store: must be a dotted path"):
        Backend("PostgresStore", "")


def test_a_url_of_an_unknown_scheme_is_refused_and_no_file_is_made(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for create in (False, True):
        with pytest.raises(LedgerError, match=r"^ledger: no ledger back-end for mysql:// URLs \(known: postgres://, "
                                              r"postgresql://; or an SQLite file path\)$"):
            open_store("mysql://ana@db/ledger", create=create)
    assert main(["ledger", "status", "--ledger", "mysql://ana:pw@db/ledger"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gce: error: ledger: no ledger back-end for mysql://")
    assert list(tmp_path.iterdir()) == []
    assert is_url("postgresql://db/l") and is_url("postgres://db/l") and not is_url("mysql://db/l")
    assert not is_url("ledger.sqlite") and not is_url("postgresql:/db")


# ---------------------------------------------------------------------------
# The command


def test_cli_init_spend_check_status_history(tmp_path, capsys):
    ledger = str(tmp_path / "l.sqlite")
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "subsidiaries.toml")
    assert main(["ledger", "init", example, "--budget-epsilon", "2", "--budget-delta", "0", "--ledger", ledger]) == 0
    out = capsys.readouterr().out
    assert "4 requests: 4 admitted, 0 refused" in out
    assert ["epsilon", "1", "2", "1", "within", "budget"] in [line.split() for line in out.splitlines()]
    spend = ["ledger", "spend", "--ledger", ledger, "--analyst", "ana"]
    assert main(spend + ["--databases", "online", "--mechanism", 'kind = "pure", epsilon = 0.9']) == 0
    assert "admitted (entry 5)" in capsys.readouterr().out
    assert main(spend + ["--databases", "west,online", "--mechanism", '{kind = "pure", epsilon = 0.2}']) == 1
    assert capsys.readouterr().out.startswith("refused (entry 6): the worst-case individual's budget")
    assert main(["ledger", "check", "--ledger", ledger, "--databases", "north", "--mechanism",
                 'kind = "pure", epsilon = 0.1', "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["admitted"] and answer["upper"] == [1.9, 0.0] and answer["sequence"] is None
    assert main(["ledger", "status", "--ledger", ledger, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["entries"], status["admitted"], status["upper"]) == (6, 5, [1.9, 0.0])
    assert main(["ledger", "history", "--ledger", ledger, "--limit", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and "ana" in lines[1] and "refused" in lines[2]
    for argv, message in (
            (spend + ["--databases", "nowhere", "--mechanism", 'kind = "pure", epsilon = 0.1'],
             "--databases[0]: unknown database 'nowhere'"),
            (spend + ["--databases", "1", "--mechanism", 'kind = "pure", epsilon = -1'],
             "--mechanism.epsilon: must be >= 0"),
            (spend + ["--databases", "1", "--mechanism", "pure 0.1"], "--mechanism: not a TOML table"),
            (["ledger", "init", example, "--budget-epsilon", "-1", "--budget-delta", "0", "--ledger", ledger],
             "--budget-epsilon: must be finite and > 0"),
            (["ledger", "init", example, "--budget-epsilon", "1", "--budget-delta", "0", "--ledger", ledger],
             "already exists")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("tables", [
    [("all", 1), ("all", 1)],          # two identical tables
    [([0, 1], 1), ([1, 2], 1), ([3], 1), ([2], 1)],  # overlapping lists: every database twice... or once
    [("all", 2)],                      # one table with repeat = 2
])
def test_init_charges_every_invocation_table(tmp_path, tables):
    """The scenario's invocations are charged one by one: two tables running the same guarantee on one database
    cost twice (a spend treats its own list as a set, so grouping tables must add their repeats)."""
    n = 4
    invocations = []
    for databases, repeat in tables:
        for i in (range(n) if databases == "all" else databases):
            invocations.append(gce.Invocation(i, gce.PureDP(0.1), repeat))
    scenario = gce.Scenario(n, invocations, gce.ConstraintSet(n, [gce.AtMost(1)]))
    per_database = np.zeros(n)
    for inv in invocations:
        per_database[inv.database] += 0.1 * inv.repeat
    worst = per_database.max()
    with gce.Accountant.create(tmp_path / "l.sqlite", scenario, budget_epsilon=0.25, budget_delta=0.0) as ledger:
        assert ledger.status().upper[0] == pytest.approx(worst)
        further = ledger.spend("all", gce.PureDP(0.1))
    assert further.admitted == (worst + 0.1 <= 0.25 + 1e-12)
    assert further.upper[0] == pytest.approx(worst + 0.1)


def test_spend_refuses_a_database_listed_twice(tmp_path):
    scenario = gce.Scenario(4, [gce.Invocation(0, gce.PureDP(0.1))], gce.ConstraintSet(4, [gce.AtMost(1)]))
    with gce.Accountant.create(tmp_path / "l.sqlite", scenario, budget_epsilon=1.0, budget_delta=0.0) as ledger:
        with pytest.raises(gce.InvalidParameterError, match=r"databases\[2\]: database 1 is listed twice"):
            ledger.spend([1, 2, 1], gce.PureDP(0.1))
        for text in ("²", "٢", "1.0"):
            with pytest.raises(gce.InvalidParameterError, match="unknown database"):
                ledger.check([text], gce.PureDP(0.1))


def test_infinite_statistics_are_refused_and_written_as_json(tmp_path, capsys):
    """An epsilon of 1e308 spent three times overflows: refused outright (no sum becomes infinite), and every
    --json output stays JSON (infinities as "inf"), the refused entry included, on every later read."""
    path = str(tmp_path / "l.sqlite")
    scenario = gce.Scenario(3, [gce.Invocation(0, gce.PureDP(0.1))], gce.ConstraintSet(3, [gce.AtMost(2)]))
    Accountant.create(path, scenario, budget_epsilon=1.0, budget_delta=0.0).close()
    mechanism = ["--mechanism", 'kind = "pure", epsilon = 1e308']
    assert main(["ledger", "spend", "--ledger", path, "--databases", "1", *mechanism, "--repeat", "3", "--json"]) == 1
    decision = json.loads(capsys.readouterr().out)
    assert decision["admitted"] is False and decision["upper"][0] == "inf"
    assert decision["remaining"][0] == pytest.approx(0.9)  # a refusal leaves the budget as it was
    assert main(["ledger", "spend", "--ledger", path, "--databases", "1", *mechanism, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["upper"][0] == pytest.approx(1e308)
    for action in (["history"], ["status"], ["verify"]):
        assert main(["ledger", *action, "--ledger", path, "--json"]) == 0
        json.loads(capsys.readouterr().out)
    with Accountant(path) as ledger:
        assert ledger.status().upper[0] == pytest.approx(0.1) and ledger.spend(1, gce.PureDP(0.9)).admitted


def test_sums_beyond_the_largest_float_on_a_database_no_pair_reaches(tmp_path):
    """A database in no allowed set admits every spend; its sum may pass 1.8e308 and is then +inf, through the
    checkpoint and the chain (no warning: the suite turns RuntimeWarnings into errors), and costs nothing."""
    path = str(tmp_path / "l.sqlite")
    scenario = gce.Scenario(3, [gce.Invocation(0, gce.PureDP(0.1))], gce.ConstraintSet(3, [Patterns([{0}, {1}])]))
    with Accountant.create(path, scenario, budget_epsilon=1.0, budget_delta=0.0) as ledger:
        assert ledger.spend(2, gce.PureDP(1e308)).admitted and ledger.spend(2, gce.PureDP(1e308)).admitted
    with Accountant(path) as ledger:
        ledger.truncate(3)  # writes a checkpoint holding the +inf sum
    with Accountant(path) as ledger:
        assert ledger.verify().entries == 3 and ledger.status().upper[0] == pytest.approx(0.1)
        assert ledger.spend(1, gce.PureDP(0.9)).admitted and not ledger.check(0, gce.PureDP(0.91)).admitted


def test_renyi_worst_set_is_the_binding_order_that_can_admit(tmp_path):
    """Under the Renyi filter the orders whose budget is negative admit nothing; the worst-case set shown is
    the binding order's among the others (it was an empty set: a negative-budget order's ratio was 0)."""
    scenario = gce.Scenario(5, [gce.Invocation(0, gce.PureDP(0.1))], gce.ConstraintSet(5, [gce.AtMost(2)]))
    with gce.Accountant.create(tmp_path / "l.sqlite", scenario, budget_epsilon=3.0, budget_delta=1e-6,
                               filter="renyi") as ledger:
        assert (np.asarray(ledger.budgets) < 0).any()
        decision = ledger.spend([1, 2], gce.PureDP(0.2))
        assert decision.admitted and sorted(decision.worst_set) == [1, 2]
        assert ledger.status().worst_set == (1, 2)


def test_status_json_of_a_renyi_ledger_without_delta(tmp_path, capsys):
    """The Renyi filter's budgets are -inf at delta 0 (no order can admit): status --json writes them as
    "-inf" (it raised 'Out of range float values are not JSON compliant')."""
    path = str(tmp_path / "l.sqlite")
    scenario = gce.Scenario(3, [gce.Invocation(0, gce.PureDP(0.1))], gce.ConstraintSet(3, [gce.AtMost(2)]))
    with pytest.raises(LedgerError, match="exceed the budget"):
        Accountant.create(path, scenario, budget_epsilon=3.0, budget_delta=0.0, filter="renyi")
    assert main(["ledger", "status", "--ledger", path, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["budgets"] == ["-inf"] * len(RENYI_FILTER_ORDERS) and data["remaining"] == data["budgets"]
    assert data["entries"] == 1 and data["admitted"] == 0
