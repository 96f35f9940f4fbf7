"""The Rényi curve of random allocation (:mod:`accountants.mechanisms.allocation_gaussian`), against oracles that are
not its own method: the remove direction against the multinomial sum over every placement of α draws into t steps
(enumerated); the add direction against E_Q X^{−β} by two-dimensional quadrature (t = 2) and by nested adaptive
quadrature of the gamma representation (larger t); the composed ε against the PLD accountant's lower bound, which the
Rényi conversion can never be below; and the caps (t = 1 is the Gaussian; never above it).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, special

from accountants.events import GaussianEvent, PoissonSampledEvent, RandomAllocationEvent, SelfComposedEvent
from accountants.mechanisms.allocation_gaussian import (
    add_rdp,
    allocation_gaussian_rdp,
    rdp_kernel,
    remove_rdp,
)
from accountants.plan_accounting import costly
from accountants.plans import MechanismPlan
from accountants.pld import PldAccountant
from accountants.rdp import RdpAccountant, UnsupportedEventError


def _remove_by_placements(z: float, t: int, alpha: int) -> float:
    """D_α(P‖Q) at an integer α from E_Q X^α = t^{−α} Σ over placements k ∈ N^t, Σk = α, of
    α!/Πk_i! · Π e^{k_i(k_i − 1)/(2z²)} (E_Q e^{kℓ} for ℓ ~ N(−m, 2m))."""
    m = 0.5 / (z * z)
    logs = []
    for split in itertools.product(range(alpha + 1), repeat=t):
        if sum(split) != alpha:
            continue
        logs.append(
            math.lgamma(alpha + 1) - sum(math.lgamma(k + 1) for k in split) + sum(k * (k - 1) * m for k in split)
        )
    return (float(special.logsumexp(logs)) - alpha * math.log(t)) / (alpha - 1)


@pytest.mark.parametrize(("z", "t"), [(1.0, 2), (0.7, 3), (2.0, 4), (1.3, 5)])
def test_remove_direction_is_the_multinomial_sum_at_integer_orders(z, t):
    orders = np.arange(2, 9, dtype=float)
    ours = remove_rdp(z, t, orders)
    exact = [_remove_by_placements(z, t, int(a)) for a in orders]
    assert ours == pytest.approx(exact, rel=1e-11, abs=1e-13)
    assert np.all(ours >= np.asarray(exact) - 1e-15)


def test_remove_direction_between_integers_lies_on_the_chord_above_the_curve():
    """log E_Q X^α is convex in α: the value at a fractional order is at least the one below it, and the chord (the
    returned bound) is above the log-moment at the integers' mid-point computed by quadrature (t = 2)."""
    z, t = 1.0, 2
    ours = float(remove_rdp(z, t, np.array([2.5]))[0])
    m = 0.5 / (z * z)
    nodes, weights = np.polynomial.hermite_e.hermegauss(160)
    weights = weights / math.sqrt(2 * math.pi)
    ell = -m + math.sqrt(2 * m) * nodes
    x = 0.5 * (np.exp(ell)[:, None] + np.exp(ell)[None, :])
    exact = math.log(float(np.sum(weights[:, None] * weights[None, :] * x**2.5))) / 1.5
    assert exact <= ours <= exact + 0.1


def _add_by_two_dimensional_quadrature(z: float, alpha: float) -> float:
    """D_α(Q‖P) for t = 2: log E_Q ((e^{ℓ₁} + e^{ℓ₂})/2)^{1−α} / (α − 1), by Gauss–Hermite in both variables."""
    m = 0.5 / (z * z)
    nodes, weights = np.polynomial.hermite_e.hermegauss(200)
    weights = weights / math.sqrt(2 * math.pi)
    ell = -m + math.sqrt(2 * m) * nodes
    x = 0.5 * (np.exp(ell)[:, None] + np.exp(ell)[None, :])
    return math.log(float(np.sum(weights[:, None] * weights[None, :] * x ** (1.0 - alpha)))) / (alpha - 1.0)


@pytest.mark.parametrize("z", [1.0, 1.5, 3.0])
def test_add_direction_for_two_steps_is_the_quadrature_from_above(z):
    orders = np.array([1.5, 2.0, 3.0, 4.0])
    ours = add_rdp(z, 2, orders)
    for alpha, value in zip(orders, ours, strict=True):
        exact = _add_by_two_dimensional_quadrature(z, float(alpha))
        assert exact <= value <= exact + 2e-4


def _laplace(u: float, m: float) -> float:
    b = math.sqrt(2 * m)
    peak = -special.lambertw(u * b * b * math.exp(-m)).real / b
    f = lambda x: math.exp(-0.5 * x * x - u * math.exp(-m + b * x)) / math.sqrt(2 * math.pi)  # noqa: E731
    pieces = [(-60.0, peak - 10), (peak - 10, peak), (peak, peak + 10), (peak + 10, 60.0)]
    return sum(integrate.quad(f, lo, hi, epsabs=0, epsrel=1e-13, limit=500)[0] for lo, hi in pieces)


def _add_by_nested_quadrature(z: float, t: int, alpha: float) -> float:
    """D_α(Q‖P) = log[(1/Γ(β)) ∫ s^{β−1} L(s/t)^t ds]/β, both integrals by adaptive quadrature."""
    m, beta = 0.5 / (z * z), alpha - 1.0
    edges = [0, 1e-6, 1e-3, 0.1, 1, 3, 10, 30, 100, 300, 1e3, 3e3, 1e4, 1e5, 1e6, 1e7, 1e8]
    total = sum(
        integrate.quad(lambda s: s ** (beta - 1) * _laplace(s / t, m) ** t, lo, hi, epsabs=0, epsrel=1e-11, limit=500)[
            0
        ]
        for lo, hi in itertools.pairwise(edges)
    )
    return math.log(total / math.gamma(beta)) / beta


@pytest.mark.slow
@pytest.mark.parametrize(("z", "t", "alpha"), [(1.0, 10, 8.0), (2.0, 10, 1.5), (0.8, 50, 8.0), (1.0, 100, 4.0)])
def test_add_direction_is_the_nested_quadrature_from_above(z, t, alpha):
    exact = _add_by_nested_quadrature(z, t, alpha)
    ours = float(add_rdp(z, t, np.array([alpha]))[0])
    assert exact <= ours <= exact + 2e-4


def test_one_step_is_the_gaussian_and_no_order_is_above_it():
    orders = np.array([1.1, 2.0, 7.5, 64.0, 300.0, 2000.0])
    assert allocation_gaussian_rdp(1.2, 1, orders) == pytest.approx(orders / (2 * 1.44), rel=1e-15)
    for t in (2, 37, 1000, 20000):
        assert np.all(rdp_kernel(1.2, t, orders) <= orders / (2 * 1.44) * (1 + 1e-15))
    assert add_rdp(1.0, 2, np.array([2.0]))[0] >= 0


def test_bad_input_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="noise_multiplier"):
        allocation_gaussian_rdp(-1.0, 10, np.array([2.0]))
    with pytest.raises(ValueError, match="num_steps"):
        allocation_gaussian_rdp(1.0, 0, np.array([2.0]))


@pytest.mark.parametrize(
    ("sigma", "t", "k", "epochs", "delta"),
    [(1.0, 100, 1, 1, 1e-5), (2.0, 100, 10, 1, 1e-6), (0.8, 1000, 1, 10, 1e-6), (1.5, 30, 2, 4, 1e-8)],
)
def test_the_renyi_epsilon_is_never_below_the_pld_lower_bound(sigma, t, k, epochs, delta):
    """The Rényi conversion bounds the exact ε from above, and the PLD accountant's lower bound is below the exact ε:
    so rdp ≥ epsilon_lower. A useful curve is about as good as Poisson sampling's at q = k/t over as many steps (the
    exact Rényi curve of MTZ19; random allocation is dominated by Poisson at a slightly higher rate)."""
    event = RandomAllocationEvent(t, k, GaussianEvent(sigma))
    event = event if epochs == 1 else SelfComposedEvent(event, epochs)
    tight = PldAccountant("add-remove").epsilon(event, delta, lower=True)
    accountant = RdpAccountant("add-remove")
    rdp = accountant.epsilon(event, delta).value
    assert tight.lower is not None and rdp >= tight.lower
    poisson = SelfComposedEvent(PoissonSampledEvent(k / t, GaussianEvent(sigma)), t * epochs)
    assert rdp <= 1.1 * accountant.epsilon(poisson, delta).value


def test_replace_one_is_refused_and_an_rdp_request_on_an_allocation_is_heavy_work():
    event = RandomAllocationEvent(100, 1, GaussianEvent(1.0))
    with pytest.raises(UnsupportedEventError, match="add/remove"):
        RdpAccountant("replace-one").epsilon(event, 1e-5)
    assert costly(MechanismPlan(event, "add-remove"), "rdp")
    assert not costly(MechanismPlan(GaussianEvent(1.0), "add-remove"), "rdp")
