"""One epoch of DP-SGD: balls-and-bins batches against Poisson subsampling at the same expected batch size.

``t`` steps, each a Gaussian of sigma 1 on the batch's clipped gradient sum (sensitivity 1). With
balls-and-bins batches (random allocation) each record is in exactly one of the ``t`` batches, uniformly:
``h0 = point([])`` against ``h1 = uniform(min_members = 1, max_members = 1)``
(``dp_sgd_allocation.toml``; Feldman and Shenfeld, arXiv 2502.08202; Chua et al., AISTATS 2025). With
Poisson subsampling each record is in each batch independently at rate ``1/t`` (the same expected batch
size): ``h0 = point([])`` against the rates prior ``rates(1/t on each step)``, which without constraints is
the composition of the ``t`` subsampled Gaussians (001 Sec. V-B). gce answers both with a certified bracket
(the random-allocation route: :func:`gce.priors.allocation.allocation_curve` and
:func:`~gce.priors.allocation.poisson_curve`), and the plot draws both curves (``gce.plot``).

Run: python examples/dp_sgd_allocation.py [plot.png]
"""

from __future__ import annotations

import sys
from pathlib import Path

from gce import GaussianMechanism, Invocation, Point, Scenario, Uniform, load_scenario, solve
from gce.plot import plot_curves, plot_file
from gce.priors.hypotheses import Rates

SCENARIO = Path(__file__).with_name("dp_sgd_allocation.toml")


def scenarios(steps: int | None = None, sigma: float = 1.0) -> tuple[Scenario, Scenario]:
    """(balls and bins, Poisson subsampling at rate 1/steps): the TOML file's scenario unless ``steps`` is
    given."""
    if steps is None:
        allocation = load_scenario(SCENARIO)
        steps = allocation.n
    else:
        allocation = Scenario(steps, tuple(Invocation(i, GaussianMechanism(sigma)) for i in range(steps)),
                              hypotheses=(Point(()), Uniform(1, 1)), delta=1e-6,
                              title=f"DP-SGD, one epoch of {steps} balls-and-bins steps")
    poisson = Scenario(steps, allocation.invocations, hypotheses=(Point(()), Rates((1.0 / steps,) * steps)),
                       delta=allocation.delta, title=f"DP-SGD, one epoch of {steps} Poisson-subsampled steps")
    return allocation, poisson


def main(steps: int | None = None, plot: str | None = None) -> dict:
    """Solve both scenarios, print their brackets, draw the plot to ``plot``; the reports by label."""
    allocation, poisson = scenarios(steps)
    target = None if plot is None else plot_file(plot)  # checked before anything is computed
    reports = {"balls and bins (random allocation)": solve(allocation),
               f"Poisson subsampling at rate 1/{allocation.n}": solve(poisson)}
    print(f"One epoch of {allocation.n} DP-SGD steps, each record in one batch on average; "
          f"epsilon at delta {allocation.delta:g}:")
    for label, report in reports.items():
        low, high = report.bracket
        print(f"  {label:<40} epsilon {high:.4f}, bracket [{low:.4f}, {high:.4f}] ({report.theorem})")
    worst = next(iter(reports.values())).baselines["worst pair"].epsilon
    print(f"  {'every step composed (worst pair)':<40} epsilon {worst:.4f}")
    if target is not None:
        first, second = reports.values()
        ax = plot_curves(first, classic=second.curve)
        labels = list(reports)
        ax.lines[0].set_label(labels[0])
        ax.lines[1].set_label(labels[1])
        ax.set_title(f"DP-SGD, one epoch of {allocation.n} steps, sigma 1")
        ax.legend()
        ax.figure.savefig(target, dpi=150)
        print(f"plot: {target}")
    return reports


if __name__ == "__main__":
    main(plot=sys.argv[1] if len(sys.argv) > 1 else "dp_sgd_allocation.png")
