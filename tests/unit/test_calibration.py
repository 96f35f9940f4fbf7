"""Calibration: the generic bracket+Brent calibrator and the RDP calibrator (one-sided, minimal to 1e-5)."""

import math

import pytest

from accountants import registry
from accountants.calibration import calibrate, calibrate_rdp
from accountants.conversions import epsilon_from_rdp
from accountants.errors import CalibrationError
from accountants.events import GaussianEvent, PoissonSampledEvent, SelfComposedEvent
from accountants.rdp import RdpAccountant

from ..support.oracles import DPA_ORDERS
from ..support.params import MNIST

Q = 256 / 60000
STEPS = math.floor(60 / Q)  # 60 epochs, opacus convention


def curve_of(z, q=Q, steps=STEPS):
    return RdpAccountant().curve(SelfComposedEvent(PoissonSampledEvent(q, GaussianEvent(z)), steps))


@pytest.mark.parametrize("target", [1.0, 3.0, 8.0])
@pytest.mark.parametrize(("q", "steps", "delta"), [(Q, STEPS, 1e-5), (1e-4, 10**6, 1e-8), (0.01, 1000, 1e-6)])
def test_rdp_calibration_is_smallest_noise_meeting_target_to_its_tolerance(target, q, steps, delta):
    """One-sided and minimal to the default rtol (1e-6): the full conversion meets the target at σ and misses it at
    σ·(1 − 1e-6) (MNIST, and runs whose optimal order sits at the knee of the curve or in the grid's smooth part)."""
    z = calibrate_rdp(lambda s: curve_of(s, q, steps), delta, target).noise
    assert epsilon_from_rdp(curve_of(z, q, steps), delta).value <= target
    assert epsilon_from_rdp(curve_of(z * (1 - 1e-6), q, steps), delta).value > target


@pytest.mark.parametrize("target", [1.0, 3.0, 8.0])
def test_family_calibration_round_trips_through_privacy(target):
    family = registry.get("dp-sgd")
    params = MNIST | {"epoch_rounding": "floor"}
    report = family.calibrate(params, target, 1e-5)
    assert report.conventions.steps == STEPS
    assert report.epsilon <= target
    at = family.privacy(params | {"noise_multiplier": report.noise_multiplier}, 1e-5)
    assert at.epsilon <= target
    # one number for one mechanism: the calibration's tight answer at its σ is the privacy request's, lower bound too
    tight = {r.name: r for r in report.accountants}["tight"]
    privacy_tight = {r.name: r for r in at.accountants}["tight"]
    assert (tight.epsilon, tight.epsilon_lower) == (privacy_tight.epsilon, privacy_tight.epsilon_lower)
    assert tight.epsilon_lower is not None and tight.epsilon_lower < tight.epsilon
    # the tight calibration's contract: σ certifies the target, σ·(1 − 1e-4) does not
    below = family.privacy(params | {"noise_multiplier": report.noise_multiplier * (1 - 1e-4)}, 1e-5)
    assert report.accountant == "tight" and below.epsilon > target


@pytest.mark.parametrize(("target", "anchor"), [(1.0, 2.178420063), (3.0, 1.013999882), (8.0, 0.678029034)])
def test_grid_answer_equals_exact_solution_on_opacus_grid(target, anchor):
    # opacus' grid (signed series) solved exactly by brentq gives these σ
    opacus_orders = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
    z = calibrate_rdp(curve_of, 1e-5, target, orders=opacus_orders, refine=False).noise
    assert z == pytest.approx(anchor, rel=2e-6)


@pytest.mark.parametrize(("target", "dpa_sigma"), [(1.0, 2.178420896), (3.0, 1.014000852)])
def test_equal_to_dp_accounting_where_curves_agree(target, dpa_sigma):
    # integer optimal orders (α* = 18 and 7.2 → 7.2 is fractional but within 1e-6): both calibrators at tol 1e-6
    z = calibrate_rdp(curve_of, 1e-5, target, orders=DPA_ORDERS, refine=False).noise
    assert z == pytest.approx(dpa_sigma, rel=1e-6)


def test_refined_is_never_more_noise_than_grid():
    for target in (0.5, 2.0, 10.0):
        grid = calibrate_rdp(curve_of, 1e-5, target, refine=False).noise
        refined = calibrate_rdp(curve_of, 1e-5, target).noise
        assert refined <= grid


def test_generic_calibrator_on_closed_form():
    # ε(σ) = 3/σ²: the root for target 0.75 is σ = 2
    result = calibrate(lambda s: 3.0 / s**2, 0.75)
    assert 3.0 / result.noise**2 <= 0.75
    assert result.noise == pytest.approx(2.0, rel=1e-6)
    assert result.noise >= 2.0


def test_generic_calibrator_one_sided_even_with_a_step():
    # a step function: Brent cannot interpolate; the answer must still be feasible and within rtol of the jump
    result = calibrate(lambda s: 5.0 if s < math.pi else 1.0, 2.0)
    assert result.epsilon == 1.0
    assert math.pi <= result.noise <= math.pi * (1 + 2e-6)


def test_infeasible_target_raises():
    with pytest.raises(CalibrationError, match="cannot be met"):
        calibrate(lambda s: 1.0 + 1.0 / s, 0.5)


def test_target_met_without_noise_raises():
    with pytest.raises(CalibrationError, match="does not constrain"):
        calibrate(lambda s: 0.0, 1.0)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_bad_target_is_a_parameter_error(bad):
    with pytest.raises(ValueError, match="target_epsilon"):
        calibrate(lambda s: 1.0 / s, bad)


def test_full_batch_tight_calibration_is_the_analytic_gaussian():
    family = registry.get("dp-sgd")
    report = family.calibrate({"dataset_size": 100, "batch_size": 100, "steps": 100}, 4.377178095681, 1e-5)
    assert report.accountant == "tight"
    assert report.noise_multiplier == pytest.approx(10.0, rel=1e-9)  # a4 ≡ b1
    rdp_result = next(a for a in report.accountants if a.name == "rdp")
    assert rdp_result.noise_multiplier > report.noise_multiplier
