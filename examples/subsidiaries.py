"""001, Sec. V-A, Example 2: subsidiaries, one employer per person.

Unbounded (is the person in any database?): max_i eps_i = 1.0.
Bounded (which subsidiary?): max_{i != j} (eps_i + eps_j) = 1.0 + 0.5 = 1.5.
Classic composition charges the sum, 1.9.

Run: python examples/subsidiaries.py
"""

from dataclasses import replace
from pathlib import Path

from gce import load_scenario, solve

scenario = load_scenario(Path(__file__).with_name("subsidiaries.toml"))
for neighborhood in ("unbounded", "bounded"):
    report = solve(replace(scenario, neighborhood=neighborhood))
    h0, h1 = ([scenario.databases.label(i) for i in sorted(s)] for s in report.witness)
    print(f"{neighborhood:>9}: epsilon {report.epsilon:.4g} (classic {report.baselines['classic'].epsilon:.4g}); "
          f"worst pair {h0} vs {h1}")
