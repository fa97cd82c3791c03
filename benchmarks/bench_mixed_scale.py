"""Benchmark: ``gce.solve`` on mixed guarantees at scale, with lower bounds computed by dp-accounting alone.

Scenarios come from :mod:`mixed_scenarios` (``shapes(count, seed)``: 40, 200 and 1,000 databases; pools
of 5, 20 and 60 distinct guarantees of five kinds; ``at_most`` 3, 8 or 25, exclusive groups in some;
unbounded). Each is solved once with the default time limit and accuracy. Per scenario: the certified
bracket's width ``upper / lower - 1`` (0 when exact; infinite, a failure, when an inexact answer has no
bracket), the seconds, the theorem and whether the time limit was reached.

Independent lower bounds (never gce's composition): the exact worst case is a maximum over allowed pairs
(001 Thm. 1), so the epsilon of any one allowed pair is a lower bound on it. For a few allowed pairs, the
differing databases' invocations are composed by dp-accounting with *optimistic* rounding (losses rounded
down, tails dropped: ``pessimistic_estimate=False``; (epsilon, delta) guarantees as their canonical pair
(002 eqs. 9-10) with the losses rounded down), at value discretization ``1e-4``, and epsilon is read at the
target delta (both directions: the unbounded pairs (empty set, b) and (b, empty set)). The pairs: gce's
witness; a greedy set (databases by their own epsilon at the target, largest first, each taken while the
set stays allowed); ``--random`` random maximal allowed sets. Soundness: gce's epsilon is at least every
such bound (relative margin 1e-9); any violation is printed loudly and the script exits with status 1.
Beside: gce's epsilon over dp-accounting's own (pessimistic) answer for the witness set alone.

``--before`` also runs gce as it was before the envelope bound (commit ``1f7d5d6``, checked out once into
``/tmp/gce-before``) on the same scenarios, in a subprocess, for the same widths and times.

Run: python benchmarks/bench_mixed_scale.py [--quick] [--count N] [--seed S] [--random K] [--before]
(default: 2 scenarios per shape, 54, seed 1; --quick: one per shape of 40 and 200 databases).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from dp_accounting.pld import common as dpa_common
from dp_accounting.pld import privacy_loss_distribution as dpa_pld
from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

import mixed_scenarios

#: dp-accounting's own hockey-stick divergence of the Gaussian (gce may swap in a vectorised copy inside
#: its builders; the independent bounds check that they run with the original).
_DPA_GAUSSIAN_DELTA = GaussianPrivacyLoss.get_delta_for_epsilon

#: Value discretization of the independent compositions.
INTERVAL = 1e-4
#: Value discretization of the greedy set's order (each database's own epsilon; the set's bound is then
#: composed at :data:`INTERVAL`).
RANK_INTERVAL = 1e-3
#: Relative margin of the soundness comparison (floating point only).
MARGIN = 1e-9
#: The state of gce before the envelope bound (the comparison of ``--before``).
BEFORE_COMMIT = "1f7d5d6"
BEFORE_TREE = "/tmp/gce-before"
MAIN_REPO = "/work/main"


# ---------------------------------------------------------------------------
# Independent compositions (dp-accounting only)


def _point_pld(epsilon: float, delta: float, pessimistic: bool, interval: float) -> Any:
    """The canonical pair of (epsilon, delta) (002 eqs. 9-10): loss epsilon, -epsilon and +inf (mass delta),
    the losses rounded up (pessimistic, what ``from_privacy_parameters`` does) or down (optimistic)."""
    if pessimistic:
        return dpa_pld.from_privacy_parameters(dpa_common.DifferentialPrivacyParameters(epsilon, delta),
                                               value_discretization_interval=interval)
    masses: dict[int, float] = {}
    up = math.floor(epsilon / interval)
    down = math.floor(-epsilon / interval)
    masses[up] = masses.get(up, 0.0) + (1.0 - delta) / (1.0 + math.exp(-epsilon))
    masses[down] = masses.get(down, 0.0) + (1.0 - delta) / (1.0 + math.exp(epsilon))
    return dpa_pld.PrivacyLossDistribution.create_from_rounded_probability(
        masses, delta, interval, pessimistic_estimate=False)


def _noise_pld(mechanism: Any, rate: float, pessimistic: bool, interval: float) -> Any:
    from gce import GaussianMechanism, LaplaceMechanism

    if isinstance(mechanism, GaussianMechanism):
        return dpa_pld.from_gaussian_mechanism(
            mechanism.sigma, sensitivity=mechanism.sensitivity, pessimistic_estimate=pessimistic,
            value_discretization_interval=interval, sampling_prob=rate, use_connect_dots=pessimistic)
    if isinstance(mechanism, LaplaceMechanism):
        return dpa_pld.from_laplace_mechanism(
            mechanism.scale, sensitivity=mechanism.sensitivity, pessimistic_estimate=pessimistic,
            value_discretization_interval=interval, sampling_prob=rate, use_connect_dots=pessimistic)
    raise NotImplementedError(f"no independent distribution for {mechanism!r}")


def guarantee_pld(guarantee: Any, pessimistic: bool, interval: float = INTERVAL) -> Any:
    """dp-accounting's distribution of one run of ``guarantee`` (the kinds of :mod:`mixed_scenarios`)."""
    from gce import ApproxDP, GaussianMechanism, LaplaceMechanism, PureDP, Subsampled

    if isinstance(guarantee, PureDP):
        return _point_pld(guarantee.epsilon, 0.0, pessimistic, interval)
    if isinstance(guarantee, ApproxDP):
        return _point_pld(guarantee.epsilon, guarantee.delta, pessimistic, interval)
    if isinstance(guarantee, (GaussianMechanism, LaplaceMechanism)):
        return _noise_pld(guarantee, 1.0, pessimistic, interval)
    if isinstance(guarantee, Subsampled) and isinstance(guarantee.mechanism, (GaussianMechanism, LaplaceMechanism)):
        return _noise_pld(guarantee.mechanism, guarantee.rate, pessimistic, interval)
    raise NotImplementedError(f"no independent distribution for {guarantee!r}")


class Composer:
    """dp-accounting compositions of one scenario's databases at value discretization ``interval``, cached
    per database bundle (its invocations' guarantees and repeats) and rounding."""

    def __init__(self, scenario: Any, interval: float = INTERVAL) -> None:
        self.scenario = scenario
        self.interval = interval
        self._base: dict[tuple[Any, bool], Any] = {}
        self._runs: dict[tuple[Any, int, bool], Any] = {}
        self._bundles: dict[tuple[tuple[tuple[Any, int], ...], bool], Any] = {}
        by_database: dict[int, list[tuple[Any, int]]] = {}
        for inv in scenario.invocations:
            by_database.setdefault(inv.database, []).append((inv.guarantee, inv.repeat))
        self._bundle_of = {d: tuple(sorted(b, key=repr)) for d, b in by_database.items()}

    def _run(self, guarantee: Any, repeat: int, pessimistic: bool) -> Any:
        key = (guarantee, repeat, pessimistic)
        if key not in self._runs:
            if (guarantee, pessimistic) not in self._base:
                self._base[guarantee, pessimistic] = guarantee_pld(guarantee, pessimistic, self.interval)
            one = self._base[guarantee, pessimistic]
            self._runs[key] = one if repeat == 1 else one.self_compose(repeat)
        return self._runs[key]

    def database(self, d: int, pessimistic: bool = False) -> Any | None:
        """The composition of database ``d``'s invocations (None when it has none)."""
        bundle = self._bundle_of.get(d)
        if bundle is None:
            return None
        key = (bundle, pessimistic)
        if key not in self._bundles:
            total = None
            for g, repeat in bundle:
                one = self._run(g, repeat, pessimistic)
                total = one if total is None else total.compose(one)
            self._bundles[key] = total
        return self._bundles[key]

    def epsilon(self, members: Iterable[int], pessimistic: bool = False) -> float:
        """dp-accounting's epsilon at the scenario's delta of the composition over ``members``' invocations:
        optimistic (a lower bound on that pair's exact epsilon) or pessimistic (dp-accounting's answer)."""
        if GaussianPrivacyLoss.get_delta_for_epsilon is not _DPA_GAUSSIAN_DELTA:
            raise RuntimeError("dp-accounting's Gaussian is patched: the bound would not be independent")
        total = None
        for d in sorted(members):
            one = self.database(d, pessimistic)
            if one is not None:
                total = one if total is None else total.compose(one)
        if total is None:
            return 0.0
        return float(total.get_epsilon_for_delta(self.scenario.delta))


def differing(witness: tuple[frozenset[int], frozenset[int]]) -> frozenset[int]:
    return frozenset(witness[0]) ^ frozenset(witness[1])


def greedy_set(scenario: Any) -> frozenset[int]:
    """Databases by their own optimistic epsilon at the target (discretization :data:`RANK_INTERVAL`: an
    order only), largest first, each taken while the set stays allowed."""
    ranker = Composer(scenario, RANK_INTERVAL)
    by_bundle: dict[Any, float] = {}
    own = {}
    for d in range(scenario.n):
        bundle = ranker._bundle_of.get(d)
        if bundle not in by_bundle:
            by_bundle[bundle] = ranker.epsilon([d])
        own[d] = by_bundle[bundle]
    chosen: set[int] = set()
    for d in sorted(own, key=lambda d: (-own[d], d)):
        if scenario.constraints.satisfied(chosen | {d}):
            chosen.add(d)
    return frozenset(chosen)


def random_maximal_sets(scenario: Any, count: int, seed: int) -> list[frozenset[int]]:
    """``count`` maximal allowed sets: databases in a random order, each taken while the set stays allowed."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        chosen: set[int] = set()
        for d in rng.permutation(scenario.n):
            if scenario.constraints.satisfied(chosen | {int(d)}):
                chosen.add(int(d))
        out.append(frozenset(chosen))
    return out


@dataclass(frozen=True)
class LowerBound:
    name: str
    members: frozenset[int]
    epsilon: float


def lower_bounds(scenario: Any, witness: tuple[frozenset[int], frozenset[int]] | None, randoms: int = 3,
                 seed: int = 0, composer: Composer | None = None) -> list[LowerBound]:
    """Optimistic dp-accounting epsilons of allowed pairs (each a lower bound on the exact worst case):
    the witness's differing databases, the greedy set and ``randoms`` random maximal allowed sets."""
    composer = composer or Composer(scenario)
    sets: list[tuple[str, frozenset[int]]] = []
    if witness is not None:
        sets.append(("witness", differing(witness)))
    sets.append(("greedy", greedy_set(scenario)))
    sets += [(f"random {i}", s) for i, s in enumerate(random_maximal_sets(scenario, randoms, seed))]
    out = []
    for name, members in sets:
        if not scenario.constraints.satisfied(members):
            raise AssertionError(f"{name} set {sorted(members)} is not allowed")
        out.append(LowerBound(name, members, composer.epsilon(members)))
    return out


def width(report: Any) -> float:
    """``upper / lower - 1`` of the certified bracket; 0 when exact; inf when an inexact answer has none."""
    if report.exact:
        return 0.0
    if report.bracket is None:
        return math.inf
    lower, upper = report.bracket
    return math.inf if lower <= 0 else upper / lower - 1.0


# ---------------------------------------------------------------------------
# Runs


@dataclass(frozen=True)
class Outcome:
    shape: Any
    epsilon: float
    width: float
    seconds: float
    theorem: str
    limit: bool
    best_lower: float = math.nan
    best_name: str = ""
    peer: float = math.nan
    violations: tuple[str, ...] = ()


def solve_one(shape: Any) -> tuple[Any, Any, float]:
    import gce

    scenario = mixed_scenarios.scenario(shape)
    start = time.perf_counter()
    report = gce.solve(scenario)
    return scenario, report, time.perf_counter() - start


def after(shape: Any, randoms: int) -> Outcome:
    scenario, report, seconds = solve_one(shape)
    composer = Composer(scenario)
    bounds = lower_bounds(scenario, report.witness, randoms, seed=shape.seed, composer=composer)
    best = max(bounds, key=lambda b: b.epsilon)
    violations = tuple(
        f"{b.name} set {sorted(b.members)}: dp-accounting optimistic {b.epsilon!r} > gce {report.epsilon!r}"
        for b in bounds if report.epsilon < b.epsilon * (1.0 - MARGIN))
    if report.witness is not None and not scenario.constraints.satisfied(differing(report.witness)):
        violations += (f"witness {sorted(differing(report.witness))} is not allowed",)
    if report.bracket is not None and not report.bracket[0] <= report.bracket[1]:
        violations += (f"bracket {report.bracket} is inverted",)
    peer = composer.epsilon(differing(report.witness), pessimistic=True) if report.witness is not None else math.nan
    if report.bracket is not None and report.bracket[0] > peer * (1.0 + MARGIN):
        # The lower end is the witness's optimistic composition: below the witness's exact epsilon, so below
        # dp-accounting's pessimistic epsilon of the same set.
        violations += (f"bracket's lower end {report.bracket[0]!r} > dp-accounting pessimistic {peer!r} "
                       f"on the witness set",)
    return Outcome(shape, report.epsilon, width(report), seconds, report.theorem, report.time_limit_reached,
                   best.epsilon, best.name, peer, violations)


def worker() -> None:
    """``--worker``: solve the shapes read as JSON lines from stdin with the gce on PYTHONPATH; one JSON line
    out per shape."""
    import gce

    print(json.dumps({"gce": gce.__file__}), flush=True)
    for line in sys.stdin:
        shape = mixed_scenarios.Shape(**json.loads(line))
        _, report, seconds = solve_one(shape)
        print(json.dumps({"epsilon": report.epsilon, "width": width(report), "seconds": seconds,
                          "theorem": report.theorem, "limit": bool(report.time_limit_reached)}), flush=True)


def before(shapes: Sequence[Any]) -> list[Outcome]:
    if not os.path.isdir(BEFORE_TREE):
        subprocess.run(["git", "-C", MAIN_REPO, "worktree", "add", "--detach", BEFORE_TREE, BEFORE_COMMIT],
                       check=True)
    env = dict(os.environ, PYTHONPATH=BEFORE_TREE)
    payload = "".join(json.dumps(dataclasses.asdict(s)) + "\n" for s in shapes)
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker"], input=payload, env=env,
                          capture_output=True, text=True, check=True)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    where = lines[0]["gce"]
    if not where.startswith(BEFORE_TREE):
        raise RuntimeError(f"the 'before' run imported {where}")
    return [Outcome(s, r["epsilon"], r["width"], r["seconds"], r["theorem"], r["limit"])
            for s, r in zip(shapes, lines[1:])]


# ---------------------------------------------------------------------------
# Summary


def _pct(x: float) -> str:
    return "inf" if math.isinf(x) else f"{100 * x:.2f}%"


def line(o: Outcome) -> str:
    extra = "" if math.isnan(o.best_lower) else (
        f"  eps/LB {o.epsilon / o.best_lower:.4f} ({o.best_name})  eps/peer {o.epsilon / o.peer:.4f}")
    return (f"{str(o.shape):75s} eps {o.epsilon:9.4f} width {_pct(o.width):>7s} {o.seconds:6.2f} s"
            f"{'  LIMIT' if o.limit else ''}  [{o.theorem}]{extra}")


def distribution(outcomes: Sequence[Outcome]) -> str:
    widths = [o.width for o in outcomes]
    times = [o.seconds for o in outcomes]
    within = lambda t: sum(w <= t for w in widths)  # noqa: E731
    return (f"n {len(outcomes):3d}  within 1% {within(0.01):3d}  within 2% {within(0.02):3d}  "
            f"width median {_pct(statistics.median(widths)):>7s} max {_pct(max(widths)):>7s}  "
            f"time median {statistics.median(times):6.2f} s max {max(times):6.2f} s  "
            f"limit {sum(o.limit for o in outcomes)}")


def summary(label: str, outcomes: Sequence[Outcome]) -> None:
    print(f"\n{label}: widths (upper/lower - 1) and seconds by (databases, pool, m)")
    groups: dict[tuple[int, int, int], list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault((o.shape.databases, o.shape.pool, o.shape.m), []).append(o)
    for key in sorted(groups):
        print(f"  {str(key):16s} {distribution(groups[key])}")
    by_n: dict[int, list[Outcome]] = {}
    for o in outcomes:
        by_n.setdefault(o.shape.databases, []).append(o)
    for n in sorted(by_n):
        print(f"  {n:5d} databases  {distribution(by_n[n])}")
    print(f"  all              {distribution(outcomes)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one scenario per shape of 40 and 200 databases")
    parser.add_argument("--count", type=int, default=None, help="scenarios (default 2 per shape)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--random", type=int, default=3, help="random maximal allowed sets per scenario")
    parser.add_argument("--before", action="store_true", help=f"also run gce at {BEFORE_COMMIT} (subprocess)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker()
        return 0
    per_shape = len(mixed_scenarios.SHAPES)
    if args.quick:
        shapes = [s for s in mixed_scenarios.shapes(per_shape, args.seed) if s.databases <= 200]
    else:
        shapes = mixed_scenarios.shapes(args.count if args.count is not None else 2 * per_shape, args.seed)

    start = time.perf_counter()
    outcomes = []
    for shape in shapes:
        o = after(shape, args.random)
        outcomes.append(o)
        print(line(o), flush=True)
        for v in o.violations:
            print(f"!!! SOUNDNESS VIOLATION ({o.shape}): {v}", flush=True)
    print(f"(after: {time.perf_counter() - start:.0f} s with the independent bounds)")
    olds = []
    if args.before:
        start = time.perf_counter()
        olds = before(shapes)
        for o in olds:
            print("before " + line(o))
        print(f"(before: {time.perf_counter() - start:.0f} s)")

    summary("after (envelope bound)", outcomes)
    if olds:
        summary(f"before ({BEFORE_COMMIT})", olds)
        ratios = [a.epsilon / b.epsilon for a, b in zip(outcomes, olds)]
        print(f"  epsilon after / before: median {statistics.median(ratios):.4f} min {min(ratios):.4f} "
              f"max {max(ratios):.4f}")
    lb = [o.epsilon / o.best_lower for o in outcomes]
    peer = [o.epsilon / o.peer for o in outcomes if not math.isnan(o.peer)]
    print(f"\ngce epsilon / best independent lower bound (dp-accounting optimistic, best of witness, greedy, "
          f"{args.random} random): median {statistics.median(lb):.4f} max {max(lb):.4f}; "
          f"within 1% {sum(r <= 1.01 for r in lb)}, within 2% {sum(r <= 1.02 for r in lb)} of {len(lb)}")
    print("  best bound from: " + ", ".join(
        f"{name} {sum(o.best_name == name for o in outcomes)}"
        for name in sorted({o.best_name for o in outcomes})))
    missing = [o for o in outcomes if math.isinf(o.width)]
    print(f"inexact answers without a bracket: {len(missing)} ({sum(o.limit for o in missing)} with the time "
          f"limit reached; without it: {', '.join(str(o.shape.seed) for o in missing if not o.limit) or 'none'})")
    if peer:
        print(f"gce epsilon / dp-accounting (pessimistic) on the witness set alone: "
              f"median {statistics.median(peer):.4f} min {min(peer):.4f} max {max(peer):.4f}")
    violations = [(o.shape, v) for o in outcomes for v in o.violations]
    if violations:
        print(f"\n!!! {len(violations)} SOUNDNESS VIOLATION(S):")
        for shape, v in violations:
            print(f"!!!   {shape}: {v}")
        return 1
    print("\nsoundness: gce's epsilon >= every independent lower bound (margin 1e-9); witnesses allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
