"""From a scenario to a hypothesis-DP guarantee (001, Sec. IV-V).

1. The worst case over allowed pairs of point-mass hypotheses (001 Thm. 1)
   is searched as a weight problem (:mod:`gce.solvers`).
2. The invocations on the databases where the pair differs are composed with
   the tightest compatible theorem (:func:`gce.accounting.theorems.compose`).

Identical guarantees: the composed curve depends only on the number of
differing invocations, so the maximum weight gives the exact worst case, and a
time-limited solver's certified upper bound on that number gives a sound
curve. Mixed guarantees: for every distinct guarantee g the largest number of
g-invocations any allowed pair can make differ is found separately; the
multiset of those maxima contains the differing multiset of *every* allowed
pair, and composition is monotone in the multiset, so composing it is a sound
upper bound. Witness pairs (the maximizers of those sub-problems and of a
scalar score) give a lower bound; ``exact`` when the two meet. When they do
not (:mod:`gce.solvers.mixed`): if the allowed pairs can be listed,
every maximal differing multiset is composed and the worst returned (exact);
otherwise, under ``at_most`` and ``exclusive`` constraints, a branch and bound
whose bound composes one dominating envelope per slot
(:mod:`gce.solvers.envelope`), and else a branch and bound over the
memberships, closes the gap to the solve's ``rtol`` (1% by default) or reports
it when the time limit stops it. Every composition of a solve is computed once
(:class:`~gce.solvers.mixed.CompositionCache`), and compositions count
against the time limit.
"""

from __future__ import annotations

import contextlib
import math
import reprlib
from collections import Counter
from dataclasses import replace

import numpy as np

from .accounting import batch, kinds, pld
from .accounting.curves import EnvelopeCurve, PrivacyCurve
from .accounting.guarantees import ApproxDP, Guarantee, PureDP
from .accounting.theorems import (COSTLY_ROWS, THEOREMS, Composition, as_multiset, compose, compose_within,
                                  composition_seconds)
from .constraints import ConstraintSet, Exclusive
from .effort import DEFAULT_RTOL, Deadline, check_rtol, describe_width, relative_width, within
from .errors import InfeasibleConstraintsError, InvalidParameterError, NumericalLimitError, UnsupportedCombinationError
from .model import Scenario, check_target
from .hypotheses import Point, check_distribution
from .priors.reproductions import corollary7
from .priors import allocation, routes
from .priors.routes import Decline, RouteContext, WorstPair, attempt, none_vs_any
from .report import Baseline, Report
from .solvers import DEFAULT_TIME_LIMIT, WeightProblem, worst_pair
from .solvers.base import check_time_limit
from .solvers.mixed import (ENUMERATION_BLOCKS_MAX, RENYI_ORDERS, CompositionCache, RenyiSearch, Searched,
                            branch_and_bound, maximal_profiles, renyi_bound, renyi_curve, renyi_term_table, worst_profile)
from .solvers import envelope
from .solvers.envelope import SlotSearch
from .solvers.weights import PATTERN_PAIRS_MAX

__all__ = ["solve"]

#: Delta at which single guarantees are scored when picking mixed witnesses.
_SCORE_DELTA = 1e-6


def _at(composition: Composition, delta: float | None, epsilon: float | None) -> tuple[float, float, str]:
    """(epsilon, delta, theorem) of a composition at the scenario's target."""
    if epsilon is not None:
        _, d, name = composition.at_epsilon(epsilon)
        return epsilon, d, name
    eps, _, name = composition.at_delta(delta)
    return eps, delta, name


def _weights(scenario: Scenario, keep) -> np.ndarray:
    """Per database, the invocations counted by ``keep(guarantee)`` (a 0/1 or a score)."""
    per_kind = np.fromiter((float(keep(g)) for g in scenario.table.kinds), dtype=np.float64,
                           count=len(scenario.table.kinds))
    return scenario.table.weights(scenario.n, per_kind)


def _kind_weights(scenario: Scenario, guarantee: Guarantee) -> np.ndarray:
    """Per database, the invocations with ``guarantee``: :func:`_weights` of its indicator, in O(n + its
    records) instead of one call per distinct guarantee (the same floats: integer counts below 2^53)."""
    return scenario.table.kind_counts(scenario.n, scenario.table.kind_position[guarantee])


def _differing(scenario: Scenario, pair: tuple[frozenset[int], frozenset[int]]) -> tuple[tuple[int, ...], int]:
    """The indices of the invocation records on the databases where the pair differs, and how many
    invocations (repeats counted) they are: from the groups, the set converted once."""
    members = scenario.table.members(pair[0] ^ pair[1])
    return tuple(scenario.table.positions_on(members).tolist()), scenario.table.count_on(members)


def _witness_names(scenario: Scenario, pair: tuple[frozenset[int], frozenset[int]] | None
                   ) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The pair's databases by name, in index order, when the scenario names its databases; else None."""
    names = scenario.databases.names
    if pair is None or not names:
        return None
    return tuple(names[i] for i in sorted(pair[0])), tuple(names[i] for i in sorted(pair[1]))


def _symmetric_for_bounded(scenario: Scenario) -> tuple[Scenario, list[str]]:
    """Bounded pairs with direction-dependent curves, made sound.

    A bounded pair (b0, b1) adds the record to some databases and removes it
    from others in the same run. Poisson-subsampled Gaussian and Laplace noise
    are composed through dp-accounting's privacy-loss distributions, which
    cover all-remove and all-add compositions, not mixtures of the two. So
    under the bounded neighbourhood such a guarantee is replaced by its
    (epsilon, delta) point (amplification by subsampling, Balle et al. 2018
    Thm. 8; symmetric), and a subsampled Gaussian, which has none, is refused.
    """
    if scenario.neighborhood != "bounded" or not any(kinds.one_directional(g) for g in scenario.table.kinds):
        return scenario, []
    swap: dict[Guarantee, Guarantee] = {}
    for g in scenario.table.kinds:
        if kinds.one_directional(g):
            point = kinds.point(g)
            if point is None:
                raise UnsupportedCombinationError(
                    f"neighborhood: bounded pairs with {g!r} need a curve that covers adding and removing "
                    f"records in one run; give its (epsilon, delta) guarantee instead")
            swap[g] = PureDP(point[0]) if point[1] == 0.0 else ApproxDP(*point)
    invocations = scenario.invocations.with_guarantees(swap)
    notes = [f"bounded pairs: {g!r} composed through its point {s!r} (its privacy-loss distribution "
             f"covers one direction at a time)" for g, s in swap.items()]
    if len(notes) > 3:  # one note for many: the first as an example
        (g, s), = list(swap.items())[:1]
        notes = [f"bounded pairs: {len(swap)} subsampled noise mechanisms composed through their points, e.g. "
                 f"{g!r} through {s!r} (their privacy-loss distributions cover one direction at a time)"]
    return replace(scenario, invocations=invocations), notes


class _Budget:
    """The time cap and the accuracy of a solve: the whole solve ends within the cap plus a fixed overhead.

    The searches (:func:`~gce.solvers.weights.worst_pair`, the branch and
    bound, the enumeration) do the work their problem and ``rtol`` decide,
    in the same order on any machine; none is given a share of the time. The
    solve's :class:`~gce.effort.Deadline` (:func:`gce.effort.current` inside
    :func:`solve`) only stops them: a search it stops still answers, with
    certified bounds (sound, only looser), and the stop is recorded there, so
    the report says ``time limit reached``.
    """

    def __init__(self, deadline: Deadline, rtol: float = DEFAULT_RTOL,
                 target: tuple[float | None, float | None] = (None, None)):
        #: The solve's time cap (:mod:`gce.effort`): only :meth:`left` reads its clock.
        self.deadline = deadline
        #: The accuracy asked of the solve.
        self.rtol = rtol
        #: The solve's target, (delta, None) or (None, epsilon): where the Poisson-subsampling engine refines
        #: its bracket (:meth:`_BudgetedCache.__call__`).
        self.target = target
        #: Every composition of the solve, once per multiset (bound, witnesses and baselines share them),
        #: each within the time left (:class:`_BudgetedCache`).
        self.compose = _BudgetedCache(self)

    def left(self) -> float:
        """Seconds until the deadline (negative once it has passed)."""
        return self.deadline.left()


class _BudgetedCache(CompositionCache):
    """The solve's compositions, once per multiset, at the solve's accuracy (``budget.rtol``), each within
    the time left.

    The grid of every composition follows from the accuracy alone (:func:`~gce.accounting.theorems.compose`),
    so that the same question gives the same compositions. The clock only stops: before a composition,
    its cost is estimated (:func:`~gce.accounting.theorems.composition_seconds`: dp-accounting's builds of
    the noise mechanisms' distributions, which a running build cannot be interrupted in); only when it
    does not fit in the time left does a cheaper sound bound answer instead
    (:func:`~gce.accounting.theorems.compose_within`: a coarser grid, closed forms), recorded on the
    solve's deadline so that the report says ``time limit reached``. The overrun of a solve is then what
    that bound costs, a few milliseconds per distinct noise mechanism.
    """

    def __init__(self, budget: "_Budget") -> None:
        super().__init__()
        self._budget = budget
        self._auxiliary: set[frozenset] = set()
        #: Whether the cap stopped a composition (the first is recorded on the deadline), and how many more.
        self._recorded = False
        self._more_stopped = 0

    def __call__(self, guarantees, auxiliary: bool = False) -> Composition:
        """The composition of ``guarantees`` at the solve's accuracy; ``auxiliary``: a bound that is not a
        witness's (a rival bound, a baseline), whose privacy-loss distributions may lie on a coarser grid
        (:func:`gce.accounting.batch.auxiliary`, decided by the question alone). A witness's composition
        replaces an auxiliary one of the same multiset."""
        ms = as_multiset(guarantees)
        key = frozenset(ms)
        found = self._memo.get(key)
        if found is None:
            found = self._poisson(ms)
            if found is not None:
                self._memo[key] = found
                return found
        # (an auxiliary composition differs only where noise mechanisms' pmfs may lie on a coarser grid)
        upgrade = found is not None and not auxiliary and key in self._auxiliary \
            and any(kinds.pld_noise(g) is not None for g, _ in ms)
        if found is not None and not upgrade:
            return found
        deadline = self._budget.deadline
        if upgrade:
            cost = composition_seconds(ms, rtol=self._budget.rtol)
            if cost > 0.0 and not deadline.fits(cost):  # the auxiliary composition stands (sound, on a coarser grid)
                self._stopped(f"composition of {_shown(ms)} on the grid for rtol {self._budget.rtol:g} (about "
                              f"{cost:.2g} s; {max(deadline.left(), 0.0):.2g} s left): an auxiliary composition's "
                              f"coarser grid stands")
                return found
        # After the first stop, the others are counted in one note (summary) rather than listed.
        quiet = deadline if not self._recorded else Deadline(max(deadline.left(), 0.0))
        with batch.auxiliary() if auxiliary else contextlib.nullcontext():
            found, stopped = compose_within(dict(ms), self._budget.rtol, quiet)
        if stopped is not None:
            self._more_stopped += self._recorded
            self._recorded = True
        self._memo[key] = found
        (self._auxiliary.add if auxiliary else self._auxiliary.discard)(key)
        return found

    def _poisson(self, ms) -> Composition | None:
        """Gaussian mechanisms, some Poisson-subsampled (DP-SGD's steps): the Poisson-subsampling engine's
        curve refined at the solve's target (:func:`~gce.priors.allocation.poisson_curve`, the question
        :class:`~gce.bridges.accountant.GceAccountant` asks of the same steps: the same bracket), carrying its
        certified lower curve; None for any other multiset, or one beyond the engine's lattice."""
        parts = allocation.gaussian_parts(ms)
        if parts is None:
            return None
        delta, epsilon = self._budget.target
        try:
            curve = allocation.poisson_curve(parts, self._budget.rtol, delta=delta, epsilon=epsilon)
        except (NumericalLimitError, InvalidParameterError):  # (sigma near 0: the other theorems bound it)
            return None
        return Composition(ms, ((allocation.poisson.THEOREM, curve),), exact=False)

    def _stopped(self, what: str) -> None:
        if self._recorded:
            self._more_stopped += 1
        else:
            self._budget.deadline.stop(what)
            self._recorded = True

    def summary(self) -> list[str]:
        """The report's note on the compositions the cap stopped beyond the first (which the deadline records)."""
        more = self._more_stopped
        if not more:
            return []
        return [f"time limit reached: {more} other composition{'s' if more > 1 else ''} of this solve (witnesses, "
                f"scores, baselines) fell back likewise to coarser grids"]


def _shown(ms) -> str:
    """A multiset as the reports show it: its first three entries."""
    shown = ", ".join(f"{n} x {g!r}" for g, n in ms[:3])
    return f"[{shown}{', ...' if len(ms) > 3 else ''}]"


#: Seconds one search of a weight problem takes, as (a constant, per database): an estimate from the
#: question's size (the fast combinatorial solvers, measured once: 0.12 ms at 100 databases, 0.35 ms at
#: 2,000, 1.6 ms at 20,000, 19 ms at 200,000; doubled), which decides whether a search per guarantee
#: fits in the time left.
SEARCH_SECONDS = (2e-4, 2e-7)


#: The searches of one per guarantee may take at most 1 / this of the time left (the compositions, the Renyi
#: bound and the baselines follow them).
SEARCHES_SHARE_INVERSE = 2.0


def _search_seconds(scenario: Scenario) -> float:
    """The estimated seconds of one search (:data:`SEARCH_SECONDS`), the weights built included."""
    return SEARCH_SECONDS[0] + SEARCH_SECONDS[1] * scenario.n


def _dominating_counts(scenario: Scenario, kinds: list, chain: list | None, budget: _Budget, solved: list,
                       why: str) -> Counter:
    """A multiset dominating every allowed pair's differing invocations, from one search instead of one
    per guarantee (and per link of a dominance chain).

    No allowed pair differs on more than S databases (certified by the search), so none makes more
    invocations of a guarantee differ than the S databases holding the most of them
    (:meth:`~gce.model.Invocations.top_counts`); with each guarantee on a single database that is its
    count, the per-guarantee maximum itself. When the guarantees form a dominance chain
    g_1 <= ... <= g_K, the invocations with a guarantee >= g_j that a pair makes differ are also at most
    S times the most that one database runs of them (:meth:`~gce.model.Invocations.suffix_database_max`),
    and the chain's multiset follows from these counts C_j as
    in :func:`_chain_bound` (each invocation matched to a weaker-or-equal guarantee). The cap decided it
    (the searches would not fit in the time left, ``why``), so the report says so
    (docs/design.md, "Mixed guarantees").
    """
    searches = len(kinds) + (len(chain) - 1 if chain else 0)
    budget.deadline.stop(f"one search per guarantee ({searches:,} searches for {len(kinds):,} distinct guarantees, "
                         f"{why}): each guarantee's differing invocations bounded through the most databases "
                         f"a pair can make differ")
    sizes = WeightProblem(scenario.constraints, np.ones(scenario.n), scenario.neighborhood)
    result = worst_pair(sizes, None)
    solved.append((sizes, result))
    size = min(scenario.n, math.ceil(result.upper_bound - 1e-6))  # an integer: the bound rounded up, less slack
    table = scenario.table
    top = table.top_counts(scenario.n, size)
    position = table.kind_position
    if chain is None or len(chain) < 2:
        return +Counter({g: int(top[position[g]]) for g in kinds})
    order = np.array([position[g] for g in chain])
    rank = np.empty(len(chain), dtype=np.intp)
    rank[order] = np.arange(len(chain))
    # C_j: at most the per-guarantee bounds of chain[j:] summed, and S times the most one database runs of them
    bounds = np.minimum(np.add.accumulate(top[order][::-1])[::-1], size * table.suffix_database_max(rank))
    above = np.r_[np.maximum.accumulate(bounds[::-1])[::-1][1:], 0.0]  # the largest C_i with i > j
    counts = np.maximum(bounds - above, 0.0)
    return +Counter({g: int(c) for g, c in zip(chain, counts.tolist())})


#: Largest witness score per invocation (epsilon^2 capped): the weights of the score search stay finite.
_SCORE_CAP = 1e6


def _no_finite_epsilon(floor: float, delta: float) -> str:
    """The note of an infinite epsilon: the mass of infinite privacy loss (``floor``) exceeds the target."""
    return (f"no finite epsilon: delta >= {floor:.4g} > target {delta:g} at every epsilon for the worst-case pair "
            f"(the per-invocation deltas and any privacy loss beyond the floating-point range, 1.8e308, count "
            f"as an infinite loss)")


def _score(guarantee: Guarantee, composer=compose) -> float:
    """A scalar per invocation for ranking witnesses: epsilon^2 at a small delta, at most :data:`_SCORE_CAP`."""
    eps = composer({guarantee: 1}).epsilon(_SCORE_DELTA)
    return min(eps * eps, _SCORE_CAP) if math.isfinite(eps) else _SCORE_CAP


def solve(
    scenario: Scenario,
    *,
    delta: float | None = None,
    epsilon: float | None = None,
    time_limit: float = DEFAULT_TIME_LIMIT,
    rtol: float | None = None,
) -> Report:
    """The HDP guarantee of a scenario under its neighbourhood.

    Parameters
    ----------
    scenario : Scenario
    delta, epsilon : float, optional
        Override the scenario's target (give at most one).
    time_limit : float
        Seconds the searches of this solve may take together; a MILP whose
        share is spent answers with its certified bound (sound, maybe looser).
        A cap only: when it stops a step, the report says ``time limit reached``
        (:attr:`Report.time_limit_reached`).
    rtol : float, optional
        The relative accuracy asked for (the scenario's ``rtol``, else
        :data:`gce.effort.DEFAULT_RTOL`); it alone decides how far every
        refinement goes, so the same question gives the same report.

    Returns
    -------
    Report

    Raises
    ------
    InvalidParameterError
        If ``scenario`` is not a :class:`~gce.model.Scenario`, the target is
        invalid or missing, or ``time_limit`` is not a finite number of
        seconds in (0, :data:`~gce.solvers.base.MAX_TIME_LIMIT`]; the field
        names the argument.

    References
    ----------
    001, Alg. 2 (the experiment), Def. 3 (HDP), Thm. 1 (point masses), Sec. V-A.
    """
    check_scenario(scenario)
    check_target(delta, epsilon)
    time_limit = check_time_limit(time_limit)
    rtol = check_rtol(rtol) if rtol is not None else scenario.rtol if scenario.rtol is not None else DEFAULT_RTOL
    if delta is None and epsilon is None:
        delta, epsilon = scenario.delta, scenario.epsilon
    if delta is None and epsilon is None:
        raise InvalidParameterError("delta", "give a target: delta (report epsilon) or epsilon (report delta)")
    with within(Deadline(time_limit)) as deadline:
        budget = _Budget(deadline, rtol, (delta, epsilon))
        if scenario.hypotheses is not None:
            report = _solve_composite(scenario, delta, epsilon, budget)
        else:
            report = _solve_pairs(scenario, delta, epsilon, budget)
    stops = [f"time limit reached: {stop}" for stop in deadline.stops]
    lower_curve = report.curve if report.exact and report.lower_curve is None else report.lower_curve
    report = replace(report, rtol=rtol, time_limit_reached=deadline.reached, lower_curve=lower_curve,
                     notes=tuple(report.notes) + tuple(note for note in stops if note not in report.notes))
    if not report.time_limit_reached and report.accuracy is not None and report.accuracy > rtol:
        report = replace(report, notes=report.notes + (
            f"accuracy: the certified bracket is {describe_width(report.accuracy)} wide, wider than the "
            f"{100 * rtol:.3g}% asked, with time left: the engines' numerical limits (grid sizes, round-off at very small deltas) or "
            f"the searches' node caps (a fixed schedule) stopped the refinement, not the clock (the answer is "
            f"still certified)",))
    return report


def check_scenario(scenario: object, field: str = "scenario") -> Scenario:
    """Raise InvalidParameterError, naming ``field``, unless ``scenario`` is a :class:`~gce.model.Scenario`."""
    if not isinstance(scenario, Scenario):
        hint = " (load a file with gce.load_scenario)" if isinstance(scenario, str) or hasattr(scenario, "__fspath__") \
            else ""
        raise InvalidParameterError(field, f"must be a gce.Scenario{hint}, got {reprlib.repr(scenario)}")
    return scenario


def _solve_pairs(scenario: Scenario, delta: float | None, epsilon: float | None, budget: _Budget) -> Report:
    """The preset neighbourhoods: the worst pair of point masses (001 Thm. 1)."""
    scenario, substituted = _symmetric_for_bounded(scenario)

    kinds = sorted(scenario.table.kinds, key=repr)
    notes: list[str] = list(scenario.notes) + substituted
    problem = lambda keep: WeightProblem(scenario.constraints, _weights(scenario, keep), scenario.neighborhood)
    kind_problem = lambda g: WeightProblem(scenario.constraints, _kind_weights(scenario, g), scenario.neighborhood)
    chain = _dominance_chain(kinds)
    # The parallel baseline needs its own search unless some kind runs equally often on every database
    # (only a kind with at least n invocations can).
    totals = scenario.table.kind_totals()
    everywhere = [g for g in kinds if totals[scenario.table.kind_position[g]] >= scenario.n]
    parallel_search = _parallel_applies(scenario) and not any(_uniform_weights(kind_problem(g)) for g in everywhere)
    # One search per guarantee (and per link of a dominance chain), unless they cannot finish in the time left.
    searches = len(kinds) + (len(chain) - 1 if chain else 0)
    per_kind = len(kinds) == 1 or budget.deadline.fits(SEARCHES_SHARE_INVERSE * searches * _search_seconds(scenario))

    # Upper bound: per guarantee, the most invocations of that kind any allowed pair makes differ.
    upper: Counter[Guarantee] = Counter()
    witnesses = []
    solver_names = set()
    by_kind = {}
    solved = []  # (problem, result) of the per-kind searches with uniform weights, reused by the parallel baseline
    if not per_kind:
        upper = _dominating_counts(scenario, kinds, chain, budget, solved,
                                   f"about {searches * _search_seconds(scenario):.2g} s; "
                                   f"{max(budget.left(), 0.0):.2g} s left")
        witnesses.append(solved[-1][1].witness)  # the most databases differing: an allowed pair
        solver_names.add(solved[-1][1].method)
    for done, g in enumerate(kinds if per_kind else ()):
        if done and budget.deadline.expired():  # slower than estimated: the searches so far give witnesses
            per_kind = False
            upper = _dominating_counts(scenario, kinds, chain, budget, solved,
                                       f"the time limit passed after {done:,} of them")
            witnesses.append(solved[-1][1].witness)
            solver_names.add(solved[-1][1].method)
            break
        searched_problem = kind_problem(g)
        result = by_kind[g] = worst_pair(searched_problem, None)
        if _uniform_weights(searched_problem):
            solved.append((searched_problem, result))
        upper[g] = int(round(result.upper_bound))
        witnesses.append(result.witness)
        solver_names.add(result.method)
        if not result.exact:
            why = "stopped by the time limit" if result.stopped else "did not close its gap"
            notes.append(f"solver {result.method} {why} for {g!r}: witness "
                         f"{result.value:g} invocations, certified bound {result.upper_bound:g}")
    renyi = None
    if len(kinds) > 1:
        # Mixed guarantees: the Renyi bound's searches give a certified bound and, per order, a witness
        # weighing every guarantee; without Renyi terms for every kind, a scalar score per guarantee
        # (composed alone; together at most an auxiliary share of the time left) gives one witness.
        renyi = _renyi_bound(scenario, budget)
        if renyi is not None:
            witnesses.extend(renyi.witnesses)
        else:
            estimate = COMPOSE_SECONDS_PER_GUARANTEE * len(kinds)  # one composition per guarantee
            if estimate > ALWAYS_RUN_SECONDS and not budget.deadline.fits(estimate):
                budget.deadline.stop(f"the scalar score's witness: {len(kinds):,} guarantees composed one by "
                                     f"one (about {estimate:.2g} s; {max(budget.left(), 0.0):.2g} s left)")
            else:
                scores = {g: _score(g, budget.compose) for g in kinds}
                result = worst_pair(problem(lambda h: scores[h]), None)
                witnesses.append(result.witness)
                solver_names.add(result.method)

    # Lower bound: the worst of the witness pairs, each composed on its own (first: at dp-accounting's
    # accuracy, which the bounds below share when their multiset is a witness's).
    index = 0 if epsilon is None else 1  # what the target asks for: epsilon, or delta at epsilon
    best_pair, best_eps, best_ms = None, -1.0, None
    ranked = _ranked_witnesses(scenario, witnesses, renyi, delta, epsilon, +upper)
    for rank, (pair, estimate) in enumerate(ranked):
        if best_pair is not None and budget.left() <= 0:
            budget.deadline.stop(f"the other witness pairs were not composed ({len(ranked) - rank:,} of "
                                 f"{len(ranked):,})")
            break
        if best_pair is not None and estimate <= best_eps:
            continue  # its own Renyi bound is below the worst pair found: it cannot be worse
        if best_pair is not None and rank >= WITNESSES_COMPOSED and math.isfinite(estimate):
            break  # ranked by finite Renyi bounds: the likeliest worst are composed
        ms = scenario.table.multiset_on(pair[0] ^ pair[1])
        value = _at(budget.compose(ms, auxiliary=True), delta, epsilon)[index]  # ranking: a coarser grid
        if value > best_eps:
            best_pair, best_eps, best_ms = pair, value, ms
    # The worst one on dp-accounting's grid, unless the Renyi bound is already further above it than the
    # batch bracket is wide and it is not the per-guarantee maxima' multiset (then it cannot become exact).
    fine = (renyi is None or Counter(dict(best_ms)) == +upper
            or _curve_at(renyi.curve, delta, epsilon)[index] <= best_eps * (1 + batch.DEFAULT_RTOL))
    witness = lambda: budget.compose(best_ms, auxiliary=not fine)
    best_eps = _at(witness(), delta, epsilon)[index]

    candidates = [upper]
    if per_kind and chain is not None and len(chain) > 1:  # the chain's multiset first: the per-kind one only if time is left
        chained = _chain_bound(chain, kind_problem, budget, by_kind[chain[-1]])
        if chained is None:  # the time limit passed during its searches: the counted chain instead
            chained = _dominating_counts(scenario, kinds, chain, budget, [], "the time limit passed during those of the dominance chain")
        candidates.insert(0, chained)
    options = []
    for c in candidates:
        if options and budget.left() <= 0:
            budget.deadline.stop("the per-guarantee maxima were not composed (the chain bound was)")
            break
        options.append((budget.compose(c, auxiliary=True), c))
    bound, upper = min(options, key=lambda o: _at(o[0], delta, epsilon)[index])
    eps, d, theorem = _at(bound, delta, epsilon)

    exact = bound.exact and Counter(dict(best_ms)) == +upper and not substituted
    report_curve = bound.curve
    found = Counter(dict(best_ms)) == +upper  # the worst pair found makes the dominating multiset differ
    if len(kinds) > 1 and not exact and not found:  # the dominating multiset is loose: list the maximal ones
        report = _enumerated(scenario, kinds, delta, epsilon, budget, list(scenario.notes) + substituted,
                             substituted, solved) if _listable(scenario.constraints) else None
        if report is not None:
            return report
        slot = _slot_search(scenario, delta, epsilon, budget, best_eps, best_ms, best_pair)
        if slot is not None and slot.lower > best_eps:  # its witness set, composed on the solve's grid
            best_pair, best_eps, fine = (frozenset(), slot.members), slot.lower, False
            best_ms = scenario.table.multiset_on(slot.members)
        closed = slot is not None and slot.upper <= best_eps * (1.0 + budget.rtol)
        if closed:  # the per-slot search is within rtol: the branch and bound over the memberships is not needed
            searched = Searched(best_pair, best_eps, witness(), math.inf, bound.curve, slot.complete, 0)
        elif len(kinds) <= BRANCH_KINDS_MAX and (slot is None or slot.upper > best_eps * (1.0 + BRANCH_AFTER_SLOT)):
            # (also after a per-slot search far from closing: the least bound wins)
            if slot is not None:
                witnesses = [*witnesses, (frozenset(), slot.members)]
            searched = _branch_and_bound(scenario, kinds, delta, epsilon, budget, bound, [best_pair, *witnesses],
                                         per_kind and all(r.exact for r in by_kind.values()))
        else:  # the per-guarantee bounds of a node fall only once a guarantee's databases are all fixed
            met = best_eps >= _at(bound, delta, epsilon)[index]
            searched = Searched(best_pair, best_eps, witness(), math.inf, bound.curve, True, 0)
            if not met and len(kinds) > BRANCH_KINDS_MAX:
                notes.append(f"branch and bound skipped: {len(kinds)} distinct guarantees (more than "
                             f"{BRANCH_KINDS_MAX}: its per-guarantee bounds would not fall within the time limit)")
            elif not met:
                notes.append(f"branch and bound over the memberships skipped: the per-slot bound is within "
                             f"{BRANCH_AFTER_SLOT:.0%} of its witness (nearer, it is the better use of the time left)")
        if searched.lower > best_eps:
            best_pair, best_eps, best_ms = searched.pair, searched.lower, dict(searched.lower_composition.guarantees)
            best_exact = searched.lower_composition.exact
            fine = True
        else:
            best_exact = witness().exact
        bounds = [(_at(bound, delta, epsilon)[index], bound.curve, theorem, "the per-guarantee maxima")]
        if searched.upper < bounds[0][0]:
            bounds.append((searched.upper, searched.curve, theorem, "the branch and bound"))
        if slot is not None and slot.upper < bounds[0][0]:
            bounds.append((slot.upper, slot.curve, SLOT_THEOREM, "the per-slot envelopes"))
        if renyi is not None:
            bounds.append((_curve_at(renyi.curve, delta, epsilon)[index], renyi.curve, RENYI_THEOREM,
                           "the Renyi bound"))
        upper_value, _, winner, source = min(bounds, key=lambda b: b[0])
        if slot is not None and not slot.complete and source == "the per-slot envelopes":
            searched = replace(searched, complete=False, stopped=slot.stopped)
        # Exact when the worst pair found meets the least certified bound, whichever bound that is.
        exact = best_exact and not substituted and upper_value <= best_eps * (1 + 1e-9)
        if len(bounds) > 1 and upper_value < bounds[0][0]:
            curve = EnvelopeCurve([b[1] for b in bounds])
            eps, d = (float(curve.epsilon(delta)), delta) if epsilon is None else (epsilon, float(curve.delta(epsilon)))
            theorem = _at(witness(), delta, epsilon)[2] if exact else winner
            report_curve = curve
        gap = 0.0 if upper_value <= best_eps else upper_value / best_eps - 1.0 if best_eps > 0 else math.inf
        what = "epsilon" if epsilon is None else f"delta at epsilon {epsilon:g}"
        nodes = searched.nodes + (slot.nodes if slot is not None else 0)
        notes.append(f"branch and bound over the memberships: {nodes} nodes; {what} of the worst pair "
                     f"found {best_eps:.6g}, certified bound {upper_value:.6g} from {source} (gap {gap:.3%})"
                     + ("" if searched.complete else "; stopped by the time limit" if searched.stopped
                        else f"; stopped after {nodes} nodes, the most searched"))

    if math.isinf(eps):
        floor = bound.curve.delta_floor
        notes.append(_no_finite_epsilon(floor, delta))
    report_baselines = _baselines(scenario, delta, epsilon, budget, solved=solved)
    bracket, lower_curve = _bracket(witness(), eps if epsilon is None else d, delta, epsilon, exact, theorem,
                                    budget, notes)
    notes += budget.compose.summary()
    differing, count = _differing(scenario, best_pair)
    return Report(
        epsilon=eps, delta=d, theorem=theorem, exact=exact, witness=best_pair,
        differing=differing, differing_count=count,
        curve=report_curve, baselines=report_baselines,
        solver="+".join(sorted(solver_names)),
        witness_epsilon=best_eps if epsilon is None else None, notes=tuple(notes), title=scenario.title,
        bracket=bracket, witness_names=_witness_names(scenario, best_pair), lower_curve=lower_curve,
    )


#: Largest expected epsilon drop of a bracket's lower curve, relative to the answer, on its first grid (a
#: coarser composition's grid is halved until the rounded-down losses would lower epsilon by at most this).
BRACKET_LOOSENESS = 0.25
#: Most halvings of a composition's grid for its certified lower curve (a deterministic cap: each halves the
#: rounded-down losses' error and doubles the cost).
REFINEMENTS_MAX = 6
#: When no lower curve fits in the time left, the coarsest is still composed if estimated under this many seconds.
BRACKET_GRACE_SECONDS = 0.15
#: Share of the requested accuracy that a coarser grid's rounded-down losses may take (their expected epsilon
#: drop) when the bracket's lower curve starts on a grid coarser than its composition's (:func:`_bracket`).
BRACKET_COARSE_SHARE = 0.25
#: A halving that narrows the bracket by less than this share of its width ends the refinement: what is
#: left is not the lower curve's grid (the upper bound's own error, or the search's gap).
REFINEMENT_GAIN = 0.1


def _bracket(witness: Composition, upper: float, delta: float | None, epsilon: float | None, exact: bool,
             theorem: str, budget: _Budget, notes: list[str]
             ) -> tuple[tuple[float, float] | None, batch.LowerCurve | None]:
    """(lower, upper) around the exact worst case, and the certified lower curve it comes from, when the
    answer is not exact and the worst pair's composition is a batch composition
    (:class:`~gce.accounting.batch.BatchCurve`): that pair is allowed, so its lower curve bounds the worst
    case from below at every epsilon (``Report.lower_curve``), and its value at the target is the
    bracket's lower end. (None, None) otherwise.

    The lower curve is composed whenever the answer is not exact, on the composition's grid, then on
    grids halved one at a time (:func:`~gce.accounting.batch.lower_at`, docs/design.md "Brackets and
    exactness") while the bracket is wider than the accuracy asked for (``budget.rtol``): a schedule
    decided by the question alone, at most :data:`REFINEMENTS_MAX` halvings, ended early when one gains
    less than :data:`REFINEMENT_GAIN` of the width. The clock only stops it: a step whose estimated
    cost does not fit in the time left is not taken, and the deadline records it (the report says
    ``time limit reached``). The note states the width reached.
    """
    if exact or not math.isfinite(upper):
        return None, None
    engines = [c for _, c in witness.candidates if isinstance(c, allocation.AllocationCurve)]
    if engines:  # the Poisson-subsampling engine's curve (:meth:`_BudgetedCache._poisson`): its own lower curve
        curve = engines[0]
        low = float(curve.lower.epsilon(delta)) if epsilon is None else float(curve.lower.delta(epsilon))
        low = min(max(low, 0.0), upper)
        what = "epsilon" if epsilon is None else f"delta at epsilon {epsilon:g}"
        notes.append(f"{theorem} composition: {what} in [{low:.5g}, {upper:.5g}], bracket "
                     f"{describe_width(relative_width(low, upper))} wide ({curve.description})")
        return ((low, upper) if low > 0.0 else None), curve.lower
    if witness.exact:  # an allowed pair's exact curve: a lower curve of the worst case at every epsilon
        low = float(witness.curve.epsilon(delta)) if epsilon is None else float(witness.curve.delta(epsilon))
        if 0.0 < low <= upper:
            what = "epsilon" if epsilon is None else f"delta at epsilon {epsilon:g}"
            notes.append(f"worst pair found ({witness.candidates[0][0]}, exact): {what} in [{low:.5g}, {upper:.5g}], "
                         f"bracket {describe_width(relative_width(low, upper))} wide")
            return (low, upper), witness.curve
    # (not hasattr(c, "lower"): that would run the property, i.e. compose the lower curve)
    curves = [c for _, c in witness.candidates if callable(getattr(c, "lower_seconds", None))]
    if not curves and all(kinds.pld_source(g) is not None for g, _ in witness.guarantees):
        # composed by another row (a few distinct (eps, delta) points: dp-accounting's PLD): the batch
        # engine's lower curve of the same multiset still bounds the worst case from below
        try:
            curves = [batch.BatchCurve(tuple(witness.guarantees), rtol=budget.rtol)]
        except (NumericalLimitError, UnsupportedCombinationError, ValueError):
            curves = []
    if not curves:
        return None, None
    curve = curves[0]
    deadline, rtol = budget.deadline, budget.rtol
    what = "epsilon" if epsilon is None else f"delta at epsilon {epsilon:g}"
    interval, halvings = curve.interval, REFINEMENTS_MAX if isinstance(curve, batch.LawCurve) else 0
    if epsilon is None and halvings == 0:
        # Rounded down, each copy's loss drops by up to the grid width: on a coarse grid over many copies
        # the lower curve would say little (an epsilon drop of about half of that, summed).
        copies = sum(batch.point_splits(g, n) for g, n in curve.plan.guarantees if not batch.closed_form(g))
        while 0.5 * interval * copies > BRACKET_LOOSENESS * upper and halvings < REFINEMENTS_MAX \
                and interval / 2.0 >= batch.FINEST:
            interval, halvings = interval / 2.0, halvings + 1
        # ... and coarser while the rounded-down losses would still lower epsilon by a small share of rtol
        # (:data:`BRACKET_COARSE_SHARE`): a cheaper lower curve, e.g. noise mechanisms' pmfs on 4 x the interval
        while halvings == 0 and 0.5 * (2.0 * interval) * copies <= BRACKET_COARSE_SHARE * rtol * upper \
                and 2.0 * interval <= batch.COARSEST and copies > 0:
            interval *= 2.0
    lower, low, coarser = None, 0.0, 0
    while True:
        own = interval == curve.interval
        cost = curve.lower_seconds() if own else batch.lower_seconds(curve, interval)
        if cost > 0.0 and not deadline.fits(cost):
            reached = f"; bracket {describe_width(relative_width(low, upper))} wide" if lower is not None else ""
            if coarser == 0:
                deadline.stop(f"certified lower curve of the {theorem} composition on a grid of width {interval:g} "
                              f"(about {cost:.2g} s; {max(deadline.left(), 0.0):.2g} s left){reached}")
            if lower is None and coarser < REFINEMENTS_MAX and 2.0 * interval <= batch.COARSEST:
                # nothing certified yet: a coarser grid's lower curve (cheaper, wider), then no refinement
                interval, coarser, halvings = 2.0 * interval, coarser + 1, REFINEMENTS_MAX
                continue
            if lower is not None or cost > BRACKET_GRACE_SECONDS:
                break
            # nothing certified and the coarsest lower curve is cheap: composed past the cap (a bracket rather
            # than none; within the overrun the time limit allows)
        try:
            step = curve.lower if own else batch.lower_at(curve.plan.guarantees, interval)
        except NumericalLimitError:  # a grid beyond GRID_LIMIT: the schedule ends where the work cap is
            break
        value = float(step.epsilon(delta)) if epsilon is None else float(step.delta(epsilon))
        value = min(max(value, 0.0), upper)
        gain = value - low if lower is not None else math.inf
        if lower is None or value >= low:
            lower, low = step, value
        if relative_width(low, upper) <= rtol or halvings >= REFINEMENTS_MAX or interval / 2.0 < batch.FINEST \
                or gain < REFINEMENT_GAIN * (upper - low + max(gain, 0.0)):
            break
        interval, halvings = interval / 2.0, halvings + 1
    if lower is None or low <= 0.0:  # e.g. a coarse grid's lower curve: nothing certified above 0 to report
        return None, lower
    width = relative_width(low, upper)
    grid = f" (lower curve on a grid of width {interval:g})" if interval != curve.interval else ""
    notes.append(f"{theorem} composition: {what} in [{low:.5g}, {upper:.5g}], "
                 f"bracket {describe_width(width)} wide{grid}")
    return (low, upper), lower


#: The name of the Renyi bound in reports.
RENYI_THEOREM = "renyi (CKS20 Prop. 12)"
#: The name of the per-slot envelopes' bound in reports (:mod:`gce.solvers.envelope`).
SLOT_THEOREM = "batch (one envelope per slot)"
#: The per-slot search's first grid, in multiples of the grid for ``rtol`` (:func:`_slot_search`), and the
#: factor by which it is refined while the search's bound is further than rtol / 2 above its witness (and the
#: grid's own excess is a share of that). Noise laws are split onto the grid (second order): 25 databases of
#: mixed guarantees on a grid of 0.0128 are 0.07-0.17% above their composition on 0.0016.
SLOT_COARSE, SLOT_REFINE = 16.0, 2.0
#: Estimated seconds of nodes one step of the per-slot search may take (its node cap follows from the
#: estimate, not from the clock: the same nodes on any machine; the rest of a default solve fits beside it).
SLOT_SECONDS = 1.5
#: The per-slot search's grid for ``rtol`` is at most this wide (noise mechanisms' pmfs: 8 times dp-accounting's
#: interval; the first grid is :data:`SLOT_COARSE` times wider).
SLOT_NOISE_BASE = 8e-4
#: Share of the target delta that the per-slot search's trimmed tails may add (:func:`gce.solvers.envelope.trimmed`).
SLOT_TRIM = 1e-4
#: The branch and bound over classes (:func:`gce.solvers.envelope.class_search`): at most this many seconds of
#: estimated compositions.
CLASS_SECONDS = 1.0
#: Share of the time limit that the per-slot and count searches leave to the witness's composition and the
#: bracket (:func:`_slot_search`).
SLOT_RESERVE = 0.2
#: With more slots than this (``at_most`` m) and exclusive groups, the count search takes at most
#: CLASS_FIRST_SECONDS of estimated compositions after a per-slot step that does not close (with groups the
#: per-slot search closes most at once: measured, 40 databases at most 25, 0.9% in 343 nodes), at most
#: CLASS_FIRST_NODES_MAX.
CLASS_FIRST_SLOTS, CLASS_FIRST_SECONDS, CLASS_FIRST_NODES_MAX = 8, 2.5, 20000
#: Without exclusive groups the count search runs alone, with this many seconds of estimated compositions.
CLASS_ALONE_SECONDS = 3.0


def _slot_search(scenario: Scenario, delta: float | None, epsilon: float | None, budget: _Budget,
                 best_value: float, best_ms, best_pair) -> SlotSearch | None:
    """Mixed guarantees under ``at_most`` and ``exclusive`` constraints, unbounded pairs: the branch and
    bound of :func:`gce.solvers.envelope.slot_search` (one dominating envelope per slot, docs/design.md
    "Mixed guarantees"), towards a bound within ``rtol / 2`` of its witness. The grid starts
    :data:`SLOT_COARSE` times coarser than the grid for ``rtol`` (from the best witness's size) and is
    refined by :data:`SLOT_REFINE` while the bound is further above and the grid's own excess (its witness
    there over the solve's composition of it) is at least half that gap; each step's cost is estimated
    before it starts and the cap only stops (recorded). None when the constraints or guarantees are of
    another kind, or when not even the first step fits."""
    if scenario.neighborhood != "unbounded" or not envelope.accepts(scenario.constraints):
        return None
    if not math.isfinite(best_value) or best_value <= 0.0:
        return None
    index = 0 if epsilon is None else 1
    members = best_pair[0] ^ best_pair[1]
    # (eps, delta) points move by up to a grid width each when split; noise mechanisms' pmfs much less (their
    # split errors are second order, as the batch engine's grid for them says: dp-accounting's interval)
    # (each database's copies of one point are composed exactly before they meet the grid: batch.point_splits)
    points = sum(batch.point_splits(g, n) for i in members for g, n in scenario.table.multiset_on(frozenset((i,)))
                 if kinds.pld_noise(g) is None)
    scale = best_value if epsilon is None else epsilon
    base = max(pld.DISCRETIZATION, min(2.0 * budget.rtol * scale / max(points, 1), SLOT_NOISE_BASE))
    h = _on_interval(SLOT_COARSE * base)
    slots = envelope.slot_count(scenario.constraints)
    cut = SLOT_TRIM * (delta if epsilon is None else best_value) / max(slots, 1)
    table = scenario.table
    reference = scale / max(1, len(members))
    found, witnessed, searched = None, {}, 0.0
    # The searches stop with SLOT_RESERVE of the time limit left: the witness's composition and the bracket's
    # lower curve follow (a view of the solve's deadline with a nearer cap; its stops are said on the solve's).
    phase = budget.deadline.collecting()
    if phase.seconds is not None:
        phase.seconds = max(phase.seconds - SLOT_RESERVE * phase.seconds, 0.0)
    while True:
        # (a finer grid's search costs at least SLOT_REFINE times the last one's: not begun when that won't fit)
        estimate = envelope.bundles_seconds(scenario.n, len(table.kinds), h) + SLOT_REFINE * searched
        if phase.fits(estimate):
            try:
                bundles = envelope.database_bundles(table, scenario.n, h, cut)
            except (UnsupportedCombinationError, NumericalLimitError):
                break
            window = envelope.window_points(bundles, slots, h)
            estimate = envelope.search_seconds(bundles, slots, window)
        if not phase.fits(estimate):
            phase.stop(f"the per-slot envelopes on a grid of width {h:g} (about {estimate:.2g} s; "
                       f"{max(phase.left(), 0.0):.2g} s left)")
            break
        searched = estimate
        scores = envelope.scores(bundles, reference, h)
        # the nodes a step may take: as many as SLOT_SECONDS of estimated work (decided by the question)
        node = max(envelope.node_seconds(bundles, slots, window), 1e-9)
        nodes_max = max(1, min(envelope.SLOT_NODES_MAX, int(SLOT_SECONDS / node)))

        def by_slots(known: float) -> envelope.SlotSearch | None:
            with within(phase):
                return envelope.slot_search(bundles, scores, scenario.constraints, h, delta, epsilon,
                                            budget.rtol / 4.0, phase, nodes_max)

        # Many slots: one envelope per slot mixes more curves, and the counts of classes go first, with more
        # compositions (CLASS_FIRST_SECONDS of estimated work)
        many = slots > CLASS_FIRST_SLOTS
        grouped = any(isinstance(c, Exclusive) for c in scenario.constraints.constraints)
        counts_max = max(1, int((CLASS_FIRST_SECONDS if grouped else CLASS_ALONE_SECONDS) / node) if many
                         else int(CLASS_SECONDS / node))
        counts_max = min(counts_max, CLASS_FIRST_NODES_MAX if many else envelope.SLOT_NODES_MAX)

        def by_classes(known: float) -> envelope.SlotSearch | None:
            cap = counts_max
            overhead = envelope.class_seconds(bundles, slots, 0, size=window)
            if not phase.fits(overhead + cap * node):
                # the cap: as many compositions as fit in the time left (said), none when not one fits
                cap = int((phase.left() - overhead) / node)  # (a capped phase: an uncapped one always fits)
                phase.stop(f"the branch and bound over classes on a grid of width {h:g} after at most "
                           f"{max(cap, 0)} of {counts_max} compositions ({max(phase.left(), 0.0):.2g} s left)")
                if cap < 1:
                    return None
            with within(phase):
                return envelope.class_search(bundles, scores, scenario.constraints, h, delta, epsilon, reference,
                                             budget.rtol / 4.0, phase, cap, known=known)

        if many and not grouped:  # the counts alone (the per-slot search where they do not apply)
            step = by_classes(best_value)
            if step is None:
                step = by_slots(best_value)
        else:
            step = by_slots(best_value)
            if step is not None and step.upper > max(best_value, step.lower) * (1.0 + budget.rtol / 2.0):
                step = envelope.combined(step, by_classes(max(best_value, step.lower)), delta, epsilon)
        if step is None:
            break
        if step.members and step.members not in witnessed:  # its witness, on the solve's own grid
            # (auxiliary: noise mechanisms' pmfs on the coarser grid of a witness's rival; the bracket's lower
            # curve is composed on its own grids, and the answer is the search's bound)
            witnessed[step.members] = _at(budget.compose(table.multiset_on(step.members), auxiliary=True),
                                          delta, epsilon)[index]
        if found is None or step.upper < found.upper:
            found = step
        best_value = max([best_value, *witnessed.values()])
        if step.stopped or found.upper <= best_value * (1.0 + budget.rtol / 2.0):
            break
        # A finer grid lowers the bound by about what it lowers the witness (the grid's own excess over the
        # solve's composition of it); when that is under half the gap left, the search is what is short
        excess = step.lower / witnessed[step.members] - 1.0 if step.members and witnessed[step.members] > 0 else math.inf
        if excess < 0.5 * (found.upper / best_value - 1.0):
            break
        finer = _on_interval(h / SLOT_REFINE)
        if finer >= h:
            break
        h = finer
    for what in phase.stops:
        budget.deadline.stop(f"{what} (the searches leave {SLOT_RESERVE:.0%} of the time limit to the bracket)")
    if found is not None and witnessed:  # the best witness of every step, with its value on the solve's grid
        members = max(witnessed, key=witnessed.get)
        found = replace(found, members=members, lower=witnessed[members])
    return found


def _on_interval(h: float) -> float:
    """``h`` rounded down to dp-accounting's interval times a power of two, so that the noise mechanisms'
    upper laws are split from the pmfs the compositions build (:func:`gce.accounting.batch._laws`)."""
    unit = pld.DISCRETIZATION
    return unit * 2.0 ** max(0, math.floor(math.log2(max(h / unit, 1.0))))


#: Most witness pairs composed for the lower bound of mixed guarantees, in the order of their own Renyi
#: bounds (the searches, enumeration and branch and bound, compose further pairs).
WITNESSES_COMPOSED = 3
#: The branch and bound over the memberships follows a per-slot search only when that search's bound is more
#: than this far above its witness (or infinite): nearer, the per-slot bound is the better use of the time
#: left (measured: 200 databases of 5 guarantees, at most 25: 1.6 s for one node, no gain).
BRANCH_AFTER_SLOT = 0.1
#: Most distinct guarantees for which the branch and bound runs (module doc of gce.solvers.mixed).
BRANCH_KINDS_MAX = 16


def _ranked_witnesses(scenario: Scenario, witnesses: list, renyi: RenyiSearch | None, delta: float | None,
                      epsilon: float | None, maxima: Counter) -> list:
    """(pair, its own Renyi bound or inf), one per differing multiset, the likeliest worst first: one
    that makes the per-guarantee ``maxima`` differ (then it is the worst pair, exactly), then by each
    pair's own Renyi bound when there is one (cheap, no composition), else the per-guarantee searches'
    order with the scalar score's witness (last, weighing every guarantee) first."""
    distinct = {}
    for pair in dict.fromkeys(witnesses):  # a pair found by several searches: its multiset once
        key = frozenset(scenario.table.multiset_on(pair[0] ^ pair[1]))
        distinct.setdefault(key, pair)
    # (multisets of positive counts: equal as Counters iff equal as sets of items, a size compared first)
    dominating = frozenset((+maxima).items())
    top = [pair for key, pair in distinct.items() if key == dominating]
    pairs = [pair for pair in distinct.values() if pair not in top]
    if renyi is None:
        return [(pair, math.inf) for pair in top + pairs[-1:] + pairs[:-1]]
    estimates = {pair: _curve_at(renyi.estimate(pair), delta, epsilon)[0 if epsilon is None else 1] for pair in pairs}
    return [(pair, math.inf) for pair in top] + sorted(estimates.items(), key=lambda item: -item[1])


def _renyi_bound(scenario: Scenario, budget: _Budget) -> RenyiSearch | None:
    """:func:`gce.solvers.mixed.renyi_bound` of the scenario, an auxiliary search of the budget; None when a
    guarantee has no Renyi bound."""
    terms = renyi_term_table(scenario.table.kinds)  # per distinct guarantee, vectorised
    if terms is None:
        return None
    divergences = np.stack([scenario.table.weights(scenario.n, terms[0][:, k]) for k in range(len(RENYI_ORDERS))])
    leaks = scenario.table.weights(scenario.n, terms[1])
    return renyi_bound(scenario.constraints, scenario.neighborhood, divergences, leaks)


def _branch_and_bound(scenario: Scenario, kinds: list, delta: float | None, epsilon: float | None,
                      budget: _Budget, bound, witnesses: list, exact_searches: bool):
    """Mixed guarantees on pairs too many to list: :func:`gce.solvers.mixed.branch_and_bound` from the
    dominating multiset's node, towards a relative gap of the solve's ``rtol``, capped by its deadline."""
    counts = np.stack([_weights(scenario, lambda h, g=g: h == g) for g in kinds], axis=1)
    index = 0 if epsilon is None else 1
    return branch_and_bound(
        scenario.constraints, scenario.neighborhood, counts, kinds, budget.compose,
        lambda c: _at(c, delta, epsilon)[index],
        lambda pair: scenario.table.multiset_on(pair[0] ^ pair[1]),
        (bound, witnesses, exact_searches), tolerance=budget.rtol, deadline=budget.deadline)


def _listable(constraints: ConstraintSet) -> bool:
    """Whether :func:`~gce.solvers.mixed.maximal_profiles` may list the allowed sets (a pattern list, or
    few enough blocks), decided before the per-database counts of every guarantee are built for it."""
    return constraints.explicit_sets() is not None or constraints.block_count() <= ENUMERATION_BLOCKS_MAX


def _enumerated(scenario: Scenario, kinds: list, delta: float | None, epsilon: float | None, budget: _Budget,
                notes: list[str], substituted: list[str], solved: list) -> Report | None:
    """Mixed guarantees on few allowed pairs: every maximal differing multiset composed, the worst returned.

    Composition is monotone in the multiset, so the pairs whose counts per
    guarantee are maximal hold the worst case at every epsilon
    (:mod:`gce.solvers.mixed`); the report's curve is the pointwise maximum
    of their curves, exact when each composition is. None when the pairs are
    too many to list (counts), or when the time limit stops the listing (recorded on the solve's
    deadline): the searches take over.
    """
    counts = np.stack([_weights(scenario, lambda h, g=g: h == g) for g in kinds], axis=1)
    profiles = maximal_profiles(scenario.constraints, scenario.neighborhood, counts, budget.deadline)
    if profiles is None:
        return None
    index = 0 if epsilon is None else 1
    worst = worst_profile(profiles, kinds, budget.compose, lambda c: _at(c, delta, epsilon)[index],
                          budget.deadline)
    if worst is None:
        return None
    eps, d, theorem = _at(worst.composition, delta, epsilon)
    notes.append(f"enumerated the allowed pairs ({profiles.allowed_sets} allowed sets): {worst.composed} maximal "
                 f"differing multisets composed")
    if math.isinf(eps):
        notes.append(_no_finite_epsilon(worst.composition.curve.delta_floor, delta))
    differing, count = _differing(scenario, worst.pair)
    baselines = _baselines(scenario, delta, epsilon, budget, solved=solved)
    bracket, lower_curve = _bracket(worst.composition, eps if epsilon is None else d, delta, epsilon,
                                    worst.exact and not substituted, theorem, budget, notes)
    notes += budget.compose.summary()
    return Report(
        epsilon=eps, delta=d, theorem=theorem, exact=worst.exact and not substituted, witness=worst.pair,
        differing=differing, differing_count=count,
        curve=worst.curve, baselines=baselines,
        solver="enumeration", witness_epsilon=eps if epsilon is None else None, notes=tuple(notes),
        title=scenario.title, bracket=bracket, witness_names=_witness_names(scenario, worst.pair),
        lower_curve=lower_curve,
    )


#: Guarantees sorted strongest to weakest if each implies the next, else None (the order is the kinds table's).
_dominance_chain = kinds.dominance_chain


def _chain_bound(chain, problem, budget, weakest) -> Counter | None:
    """A multiset dominating every pair's differing invocations, from prefix counts.

    With the guarantees ordered g_1 <= ... <= g_K (each implied by the next),
    let C_j be the largest number of invocations with guarantee >= g_j that an
    allowed pair can make differ (certified upper bounds). Every differing
    multiset has at most C_j such invocations for every j, so matching its
    members in decreasing order against C_K copies of g_K, C_{K-1} - C_K of
    g_{K-1}, ... replaces each by a weaker-or-equal guarantee: composition of
    the latter is a valid bound (monotonicity of composition). ``problem(g)`` is the
    weight problem of guarantee g's invocations; ``weakest`` is the already solved
    problem of the weakest guarantee g_K alone (C_K). None when the time limit passes
    before its searches end.
    """
    counts: Counter[Guarantee] = Counter()
    above = 0
    weights = None  # per database, the invocations with a guarantee in chain[j:], summed from the weakest
    for j in range(len(chain) - 1, -1, -1):
        if j < len(chain) - 1 and budget.deadline.expired():
            return None  # cut by the cap (the caller says so)
        own = problem(chain[j])
        weights = own.weights if weights is None else weights + own.weights  # integer counts: exact in any order
        result = weakest if j == len(chain) - 1 else worst_pair(replace(own, weights=weights), None)
        c_j = int(round(result.upper_bound))
        counts[chain[j]] = max(c_j - above, 0)
        above = max(above, c_j)
    return +counts


#: The classic baseline's theorem when its infinite epsilon is decided from the counts and no exact theorem
#: accepts the list (:func:`_classic_beyond_floor`).
FLOOR_THEOREM = "per-invocation deltas (infinite-loss mass)"
#: Relative margin below the infinite-loss mass within which the classic baseline is composed after all
#: (the theorems' own floors carry round-off: :data:`gce.accounting.curves.FLOOR_RTOL`).
FLOOR_MARGIN = 1e-9


def _infinite_loss_mass(ms) -> float:
    """1 - prod_i (1 - delta_i)^{n_i} over the canonical (epsilon, delta) guarantees of ``ms``.

    The canonical pair of an (epsilon_i, delta_i) guarantee (002, eqs. 9-10) puts mass delta_i on an output
    that the other hypothesis never gives; composed with the others (each at least a constant mechanism),
    the outputs of infinite privacy loss carry this mass, so every valid curve of the composition has
    delta(epsilon) >= it at every finite epsilon (002, Thm. III.3 at epsilon -> infinity).
    """
    log_survival = 0.0
    for g, count in ms:
        point = kinds.point(g)
        if point is not None and point[1] > 0.0 and kinds.is_canonical(g):
            log_survival += count * math.log1p(-point[1])
    return -math.expm1(log_survival)


def _classic_beyond_floor(ms, delta: float) -> str | None:
    """The theorem to name when composing every invocation is decided infinite from the counts alone, else None.

    When the target ``delta`` lies below the infinite-loss mass (:func:`_infinite_loss_mass`), the exact
    classic epsilon is infinite and so is every valid theorem's: nothing is composed (10^6 invocations took
    30 ms to say so). The name is the exact theorem's that :func:`~gce.accounting.theorems.compose`
    would use (those rows are cheap to ask), else :data:`FLOOR_THEOREM`.
    """
    if not delta < _infinite_loss_mass(ms) * (1.0 - FLOOR_MARGIN):
        return None
    # The rows that build privacy-loss distributions are never exact, and their ``accepts`` can take seconds.
    return next((t.name for t in THEOREMS if t.name not in COSTLY_ROWS and t.accepts(ms) and t.is_exact(ms)),
                FLOOR_THEOREM)


def _parallel_applies(scenario: Scenario) -> bool:
    """Whether the ``parallel`` baseline applies: pure guarantees only."""
    points = [kinds.point(g) for g in scenario.table.kinds]
    return all(p is not None and p[1] == 0.0 for p in points)


def _baselines(scenario: Scenario, delta: float | None, epsilon: float | None,
               budget: _Budget, solved: list = ()) -> dict[str, Baseline]:
    """``classic``: every invocation composed (the classic experiment, 001 Alg. 1).
    ``parallel``: McSherry's parallel composition after merging databases, for pure
    guarantees only: max |b0 XOR b1| times the largest per-database epsilon. Its
    search is an auxiliary one of the solve's budget, skipped when a search in
    ``solved`` had the same weights up to a factor (the same invocations on every
    database)."""
    out: dict[str, Baseline] = {}
    everything = scenario.table.multiset()
    decided = _classic_beyond_floor(everything, delta) if epsilon is None else None
    estimate = COMPOSE_SECONDS_PER_GUARANTEE * len(everything)
    if decided is not None:
        out["classic"] = Baseline("classic", math.inf, delta, decided)
    elif estimate > ALWAYS_RUN_SECONDS and not budget.deadline.fits(estimate):
        budget.deadline.stop(f"classic baseline: composing every invocation ({len(everything):,} distinct "
                             f"guarantees, about {estimate:.2g} s; {max(budget.left(), 0.0):.2g} s left)")
        classic = _renyi_of_everything(scenario)
        if classic is not None:
            eps, d = _curve_at(classic, delta, epsilon)
            out["classic"] = Baseline("classic", eps, d, RENYI_THEOREM)
    else:
        eps, d, name = _at(budget.compose(everything, auxiliary=True), delta, epsilon)
        out["classic"] = Baseline("classic", eps, d, name)
    if _parallel_applies(scenario):
        points = [kinds.point(g) for g in scenario.table.kinds]
        per_db = scenario.table.weights(scenario.n, np.array([p[0] for p in points]))
        size = _largest_difference(scenario, budget, solved)
        eps_par = size * float(per_db.max()) if size > 0 else 0.0  # (0 x an infinite weight: no difference)
        d_par = 0.0 if epsilon is None or epsilon >= eps_par else 1.0
        out["parallel"] = Baseline("parallel", eps_par if epsilon is None else epsilon, d_par,
                                   "parallel composition (McSherry 2009)")
    return out


#: Seconds composing a multiset takes per distinct guarantee, an estimate from its size (measured once for
#: (epsilon, delta) guarantees on dp-accounting's auxiliary grid: 0.4 ms at 2,000, 0.95 ms at 20,000).
COMPOSE_SECONDS_PER_GUARANTEE = 1e-3
#: A step estimated below this many seconds always runs (less than the fixed overrun allowance).
ALWAYS_RUN_SECONDS = 0.1


def _renyi_of_everything(scenario: Scenario) -> PrivacyCurve | None:
    """The Renyi curve (:func:`~gce.solvers.mixed.renyi_curve`) of every invocation composed, a valid
    bound on the classic composition (Renyi divergences add up, Mironov 2017 Prop. 1); None when a
    guarantee has no Renyi terms."""
    terms = renyi_term_table(scenario.table.kinds)
    if terms is None:
        return None
    totals = scenario.table.kind_totals()
    with np.errstate(over="ignore", invalid="ignore"):  # a sum beyond the double range: +inf, delta 1 at that order
        return renyi_curve(totals @ terms[0], float(totals @ terms[1]))


def _uniform_weights(problem: WeightProblem) -> bool:
    """Whether every database has the same positive weight (the problem is max |b0 XOR b1|, scaled)."""
    return bool(problem.weights.min() > 0 and problem.weights.max() == problem.weights.min())


def _largest_difference(scenario: Scenario, budget: _Budget, solved: list) -> float:
    """A certified upper bound on max |b0 XOR b1| over the allowed pairs (for the ``parallel`` baseline)."""
    for problem, result in solved:
        if _uniform_weights(problem):
            return result.upper_bound / float(problem.weights[0])
    problem = WeightProblem(scenario.constraints, np.ones(scenario.n), scenario.neighborhood)
    return worst_pair(problem, None).upper_bound


def check_support(name: str, hypothesis, constraints) -> None:
    """Raise, naming ``hypotheses.<name>``, when a prior whose support is generated (uniform, rates) has no
    allowed set or a forbidden one (:func:`~gce.hypotheses.check_distribution`). Listed supports
    (point, explicit) were checked when the scenario was built; a support too large to list passes."""

    if not hypothesis.listed:
        check_distribution(name, hypothesis, constraints)


def _solve_composite(scenario: Scenario, delta: float | None, epsilon: float | None, budget: _Budget) -> Report:
    """The HDP guarantee for composite hypotheses: the tightest answer of the routes (:data:`gce.priors.routes.ROUTES`).

    Each route answers or declines (the report's notes say why); once one
    answers exactly, the routes that are not exact are skipped and the exact
    answers alone compete. The worst pair of point masses over the supports
    (001 Thm. 1 and joint convexity) is always searched: it is a route and
    the report's ``worst pair`` baseline.

    The paper's averaging formula (001 Sec. V-B) is never used (docs/design.md, "Unsound formulas").
    """

    h0, h1 = scenario.hypotheses
    for name, h in zip(("h0", "h1"), (h0, h1)):
        check_support(name, h, scenario.constraints)
    notes = [*scenario.notes, f"hypotheses: h0 = {h0.describe()}; h1 = {h1.describe()}"]

    def worst_pair() -> WorstPair:
        restricted, preset, cover = _support_pairs(scenario)
        return WorstPair(_solve_pairs(restricted, delta, epsilon, budget), preset, cover)

    context = RouteContext(scenario, worst_pair, (delta, epsilon), budget.left, rtol=budget.rtol)
    answers = []
    for route in routes.ROUTES:  # read at call time: a row added to the table is tried
        if not route.exact and any(answer.exact for answer in answers):
            continue  # an exact answer is the tightest
        outcome = attempt(route, context)
        if isinstance(outcome, Decline):
            if not outcome.quiet:
                notes.append(f"{route.declined}: {outcome.reason}")
        else:
            answers.append(outcome)

    candidates = [a for a in answers if a.exact] or answers
    index = 0 if epsilon is None else 1
    values = [_curve_at(a.curve, delta, epsilon) for a in candidates]
    best = min(range(len(candidates)), key=lambda i: values[i][index])
    winner = candidates[best]
    eps, d = values[best]
    for other, value in zip(candidates, values):
        if other.name != winner.name:
            notes.append(f"{other.name}: epsilon {value[0]:.6g} at delta {value[1]:.3g}")
    if math.isinf(eps):
        notes.append(_no_finite_epsilon(winner.curve.delta_floor, delta))
    bracket = _route_bracket(winner, eps if epsilon is None else d, delta, epsilon, notes)
    pairs = context.worst_pair()
    baselines = _baselines(scenario, delta, epsilon, budget)
    where = "" if pairs.cover is None else f" in the supports ({pairs.cover})"
    baselines["worst pair"] = Baseline("worst pair", pairs.report.epsilon, pairs.report.delta,
                                       f"point masses{where}, {pairs.preset} ({pairs.report.theorem})")
    cor7 = _corollary7(scenario)
    if cor7 is not None:
        baselines["001 Cor. 7"] = Baseline("001 Cor. 7", cor7.epsilon, cor7.delta, cor7.label)
    return Report(epsilon=eps, delta=d, theorem=winner.name, exact=winner.exact, witness=None, differing=(),
                  curve=winner.curve, baselines=baselines, solver="composite", notes=tuple(notes),
                  title=scenario.title, bracket=bracket, lower_curve=None if winner.exact else winner.lower)


def _route_bracket(winner, upper: float, delta: float | None, epsilon: float | None,
                   notes: list[str]) -> tuple[float, float] | None:
    """(lower, upper) of the reported value when the winning route gave a certified lower curve, and the
    route's own note; None otherwise."""
    if winner.note:
        notes.append(f"{winner.name}: {winner.note}")
    if winner.exact or winner.lower is None or not math.isfinite(upper):
        return None
    low = float(winner.lower.epsilon(delta)) if epsilon is None else float(winner.lower.delta(epsilon))
    low = min(max(low, 0.0), upper)
    what = "epsilon" if epsilon is None else f"delta at epsilon {epsilon:g}"
    notes.append(f"{winner.name}: {what} in [{low:.6g}, {upper:.6g}], "
                 f"bracket {describe_width(relative_width(low, upper))} wide")
    return low, upper


def _support_pairs(scenario: Scenario) -> tuple[Scenario, str, str | None]:
    """The scenario of point-mass pairs that covers every pair of the two supports.

    Unbounded pairs (empty, b1) when one hypothesis is the point mass at the
    empty set, b1 in a cover of the other's support; else bounded pairs of
    sets in a cover of both supports (:class:`~gce.hypotheses.SupportCover`):
    the scenario's constraints intersected with size bounds (uniform
    ``max_members``), zero rates, and the listed sets (point, explicit). A
    cover that restricts nothing, or nothing non-empty, leaves the scenario's
    own constraints (valid, looser). Returns the scenario, the neighbourhood
    and what the cover restricts (None when nothing).
    """
    h0, h1 = scenario.hypotheses
    n = scenario.n
    empty = Point(())
    preset = "unbounded" if empty in (h0, h1) else "bounded"
    cover = (h1 if h0 == empty else h0).support_cover() if preset == "unbounded" else \
        h0.support_cover().union(h1.support_cover())
    extra = cover.constraints(n, None if preset == "unbounded" else PATTERN_PAIRS_MAX)
    plain = replace(scenario, hypotheses=None, neighborhood=preset, notes=())
    if not extra:
        return plain, preset, None
    try:
        constraints = ConstraintSet(n, scenario.constraints.constraints + extra)
        return replace(plain, constraints=constraints), preset, "; ".join(c.describe() for c in extra)
    except InfeasibleConstraintsError:  # the supports hold no non-empty set: the plain pairs are a valid bound
        return plain, preset, None


def _curve_at(curve: PrivacyCurve, delta: float | None, epsilon: float | None) -> tuple[float, float]:
    if epsilon is not None:
        return epsilon, float(curve.delta(epsilon))
    return float(curve.epsilon(delta)), delta


def _corollary7(scenario: Scenario):
    """001 Cor. 7 as printed, for comparison, where it applies: none vs at least one, one identical
    (eps', delta') invocation per database. A labelled reproduction, never the returned guarantee."""
    table = scenario.table
    if not none_vs_any(scenario) or len(table.kinds) != 1 or len(table) != scenario.n:
        return None
    if any(group.repeat != 1 for group in table.groups):
        return None
    point = kinds.point(table.kinds[0])
    return None if point is None else corollary7(scenario.n, *point)
