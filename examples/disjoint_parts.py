"""000, Corollary IV.13: bounded DP over disjoint parts.

Replacing one record can change two parts (it leaves one district and joins
another), so the guarantee is max_{i != j} (eps_i + eps_j) = 1.0 + 0.7 = 1.7,
not the sum 2.2 of sequential composition, nor 2 max_i eps_i = 2.0.

Run: python examples/disjoint_parts.py
"""

from pathlib import Path

from gce import load_scenario, solve

report = solve(load_scenario(Path(__file__).with_name("disjoint_parts.toml")))
print(report)
