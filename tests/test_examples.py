"""The worked examples of the papers: every number against a value derived by hand.

Each example in ``examples/`` is a scenario file and a script; here the files are
solved and compared with the papers' formulas evaluated by hand, and each script
is run once.
"""

from __future__ import annotations

import math
import pathlib
import runpy
from dataclasses import replace

import numpy as np
import pytest
from scipy.stats import norm

import reference
from gce import ApproxDP, load_scenario, solve

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def solved(name: str, neighborhood: str | None = None):
    scenario = load_scenario(EXAMPLES / f"{name}.toml")
    if neighborhood is not None:
        scenario = replace(scenario, neighborhood=neighborhood)
    return solve(scenario)


@pytest.mark.parametrize("neighborhood, k", [("unbounded", 365), ("bounded", 730)])
def test_hospitals_compose_365_or_730_queries_exactly(neighborhood, k):
    # 001 Ex. 1: max over k-subsets of CompGuarantee, here Kairouz et al. (002) Thm. III.3 term by term.
    report = solved("hospitals", neighborhood)
    assert report.exact and report.differing_count == k
    assert reference.kairouz_iii3_by_formula(k, 0.05, 1e-10, report.epsilon) == pytest.approx(1e-6, rel=1e-6)
    assert reference.kairouz_iii3_by_formula(k, 0.05, 1e-10, report.epsilon - 1e-4) > 1e-6
    classic = report.baselines["classic"].epsilon
    assert reference.kairouz_iii3_by_formula(1000, 0.05, 1e-10, classic) == pytest.approx(1e-6, rel=1e-6)


@pytest.mark.parametrize("neighborhood, expected, pair", [
    ("unbounded", 1.0, ({4},)),            # max_i eps_i: the online subsidiary alone
    ("bounded", 1.5, ({3}, {4})),          # max_{i != j} eps_i + eps_j = 1.0 + 0.5
])
def test_subsidiaries(neighborhood, expected, pair):
    report = solved("subsidiaries", neighborhood)
    assert report.epsilon == pytest.approx(expected, rel=1e-9) and report.exact
    assert {frozenset(s) for s in report.witness} - {frozenset()} == {frozenset(s) for s in pair}
    assert report.baselines["classic"].epsilon == pytest.approx(1.9)


@pytest.mark.parametrize("neighborhood, expected", [("unbounded", 0.6), ("bounded", 0.7)])
def test_free_and_paid_columns(neighborhood, expected):
    # none vs free (6 columns); bounded: free vs paid differ in 4 ads + 3 premium columns.
    report = solved("columns", neighborhood)
    assert report.epsilon == pytest.approx(expected, rel=1e-9) and report.exact
    assert report.baselines["classic"].epsilon == pytest.approx(0.9)


def test_ambulances_cost_three_eps_not_k_eps():
    report = solved("ambulances")
    assert report.epsilon == pytest.approx(3 * 0.5) and report.exact
    assert report.baselines["classic"].epsilon == pytest.approx(10 * 0.5)
    assert report.baselines["parallel"].epsilon == pytest.approx(1.5)


def test_bounded_dp_over_disjoint_parts_is_the_largest_two_part_sum():
    # 000 Cor. IV.13: max_{i != j} eps_i + eps_j over (0.3, 0.7, 1.0, 0.2).
    eps = [0.3, 0.7, 1.0, 0.2]
    expected = max(a + b for i, a in enumerate(eps) for j, b in enumerate(eps) if i != j)
    report = solved("disjoint_parts")
    assert expected == pytest.approx(1.7)
    assert report.epsilon == pytest.approx(expected, rel=1e-9) and report.exact
    assert report.baselines["classic"].epsilon == pytest.approx(sum(eps))


def test_gaussian_dp_over_disjoint_parts_is_sqrt2_mu():
    # 000 Ex. VI.25: two parts of 0.5-GDP compose to sqrt(2) * 0.5-GDP; its profile (Dong, Roth, Su):
    # delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).
    report = solved("gaussian_parts")
    mu = math.sqrt(2) * 0.5
    eps = report.epsilon
    delta = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    assert delta == pytest.approx(1e-6, rel=1e-6) and report.exact
    mu2 = 2 * 0.5  # adding the mus would have claimed more
    assert norm.cdf(-eps / mu2 + mu2 / 2) - math.exp(eps) * norm.cdf(-eps / mu2 - mu2 / 2) > 1e-6


@pytest.mark.parametrize("script, needle", [
    ("hospitals", "unbounded: epsilon 4.6203 from 365"),
    ("subsidiaries", "bounded: epsilon 1.5 (classic 1.9)"),
    ("columns", "bounded: epsilon 0.7 over 7 columns"),
    ("ambulances", "GCE (this scenario)  1.5"),
    ("disjoint_parts", "GCE (this scenario)  1.7"),
    ("gaussian_parts", "sqrt(2) mu: epsilon"),
    ("composition_basics", "tightest: kairouz-III.3"),
    ("store_chain", "note: at_most 4 estimated from data"),
    ("none_vs_any", " 20   5.6186"),
    ("medical_practices", "exact-count"),
    ("rates_prior", "Poisson subsampling at 0.1"),
])
def test_example_scripts_run(capsys, script, needle):
    runpy.run_path(str(EXAMPLES / f"{script}.py"), run_name="__main__")
    assert needle in capsys.readouterr().out


def test_store_chain_limit_is_the_largest_observed_membership():
    import collections
    import csv

    with open(EXAMPLES / "store_members.csv", newline="") as f:
        rows = list(csv.reader(f))[1:]
    branches = collections.defaultdict(set)
    for customer, branch in rows:
        branches[customer].add(branch)
    largest = max(len(b) for b in branches.values())
    scenario = load_scenario(EXAMPLES / "store_chain.toml")
    (constraint,) = scenario.constraints.constraints
    assert constraint.kind == "at_most" and constraint.m == largest == 4
    report = solve(scenario)
    # 4 branches x 4 Gaussian statistics of sigma 8: GDP mu = sqrt(16) / 8 = 0.5.
    mu = math.sqrt(16) / 8
    eps = report.epsilon
    assert norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2) == pytest.approx(1e-6, rel=1e-6)
    assert report.differing_count == 16 and report.exact
    assert any("estimated from data" in note and "store_members.csv" in note for note in report.notes)


def test_none_vs_any_routes_against_cor7_by_hand():
    from gce import ApproxDP, ConstraintSet, Invocation, Point, Uniform
    from gce.priors.exact import exact_curve
    from gce.priors.coupling import CouplingCurve
    from gce.priors.subsampling import SubsamplingCurve

    for k in (3, 8):
        # 001 Cor. 7 by hand: eps = ln(((e^0.5 + 1)^k - 1) / (2^k - 1)), delta = 2^(k-1) k 1e-8 / (2^k - 1).
        eps7 = math.log(((math.exp(0.5) + 1) ** k - 1) / (2 ** k - 1))
        delta7 = 2 ** (k - 1) * k * 1e-8 / (2 ** k - 1)
        invocations = [Invocation(i, ApproxDP(0.5, 1e-8)) for i in range(k)]
        exact = exact_curve(Point(()), Uniform(1), invocations, ConstraintSet(k))
        assert float(exact.delta(eps7)) <= delta7 * (1 + 1e-9)
        d0, d1 = Point(()).distribution(ConstraintSet(k)), Uniform(1).distribution(ConstraintSet(k))
        h1 = [(s, w) for s, w in d1]
        flat = [(i, 0.5, 1e-8) for i in range(k)]
        for eps in (0.5, eps7):
            truth = reference.mixture_delta([(frozenset(), 1.0)], h1, flat, eps) if k <= 3 else None
            e = float(exact.delta(eps))
            if truth is not None:
                assert e == pytest.approx(truth, rel=1e-9, abs=1e-15)
            assert e <= float(SubsamplingCurve(invocations).delta(eps)) + 1e-15
            assert e <= float(CouplingCurve(d0, d1, invocations).delta(eps)) + 1e-15
    report = solved("none_vs_any")
    assert report.exact and report.theorem == "exact-count"
    assert report.baselines["001 Cor. 7"].epsilon == pytest.approx(
        math.log(((math.exp(0.5) + 1) ** 10 - 1) / (2 ** 10 - 1)))


def test_medical_practices_exact_equals_brute_force():
    report = solved("medical_practices")
    scenario = load_scenario(EXAMPLES / "medical_practices.toml")
    h0, h1 = (list(h.distribution(scenario.constraints)) for h in scenario.hypotheses)
    assert all(len(s) < 3 for s, _ in h0) and all(len(s) >= 3 for s, _ in h1) and len(h0) + len(h1) == 256
    flat = [(i, 0.3, 1e-9) for i in range(8)]
    assert report.exact
    assert reference.mixture_delta(h0, h1, flat, report.epsilon) == pytest.approx(1e-6, rel=1e-6)
    assert report.epsilon < report.baselines["worst pair"].epsilon / 2


def test_rates_prior_is_poisson_subsampling_exactly():
    import itertools

    from gce import ApproxDP, Subsampled, compose

    report = solved("rates_prior")
    h1 = [(frozenset(c), 0.1 ** len(c) * 0.9 ** (8 - len(c)))
          for r in range(9) for c in itertools.combinations(range(8), r)]
    truth = reference.mixture_delta([(frozenset(), 1.0)], h1, [(i, 1.0, 1e-8) for i in range(8)], 1.0)
    assert report.exact and report.delta == pytest.approx(truth, rel=1e-9)
    assert compose({Subsampled(0.1, ApproxDP(1.0, 1e-8)): 8}).delta(1.0) >= report.delta


def test_dp_sgd_allocation_script_prints_both_brackets(capsys):
    """The fast twin of the next test, without the plot (0.5 s of matplotlib)."""
    check_dp_sgd_allocation_script(capsys, None)


@pytest.mark.slow
def test_dp_sgd_allocation_script_prints_both_brackets_and_saves_the_plot(capsys, tmp_path):
    check_dp_sgd_allocation_script(capsys, tmp_path / "curves.png")


def check_dp_sgd_allocation_script(capsys, plot: pathlib.Path | None) -> None:
    """examples/dp_sgd_allocation.py at 20 steps (the file's 100 take about 7 s): balls and bins against
    Poisson subsampling at rate 1/20, each bracket around its reference (the allocation's own quadrature-
    tested curve; dp-accounting's subsampled Gaussian composed), allocation below Poisson."""
    from gce import GaussianMechanism, Subsampled, compose
    from gce.priors.allocation import allocation_curve

    module = runpy.run_path(str(EXAMPLES / "dp_sgd_allocation.py"), run_name="example")
    allocation, poisson = module["main"](steps=20, plot=None if plot is None else str(plot)).values()
    out = capsys.readouterr().out
    if plot is not None:
        assert plot.stat().st_size > 10_000 and f"plot: {plot}" in out
    else:
        assert "plot: " not in out
    a_low, a_high = allocation.bracket
    assert (a_low, a_high) == pytest.approx(allocation_curve(1.0, 20, 1).epsilon_bracket(1e-6), rel=1e-12)
    p_low, p_high = poisson.bracket
    reference = compose({Subsampled(1 / 20, GaussianMechanism(1.0)): 20}).epsilon(1e-6)
    assert p_low <= reference <= p_high * (1 + 1e-4)
    assert a_high < p_low
    assert f"epsilon {a_high:.4f}, bracket [{a_low:.4f}, {a_high:.4f}] (random allocation)" in out
    assert f"bracket [{p_low:.4f}, {p_high:.4f}] (Poisson subsampling (rates prior))" in out


# The gallery (examples/plot_*.py, run by sphinx-gallery when the site is built): each script runs here too,
# on matplotlib's Agg canvas, and the numbers it draws are checked against values derived by hand.

def run_gallery_script(name: str, monkeypatch) -> dict:
    """Run examples/NAME.py as sphinx-gallery does (in its folder, no display); its globals, figures closed."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *args, **kwargs: None)
    monkeypatch.chdir(EXAMPLES)
    plt.close("all")
    module = runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="__main__")
    module["figures"] = len(plt.get_fignums())
    plt.close("all")
    return module


def test_gallery_hospitals_composes_m_queries_or_2m(monkeypatch, capsys):
    # 001 Sec. V-A Ex. 1 with the limit m varied: m (unbounded) or min(2m, 1,000) (bounded) queries composed,
    # each epsilon the root of 002 Thm. III.3 written term by term.
    module = run_gallery_script("plot_hospitals", monkeypatch)
    assert module["figures"] == 2
    for m, unbounded, bounded in zip(module["limits"], module["unbounded"], module["bounded"]):
        assert reference.kairouz_iii3_by_formula(m, 0.05, 1e-10, unbounded) == pytest.approx(1e-6, rel=1e-5)
        k = min(2 * m, 1000)
        assert reference.kairouz_iii3_by_formula(k, 0.05, 1e-10, bounded) == pytest.approx(1e-6, rel=1e-5)
    assert "at most 365: epsilon 4.6203 at delta 1e-06 from 365 composed queries" in capsys.readouterr().out


def test_gallery_subsidiaries_and_columns(monkeypatch):
    # 001 Ex. 2: max eps_i = 1.0, the two largest 1.0 + 0.5, the sum 1.9; Ex. 3: 6, 7 and 9 columns of 0.1.
    answers = run_gallery_script("plot_subsidiaries", monkeypatch)["answers"]
    expected = {("subsidiaries", "unbounded"): 1.0, ("subsidiaries", "bounded"): 1.5,
                ("subsidiaries", "classic"): 1.9, ("columns", "unbounded"): 0.6, ("columns", "bounded"): 0.7,
                ("columns", "classic"): 0.9}
    assert answers == pytest.approx(expected, rel=1e-9)


def test_gallery_composition_curves_draw_002s_regions(monkeypatch, capsys):
    module = run_gallery_script("plot_composition_curves", monkeypatch)
    assert module["figures"] == 3
    # one (0.4, 0)-DP mechanism: its region's boundary is max(0, 1 - e^eps x, e^-eps (1 - x)) (002, eq. 2)
    x = module["MISSED"]
    curve = module["composed"]("kairouz-III.3", ApproxDP(0.4, 0.0), 1)
    drawn = module["region_boundary"](curve, module["epsilon_grid"](0.44, [0.4]))
    closed = np.maximum(np.maximum(1 - np.exp(0.4) * x, np.exp(-0.4) * (1 - x)), 0.0)
    assert drawn == pytest.approx(closed, abs=1e-12)
    out = capsys.readouterr().out
    exact = reference.kairouz_iii3_by_formula(30, 0.1, 0.001, 1.0)  # Fig. 3's exact region at epsilon 1
    assert f"Thm. III.3 (exact): delta at epsilon 1 = {exact:.4f}" in out
    assert "Thm. III.1 (simple): delta at epsilon 1 = " in out and "365 queries: epsilon 4.6203 by kairouz-III.3" in out


def test_gallery_ambulances_cost_m_eps_and_parts_sqrt2_mu(monkeypatch):
    # 000 Ex. IV.5 with the limit varied: m x 0.5 exactly; Ex. VI.25: sqrt(2) x 0.5-GDP (its profile by hand).
    module = run_gallery_script("plot_ambulances", monkeypatch)
    assert module["figures"] == 2
    assert module["epsilons"] == pytest.approx([0.5 * m for m in range(1, 11)], rel=1e-9)
    eps, mu = module["parts_report"].epsilon, math.sqrt(2) * 0.5
    assert norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2) == pytest.approx(1e-6, rel=1e-6)


def test_every_gallery_script_is_tested_here():
    scripts = {path.stem for path in EXAMPLES.glob("plot_*.py")}
    tested = {name for name in scripts if f'run_gallery_script("{name}"' in pathlib.Path(__file__).read_text()}
    assert scripts == tested and len(scripts) >= 4
