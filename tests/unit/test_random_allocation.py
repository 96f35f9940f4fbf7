"""Random allocation (balls in bins): the certified bracket [ε⁻, ε⁺] of :mod:`accountants.pld.allocation`.

Oracles, none of them dpcal's: dp_accounting's random-allocation test anchor (ε = 2.4265); pld-accounting 2.0's own
upper and lower bounds, recorded (``tests/support/allocation_oracles.py`` regenerates them); a Monte-Carlo lower bound
of the exact k-of-t mechanism (one-sided Hoeffding interval); dp_accounting 0.6.0's pessimistic Poisson PLD, which
bounds random allocation from above at q = k/t·(1 + 1e-3) (Feldman & Shenfeld 2025); closed-form profiles of a mean of
two log-normals; and, for persistent bins, a Monte-Carlo estimate of δ(ε) of the mechanism simulated epoch by epoch.
"""

from __future__ import annotations

import functools
import json
import math

import dp_accounting as dpa
import numpy as np
import pytest
from scipy import special

from accountants.events import GaussianEvent, RandomAllocationEvent, SelfComposedEvent
from accountants.pld import PldAccountant
from accountants.pld.allocation_law import allocation_law, on_grid

from ..support import allocation_oracles as oracles
from ..support.oracles import dpa_pld_epsilon

ACCOUNTANT = PldAccountant("add-remove")


@functools.cache
def _recorded() -> dict:
    return dict(json.loads(oracles.DATA.read_text()))


def _event(sigma: float, t: int, k: int, epochs: int) -> RandomAllocationEvent | SelfComposedEvent:
    event = RandomAllocationEvent(t, k, GaussianEvent(sigma))
    return event if epochs == 1 else SelfComposedEvent(event, epochs)


def _bracket(config: dict) -> tuple[float, float]:
    answer = ACCOUNTANT.epsilon(
        _event(config["sigma"], config["t"], config["k"], config["E"]), config["delta"], lower=True
    )
    assert answer.lower is not None
    return answer.lower, answer.value


# -- the anchor ------------------------------------------------------------------------------------------------------


def test_the_reference_anchor_is_within_its_grid_of_the_bracket():
    """σ = 2, 10 of 100 steps, δ = 1e-6: dp_accounting's anchor 2.4265 (computed on its own grid) is within 1e-3 of
    the upper bound, the lower bound is below it, and the bracket overlaps pld-accounting's own bracket (which holds
    the exact ε)."""
    lower, upper = _bracket(oracles.ANCHOR)
    assert abs(upper - oracles.ANCHOR_REFERENCE) <= 1e-3 * oracles.ANCHOR_REFERENCE
    assert lower < oracles.ANCHOR_REFERENCE
    for recorded in (_recorded()["anchor"], _recorded()["anchor_fine"]):  # default accuracy, and ~1e-3 wide
        assert upper >= recorded["pld_lower"] and lower <= recorded["pld_upper"]
    assert upper - lower <= 1e-3 * upper


# -- seeded configurations -------------------------------------------------------------------------------------------


def _monte_carlo_lower(config: dict, samples: int = 4000, alpha: float = 1e-3) -> float:
    """A lower bound on the exact k-of-t mechanism's ε (remove direction) holding with probability 1 − α: the largest
    ε on a grid where the one-sided Hoeffding bound on δ(ε) = E_P(1 − e^{ε − L})₊ (values in [0, 1]) exceeds δ.
    Per epoch L = log(e_k(Z)/C(t, k)) with Z_j = e^{ℓ_j}, ℓ_j ~ N(μ, 2μ) at the record's k steps, N(−μ, 2μ) elsewhere
    (μ = 1/(2σ²)); the epochs' losses add."""
    rng = np.random.default_rng(config["i"] if isinstance(config["i"], int) else 99)
    mu, t, k = 0.5 / config["sigma"] ** 2, config["t"], config["k"]
    total = np.zeros(samples)
    for _ in range(config["E"]):
        ell = rng.normal(-mu, math.sqrt(2 * mu), (samples, t))
        ell[:, :k] += 2 * mu  # the record's steps (the law is exchangeable: the first k)
        shift = ell.max(axis=1, keepdims=True)
        z = np.exp(ell - shift)
        symmetric = np.zeros((samples, k + 1))
        symmetric[:, 0] = 1.0
        for j in range(t):  # e_1 … e_k, one step at a time
            symmetric[:, 1:] += symmetric[:, :-1] * z[:, j : j + 1]
        log_binomial = special.gammaln(t + 1) - special.gammaln(k + 1) - special.gammaln(t - k + 1)
        total += np.log(symmetric[:, k]) + k * shift[:, 0] - log_binomial
    slack = math.sqrt(math.log(1 / alpha) / (2 * samples))
    best = 0.0
    for eps in np.linspace(0.0, float(np.max(total)), 400):
        if np.mean(np.maximum(1.0 - np.exp(eps - total), 0.0)) - slack > config["delta"]:
            best = float(eps)
    return best


@pytest.mark.slow
@pytest.mark.parametrize("config", oracles.configurations(), ids=lambda c: f"c{c['i']}")
def test_seeded_configurations(config):
    """Each configuration: the bracket within 1e-3 (relative), the upper bound above the Monte-Carlo lower bound of
    the exact mechanism and above pld-accounting's lower bound, the lower bound below pld-accounting's upper bound;
    for k = 1 the upper bound at most the Poisson PLD at q = 1/t·(1 + 1e-3) over the same E·t steps."""
    lower, upper = _bracket(config)
    assert 0.0 <= lower <= upper
    assert upper - lower <= 1e-3 * upper
    recorded = next(row for row in _recorded()["configurations"] if row["i"] == config["i"])
    if recorded["pld_lower"] is not None:  # skipped where pld-accounting took over its limit
        assert upper >= recorded["pld_lower"] * (1 - 1e-9)
        assert lower <= recorded["pld_upper"] * (1 + 1e-9)
    if config["t"] <= 2000:
        assert upper >= _monte_carlo_lower(config)
    if config["k"] == 1:
        q = 1.0 / config["t"] * (1 + 1e-3)
        poisson = dpa.SelfComposedDpEvent(
            dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(config["sigma"])), config["t"] * config["E"]
        )
        assert upper <= dpa_pld_epsilon(poisson, config["delta"])


def test_recorded_configurations_are_the_seeded_ones():
    """The recorded file belongs to this seed (regenerate it after changing the configurations)."""
    rows = _recorded()["configurations"]
    for row, config in zip(rows, oracles.configurations(), strict=True):
        assert {key: row[key] for key in config} == config
    assert _recorded()["versions"]["pld-accounting"] == "2.0"
    assert sum(row["pld_lower"] is not None for row in rows) >= 8  # most were answered within the limit


# -- the bracketed laws ----------------------------------------------------------------------------------------------


def _mean_of_two_profile(mu: float, s: float) -> float:
    """E_Q((Z₁ + Z₂)/2 − s)₊ for Z = e^ℓ, ℓ ~ N(−μ, 2μ): the inner expectation in closed form (a log-normal call),
    the outer by a fine quadrature."""
    sd = math.sqrt(2 * mu)
    ell = np.linspace(-mu - 12 * sd, -mu + 12 * sd, 200001)
    weight = np.exp(-((ell + mu) ** 2) / (2 * sd * sd)) / (sd * math.sqrt(2 * math.pi))
    c = s - np.exp(ell) / 2
    inner = np.where(c <= 0, 0.5 - c, 0.0)
    positive = c > 0
    k = np.log(2 * c[positive])
    inner[positive] = 0.5 * special.ndtr((mu - k) / sd) - c[positive] * special.ndtr((-mu - k) / sd)
    return float(np.trapezoid(weight * inner, ell))


@pytest.mark.parametrize("sigma", [0.7, 1.5, 4.0])
def test_two_steps_are_bracketed_in_the_convex_order(sigma):
    """t = 2: E(X − s)₊ of the upper law ≥ the exact value ≥ that of the lower law (raw and moved onto the grid), and
    the same for E(1 − sX)₊; both within 1e-3 relative where the profile is above 1e-12."""
    mu = 0.5 / sigma**2
    law = allocation_law(mu, 2, 192, lower=True)
    grid_lower = on_grid(law.lower)
    for s in (0.8, 1.2, 1.5, 2.0):
        exact = _mean_of_two_profile(mu, s)
        upper = float(np.sum(np.maximum(law.upper.values - s, 0.0) * law.upper.masses)) + law.infinity_remove
        raw = float(np.sum(np.maximum(law.lower.atoms - s, 0.0) * law.lower.masses))
        lowest = float(np.sum(np.maximum(grid_lower.values - s, 0.0) * grid_lower.masses))
        assert upper >= exact * (1 - 1e-9) >= raw * (1 - 2e-9) >= lowest * (1 - 3e-9)
        if exact > 1e-12:
            assert upper - lowest <= 1e-3 * exact
        # the add direction's integrand (1 − sX)₊ is convex too: the same order
        add_upper = float(np.sum(np.maximum(1 - s * law.upper.values, 0.0) * law.upper.masses)) + law.infinity_add
        add_lower = float(np.sum(np.maximum(1 - s * grid_lower.values, 0.0) * grid_lower.masses))
        assert add_upper >= add_lower


def test_the_laws_keep_their_mass_and_mean():
    """The upper law is a mean-preserving spread (mass and mean 1, raised only by the rounding allowance); the lower
    law loses at most what its tails cut (≤ 1e-12)."""
    law = allocation_law(0.5, 100, 192, lower=True)
    assert law.upper.masses.sum() == pytest.approx(1.0, abs=1e-6)
    assert np.sum(law.upper.masses * law.upper.values) == pytest.approx(1.0, abs=1e-6)
    assert law.upper.masses.sum() >= 1.0 - 1e-12
    lowered = on_grid(law.lower)
    assert 1.0 - 1e-6 <= lowered.masses.sum() <= 1.0 + 1e-12


# -- persistent bins -------------------------------------------------------------------------------------------------


def _persistent_delta(sigma: float, t: int, epochs: int, eps: float, samples: int, seed: int) -> tuple[float, float]:
    """Monte-Carlo δ(ε) (remove direction) of persistent bins simulated epoch by epoch: the record's bin J is drawn
    once; every epoch each step s shows y ~ N(1{s = J}, σ²); the loss is log((1/t)Σ_s e^{Σ_e (y_{e,s} − ½)/σ²}).
    (estimate, standard error)."""
    rng = np.random.default_rng(seed)
    var = sigma * sigma
    exponent = np.zeros((samples, t))
    for _ in range(epochs):
        y = sigma * rng.standard_normal((samples, t))
        y[:, 0] += 1.0  # J = 0 (exchangeable)
        exponent += (y - 0.5) / var
    loss = special.logsumexp(exponent, axis=1) - math.log(t)
    values = np.maximum(1.0 - np.exp(eps - loss), 0.0)
    return float(values.mean()), float(values.std() / math.sqrt(samples))


@pytest.mark.parametrize(("sigma", "t", "epochs"), [(1.0, 10, 4), (2.0, 20, 9), (0.8, 5, 3)])
def test_persistent_bins_are_one_allocation_at_the_composed_noise(sigma, t, epochs):
    """E epochs of persistent bins = one allocation of a Gaussian with multiplier σ/√E: its δ(ε) (remove) agrees with
    the mechanism simulated epoch by epoch (within 4 standard errors), and its ε is never below fresh bins'."""
    persistent = RandomAllocationEvent(t, 1, GaussianEvent(sigma / math.sqrt(epochs)))
    eps = ACCOUNTANT.epsilon(persistent, 1e-2).value
    remove = PldAccountant("add-remove").delta(persistent, eps).value
    estimate, error = _persistent_delta(sigma, t, epochs, eps, 200_000, seed=t)
    assert estimate - 4 * error <= remove  # the accounted δ is an upper bound
    assert estimate + 4 * error >= 0.97 * remove  # and the mechanism simulated epoch by epoch attains it
    fresh = ACCOUNTANT.epsilon(_event(sigma, t, 1, epochs), 1e-2).value
    assert eps >= fresh
