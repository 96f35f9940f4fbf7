"""The PLD accountant on Poisson-subsampled Gaussians: analytic Gaussian, exact one-step profile (both directions),
dp_accounting's PLD, prv-accountant's certified interval, dpcal's RDP bound, monotonicity, bad and extreme inputs."""

import itertools
import math

import dp_accounting as dpa
import mpmath
import numpy as np
import pytest
from prv_accountant import PRVAccountant
from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

from accountants.conversions import DEFAULT_ORDERS, epsilon_from_rdp
from accountants.errors import ParameterError
from accountants.events import GaussianEvent, PoissonSampledEvent, SelfComposedEvent
from accountants.mechanisms.gaussian import gaussian_delta, gaussian_epsilon
from accountants.mechanisms.poisson_gaussian import poisson_subsampled_gaussian_rdp
from accountants.pld import PldAccountant


def _event(q: float, z: float, steps: int):
    inner = GaussianEvent(z) if q == 1.0 else PoissonSampledEvent(q, GaussianEvent(z))
    return SelfComposedEvent(inner, steps)


def poisson_gaussian_pld_epsilon(q: float, z: float, steps: int, delta: float) -> float:
    return PldAccountant().epsilon(_event(q, z, steps), delta).value


def poisson_gaussian_pld_delta(q: float, z: float, steps: int, epsilon: float) -> float:
    return PldAccountant().delta(_event(q, z, steps), epsilon).value


DELTA = 1e-5
Q_MNIST = 256 / 60000


@pytest.mark.parametrize(("z", "steps", "delta"), [(1.0, 1, 1e-5), (1.0, 10, 1e-5), (5.0, 100, 1e-5), (2.0, 50, 1e-8)])
def test_full_batch_reproduces_analytic_gaussian_from_above(z, steps, delta):
    # q = 1 through a Poisson event (not merged into one Gaussian): the PLD path, not the closed form
    event = SelfComposedEvent(PoissonSampledEvent(1.0, GaussianEvent(z)), steps)
    ours = PldAccountant().epsilon(event, delta).value
    exact = gaussian_epsilon(z, delta, steps)
    assert exact <= ours <= exact * (1 + 1e-3)
    for eps in (0.5 * exact, exact, 1.5 * exact):
        true = gaussian_delta(z, eps, steps)
        assert true <= PldAccountant().delta(event, eps).value <= true * (1 + 1e-3) + 1e-10


def dpa_pld_epsilon(q: float, z: float, steps: int, delta: float = DELTA) -> float:
    accountant = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    event = dpa.GaussianDpEvent(z) if q == 1.0 else dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z))
    return accountant.compose(dpa.SelfComposedDpEvent(event, steps)).get_epsilon(delta)


# anchors a1–a4 (a1 is also the MNIST configuration: q = 256/60000, z = 1.1, 60 epochs); tight = dpa PLD at
# vdi = 1e-5 ≈ prv estimate
ANCHORS = [
    ("a1", Q_MNIST, 1.1, int(60 / Q_MNIST), 2.3815978094),
    ("a2", 0.01, 1.0, 1000, 1.8282367367),
    ("a3", 0.001, 0.8, 10000, 0.7823891428),
    ("a4", 1.0, 10.0, 100, 4.377178096),
    ("b1", 1.0, 1.0, 1, 4.377178096),
    ("b2", 1.0, 1.0, 10, 17.856586830),
    ("b3", 1.0, 5.0, 100, 9.997256146),
]


@pytest.mark.parametrize(("name", "q", "z", "steps", "tight"), ANCHORS, ids=[a[0] for a in ANCHORS])
def test_anchors_and_dp_accounting_pld(name, q, z, steps, tight):
    ours = poisson_gaussian_pld_epsilon(q, z, steps, DELTA)
    theirs = dpa_pld_epsilon(q, z, steps)
    # ours is an upper bound: never below the tight value (to the anchors' 1e-9 printing), and within 1e-3 of it
    assert tight - 1e-9 <= ours <= tight * (1 + 1e-3)
    assert ours == pytest.approx(theirs, rel=2e-3)


@pytest.mark.parametrize(("q", "z", "steps"), [(0.01, 1.0, 1000), (0.05, 2.0, 200)])
def test_within_prv_certified_interval(q, z, steps):
    accountant = PRVAccountant(
        prvs=[PoissonSubsampledGaussianMechanism(q, z)],
        max_self_compositions=[steps],
        eps_error=0.01,
        delta_error=DELTA / 1000,
    )
    lower, _, upper = accountant.compute_epsilon(delta=DELTA, num_self_compositions=[steps])
    ours = poisson_gaussian_pld_epsilon(q, z, steps, DELTA)
    assert lower <= ours <= upper + 1e-6


@pytest.mark.parametrize(
    ("q", "z", "steps"), [(Q_MNIST, 1.1, 14062), (0.01, 1.0, 1000), (0.001, 0.8, 10000), (0.2, 0.7, 50), (0.5, 3.0, 10)]
)
def test_tighter_than_rdp_and_positive(q, z, steps):
    rdp = epsilon_from_rdp(lambda a: steps * poisson_subsampled_gaussian_rdp(q, z, a), DELTA, DEFAULT_ORDERS).value
    ours = poisson_gaussian_pld_epsilon(q, z, steps, DELTA)
    assert 0.0 < ours < rdp


def exact_one_step_deltas(q: float, z: float, eps: float) -> tuple[float, float, float, float]:
    """δ(ε) of one subsampled Gaussian in closed form (40 digits), (remove, add), and the outcome x where each
    direction's loss crosses ε: δ = P(L > ε) − e^ε Q(L > ε), with {L > ε} a half-line in x."""
    mpmath.mp.dps = 40
    q, z, eps = mpmath.mpf(q), mpmath.mpf(z), mpmath.mpf(eps)
    half = mpmath.mpf(1) / 2
    # remove: P = (1−q)μ₀ + qμ₁, Q = μ₀; L > ε ⟺ x > x_r
    x_r = z * z * mpmath.log((mpmath.exp(eps) - (1 - q)) / q) + half
    sf = lambda x: mpmath.ncdf(-x)  # noqa: E731
    remove = (1 - q) * sf(x_r / z) + q * sf((x_r - 1) / z) - mpmath.exp(eps) * sf(x_r / z)
    # add: P = μ₀, Q = (1−q)μ₀ + qμ₁; L > ε ⟺ x < x_a (no such x when e^{−ε} ≤ 1 − q)
    w = (mpmath.exp(-eps) - (1 - q)) / q
    add, x_a = mpmath.mpf(0), -mpmath.inf
    if w > 0:
        x_a = z * z * mpmath.log(w) + half
        add = mpmath.ncdf(x_a / z) - mpmath.exp(eps) * ((1 - q) * mpmath.ncdf(x_a / z) + q * mpmath.ncdf((x_a - 1) / z))
    return float(remove), float(add), float(x_r), float(x_a)


def exact_one_step_delta(q: float, z: float, eps: float) -> float:
    return max(exact_one_step_deltas(q, z, eps)[:2])


@pytest.mark.parametrize(("q", "z", "eps"), [(0.1, 0.7, 0.3), (0.01, 1.0, 0.05), (0.1, 0.7, 0.005)])
def test_exact_one_step_closed_form_agrees_with_quadrature(q, z, eps):
    remove, add, x_r, x_a = exact_one_step_deltas(q, z, eps)
    mpmath.mp.dps = 30
    e = mpmath.exp(eps)
    p0 = lambda x: mpmath.npdf(x, 0, z)  # noqa: E731
    mix = lambda x: (1 - q) * p0(x) + q * mpmath.npdf(x, 1, z)  # noqa: E731
    quad_remove = mpmath.quad(lambda x: mix(x) - e * p0(x), [x_r, x_r + 5, mpmath.inf])
    assert remove == pytest.approx(float(quad_remove), rel=1e-12)
    quad_add = mpmath.quad(lambda x: p0(x) - e * mix(x), [-mpmath.inf, x_a - 5, x_a]) if x_a > -math.inf else 0
    assert add == pytest.approx(float(quad_add), rel=1e-12, abs=1e-30)


@pytest.mark.parametrize(("q", "z"), [(0.01, 1.0), (0.1, 0.7), (0.5, 2.0), (1.0, 1.5)])
def test_one_step_is_above_the_exact_profile_and_close(q, z):
    for eps in (0.0, 0.05, 0.2, 0.5, 1.0, 2.0):
        exact = exact_one_step_delta(q, z, eps)
        ours = poisson_gaussian_pld_delta(q, z, 1, eps)
        assert exact <= ours <= exact * (1 + 1e-3) + 1e-12, (eps, exact, ours)


def test_monotonicity_grid():
    q, steps = 0.01, 500
    by_z = [poisson_gaussian_pld_epsilon(q, z, steps, DELTA) for z in (0.8, 1.0, 1.3, 2.0)]
    assert all(a > b for a, b in itertools.pairwise(by_z))
    by_t = [poisson_gaussian_pld_epsilon(q, 1.0, t, DELTA) for t in (10, 100, 500, 2000)]
    assert all(a < b for a, b in itertools.pairwise(by_t))
    by_q = [poisson_gaussian_pld_epsilon(r, 1.0, steps, DELTA) for r in (0.002, 0.01, 0.05)]
    assert all(a < b for a, b in itertools.pairwise(by_q))
    deltas = [poisson_gaussian_pld_delta(q, 1.0, steps, e) for e in np.linspace(0.0, 3.0, 16)]
    assert all(a > b for a, b in itertools.pairwise(deltas))
    # ε and δ are consistent: δ(ε(δ)) ≤ δ up to the two queries' own accuracies (each is an upper bound)
    for d in (1e-3, 1e-5, 1e-7):
        eps = poisson_gaussian_pld_epsilon(q, 1.0, steps, d)
        assert poisson_gaussian_pld_delta(q, 1.0, steps, eps) <= d * (1 + 1e-3)
        assert poisson_gaussian_pld_delta(q, 1.0, steps, eps * (1 - 1e-3)) > d


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"q": 0.0}, "sampling_rate"),
        ({"q": 1.5}, "sampling_rate"),
        ({"q": math.nan}, "sampling_rate"),
        ({"z": 0.0}, "noise_multiplier"),
        ({"z": -1.0}, "noise_multiplier"),
        ({"z": math.inf}, "noise_multiplier"),
        ({"steps": 0}, "count"),
        ({"steps": 10.5}, "count"),
        ({"steps": True}, "count"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"delta": -1e-5}, "delta"),
    ],
)
def test_bad_input_names_the_field(args, field):
    values = {"q": 0.01, "z": 1.0, "steps": 10, "delta": DELTA} | args
    with pytest.raises(ParameterError) as info:
        poisson_gaussian_pld_epsilon(values["q"], values["z"], values["steps"], values["delta"])
    assert info.value.issues[0].field == field


def test_bad_epsilon_and_relation_name_the_field():
    with pytest.raises(ParameterError) as info:
        poisson_gaussian_pld_delta(0.01, 1.0, 10, -0.5)
    assert info.value.issues[0].field == "epsilon"
    with pytest.raises(ParameterError) as info:
        PldAccountant("substitute")  # type: ignore[arg-type]  # the wrong relation on purpose
    assert info.value.issues[0].field == "neighbouring"


@pytest.mark.parametrize(
    ("q", "z", "steps"),
    [
        (1e-12, 1.0, 1000),
        (0.01, 1e-3, 1000),
        (0.01, 1e3, 1000),
        (0.01, 1.0, 10**12),
        (1.0, 1e-3, 10),
        (1e-12, 1e3, 10**12),
    ],
)
def test_extreme_values_answer_or_name_the_reason(q, z, steps):
    for relation in ("add-remove", "replace-one"):
        accountant = PldAccountant(relation)
        for d in (DELTA, 1e-300):
            try:
                eps = accountant.epsilon(_event(q, z, steps), d).value
            except ParameterError as error:  # too wide a composition, or δ below what can be certified: said so
                assert error.issues[0].field in ("delta", "event")
            else:
                assert math.isfinite(eps) and eps >= 0.0
        try:
            value = accountant.delta(_event(q, z, steps), 1.0).value
        except ParameterError as error:
            assert error.issues[0].field == "event"
        else:
            assert math.isfinite(value) and 0.0 <= value <= 1.0


@pytest.mark.parametrize(
    ("q", "z", "steps", "delta"),
    [
        (29806727 / 634485894, 0.4548396514360427, 498, 5.002567439723329e-200),
        (90791 / 343907213, 0.4298, 288, 1.9e-280),
    ],
)
def test_tiny_delta_wide_window_locates_without_overflow(q, z, steps, delta):
    """The suffix sums that locate ε(δ) once overflowed (a·e^{shift−L} with both factors capped at e^700) on such
    windows; the property test found it. Warnings are errors in the suite: the answer comes out finite and positive
    with no overflow on the way."""
    ours = poisson_gaussian_pld_epsilon(q, z, steps, delta)
    assert math.isfinite(ours) and ours > 0.0


@pytest.mark.parametrize(
    ("q", "z", "steps", "neighbouring"),
    [
        (256 / 60000, 0.6557, 14062, "add-remove"),  # the add direction far below the remove one: it stops at its probe
        (256 / 60000, 2.025, 14062, "add-remove"),
        (0.01, 1.0, 1000, "add-remove"),
        (0.01, 1.0, 1000, "replace-one"),
    ],
)
def test_a_direction_below_the_answer_stops_early_with_the_same_answer(q, z, steps, neighbouring):
    """epsilon() may stop a direction after a pass that is already below the worse direction's answer; the answer
    (value, grid, tilt, error allowance, lower bound) is the one with every direction refined."""
    event = SelfComposedEvent(PoissonSampledEvent(q, GaussianEvent(z)), steps)
    accountant = PldAccountant(neighbouring)
    quick = accountant.epsilon(event, 1e-5, lower=True)
    refined, _ = accountant.epsilon_and_plans(event, 1e-5, lower=True)
    assert (quick.value, quick.grid, quick.tilt, quick.error_allowance, quick.lower) == (
        refined.value, refined.grid, refined.tilt, refined.error_allowance, refined.lower,
    )  # fmt: skip
    assert all(a >= b for a, b in zip(quick.by_direction, refined.by_direction, strict=True))
    if z == 0.6557:
        assert min(quick.by_direction) > min(refined.by_direction)  # the add direction did stop at its probe
        assert min(quick.by_direction) < quick.value


def test_evaluate_above_a_ceiling_leaves_the_other_directions_out():
    """A calibration's noise that is too small needs only one direction above the target: the others are not run
    (the answer says it is partial), and their values stay those of the nearby answer it started from."""
    event = SelfComposedEvent(PoissonSampledEvent(256 / 60000, GaussianEvent(0.6557)), 14062)
    accountant = PldAccountant("add-remove")
    near = accountant.epsilon(event, 1e-5)
    worse = int(np.argmax(near.by_direction))
    partial, _ = accountant.evaluate(event, 1e-5, near=near, ceiling=0.5 * near.value)
    assert partial.partial and partial.value > 0.5 * near.value
    assert partial.value == pytest.approx(near.value, rel=1e-3)  # the worse direction, refined from its start
    assert partial.by_direction[1 - worse] == near.by_direction[1 - worse]
    complete, _ = accountant.evaluate(event, 1e-5, near=near)
    assert not complete.partial and complete.value == pytest.approx(near.value, rel=1e-3)
    assert 0.0 < complete.by_direction[1 - worse] < complete.value  # computed (its probe: below the answer)


def test_evaluate_above_a_ceiling_without_a_start_keeps_each_direction_first_pass():
    """Without a nearby answer every direction's first pass is run; above the ceiling the others are not refined:
    the answer is partial, each direction's value a certified bound of its own (its probe's)."""
    event = SelfComposedEvent(PoissonSampledEvent(256 / 60000, GaussianEvent(0.6557)), 14062)
    accountant = PldAccountant("add-remove")
    full = accountant.epsilon(event, 1e-5)
    partial, _ = accountant.evaluate(event, 1e-5, ceiling=0.5 * full.value)
    assert partial.partial and partial.value == full.value
    assert all(a >= b for a, b in zip(partial.by_direction, full.by_direction, strict=True))
    assert not accountant.evaluate(event, 1e-5, ceiling=2.0 * full.value)[0].partial
