"""RDP → (ε, δ): the improved conversion, its α > 1.01 guard, the TV bound, refinement and grid-edge warnings."""

import math

import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant

from accountants.conversions import (
    DEFAULT_ORDERS,
    delta_from_rdp,
    epsilon_by_order,
    epsilon_from_rdp,
    log_delta_by_order,
)

from ..support.oracles import DPA_ORDERS


def gaussian_curve(rho):
    return lambda a: rho * np.asarray(a, dtype=float)


def test_default_grid_is_a_superset_of_dp_accountings():
    assert set(DPA_ORDERS.tolist()) <= set(DEFAULT_ORDERS.tolist())


def test_improved_conversion_formula():
    a, r, d = 5.0, 0.7, 1e-5
    expected = r + math.log((a - 1) / a) - (math.log(d) + math.log(a)) / (a - 1)
    assert epsilon_by_order(np.array([a]), np.array([r]), d)[0] == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize(
    ("rho", "grid_eps", "grid_order", "real_eps", "real_order"),
    [
        (0.5, 4.728507067, 5.4, 4.728386985, 5.431849667),  # b1: Gaussian z = 1
        (5.0, 19.053597530, 2.5, 19.047259552, 2.456982602),  # b2: z = 1, T = 10
        (2.0, 10.725509700, 3.3, 10.724824113, 3.272378531),  # b3: z = 5, T = 100
    ],
)
def test_gaussian_anchors_grid_and_continuous(rho, grid_eps, grid_order, real_eps, real_order):
    on_grid = epsilon_from_rdp(gaussian_curve(rho), 1e-5, DPA_ORDERS, refine=False)
    assert on_grid.value == pytest.approx(grid_eps, rel=1e-9)
    assert on_grid.optimal_order == pytest.approx(grid_order)
    refined = epsilon_from_rdp(gaussian_curve(rho), 1e-5)
    assert refined.value == pytest.approx(real_eps, rel=1e-9)
    assert refined.optimal_order == pytest.approx(real_order, rel=1e-5)
    # same as dp_accounting's conversion on the same grid
    theirs, _ = rdp_privacy_accountant.compute_epsilon(DPA_ORDERS, rho * DPA_ORDERS, 1e-5)
    assert on_grid.value == pytest.approx(theirs, rel=1e-12)


def test_orders_at_or_below_guard_are_never_used():
    # tensorflow/privacy #166: an order 1 + 1e-8 would give ε ≈ 0
    eps = epsilon_by_order(np.array([1.00000001, 1.01]), np.array([1e-9, 1e-9]), 1e-5)
    assert np.all(np.isinf(eps))


def test_tv_bound_gives_zero_when_delta_is_large():
    # δ² > 1 − e^{−r}: ε = 0 is certified by Bretagnolle–Huber
    result = epsilon_from_rdp(gaussian_curve(1e-8), 0.5)
    assert result.value == 0.0


@pytest.mark.parametrize("rho", [0.01, 0.5, 3.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-5, 1e-2])
def test_delta_and_epsilon_are_inverse(rho, delta):
    eps = epsilon_from_rdp(gaussian_curve(rho), delta).value
    back = delta_from_rdp(gaussian_curve(rho), eps).value
    assert back <= delta * (1 + 1e-9)
    assert back == pytest.approx(delta, rel=1e-3)


def test_delta_matches_dp_accounting_on_same_grid():
    rdp = 0.3 * DPA_ORDERS
    ours = delta_from_rdp(lambda a: 0.3 * a, 2.0, DPA_ORDERS, refine=False).value
    theirs, _ = rdp_privacy_accountant.compute_delta(DPA_ORDERS, rdp, 2.0)
    assert ours == pytest.approx(theirs, rel=1e-12)
    assert np.all(log_delta_by_order(DPA_ORDERS, rdp, 2.0) <= 0)


def test_refinement_never_increases_epsilon():
    curve = gaussian_curve(0.37)
    assert epsilon_from_rdp(curve, 1e-6).value <= epsilon_from_rdp(curve, 1e-6, refine=False).value


def test_upper_grid_edge_warns_without_refinement_and_extends_with_it():
    curve = gaussian_curve(1e-7)  # optimum near α ≈ 1 + √(log(1/δ)/ρ) ≈ 10⁴
    fixed = epsilon_from_rdp(curve, 1e-5, refine=False)
    assert fixed.optimal_order == DEFAULT_ORDERS[-1]
    assert any("upper edge" in w for w in fixed.warnings)
    extended = epsilon_from_rdp(curve, 1e-5)
    assert extended.optimal_order > DEFAULT_ORDERS[-1]
    assert extended.value < fixed.value
    assert not extended.warnings


def test_lower_grid_edge_warns():
    result = epsilon_from_rdp(gaussian_curve(5000.0), 1e-5, refine=False)
    assert result.optimal_order == DEFAULT_ORDERS[0]
    assert any("lower edge" in w for w in result.warnings)


def test_user_grid_is_respected():
    result = epsilon_from_rdp(gaussian_curve(0.5), 1e-5, orders=[8, 2, 4], refine=False)
    assert result.optimal_order == 4  # ε(4) = 5.087 < ε(8) = 5.213 (the real optimum, 5.43, is not offered)
    assert list(result.orders) == [2, 4, 8]


def _subsampled_gaussian(q: float, z: float, steps: int):
    from accountants.mechanisms.poisson_gaussian import poisson_subsampled_gaussian_rdp

    return lambda a: steps * poisson_subsampled_gaussian_rdp(q, z, np.atleast_1d(np.asarray(a, dtype=float)))


# (q, z, steps): MNIST's DP-SGD along its training (optimal orders from the smooth region of the grid, 0.1 apart,
# to the knee of the subsampled Gaussian's curve near α ≈ 12, 1 apart), and other regimes
REFINEMENT_CASES = [
    (256 / 60000, 1.1, 141),
    (256 / 60000, 1.1, 1410),
    (256 / 60000, 1.1, 14063),
    (0.01, 0.8, 300),
    (0.1, 1.0, 50),
    (0.001, 3.0, 10000),
    (0.02, 0.5, 5),
]


@pytest.mark.parametrize(("q", "z", "steps"), REFINEMENT_CASES)
def test_refined_epsilon_is_the_continuous_minimum(q, z, steps):
    """The refinement's ε is within 1e-9 relative of the minimum over real orders found independently (scipy's
    bounded Brent search, to 1e-12 in α, around the order found), and its order is where that minimum is."""
    from scipy import optimize

    curve = _subsampled_gaussian(q, z, steps)
    found = epsilon_from_rdp(curve, 1e-5)

    def objective(alpha: float) -> float:
        return float(epsilon_by_order(np.array([alpha]), curve(alpha), 1e-5)[0])

    lo, hi = max(1.02, found.optimal_order - 0.5), found.optimal_order + 0.5
    reference = optimize.minimize_scalar(objective, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
    assert lo + 1e-6 < reference.x < hi - 1e-6  # an interior minimum: the search found the basin
    assert found.value <= reference.fun * (1 + 1e-9)
    assert found.value >= reference.fun * (1 - 1e-9)
    assert found.value == pytest.approx(objective(found.optimal_order), rel=1e-15)  # the value is at its order


# (q, z, steps, δ): optimal orders in the grid's smooth 0.1-spaced region (settled on the grid's own lattice) and at
# the knee of the subsampled Gaussian's curve between integer orders (zoomed)
SETTLING_CASES = [
    (256 / 60000, 1.1, 14062, 1e-5, True),
    (0.01, 1.0, 1000, 1e-6, True),
    (0.1, 1.0, 50, 1e-5, True),
    (0.05, 2.0, 2000, 1e-5, True),
    (1e-4, 1.0, 10**6, 1e-8, False),
    (256 / 60000, 1.1, 141, 1e-5, False),
    (0.02, 0.5, 5, 1e-5, False),
]


@pytest.mark.parametrize(("q", "z", "steps", "delta", "settles"), SETTLING_CASES)
def test_grid_lattice_settles_where_smooth_with_the_zooms_answer(monkeypatch, q, z, steps, delta, settles):
    """Where the grid is a fine lattice around a smooth minimum, the search settles on it (no zoom round: the curve
    is asked for the grid and one vertex) and finds the zoom's minimum to 2e-11 relative (never above it by more);
    at a knee it does not try (no vertex evaluated before the zoom)."""
    from accountants import conversions

    curve = _subsampled_gaussian(q, z, steps)
    asked: list[int] = []

    def counted(a):
        asked.append(np.asarray(a).size)
        return curve(a)

    settled = epsilon_from_rdp(counted, delta)
    monkeypatch.setattr(conversions, "_SETTLE_EXCESS", -1.0)  # never settle: always zoom
    zoomed = epsilon_from_rdp(curve, delta)
    if settles:
        assert asked == [DEFAULT_ORDERS.size, 1]
    else:
        assert asked[1] > 1  # the zoom's first round came next
    assert settled.value <= zoomed.value * (1 + 2e-11)
    assert settled.value >= zoomed.value * (1 - 2e-11)
    assert settled.optimal_order == pytest.approx(zoomed.optimal_order, rel=1e-4)


def test_values_near_the_float_range_do_not_overflow_the_grid_lattice_check():
    """A curve whose values near its optimum are within a factor 4 of the largest double (a fuzzed composition met
    one): the grid's differences overflow; no warning (an error under the service's tests), the zoom decides."""
    import warnings

    def curve(a):
        a = np.asarray(a, dtype=float)
        return 1.2e308 + 1e305 * np.minimum((a - 5.0) ** 2, 100.0)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = epsilon_from_rdp(curve, 1e-5)
    assert 4.8 < result.optimal_order < 5.2
    assert result.value == pytest.approx(1.2e308, rel=1e-2)


def test_rows_are_converted_as_each_alone():
    """Several curves converted together (ε over training) get each exactly the answer it gets alone."""
    from accountants.conversions import epsilon_from_rdp_rows

    q, z = 256 / 60000, 1.1
    steps = np.array([1, 141, 282, 1000, 1410, 2820, 7000, 14063])
    per_step = _subsampled_gaussian(q, z, 1)
    together = epsilon_from_rdp_rows(
        lambda rows, a: steps[rows][:, None] * per_step(a.ravel()).reshape(a.shape), steps.size, 1e-5
    )
    for t, row in zip(steps, together, strict=True):
        alone = epsilon_from_rdp(lambda a, t=t: t * per_step(a), 1e-5)
        assert (row.value, row.optimal_order) == (alone.value, alone.optimal_order)
