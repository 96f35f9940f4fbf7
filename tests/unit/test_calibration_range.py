"""Calibration never refuses falsely (issue 29): a Gaussian calibrated for any ε in [1e-6, 1e3] and δ in
[1e-15, 0.5] lands within 1e-6 of the exact analytic-Gaussian σ, computed here independently in 50-digit arithmetic;
and a refusal states true numbers."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from accountants.errors import CalibrationError
from accountants.pipeline import Composition, calibrate, privacy


def exact_sigma(epsilon: float, delta: float) -> float:
    """The smallest σ with δ(ε) = Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ) ≤ δ (Balle & Wang 2018), by bisection on
    log σ in 50-digit arithmetic (δ(ε) decreases in σ)."""
    with mp.workdps(50):
        eps, target = mp.mpf(epsilon), mp.mpf(delta)

        def profile(log_sigma: mp.mpf) -> mp.mpf:
            sigma = mp.exp(log_sigma)
            return mp.ncdf(1 / (2 * sigma) - eps * sigma) - mp.exp(eps) * mp.ncdf(-1 / (2 * sigma) - eps * sigma)

        lo, hi = mp.mpf(-30), mp.mpf(30)
        for _ in range(200):
            mid = (lo + hi) / 2
            if profile(mid) > target:
                lo = mid
            else:
                hi = mid
        return float(mp.exp(hi))


def _grid(seed: int = 29, count: int = 40) -> list[tuple[float, float]]:
    rng = np.random.default_rng(seed)
    corners = [(1e-6, 1e-15), (1e-6, 0.5), (1e3, 1e-15), (1e3, 0.5)]
    inside = [(float(10 ** rng.uniform(-6, 3)), float(10 ** rng.uniform(-15, math.log10(0.5)))) for _ in range(count)]
    return corners + inside


@pytest.mark.parametrize(("epsilon", "delta"), _grid())
def test_a_gaussian_calibrates_to_the_exact_sigma_everywhere(epsilon, delta):
    node = {"type": "gaussian", "noise_multiplier": 1.0}
    report = calibrate(Composition(node, delta), epsilon, "/noise_multiplier")
    assert report.calibrated_value == pytest.approx(exact_sigma(epsilon, delta), rel=1e-6)
    assert report.epsilon <= epsilon
    assert {a.name for a in report.accountants if a.applicable} >= {"tight"}


def test_a_small_target_at_tiny_delta_is_answered_by_rdp_too():
    """The issue's case: ε = 1e-5 at δ = 1e-10 was refused ("even noise 1e8 gives ε = 0.0147555")."""
    node = {"type": "gaussian", "noise_multiplier": 1.0}
    for epsilon in (1e-3, 1e-5):
        report = calibrate(Composition(node, 1e-10, "rdp"), epsilon, "/noise_multiplier")
        assert report.epsilon <= epsilon
        again = privacy(Composition({"type": "gaussian", "noise_multiplier": report.calibrated_value}, 1e-10, "rdp"))
        assert again.epsilon <= epsilon


def test_a_refusal_states_what_the_accountant_gives_at_the_end_of_the_range():
    """A target below what the largest noise allows: the refusal's ε is the accountant's own at that noise."""
    node = {"type": "repeated", "count": 10**9, "mechanism": {"type": "gaussian", "noise_multiplier": 1.0}}
    with pytest.raises(CalibrationError) as raised:
        calibrate(Composition(node, 1e-10, "rdp"), 1e-9, "/mechanism/noise_multiplier")
    stated = float(str(raised.value).split("gives ε=")[1].split(",")[0])
    at_top = privacy(Composition({**node, "mechanism": {"type": "gaussian", "noise_multiplier": 1e8}}, 1e-10, "rdp"))
    assert stated == pytest.approx(at_top.epsilon, rel=1e-6)
