"""A per-database-rate prior next to Poisson subsampling at the same rate.

With every database in b independently at rate q, the output distribution under
h1 is, database by database, the mixture (1 - q) P0 + q P1 of the canonical
pair: exactly what Poisson subsampling at rate q does to each mechanism (001,
Sec. V-B). So the prior's exact curve is the exact composition of the 8
subsampled mechanisms, and composing their amplified guarantees
(ln(1 + q(e^eps - 1)), q delta) is an upper bound on it.

Run: python examples/rates_prior.py
"""

from pathlib import Path

from gce import ApproxDP, Subsampled, compose, load_scenario, solve

scenario = load_scenario(Path(__file__).with_name("rates_prior.toml"))
report = solve(scenario)
amplified = compose({Subsampled(0.1, ApproxDP(1.0, 1e-8)): 8})
_, delta_subsampled, theorem = amplified.at_epsilon(scenario.epsilon)
print(report)
print(f"Poisson subsampling at 0.1, amplified guarantees composed ({theorem}): delta {delta_subsampled:.4g} "
      f"at epsilon {scenario.epsilon:g}")
