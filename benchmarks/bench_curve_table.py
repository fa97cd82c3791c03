"""Benchmark: the cost of one row of ``gce curve``'s table against the constant that estimates it.

``gce curve`` estimates its table from the question alone: :data:`gce.cli.SECONDS_PER_DELTA` for each delta
and each of its curves (the GCE curve, its lower curve, the classic one). This script times
``curve.epsilon(deltas)`` on 200 log-spaced deltas for the curves of the examples and of two harder
scenarios, and prints milliseconds a delta against the constant (ratio > 1: the estimate is short, and a
table of many deltas may be stopped past the limit instead of refused up front).

Peer measured in the same run: dp-accounting's ``get_epsilon_for_delta`` on the privacy-loss distribution
of a Gaussian mechanism composed 10 times (its own inversion, per delta).

Run: python benchmarks/bench_curve_table.py
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

import numpy as np
from dp_accounting.pld import privacy_loss_distribution

from gce import load_scenario, solve
from gce.cli import SECONDS_PER_DELTA
from gce.plot import classic_curve

from timing import best_of

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
DELTAS = np.geomspace(1e-10, 1e-2, 200)


def per_delta(curve) -> float:
    """Milliseconds a delta of ``curve.epsilon`` on :data:`DELTAS` (best of 3)."""
    seconds, _ = best_of(lambda: curve.epsilon(DELTAS))
    return 1e3 * seconds / DELTAS.size


def main() -> None:
    from test_cli_contract import BATCH, mixed_text

    pld = privacy_loss_distribution.from_gaussian_mechanism(2.0).self_compose(10)
    peer, _ = best_of(lambda: [pld.get_epsilon_for_delta(float(d)) for d in DELTAS])
    peer_ms = 1e3 * peer / DELTAS.size
    print(f"constant: {SECONDS_PER_DELTA * 1e3:g} ms a delta and curve; peer dp-accounting "
          f"get_epsilon_for_delta: {peer_ms:.3f} ms a delta")
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="bench_curve_table"))
    (scratch / "batch.toml").write_text(BATCH)
    (scratch / "mixed.toml").write_text(mixed_text(3))
    files = sorted((ROOT / "examples").glob("*.toml")) + [scratch / "batch.toml", scratch / "mixed.toml"]
    print(f"{'scenario':22} {'curve':8} {'ms/delta':>9} {'/constant':>10} {'/peer':>7}")
    for path in files:
        scenario = load_scenario(path)
        report = solve(scenario, delta=1e-10)
        curves = {"gce": report.curve, "lower": None if report.lower_curve is report.curve else report.lower_curve,
                  "classic": classic_curve(scenario)}
        for name, curve in curves.items():
            if curve is None:
                continue
            ms = per_delta(curve)
            print(f"{path.stem:22} {name:8} {ms:9.3f} {ms / (SECONDS_PER_DELTA * 1e3):10.2f} {ms / peer_ms:7.2f}")


if __name__ == "__main__":
    main()
