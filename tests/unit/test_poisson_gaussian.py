"""Poisson-subsampled Gaussian RDP: exact values (anchors, mpmath quadrature) and the established libraries."""

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant
from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

from accountants.mechanisms.poisson_gaussian import poisson_subsampled_gaussian_rdp

from ..support.oracles import DPA_ORDERS, exact_poisson_rdp

# exact values by mpmath quadrature: q = 0.01, z = 1, one step
ANCHOR_ORDERS = [1.5, 2, 4, 8, 16, 32, 64]
ANCHOR_VALUES = [
    0.0001272537433,
    0.0001718134221,
    0.0003631540489,
    0.0008936439076,
    3.087850784,
    11.24627594,
    27.32173187,
]


def test_anchor_curve_q001_z1():
    ours = poisson_subsampled_gaussian_rdp(0.01, 1.0, ANCHOR_ORDERS)
    # the anchors print 10 significant digits; our own 40-digit quadrature pins them to 1e-8
    exact = [exact_poisson_rdp(0.01, 1.0, a) for a in ANCHOR_ORDERS]
    np.testing.assert_allclose(ours, exact, rtol=1e-8)
    np.testing.assert_allclose(ours, ANCHOR_VALUES, rtol=1e-8)


def test_alpha_two_closed_form():
    # A_2 = 1 + q²(e^{1/z²} − 1)
    for q, z in [(0.01, 1.0), (0.3, 0.7), (0.001, 5.0)]:
        expected = np.log1p(q * q * np.expm1(1 / z**2))
        assert poisson_subsampled_gaussian_rdp(q, z, [2.0])[0] == pytest.approx(expected, rel=1e-12)


CONFIGS = [(0.01, 1.0), (256 / 60000, 1.1), (0.001, 0.8), (0.2, 0.5), (0.05, 3.0), (0.5, 2.0), (1e-4, 0.6)]


@pytest.mark.parametrize(("q", "z"), CONFIGS)
def test_integer_orders_equal_dp_accounting(q, z):
    integer = DPA_ORDERS[DPA_ORDERS == np.floor(DPA_ORDERS)]
    ours = poisson_subsampled_gaussian_rdp(q, z, integer)
    theirs = rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(q, z, integer)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9)


@pytest.mark.parametrize(("q", "z"), CONFIGS)
def test_fractional_orders_equal_prv_and_never_exceed_dp_accounting(q, z):
    fractional = DPA_ORDERS[DPA_ORDERS != np.floor(DPA_ORDERS)]
    ours = poisson_subsampled_gaussian_rdp(q, z, fractional)
    prv = PoissonSubsampledGaussianMechanism(q, z)
    signed = np.array([prv.rdp(a) for a in fractional])  # prv-accountant keeps the signs (TF-Privacy's code)
    finite = np.isfinite(signed)
    # prv's series stops early at small orders: we measured it up to 6e-6 off the quadrature, on either side (below
    # the exact value at q = 1e-4, z = 0.6, α = 1.1); ours is the closer one and never below (next tests)
    np.testing.assert_allclose(ours[finite], signed[finite], rtol=1e-5)
    # dp_accounting 0.6.0 sums |terms| (signless series): it can only be larger, or ∞ where its series gives up
    dpa = rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(q, z, fractional)
    assert np.all(ours <= dpa * (1 + 1e-12))


def test_dp_accounting_overstates_fractional_orders():
    # at α = 1.5 dp_accounting says 1.3236850e-4, the exact value is 1.2725374e-4 (+4 %)
    ours = poisson_subsampled_gaussian_rdp(0.01, 1.0, [1.5])[0]
    dpa = rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(0.01, 1.0, [1.5])[0]
    assert dpa == pytest.approx(1.3236850e-4, rel=1e-6)
    assert ours == pytest.approx(1.2725374e-4, rel=1e-6)


def test_where_dp_accounting_returns_infinity_we_are_exact():
    # q = 0.2, z = 0.5 at α ∈ {1.1, 1.5}: dp_accounting returns inf; exact 0.20258, 0.43616
    ours = poisson_subsampled_gaussian_rdp(0.2, 0.5, [1.1, 1.5])
    exact = [exact_poisson_rdp(0.2, 0.5, a) for a in (1.1, 1.5)]
    np.testing.assert_allclose(ours, exact, rtol=1e-9)
    np.testing.assert_allclose(ours, [0.20258, 0.43616], rtol=5e-5)


def test_small_orders_closer_to_exact_than_prv():
    exact = exact_poisson_rdp(1e-4, 0.6, 1.1, digits=60)
    ours = poisson_subsampled_gaussian_rdp(1e-4, 0.6, [1.1])[0]
    prv = PoissonSubsampledGaussianMechanism(1e-4, 0.6).rdp(1.1)
    assert exact <= ours <= exact * (1 + 1e-6)
    assert prv < exact  # prv-accountant 0.2.0 under-reports here


@pytest.mark.slow
def test_random_fractional_orders_against_quadrature():
    rng = np.random.default_rng(7)
    for _ in range(25):
        q = float(10 ** rng.uniform(-3.5, -0.1))
        z = float(10 ** rng.uniform(-0.3, 1.0))
        alpha = float(rng.uniform(1.05, 12.0))
        ours = poisson_subsampled_gaussian_rdp(q, z, [alpha])[0]
        exact = exact_poisson_rdp(q, z, alpha)
        # an upper bound, accurate to 1e-9 relative or to the rounding margin 5e-15/(α − 1) for tiny values
        assert ours >= exact * (1 - 1e-14), (q, z, alpha)
        assert ours - exact <= 1e-9 * exact + 5e-15 / (alpha - 1), (q, z, alpha)


def test_full_batch_is_the_gaussian():
    alphas = np.array([1.5, 2, 7.3, 64])
    np.testing.assert_allclose(poisson_subsampled_gaussian_rdp(1.0, 2.0, alphas), alphas / 8.0)


@pytest.mark.parametrize(("q", "z"), [(256 / 60000, 1.1), (0.01, 0.8), (0.3, 2.0)])
def test_an_order_gets_the_same_value_whatever_is_evaluated_with_it(q, z):
    """Orders on a lattice share the series' right-hand factors (tabulated per fractional part) and each order has
    its own number of terms: a value is the same float alone as in a batch (ε over training converts checkpoints
    together and must give each the answer it gets alone)."""
    rng = np.random.default_rng(7)
    for batch in (
        np.round(rng.uniform(1.02, 30.0, 300) * 32) / 32,  # a lattice of 1/32 (shared fractional parts)
        np.round(rng.uniform(1.1, 20.0, 300) * 20) / 20,  # of 0.05 (fractional parts not exact binary fractions)
        rng.uniform(1.01, 40.0, 50),  # nothing shared
        np.concatenate((rng.uniform(1.01, 12.0, 40), [700.5, 5000.25])),  # numbers of terms octaves apart
    ):
        together = poisson_subsampled_gaussian_rdp(q, z, batch)
        alone = np.array([poisson_subsampled_gaussian_rdp(q, z, [a])[0] for a in batch[:40]])
        np.testing.assert_array_equal(together[:40], alone)
