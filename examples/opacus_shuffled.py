"""DP-SGD with Opacus on shuffled batches, accounted as shuffled (random allocation) by gce.

Opacus' own accountants (RDP, PRV) account every step as Poisson-subsampled, also when the data loader
shuffles the data into fixed batches (``poisson_sampling=False``). Here a small model trains on synthetic data
with Opacus' ``PrivacyEngine`` and gce's shuffled accountant (``accountant="gce-shuffled"``:
:class:`gce.bridges.opacus.AllocationAccountant`, each example in exactly one batch per epoch); the script
prints its certified bracket beside gce's Poisson answer and Opacus' RDP and PRV accountants on the same
steps (Feldman and Shenfeld, arXiv 2502.08202; Chua et al., AISTATS 2025).

Needs the extra ``gce[opacus]`` (torch and Opacus). Run: python examples/opacus_shuffled.py [epochs]
"""

from __future__ import annotations

import sys
import warnings


def train(epochs: int = 1, examples: int = 400, batch_size: int = 40, sigma: float = 1.0, delta: float = 1e-6,
          seed: int = 0) -> dict[str, object]:
    """Train a logistic regression on ``examples`` synthetic points, shuffled into batches of
    ``batch_size``, for ``epochs`` epochs with Opacus; returns the accountant and the epsilons at ``delta``."""
    import torch
    from opacus import PrivacyEngine
    from opacus.accountants import PRVAccountant, RDPAccountant

    from gce.bridges.opacus import PoissonAccountant, register

    register()  # "gce-shuffled" and "gce-poisson" in Opacus' registry
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    features = torch.randn(examples, 8, generator=generator)
    labels = (features @ torch.randn(8, generator=generator) > 0).long()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(features, labels), batch_size=batch_size,
                                         shuffle=True, generator=generator)
    model = torch.nn.Linear(8, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    with warnings.catch_warnings():  # Opacus warns about its secure RNG, not needed for a demonstration
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant="gce-shuffled")
        model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer, data_loader=loader,
                                                       noise_multiplier=sigma, max_grad_norm=1.0,
                                                       poisson_sampling=False)
        loss_fn = torch.nn.CrossEntropyLoss()
        for _ in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                loss_fn(model(x), y).backward()
                optimizer.step()
    accountant = engine.accountant
    accuracy = float((model(features).argmax(1) == labels).float().mean())
    rdp, prv, poisson = RDPAccountant(), PRVAccountant(), PoissonAccountant()
    for other in (rdp, prv, poisson):
        other.history = list(accountant.history)  # the same steps, accounted as Poisson-subsampled
    return {"accountant": accountant, "steps": len(accountant), "accuracy": accuracy,
            "shuffled": accountant.get_epsilon_bracket(delta), "poisson": poisson.get_epsilon_bracket(delta),
            "rdp": rdp.get_epsilon(delta), "prv": prv.get_epsilon(delta)}


def main(epochs: int = 1, delta: float = 1e-6) -> None:
    out = train(epochs=epochs, delta=delta)
    (low, high), (p_low, p_high) = out["shuffled"], out["poisson"]
    print(f"{out['steps']} steps of sigma 1 on shuffled batches of 40 of 400 examples "
          f"(training accuracy {out['accuracy']:.2f}); epsilon at delta {delta:g}:")
    print(f"  gce, shuffled (random allocation)  {high:.4f}   bracket [{low:.4f}, {high:.4f}]")
    print(f"  gce, as if Poisson                 {p_high:.4f}   bracket [{p_low:.4f}, {p_high:.4f}]")
    print(f"  Opacus RDP, as if Poisson          {out['rdp']:.4f}")
    print(f"  Opacus PRV, as if Poisson          {out['prv']:.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
