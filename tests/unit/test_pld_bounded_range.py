"""Bounded-range releases in the PLD accountant (accountants/pld/bounded_range): the optimal adaptive composition of
ε-bounded-range mechanisms checked against the exact one-step supremum, a brute-force two-step adaptive optimum, a
40-digit reference of the lattice recursion, the non-adaptive lower bound (randomised response with ε/2 is ε-BR, KOV's
exact sum) and the RDP upper bound; the class ε-DP with range 2ε is randomised response."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from accountants.conversions import DEFAULT_ORDERS, epsilon_from_rdp
from accountants.errors import ParameterError
from accountants.events import BoundedRangeEvent, PureDpEvent, SelfComposedEvent
from accountants.mechanisms.pure_composition import bounded_range_rdp, pure_dp_rdp
from accountants.pld import PldAccountant
from accountants.pld.bounded_range import worst_case_profiles

from ..support.kov import kov_epsilon

T_DENSE = np.linspace(0.0, 1.0, 100_001)
ACCOUNTANT = PldAccountant("replace-one")


class BoundedRangeComposition:
    """k adaptive ε-bounded-range releases, asked of the PLD accountant."""

    def __init__(self, width: float, count: int, epsilon: float | None = None) -> None:
        self.event = SelfComposedEvent(BoundedRangeEvent(width, epsilon), count)

    @classmethod
    def build(cls, width: float, count: int, epsilon: float | None = None) -> BoundedRangeComposition:
        return cls(width, count, epsilon)

    def delta(self, epsilon: float) -> float:
        return ACCOUNTANT.delta(self.event, epsilon).value

    def epsilon(self, delta: float) -> float:
        return ACCOUNTANT.epsilon(self.event, delta).value


def grr_profile(eps: np.ndarray | float, width: float, t: np.ndarray = T_DENSE) -> np.ndarray:
    """H_t(ε) of the generalised randomised response GRR_t, one column per t."""
    e = np.asarray(eps, dtype=float)[..., None]
    p = -np.expm1(-t * width) / -math.expm1(-width)
    return p * np.maximum(-np.expm1(e - (1 - t) * width), 0) + (1 - p) * np.maximum(-np.expm1(e + t * width), 0)


@pytest.mark.parametrize("width", [0.01, 0.5, 3.0])
def test_one_step_bounds_the_exact_supremum_over_t_from_above(width):
    composition = BoundedRangeComposition.build(width, 1)
    for eps in np.linspace(0.0, 0.95 * width, 12):
        exact = float(grr_profile(eps, width).max())  # a dense t grid: at most the true supremum
        ours = composition.delta(float(eps))
        assert exact <= ours
        if eps <= width / 2:  # the chord over one node interval costs most in the far tail
            assert ours <= 1.3 * exact + 1e-12


def test_two_adaptive_steps_against_brute_force():
    """V₂(x) = sup_{t₁} E_{GRR_t₁}[V₁(x − L)] with V₁ the exact one-step supremum, both over dense t grids (so the
    brute force is at most the true optimum, which ours must bound)."""
    width = 0.4
    t = np.linspace(0.0, 1.0, 2001)
    p = -np.expm1(-t * width) / -math.expm1(-width)

    def v1(x: np.ndarray) -> np.ndarray:
        return grr_profile(x, width, t).max(axis=-1)

    composition = BoundedRangeComposition.build(width, 2)
    for eps in (0.0, 0.1, 0.3, 0.5, 0.7):
        up, down = v1(eps - (1 - t) * width), v1(eps + t * width)
        brute = float(np.max(p * up + (1 - p) * down))
        assert brute <= composition.delta(eps)
        if eps <= 0.5:
            assert composition.delta(eps) <= 1.1 * brute + 1e-12


def _reference_lattice(width: float, m: int, steps: int) -> list[mp.mpf]:
    """The lattice recursion of the module in 40-digit arithmetic, written independently (node by node)."""
    mp.mp.dps = 40
    w, h = mp.mpf(width), mp.mpf(width) / m
    half = (steps + 1) * m
    nodes = range(-half - m, half + m + 1)
    value = {i: max(mp.mpf(0), 1 - mp.e ** (i * h)) for i in nodes}
    kappa = 1 - mp.e ** (-w)

    def p_of(u: mp.mpf) -> mp.mpf:  # u = e^{tw}
        return (1 - 1 / u) / kappa

    for _ in range(steps):
        new = dict(value)
        for i in range(-half, half + 1):
            best = value[i]
            for cell in range(m):
                a_lo, a_hi = value[i - (m - cell)], value[i - (m - cell) + 1]
                b_lo, b_hi = value[i + cell], value[i + cell + 1]

                def g(xi: mp.mpf, cell=cell, a_lo=a_lo, a_hi=a_hi, b_lo=b_lo, b_hi=b_hi) -> mp.mpf:
                    lam = (xi - 1) / (mp.e**h - 1)
                    p = p_of(xi * mp.e ** (cell * h))
                    return p * ((1 - lam) * a_lo + lam * a_hi) + (1 - p) * ((1 - lam) * b_lo + lam * b_hi)

                candidates = [g(mp.mpf(1)), g(mp.e**h)]
                # the stationary point of g on (1, e^h), found independently by a bracketing search on g'
                lo, hi = mp.mpf(1), mp.e**h
                slope_lo, slope_hi = mp.diff(g, lo), mp.diff(g, hi)
                if slope_lo > 0 > slope_hi:
                    root = mp.findroot(lambda z: mp.diff(g, z), (lo, hi), solver="bisect")
                    candidates.append(g(root))
                best = max([best, *candidates])
            new[i] = best
        value = new
    return [value[i] for i in range(-half, half + 1)]


@pytest.mark.parametrize(("width", "m"), [(0.05, 4), (0.7, 3)])
def test_lattice_recursion_within_its_stated_error_of_a_40_digit_reference(width, m):
    steps = 3
    values, _, rel = worst_case_profiles(width, steps, m, (steps,))[steps]
    reference = _reference_lattice(width, m, steps)
    for ours, exact in zip(values, reference, strict=True):
        assert abs(mp.mpf(str(ours)) - exact) <= mp.mpf(rel) * exact + mp.mpf(2.0**-60) * exact + mp.mpf(1e-300)


@pytest.mark.parametrize(
    ("width", "count", "delta"),
    [(0.00591, 1000, 1e-6), (0.00415, 5330, 1 / 32000**2), (0.05, 400, 1e-5), (0.3, 50, 1e-8), (0.001, 200_000, 1e-9)],
)
def test_between_the_nonadaptive_lower_bound_and_the_rdp_and_pure_dp_upper_bounds(width, count, delta):
    """Randomised response with ε/2 is ε-bounded-range, so k of them (KOV at ε/2) is a lower bound on the optimum;
    the bounded-range zCDP bound (with the exact pure-DP RDP) and KOV at ε are valid upper bounds, above ours."""
    ours = BoundedRangeComposition.build(width, count).epsilon(delta)
    lower = kov_epsilon(count, width / 2, delta)

    def curve(a: np.ndarray) -> np.ndarray:
        return count * np.minimum(pure_dp_rdp(width, a), bounded_range_rdp(width, a))

    rdp = epsilon_from_rdp(curve, delta, DEFAULT_ORDERS, True).value
    assert lower < ours < rdp
    assert ours < kov_epsilon(count, width, delta)
    assert ours <= lower * 1.08  # the blocks and the lattice cost a few per cent at most


def test_monotone_in_the_count_and_the_width():
    values = [BoundedRangeComposition.build(0.02, k).epsilon(1e-6) for k in (10, 100, 1000, 10_000)]
    assert values == sorted(values)
    widths = [BoundedRangeComposition.build(w, 500).epsilon(1e-6) for w in (0.005, 0.01, 0.02, 0.04)]
    assert widths == sorted(widths)


def test_the_spec_accounting_check_halves_kov():
    """Private mirror descent's reference check (k = 1000, ε₀ = 0.00591, δ = 1e-6): KOV 0.775, bounded-range zCDP 0.400; the optimal
    adaptive bounded-range composition is below both (0.374)."""
    ours = BoundedRangeComposition.build(0.00591, 1000).epsilon(1e-6)
    assert ours == pytest.approx(0.374, abs=2e-3)


def test_rejections_name_the_field():
    with pytest.raises(ParameterError, match="count"):
        BoundedRangeComposition.build(0.1, 0)
    with pytest.raises(ParameterError, match="delta"):
        BoundedRangeComposition.build(0.1, 100).epsilon(0.0)


def test_a_width_too_large_for_the_lattice_is_its_pure_epsilon():
    """Nodes beyond ±600 would overflow e^x: such releases are read as ε-DP (randomised response), still a bound."""
    wide = BoundedRangeComposition.build(400.0, 3).epsilon(1e-6)
    assert wide == pytest.approx(ACCOUNTANT.epsilon(SelfComposedEvent(PureDpEvent(400.0), 3), 1e-6).value)


@pytest.mark.parametrize(("eps0", "count", "delta"), [(0.1, 100, 1e-6), (0.02, 3000, 1e-8), (1.0, 7, 1e-3)])
def test_pure_dp_with_twice_its_range_is_randomised_response_within_1e4_of_kov(eps0, count, delta):
    """ε-DP with bounded range 2ε (Algorithm 5's mixture): the range adds nothing, the class's worst pair is
    randomised response with ε, whose k-fold composition KOV sums exactly."""
    ours = BoundedRangeComposition.build(2 * eps0, count, eps0).epsilon(delta)
    exact = kov_epsilon(count, eps0, delta)
    assert exact <= ours * (1 + 1e-9) and ours <= exact * (1 + 1e-4) + 1e-6


def test_between_the_classes_is_between_their_compositions():
    """ε-DP with range 1.5ε: at most pure bounded range 1.5ε and pure ε-DP, at least either's lower bound."""
    eps0, count, delta = 0.02, 2000, 1e-7
    both = BoundedRangeComposition.build(1.5 * eps0, count, eps0).epsilon(delta)
    assert both <= BoundedRangeComposition.build(1.5 * eps0, count).epsilon(delta) * (1 + 1e-9)
    assert both <= kov_epsilon(count, eps0, delta) * (1 + 1e-4)
    assert both >= kov_epsilon(count, 0.75 * eps0, delta)  # randomised response with 0.75ε is in the class
