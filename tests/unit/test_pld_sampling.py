"""Sampling without replacement under replace-one (accountants/pld/sampled.py): the tight accountant composes the
least dominating pair S; the worst-case pair of datasets (one record x among copies of x′, its gradient the opposite
of theirs) releases exactly the remove pair R, so Rᵀ is a realisable lower bound — by Monte Carlo and by the PLD's
own certified lower bound — and S's composition is checked against dp_accounting composing S's law built from its
own remove-direction PLD."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld

from accountants.errors import UnsupportedAccountantError
from accountants.events import GaussianEvent, PoissonSampledEvent, SampledWithoutReplacementEvent, SelfComposedEvent
from accountants.pipeline import Composition, privacy
from accountants.pld import PldAccountant

N = 10_000
CONFIGS = [(0.01, 1.0, 50, 1e-3), (0.05, 0.8, 20, 1e-2), (0.1, 2.0, 30, 1e-3), (0.002, 0.6, 10, 1e-2)]
"""(γ = m/n, z = std over the replace-one sensitivity 2C, steps, δ)."""


def _event(gamma: float, z: float, steps: int) -> SelfComposedEvent:
    return SelfComposedEvent(SampledWithoutReplacementEvent(N, round(gamma * N), GaussianEvent(z)), steps)


def monte_carlo_lower_epsilon(gamma: float, z: float, steps: int, delta: float, samples: int, seed: int) -> float:
    """A lower bound on ε(δ) at confidence 1 − 1e-6 from the worst-case datasets: every step releases
    R = ((1 − γ)N(0, 1) + γN(μ, 1), N(0, 1)) with μ = 1/z (in units of the noise), so the T-step loss is a sum of
    L(x) = log(1 − γ + γe^{μx − μ²/2}) over x ~ P. δ(ε) = E[(1 − e^{ε − S})₊] ∈ [0, 1] is estimated and lowered by the
    empirical Bernstein margin (Maurer & Pontil 2009); ε is the largest value on a grid where that exceeds δ."""
    rng = np.random.default_rng(seed)
    mu = 1.0 / z
    total = np.zeros(samples)
    for _ in range(steps):
        x = rng.normal(np.where(rng.random(samples) < gamma, mu, 0.0), 1.0)
        total += np.logaddexp(math.log1p(-gamma), math.log(gamma) + mu * x - 0.5 * mu * mu)
    confidence = math.log(2.0 / 1e-6)
    best = 0.0
    for epsilon in np.linspace(0.0, float(np.max(total)), 600):
        values = -np.expm1(np.minimum(epsilon - total, 0.0))
        mean, variance = float(np.mean(values)), float(np.var(values, ddof=1))
        margin = math.sqrt(2.0 * variance * confidence / samples) + 7.0 * confidence / (3.0 * (samples - 1))
        if mean - margin > delta:
            best = float(epsilon)
    return best


def symmetrized_reference(gamma: float, z: float, steps: int, delta: float) -> float:
    """S's composition by dp_accounting: its pessimistic remove-direction PLD of the subsampled Gaussian (R) at vdi
    1e-5, mirrored as S's law (ℓ > 0 as R's, mass e^{−ℓ}·p_R(ℓ) at −ℓ, the rest at 0), composed by its FFT."""
    remove = pld.from_gaussian_mechanism(z, sampling_prob=gamma, value_discretization_interval=1e-5)._pmf_remove
    probs, lower, vdi = np.asarray(remove._probs), int(remove._lower_loss), float(remove._discretization)
    losses = (lower + np.arange(probs.size)) * vdi
    positive = losses > 0
    top = int(np.max(lower + np.flatnonzero(positive))) if positive.any() else 0
    law = np.zeros(2 * top + 1)
    index = lower + np.flatnonzero(positive)
    law[top + index] = probs[positive]
    law[top - index] = probs[positive] * np.exp(-losses[positive])
    law[top] = max(1.0 - float(np.sum(law)), 0.0)
    pmf = pld_pmf.DensePLDPmf(vdi, -top, law, remove._infinity_mass, pessimistic_estimate=True)
    return float(pld.PrivacyLossDistribution(pmf).self_compose(steps).get_epsilon_for_delta(delta))


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS)
def test_tight_is_above_the_worst_case_datasets_and_is_the_symmetrized_pair(config):
    gamma, z, steps, delta = config
    answer = PldAccountant("replace-one").epsilon(_event(gamma, z, steps), delta, lower=True)
    # the realisable lower bound, two ways: Monte Carlo, and the PLD's certified lower bound on Rᵀ
    assert monte_carlo_lower_epsilon(gamma, z, steps, delta, 400_000, seed=steps) <= answer.value
    remove = PldAccountant("add-remove").directions(SelfComposedEvent(PoissonSampledEvent(gamma, GaussianEvent(z)), 1))
    assert not remove[0].leaves[0][1].symmetric  # (the remove direction of Poisson sampling: R itself)
    from accountants.pld.accountant import _Passes

    run = _Passes(type(remove[0])([(steps, remove[0].leaves[0][1])]), PldAccountant().accuracy, delta=delta)
    run.run()
    realisable = run.lower_epsilon()
    assert realisable is not None and realisable <= answer.value
    # and S's composition, as dp_accounting composes it
    assert answer.value == pytest.approx(symmetrized_reference(gamma, z, steps, delta), rel=1e-3)
    assert answer.lower is not None and answer.lower <= answer.value


def test_under_add_remove_the_refusal_names_the_relation_for_each_accountant():
    node = {"type": "sampled-without-replacement", "dataset_size": 100, "sample_size": 10,
            "mechanism": {"type": "gaussian", "noise_multiplier": 1.0}}  # fmt: skip
    for accountant in ("tight", "best"):
        with pytest.raises(UnsupportedAccountantError) as raised:
            privacy(Composition(node, 1e-5, accountant, neighbouring="add-remove"))
        message = str(raised.value)
        assert "replace-one" in message
        if accountant == "tight":
            assert "RDP accountant" not in message
