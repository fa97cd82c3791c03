"""000, Example VI.25: Gaussian DP over disjoint parts.

Two parts change under bounded DP, and mu-GDP composes as sqrt(sum mu_i^2):
sqrt(2) mu, not the 2 mu of adding the two parts' mus.

Run: python examples/gaussian_parts.py
"""

import math
from pathlib import Path

from gce import load_scenario, solve
from gce.accounting.curves import GaussianCurve

report = solve(load_scenario(Path(__file__).with_name("gaussian_parts.toml")))
print(report)
for label, mu in (("sqrt(2) mu", math.sqrt(2) * 0.5), ("2 mu", 2 * 0.5)):
    print(f"{label:>10}: epsilon {float(GaussianCurve(mu).epsilon(report.delta)):.6g} at delta {report.delta:g}")
