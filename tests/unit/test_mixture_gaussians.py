"""The mixture-of-Gaussians event (a Gaussian release whose sensitivity is random), against oracles that are not its
own method: dp_accounting 0.6.0's PLD of ``MixtureOfGaussiansDpEvent`` computed live (pessimistic at a value
discretisation of 1e-5, and its optimistic estimate, which a certified upper bound may never be below); the Rényi
moments by adaptive quadrature and, at integer orders, by enumerating every draw of the components; and the
special cases that are other events (shifts {0, s}: the Poisson-sampled Gaussian, bit for bit)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate

from accountants.errors import ParameterError
from accountants.events import DpEvent, GaussianEvent, MixtureOfGaussiansEvent, PoissonSampledEvent, SelfComposedEvent
from accountants.mechanisms.mixture_gaussian import rdp_kernel
from accountants.pld import PldAccountant
from accountants.rdp import RdpAccountant, UnsupportedEventError
from accountants.tight import tight_epsilon

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting.pld import privacy_loss_distribution as dpa_pld  # noqa: E402


def _configs() -> list[tuple[float, tuple[float, ...], tuple[float, ...], int, float]]:  # (σ, s, p, T, δ)
    """15 seeded mixtures: 2–5 components (a zero shift in most), the largest shift 0.012–0.03 noise standard
    deviations, composed 300 to 2000 times (ε about 0.3 to 3), δ of 1e-5 or 1e-6. dp_accounting builds its
    discretisation point by point in Python, so its cost grows with the single release's loss range over 1e-5: small
    shifts composed many times keep each configuration to seconds."""
    rng = np.random.default_rng(20261128)
    out = []
    for _ in range(15):
        m = int(rng.integers(2, 6))
        sens = np.sort(rng.uniform(0.2, 3.0, size=m))
        if rng.random() < 0.8:
            sens[0] = 0.0
        probs = rng.dirichlet(np.ones(m))
        sigma = float(sens[-1] / rng.uniform(0.012, 0.03))
        count = int(rng.choice([300, 1000, 2000]))
        delta = float(rng.choice([1e-5, 1e-6]))
        out.append((sigma, tuple(float(s) for s in sens), tuple(float(p) for p in probs / probs.sum()), count, delta))
    return out


Config = tuple[float, tuple[float, ...], tuple[float, ...], int, float]


def _dp_accounting_epsilon(
    sigma: float, sens: tuple[float, ...], probs: tuple[float, ...], count: int, delta: float, pessimistic: bool
) -> float:
    pld = dpa_pld.from_mixture_gaussian_mechanism(
        sigma,
        list(sens),
        list(probs),
        pessimistic_estimate=pessimistic,
        value_discretization_interval=1e-5 if pessimistic else 1e-4,
        use_connect_dots=pessimistic,  # its optimistic estimate is the privacy-buckets one
    )
    if count > 1:
        pld = pld.self_compose(count)
    return float(pld.get_epsilon_for_delta(delta))


def _event(sigma: float, sens: tuple[float, ...], probs: tuple[float, ...], count: int) -> DpEvent:
    mixture = MixtureOfGaussiansEvent(sigma, sens, probs)
    return mixture if count == 1 else SelfComposedEvent(mixture, count)


@pytest.mark.slow
@pytest.mark.parametrize("config", _configs(), ids=lambda c: f"m{len(c[1])}-T{c[3]}")
def test_tight_matches_dp_accounting_live(config: Config) -> None:
    sigma, sens, probs, count, delta = config
    ours = tight_epsilon(_event(sigma, sens, probs, count), "add-remove", delta)
    assert ours.applicable and ours.epsilon is not None
    pessimistic = _dp_accounting_epsilon(sigma, sens, probs, count, delta, True)
    optimistic = _dp_accounting_epsilon(sigma, sens, probs, count, delta, False)
    assert abs(ours.epsilon - pessimistic) <= 1e-3 * pessimistic + 1e-5, (ours.epsilon, pessimistic)
    assert ours.epsilon >= optimistic, (ours.epsilon, optimistic)


def test_two_shifts_are_the_poisson_sampled_gaussian_bit_for_bit() -> None:
    q, z, steps = 0.01, 1.1, 3000
    mixture = SelfComposedEvent(MixtureOfGaussiansEvent(2.2, (0.0, 2.0), (1 - q, q)), steps)
    poisson = SelfComposedEvent(PoissonSampledEvent(q, GaussianEvent(z)), steps)
    assert PldAccountant().epsilon(mixture, 1e-5).value == PldAccountant().epsilon(poisson, 1e-5).value
    assert RdpAccountant().epsilon(mixture, 1e-5).value == RdpAccountant().epsilon(poisson, 1e-5).value
    plain = MixtureOfGaussiansEvent(3.0, (0.0, 1.5), (0.0, 1.0))  # one shift: a Gaussian at z = 2
    assert RdpAccountant().epsilon(plain, 1e-5).value == RdpAccountant().epsilon(GaussianEvent(2.0), 1e-5).value


def _moment_by_quadrature(mus: np.ndarray, w: np.ndarray, alpha: float, add: bool) -> float:
    """log E_Q Y^α (remove) or log E_Q Y^{1−α} (add), Y = Σ wᵢ e^{μᵢx − μᵢ²/2}, by adaptive quadrature."""
    power = 1.0 - alpha if add else alpha

    def integrand(x: float) -> float:
        return math.exp(-x * x / 2 + power * math.log(float(np.dot(w, np.exp(mus * x - mus * mus / 2))))) / math.sqrt(
            2 * math.pi
        )

    centre = float(power * np.dot(w, mus))
    value, _ = integrate.quad(integrand, centre - 40, centre + 40 + abs(power) * mus[-1], limit=400, epsrel=1e-12)
    return math.log(value)


def _remove_by_draws(mus: np.ndarray, w: np.ndarray, alpha: int) -> float:
    """log E_Q Y^α at an integer α: E over α independent draws I of exp(Σ_{j<k} μ_{I_j}μ_{I_k})."""
    total = 0.0
    for draw in itertools.product(range(mus.size), repeat=alpha):
        m = mus[list(draw)]
        total += float(np.prod(w[list(draw)])) * math.exp((m.sum() ** 2 - (m * m).sum()) / 2)
    return math.log(total)


MIXTURES = [
    (np.array([0.0, 1.0, 2.0]), np.array([0.81, 0.18, 0.01])),
    (np.array([0.0, 0.5, 1.0, 1.5]), np.array([0.7, 0.2, 0.07, 0.03])),
    (np.array([0.3, 1.2]), np.array([0.5, 0.5])),
]


@pytest.mark.parametrize("mixture", range(len(MIXTURES)))
def test_renyi_curve_is_above_both_moments_and_close(mixture: int) -> None:
    mus, w = MIXTURES[mixture]
    alphas = np.array([1.3, 2.0, 3.0, 4.0, 6.5, 12.0])
    curve = rdp_kernel(tuple(mus), tuple(w), alphas)
    for alpha, value in zip(alphas, curve, strict=True):
        exact = max(_moment_by_quadrature(mus, w, alpha, add) for add in (False, True)) / (alpha - 1)
        if float(alpha).is_integer() and alpha <= 4:
            assert (
                abs(
                    _remove_by_draws(mus, w, int(alpha)) / (alpha - 1)
                    - _moment_by_quadrature(mus, w, alpha, False) / (alpha - 1)
                )
                < 1e-9
            )
        assert value >= exact * (1 - 1e-9), (alpha, value, exact)
        assert value <= exact * 1.08 + 1e-12, (alpha, value, exact)
        cap = math.log(float(np.dot(w, np.exp(alpha * (alpha - 1) * mus * mus / 2)))) / (alpha - 1)
        assert value <= cap * (1 + 1e-12)


def test_renyi_epsilon_is_never_below_the_tight_one() -> None:
    event = SelfComposedEvent(MixtureOfGaussiansEvent(1.5, (0.0, 1.0, 2.0, 3.0), (0.7, 0.2, 0.07, 0.03)), 200)
    rdp = RdpAccountant().epsilon(event, 1e-6).value
    tight = tight_epsilon(event, "add-remove", 1e-6)
    assert tight.epsilon is not None and tight.epsilon <= rdp <= 1.25 * tight.epsilon


def test_replace_one_is_not_applicable_with_the_reason() -> None:
    event = MixtureOfGaussiansEvent(1.0, (0.0, 1.0, 2.0), (0.81, 0.18, 0.01))
    with pytest.raises(UnsupportedEventError, match="add/remove"):
        RdpAccountant("replace-one").curve(event)
    assert not tight_epsilon(event, "replace-one", 1e-5).applicable


@pytest.mark.parametrize(
    ("sens", "probs", "field"),
    [
        ((0.0, 1.0), (0.5, 0.6), "probabilities"),
        ((0.0, -1.0), (0.5, 0.5), "sensitivities.1"),
        ((0.0, 1.0), (0.5,), "probabilities"),
        ((0.0, 0.0), (0.5, 0.5), "sensitivities"),
        ((), (), "sensitivities"),
        ((0.0, 1.0), (0.5, float("nan")), "probabilities.1"),
    ],
)
def test_bad_mixtures_name_the_field(sens: tuple[float, ...], probs: tuple[float, ...], field: str) -> None:
    with pytest.raises(ParameterError) as caught:
        MixtureOfGaussiansEvent(1.0, sens, probs)
    assert caught.value.issues[0].field == field


MIXTURE_TREE = {
    "type": "repeated",
    "count": 500,
    "mechanism": {
        "type": "mixture-of-gaussians",
        "noise_multiplier": 2.0,
        "sensitivities": [0.0, 1.0, 2.0],
        "probabilities": [0.9801, 0.0198, 0.0001],
    },
}


def test_compose_reads_the_node_as_the_event_and_calibrates_its_noise() -> None:
    from accountants.pipeline import Composition, calibrate, privacy
    from accountants.pipeline.pointer import with_number

    event = SelfComposedEvent(MixtureOfGaussiansEvent(2.0, (0.0, 1.0, 2.0), (0.9801, 0.0198, 0.0001)), 500)
    composed = privacy(Composition(MIXTURE_TREE, 1e-5, "tight"))
    direct = tight_epsilon(event, "add-remove", 1e-5)
    assert composed.epsilon == direct.epsilon
    found = calibrate(Composition(MIXTURE_TREE, 1e-5, "tight"), 1.0, "/mechanism/noise_multiplier")
    again = privacy(
        Composition(with_number(MIXTURE_TREE, "/mechanism/noise_multiplier", found.calibrated_value), 1e-5, "tight")
    )
    assert 1.0 * (1 - 2e-3) <= again.epsilon <= 1.0


def test_compose_names_the_bad_field_of_the_node() -> None:
    from accountants.pipeline import Composition, privacy

    bad = {**MIXTURE_TREE, "mechanism": {**MIXTURE_TREE["mechanism"], "probabilities": [0.5, "x", 0.5]}}
    with pytest.raises(ParameterError) as caught:
        privacy(Composition(bad, 1e-5, "tight"))
    assert caught.value.issues[0].field == "mechanism.mechanism.probabilities.1"


def test_a_shift_beyond_1e100_noise_deviations_is_refused() -> None:
    with pytest.raises(ParameterError) as caught:
        MixtureOfGaussiansEvent(1e-150, (0.0, 1e300), (0.5, 0.5))
    assert caught.value.issues[0].field == "sensitivities"
