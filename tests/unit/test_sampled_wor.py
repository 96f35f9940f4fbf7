"""Fixed-size batches (sampling without replacement, replace-one): WBK19 Thm 27 against dp_accounting and mpmath."""

import dp_accounting as dpa
import mpmath as mp
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant

from accountants.events import GaussianEvent, SampledWithoutReplacementEvent, SelfComposedEvent
from accountants.mechanisms.sampled_wor_gaussian import (
    _log_forward_differences,
    sampled_without_replacement_gaussian_rdp,
)
from accountants.rdp import RdpAccountant

from ..support.oracles import DPA_ORDERS, dpa_rdp_epsilon


def test_mnist_like_configuration_matches_dp_accounting_live():
    # 256 of 60000 without replacement, z = 1.1, T = 14062, replace-one
    ours = RdpAccountant("replace-one").epsilon(
        SelfComposedEvent(SampledWithoutReplacementEvent(60000, 256, GaussianEvent(1.1)), 14062), 1e-5
    )
    event = dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(60000, 256, dpa.GaussianDpEvent(1.1)), 14062)
    theirs, order = dpa_rdp_epsilon(event, 1e-5, dpa.NeighboringRelation.REPLACE_ONE)
    assert ours.value == pytest.approx(theirs, rel=1e-6)
    assert ours.value == pytest.approx(5.2432542416, rel=1e-6)
    assert ours.optimal_order == order == 5


@pytest.mark.parametrize(("q", "z"), [(256 / 60000, 1.1), (0.01, 0.5), (0.001, 0.8), (0.05, 2.0)])
def test_curve_equals_dp_accounting_where_its_differences_are_accurate(q, z):
    ours = sampled_without_replacement_gaussian_rdp(q, z, DPA_ORDERS)
    theirs = rdp_privacy_accountant._compute_rdp_sample_wor_gaussian(q, z, DPA_ORDERS)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9)


def test_large_noise_is_tighter_than_dp_accounting_and_still_valid():
    # at z = 10 dp_accounting's log-space differencing cancels catastrophically (its Δ_40 is e^14 too large)
    ours = sampled_without_replacement_gaussian_rdp(0.1, 10.0, DPA_ORDERS)
    theirs = rdp_privacy_accountant._compute_rdp_sample_wor_gaussian(0.1, 10.0, DPA_ORDERS)
    assert np.all(ours <= theirs * (1 + 1e-9))  # 1e-10: our quadrature's safety margin
    assert (ours < theirs * (1 - 1e-3)).any()


@pytest.mark.parametrize("z", [0.3, 1.1, 10.0])
def test_forward_differences_are_exact_upper_bounds(z):
    # Δ_k = Σ_l C(k,l)(−1)^{k−l} e^{(l−1)l/(2z²)} in 300-digit arithmetic, for even k
    logs = _log_forward_differences(z, 64)
    with mp.workdps(300):
        c = 1 / (2 * mp.mpf(z) ** 2)
        f = [mp.e ** (c * (m - 1) * m) for m in range(65)]
        for k in range(0, 65, 2):
            exact = float(mp.log(mp.fsum(mp.binomial(k, m) * (-1) ** (k - m) * f[m] for m in range(k + 1))))
            assert 0 <= logs[k] - exact <= 2e-10 + 1e-15 * abs(exact), (z, k)


def test_fractional_orders_interpolate_the_cgf():
    z, q = 1.3, 0.02
    at = sampled_without_replacement_gaussian_rdp(q, z, [3.0, 4.0, 3.25])
    assert at[2] * 2.25 == pytest.approx(0.75 * at[0] * 2 + 0.25 * at[1] * 3, rel=1e-12)


def test_needs_replace_one():
    from accountants.rdp import UnsupportedEventError

    with pytest.raises(UnsupportedEventError, match="replace-one"):
        RdpAccountant("add-remove").epsilon(SampledWithoutReplacementEvent(100, 10, GaussianEvent(1.0)), 1e-5)
