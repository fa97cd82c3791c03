"""Random mixed-guarantee scenarios of the shape real deployments have (a generator for the benchmarks).

Each database runs one or two invocations (repeat 1 to 5), drawn from a pool of distinct guarantees of five
kinds: pure (epsilon 0.02-0.25), approximate (epsilon 0.02-0.25, delta 1e-12 to 1e-9), Gaussian (sigma 3-20),
Laplace (scale 5-60), and Poisson-subsampled Gaussian (sigma 0.8-2) or Laplace (scale 1-5) at rate 0.01-0.1.
Constraints: ``at_most`` m of all databases, and, in some scenarios, exclusive groups (2 to 5 databases each,
covering about a third of them). Unbounded neighbourhood; target delta 1e-6 or 1e-5.

``scenario(seed, databases, pool, m, exclusive)`` builds one; ``SHAPES`` lists the (databases, pool, m)
shapes of the benchmarks, ``scenarios(count, seed)`` a deterministic list of scenarios of those shapes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from gce import (ApproxDP, GaussianMechanism, Invocation, LaplaceMechanism, PureDP, Scenario, Subsampled)
from gce.constraints import AtMost, ConstraintSet, Exclusive

#: (databases, distinct guarantees in the pool, m of at_most m).
SHAPES = [(n, pool, m) for n in (40, 200, 1000) for pool in (5, 20, 60) for m in (3, 8, 25)]


def guarantee_pool(rng: np.random.Generator, size: int) -> list:
    """``size`` distinct guarantees, the five kinds in turn (a random kind order per pool)."""
    makers = [
        lambda: PureDP(float(rng.uniform(0.02, 0.25))),
        lambda: ApproxDP(float(rng.uniform(0.02, 0.25)), float(10.0 ** rng.uniform(-12, -9))),
        lambda: GaussianMechanism(float(rng.uniform(3.0, 20.0))),
        lambda: LaplaceMechanism(float(rng.uniform(5.0, 60.0))),
        lambda: Subsampled(float(rng.uniform(0.01, 0.1)),
                           GaussianMechanism(float(rng.uniform(0.8, 2.0))) if rng.random() < 0.5
                           else LaplaceMechanism(float(rng.uniform(1.0, 5.0)))),
    ]
    order = rng.permutation(len(makers))
    pool = []
    for i in itertools.count():
        if len(pool) == size:
            return pool
        g = makers[order[i % len(makers)]]()
        if g not in pool:
            pool.append(g)


@dataclass(frozen=True)
class Shape:
    seed: int
    databases: int
    pool: int
    m: int
    exclusive: bool
    delta: float

    def __str__(self) -> str:
        return (f"seed {self.seed}: {self.databases} databases, {self.pool} guarantees, at_most {self.m}"
                f"{' + exclusive groups' if self.exclusive else ''}, delta {self.delta:g}")


def scenario(shape: Shape) -> Scenario:
    """The scenario of ``shape`` (deterministic in its seed)."""
    rng = np.random.default_rng(shape.seed)
    pool = guarantee_pool(rng, shape.pool)
    invocations = []
    for database in range(shape.databases):
        for g in rng.choice(len(pool), size=int(rng.integers(1, 3)), replace=False):
            invocations.append(Invocation(database, pool[int(g)], int(rng.integers(1, 6))))
    constraints = [AtMost(shape.m)]
    if shape.exclusive:
        order = rng.permutation(shape.databases)
        start = 0
        while start < shape.databases // 3:
            size = int(rng.integers(2, 6))
            constraints.append(Exclusive(tuple(sorted(int(i) for i in order[start:start + size]))))
            start += size
    return Scenario(databases=shape.databases, invocations=invocations,
                    constraints=ConstraintSet(shape.databases, constraints), delta=shape.delta,
                    title=str(shape))


def shapes(count: int, seed: int = 0) -> list[Shape]:
    """``count`` shapes cycling through :data:`SHAPES`, exclusive groups and delta drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n, pool, m = SHAPES[i % len(SHAPES)]
        out.append(Shape(seed * 100_000 + i, n, pool, m, bool(rng.random() < 0.4), float(rng.choice([1e-6, 1e-5]))))
    return out
