"""Gaussian mechanism: RDP, the exact analytic profile (Balle & Wang 2018) and its inverses."""

import math

import dp_accounting as dpa
import numpy as np
import pytest

from accountants.mechanisms.gaussian import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_noise_multiplier,
    gaussian_rdp,
    gdp_epsilon,
)

# anchors b1–b3: analytic Gaussian, δ = 1e-5
ANCHORS = [(1.0, 1, 4.377178096), (1.0, 10, 17.856586830), (5.0, 100, 9.997256146)]


@pytest.mark.parametrize(("z", "count", "expected"), ANCHORS)
def test_analytic_gaussian_matches_anchors_and_dp_accounting(z, count, expected):
    eps = gaussian_epsilon(z, 1e-5, count)
    assert eps == pytest.approx(expected, rel=1e-9)
    # dp_accounting computed live; T compositions are one Gaussian with multiplier z/√T
    assert eps == pytest.approx(dpa.get_epsilon_gaussian(z / math.sqrt(count), 1e-5), rel=1e-9)


def test_composition_equivalence_a4_b1():
    # a4 (q = 1, z = 10, T = 100) is b1 (z = 1, T = 1): μ = √T/z = 1 either way
    assert gaussian_epsilon(10.0, 1e-5, 100) == pytest.approx(gaussian_epsilon(1.0, 1e-5, 1), rel=1e-12)


@pytest.mark.parametrize("z", [0.05, 0.3, 1.0, 4.0, 50.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-5, 0.1])
def test_epsilon_is_one_sided_inverse_of_delta(z, delta):
    eps = gaussian_epsilon(z, delta)
    assert gaussian_delta(z, eps) <= delta * (1 + 1e-12)
    if eps > 0:
        # just below ε the profile exceeds δ: ε is the smallest valid value (to 1e-9)
        assert gaussian_delta(z, eps * (1 - 1e-9)) > delta


def test_delta_formula_against_direct_evaluation():
    from scipy.stats import norm

    for mu, eps in [(0.5, 0.1), (1.0, 1.0), (2.0, 3.0)]:
        direct = norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu)
        assert gaussian_delta(1 / mu, eps) == pytest.approx(direct, rel=1e-12)


def test_tiny_delta_stays_finite_and_monotone():
    values = [gdp_epsilon(1.0, d) for d in (1e-10, 1e-50, 1e-150, 1e-300)]
    assert all(math.isfinite(v) for v in values)
    assert values == sorted(values)


@pytest.mark.parametrize(("eps", "delta", "count"), [(1.0, 1e-5, 1), (4.377178095681, 1e-5, 1), (3.0, 1e-6, 1000)])
def test_noise_multiplier_inverse(eps, delta, count):
    z = gaussian_noise_multiplier(eps, delta, count)
    assert gaussian_epsilon(z, delta, count) <= eps
    assert gaussian_epsilon(z * (1 - 1e-9), delta, count) > eps
    assert z == pytest.approx(dpa.get_sigma_gaussian(eps, delta) * math.sqrt(count), rel=1e-8)


def test_gaussian_rdp_closed_form():
    alphas = np.array([1.5, 2.0, 10.0])
    assert np.allclose(gaussian_rdp(2.0, alphas), alphas / 8.0, rtol=0, atol=0)
