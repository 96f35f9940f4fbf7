"""The ``tight`` accountant, written once for every event tree: exact where the tree is all Gaussian, the certified
PLD accountant otherwise.

* A tree of Gaussian releases (any nesting of compositions) is one Gaussian with μ = (Σ z⁻²)^½: its ε(δ) is exact
  (Balle & Wang 2018, Thm. 8), and so is its calibration; ``epsilon_lower`` is the root's bracket.
* Anything else :class:`~accountants.pld.PldAccountant` can read (:mod:`accountants.pld.reading`: Laplace, k-ary
  randomized response, pure and bounded-range releases, Poisson-sampled Gaussians and Laplaces under both relations,
  fixed-size batches under replace-one, truncated Poisson batches, and their heterogeneous compositions) gets a
  certified upper bound — pessimistic discretisation, tilted FFT composition with its rounding bounded, wrap-around
  and lost mass bounded, relative accuracy ~1e-4 — and, for the whole run's answer and a calibration's, a certified
  lower bound ``epsilon_lower`` (:mod:`accountants.pld.lower`).
* Other events make ``tight`` not applicable, with the reason; ``best`` then uses the other accountants.

Families call :func:`tight_epsilon` and :func:`tight_calibration` with their event trees; they do not build PLDs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

from . import gdp
from .calibration import NOISE_SEARCH_RANGE, calibrate
from .errors import CalibrationError, DpcalError, ParameterError
from .events import (
    BoundedRangeEvent,
    DpEvent,
    MixtureOfGaussiansEvent,
    SampledWithoutReplacementEvent,
    TruncatedPoissonSampledEvent,
    leaves,
)
from .mechanisms.gaussian import gdp_mu_for
from .pld import PldAccountant, PldAnswer
from .pld.calibration import CALIBRATION_RTOL, PldCalibration, calibrate_pld
from .pld.curve import CirclePlan
from .rdp import Neighbouring, RdpAccountant, UnsupportedEventError, rdp_is_costly
from .reports import AccountantResult

GDP_METHOD = "Gaussian DP of the plan's Gaussian releases, μ = (Σ z⁻²)^½, exact conversion (Balle & Wang 2018, Thm. 8)"
PLD_METHOD = (
    "privacy-loss distribution of the event tree ({relation}; {directions}): pessimistic connect-the-dots "
    "discretisation (Doroshenko et al. 2022) on a loss grid of {grid:.2g}, composed by one exponentially tilted FFT "
    "(tilt {tilt:.3g}) with rounding, wrap-around, lost tail and atoms at +∞ bounded and added to δ "
    "(≤ {allowance:.2g} here); a certified upper bound within ~1e-4 relative of the exact ε; epsilon_lower, where "
    "given: the optimistic discretisation composed on the same circle, every error subtracted (a certified lower "
    "bound)"
)

READING_NOTES: dict[type[DpEvent], str] = {
    BoundedRangeEvent: "bounded-range releases read as blocks of 64 adaptive steps of their class (exact Bellman "
    "recursion over generalised randomised responses on a lattice of range/8: the optimal adaptive composition, "
    "pessimistically)",
    SampledWithoutReplacementEvent: "sampling without replacement read as the least pair dominating it (the remove "
    "pair at m/n and its reverse, Balle, Barthe & Gaboardi 2018)",
    TruncatedPoissonSampledEvent: "truncated Poisson sampling read as the mixture, coin revealed, of the plain and "
    "the cut batch (arXiv 2508.15089)",
    MixtureOfGaussiansEvent: "mixtures of Gaussians read as their own output laws, N(0, z²) against the mixture of "
    "shifted Gaussians, remove and add (exact; Choquette-Choo, Ganesh, Steinke & Thakurta 2024, Cor. 4.7 for vector "
    "releases)",
}
"""What a method sentence adds for releases read through more than their own pair (:mod:`accountants.pld.reading`)."""

GDP_RTOL = 1e-9
"""An exact (Gaussian) calibration is solved to this relative noise (each evaluation is a closed form)."""

PREFIX_METHOD = "; this prefix read off the whole run's tilted spectrum (same leaves, grid, tilt), every error bounded"


def pld_method(answer: PldAnswer, neighbouring: Neighbouring, event: DpEvent | None = None) -> str:
    """The method sentence of a PLD answer: relation, directions, grid, tilt and the error allowance in δ, and how
    the releases that need more than their own pair are read."""
    directions = "worse of the add and remove directions" if answer.directions == 2 else "symmetric pair"
    method = PLD_METHOD.format(
        relation=f"{neighbouring} neighbours",
        directions=directions,
        grid=answer.grid,
        tilt=answer.tilt,
        allowance=answer.error_allowance,
    )
    kinds = set() if event is None else {type(leaf) for _, leaf in leaves(event)}
    notes = [note for kind, note in READING_NOTES.items() if kind in kinds]
    return method + "".join(f"; {note}" for note in notes)


def tight_epsilon(event: DpEvent, neighbouring: Neighbouring, delta: float) -> AccountantResult:
    """ε at δ from the tight accountant: exact GDP, certified PLD, or not applicable with the reason."""
    return _tight(event, PldAccountant(neighbouring), delta, None, lower=True)[0]


def tight_is_costly(event: DpEvent, neighbouring: Neighbouring) -> bool:
    """Whether the tight answer for ``event`` is numerical work (the PLD accountant reads it): an all-Gaussian tree is
    a closed form, and a tree the PLD cannot read is answered at once, not applicable. Reads the tree only."""
    if gdp.is_gaussian(event):
        return False
    try:
        PldAccountant(neighbouring).directions(event)
    except UnsupportedEventError:
        return False
    return True


def tight_epsilons(events: Sequence[DpEvent], neighbouring: Neighbouring, delta: float) -> list[AccountantResult]:
    """:func:`tight_epsilon` for each prefix of one run (in order of length: ε over training).

    The last (longest) prefix, usually the whole run whose answer the request reports too, is queried on its own,
    exactly as :func:`tight_epsilon` would. The others are read off its composition
    (:meth:`PldAccountant.prefix_epsilons`: its grid, tilt and circle, no composition again); a prefix that does
    not suit it (other releases, a finer grid needed) is queried on its own, starting around the previous prefix's
    answer (``near``). Either way certified, within the PLD's stated accuracy of a query on its own."""
    if not events:
        return []
    accountant = PldAccountant(neighbouring)
    last, _, plans = _tight(events[-1], accountant, delta, None, lower=True, plans=True)
    if last.applicable and last.epsilon == 0.0:
        # the whole run is (0, δ)-DP; each prefix releases less (its δ(0) is at most the run's), so is too
        zero = "ε = 0 at this δ for the whole run, hence for every prefix (a prefix is a post-processing of the run)"
        zero = f"{zero}; {last.method}"
        return [*(AccountantResult.certified("tight", 0.0, zero) for _ in events[:-1]), last]
    pld_rows = [k for k, event in enumerate(events[:-1]) if not gdp.is_gaussian(event)]
    from_run = dict(zip(pld_rows, accountant.prefix_epsilons(plans, [events[k] for k in pld_rows], delta), strict=True))
    near: PldAnswer | None = None
    results = []
    for k, event in enumerate(events[:-1]):
        answer = from_run.get(k)
        if answer is not None:
            method = pld_method(answer, neighbouring, event) + PREFIX_METHOD
            results.append(AccountantResult.certified("tight", answer.value, method))
        else:
            result, answer, _ = _tight(event, accountant, delta, near)
            results.append(result)
        near = answer or near
    return [*results, last]


def _tight(
    event: DpEvent,
    accountant: PldAccountant,
    delta: float,
    near: PldAnswer | None,
    lower: bool = False,
    plans: bool = False,
) -> tuple[AccountantResult, PldAnswer | None, tuple[CirclePlan | None, ...]]:
    """The tight result (with its certified lower bound, where ``lower`` or exact), the PLD answer behind it and,
    where ``plans``, each direction's plan (what a run's prefixes reuse: every direction refined; the answer is the
    same either way); no answer and no plans where the result is exact or not applicable."""
    if gdp.is_gaussian(event):
        return gdp.exact_result(gdp.gdp_mu(event), delta, GDP_METHOD), None, ()
    try:
        if plans:
            answer, circles = accountant.epsilon_and_plans(event, delta, near=near, lower=lower)
        else:
            answer, circles = accountant.epsilon(event, delta, near=near, lower=lower), ()
    except UnsupportedEventError as error:
        return AccountantResult.not_applicable("tight", f"no PLD for this plan: {error}"), None, ()
    except ParameterError as error:
        return AccountantResult.not_applicable("tight", f"the PLD accountant certifies no ε here: {error}"), None, ()
    return _pld_result(answer, accountant.neighbouring, event), answer, circles


def _pld_result(answer: PldAnswer, neighbouring: Neighbouring, event: DpEvent) -> AccountantResult:
    """The tight result of a PLD answer: its ε, its lower bound where computed, and the method sentence."""
    method = pld_method(answer, neighbouring, event)
    return AccountantResult.certified("tight", answer.value, method, epsilon_lower=answer.lower)


def tight_calibration(
    event_at: Callable[[float], DpEvent],
    neighbouring: Neighbouring,
    delta: float,
    target: float,
    initial: float,
    parameter: str = "noise_multiplier",
) -> tuple[float, AccountantResult]:
    """(noise, result): the smallest noise (on the knob's noise scale) whose tight ε meets ``target``.

    All-Gaussian trees: exact (the generic root finder on GDP). Otherwise :func:`~accountants.pld.calibration.
    calibrate_pld`: the noise certifies the target and the noise × (1 − 1e-4) does not; the result is then the one a
    privacy request gives at that noise (:func:`_as_answered`, the noise moved up by 1e-4 where that answer is above
    the target). ``initial`` is a nearby noise (the RDP calibration). Raises :class:`CalibrationError` with the reason
    when the target cannot be met."""
    if gdp.is_gaussian(event_at(initial)):
        noise = _gaussian_inverse(event_at, delta, target, initial)
        if noise is None:
            epsilon_at = lambda x: gdp.epsilon(event_at(x), delta)  # noqa: E731
            noise = calibrate(epsilon_at, target, rtol=GDP_RTOL, parameter=parameter).noise
        return noise, gdp.exact_result(gdp.gdp_mu(event_at(noise)), delta, GDP_METHOD)
    accountant = PldAccountant(neighbouring)
    slope = _renyi_slope(event_at, neighbouring, delta, initial)
    try:
        found = calibrate_pld(event_at, accountant, delta, target, initial, parameter=parameter, slope=slope)
    except UnsupportedEventError as error:
        raise CalibrationError(f"no PLD for this plan: {error}") from error
    return _as_answered(event_at, neighbouring, delta, target, found)


SLOPE_STEP = 0.01
"""The Rényi ε's slope in log σ is measured between the starting noise and this much less."""


def _renyi_slope(
    event_at: Callable[[float], DpEvent], neighbouring: Neighbouring, delta: float, noise: float
) -> float | None:
    """−d log ε/d log σ of the Rényi ε at ``noise`` (a secant over :data:`SLOPE_STEP`), where its curve is closed
    forms and series: the tight ε's slope is within a few per cent of it for DP-SGD (1.24 / 1.90 / 3.2 against
    1.22 / 1.86 / 3.14 at ε ≈ 1 / 3 / 8 on MNIST), so the PLD search's first step lands near the crossing. None
    where it is not known cheaply (the search then assumes its default)."""
    event = event_at(noise)
    if rdp_is_costly(event):
        return None
    accountant = RdpAccountant(neighbouring)
    try:
        here = accountant.epsilon(event, delta).value
        below = accountant.epsilon(event_at(noise * (1.0 - SLOPE_STEP)), delta).value
    except DpcalError:
        return None
    if not (0.0 < here < below < math.inf):
        return None
    return math.log(below / here) / -math.log1p(-SLOPE_STEP)


ANSWERED_STEPS = 8
"""How many times a calibrated noise may move up by the calibration's tolerance to meet the target as answered."""


def _as_answered(
    event_at: Callable[[float], DpEvent], neighbouring: Neighbouring, delta: float, target: float, found: PldCalibration
) -> tuple[float, AccountantResult]:
    """The calibrated noise and the ε a privacy request answers there (the same query: one number for one mechanism
    on every endpoint). Where the calibration's evaluation there was fresh (:attr:`PldCalibration.fresh`), it is that
    answer, lower bound included. Otherwise it started from a neighbour's grid; a fresh answer picks its grid for the
    question and can land a few 1e-5 above the target (both are certified upper bounds). Where it does, the noise
    moves up by the calibration's tolerance until the fresh answer meets the target too: the noise stays within 1e-4
    per step of the smallest that certifies it. The lower bound is then the calibration's own at its noise (from its
    passes), a fresh one where the noise moved."""
    if found.fresh:  # the calibration's answer there is the accountant's own: nothing to compute again
        answer = replace(found.answer, lower=found.lower())
        return found.noise, _pld_result(answer, neighbouring, event_at(found.noise))
    accountant, noise = PldAccountant(neighbouring), found.noise
    for step in range(ANSWERED_STEPS):
        result = _tight(event_at(noise), accountant, delta, None, lower=step > 0)[0]
        if result.applicable and result.epsilon is not None and result.epsilon <= target:
            if step == 0:
                bound = found.lower()
                result = replace(result, epsilon_lower=None if bound is None else min(bound, result.epsilon))
            return noise, result
        noise *= 1.0 + CALIBRATION_RTOL
    raise CalibrationError(
        f"the PLD accountant's answers at the calibrated noise do not meet target_epsilon={target:g} within its "
        "tolerance (please report this)"
    )


def _gaussian_inverse(
    event_at: Callable[[float], DpEvent], delta: float, target: float, initial: float
) -> float | None:
    """The exact smallest noise of an all-Gaussian tree whose every multiplier scales with the knob (then μ·noise is
    constant): μ₁/μ* with μ* the largest μ meeting (target, δ) (:func:`gdp_mu_for`), raised to the next float until
    the rounded noise itself meets the target. None where μ·noise is not constant (a Gaussian the knob leaves fixed)
    or the noise is outside the calibrator's search range."""
    low, high = initial, 2.0 * initial
    scale = gdp.gdp_mu(event_at(low)) * low
    if not math.isclose(scale, gdp.gdp_mu(event_at(high)) * high, rel_tol=1e-12):
        return None
    noise = scale / gdp_mu_for(target, delta)
    low, high = NOISE_SEARCH_RANGE
    if not low <= noise <= high:
        return None  # outside the calibrator's range: the root finder says why (or answers at its edge)
    while gdp.epsilon(event_at(noise), delta) > target:
        noise = math.nextafter(noise, math.inf)
    return noise
