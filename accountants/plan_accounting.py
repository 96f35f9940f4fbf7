"""Privacy and calibration of a mechanism plan by the generic accountants, written once.

:func:`account_plan` answers ε at δ for a :class:`~accountants.plans.MechanismPlan`: ``rdp`` (the RDP accountant on
its event tree, improved conversion) and ``tight`` (:mod:`accountants.tight`: exact Gaussian DP where the tree is made
of Gaussian releases, the certified PLD accountant where it can read the tree). Each runs on its own: one that cannot
read the tree (no Rényi curve for a sampled Laplace, no dominating pair for some node) is reported not applicable with
its reason, and ``best`` answers from the others.
:func:`calibrate_plan` finds each one's knob for a target ε over a family of plans indexed by the knob, again each on
its own. Families (:class:`~accountants.planned.PlannedFamily`) and compositions over HTTP build their answers from
these.

The accountants beside ``rdp`` (which also gives the Rényi curve every answer shows) are one table,
:data:`EVENT_ACCOUNTANTS`: each says how it answers a tree at δ, calibrates a tree indexed by its noise, and answers
the prefixes of one run (ε over training). A new accountant is its module and one row here; the names a request may
give (:data:`ACCOUNTANT_NAMES`, the HTTP enums) come from the table.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .calibration import NOISE_SEARCH_RANGE, calibrate, calibrate_rdp
from .conversions import Conversion, noise_for_linear_rdp
from .errors import CalibrationError, ParameterError
from .events import DpEvent
from .plans import Knob, MechanismPlan
from .rdp import Neighbouring, RdpAccountant, UnsupportedEventError, rdp_is_costly
from .reports import AccountantResult, Guarantee, RdpCurve, not_asked
from .tight import tight_calibration, tight_epsilon, tight_epsilons, tight_is_costly

RDP_METHOD = "Rényi curve of the mechanism plan (generic RDP accountant), improved conversion (Balle et al. 2020)"

PlanAt = Callable[[float], MechanismPlan]
"""Plans indexed by the knob on its noise scale (larger is more private, :meth:`Knob.from_noise`)."""

EventCalibration = Callable[
    [Callable[[float], DpEvent], Neighbouring, float, float, float, str], tuple[float, AccountantResult]
]
"""(trees indexed by noise, relation, δ, target ε, a nearby noise, the knob's name) → (the smallest noise meeting the
target, its result); :class:`CalibrationError` with the reason where none does."""


@dataclass(frozen=True)
class EventAccountant:
    """An accountant of event trees beside ``rdp``: its name, ε of a tree at δ (not applicable with the reason where
    it cannot read the tree), its calibration, and ε along the prefixes of one run (in order of length)."""

    name: str
    epsilon: Callable[[DpEvent, Neighbouring, float], AccountantResult]
    calibration: EventCalibration
    along: Callable[[Sequence[DpEvent], Neighbouring, float], list[AccountantResult]]
    costly: Callable[[DpEvent, Neighbouring], bool] = lambda event, neighbouring: False
    """Whether answering the tree is numerical work worth a bounded process (default: a closed form)."""


EVENT_ACCOUNTANTS: list[EventAccountant] = [
    EventAccountant("tight", tight_epsilon, tight_calibration, tight_epsilons, tight_is_costly),
]
"""The accountants beside rdp, in the order answers list them (``tight``: exact Gaussian DP, else the certified PLD)."""


def plan_accountants() -> tuple[str, ...]:
    """The names of the spine's accountants of a plan, ``rdp`` first (read when asked: the table may grow)."""
    return ("rdp", *(a.name for a in EVENT_ACCOUNTANTS))


PLAN_ACCOUNTANTS: tuple[str, ...] = plan_accountants()
"""The plan accountants when the library is imported (the HTTP enums are built from it)."""

ACCOUNTANT_NAMES: tuple[str, ...] = ("best", *PLAN_ACCOUNTANTS, "paper")
"""Every accountant a request may name: ``best`` (the minimum over the valid accountants), the plan accountants,
and ``paper`` (the paper's own statement)."""


def spine_accountants() -> tuple[str, ...]:
    """What a request answered by the spine alone may name: ``best`` and the plan accountants (read when asked)."""
    return ("best", *plan_accountants())


def accountant_names() -> tuple[str, ...]:
    """:data:`ACCOUNTANT_NAMES` as the table stands now."""
    return (*spine_accountants(), "paper")


def costly(plan: MechanismPlan, accountant: str) -> bool:
    """Whether a request for ``accountant`` on ``plan`` is numerical work (an accountant it asks for reads the tree
    by computation, not a closed form): the service runs it in a bounded process."""
    if asks(accountant, "rdp") and rdp_is_costly(plan.event):
        return True
    return any(a.costly(plan.event, plan.neighbouring) for a in EVENT_ACCOUNTANTS if asks(accountant, a.name))


def asks(accountant: str, name: str) -> bool:
    """Whether a request for ``accountant`` needs accountant ``name``'s answer (``best`` needs every one)."""
    return accountant in ("best", name)


@dataclass(frozen=True)
class PlanAccounting:
    """Every generic accountant's answer for one plan at δ (``rdp`` first), and the Rényi conversion behind rdp
    (None where the RDP accountant cannot read the plan)."""

    conversion: Conversion | None
    results: tuple[AccountantResult, ...]

    @functools.cached_property
    def curve(self) -> RdpCurve | None:
        """The conversion's curve as reported (built once: a report and its statement both read it)."""
        return None if self.conversion is None else rdp_curve(self.conversion)

    @property
    def optimal_order(self) -> float | None:
        return None if self.conversion is None else self.conversion.reported_order

    @property
    def warnings(self) -> tuple[str, ...]:
        return () if self.conversion is None else self.conversion.warnings


def account_plan(
    plan: MechanismPlan,
    delta: float,
    accountant: str = "best",
    orders: np.ndarray | None = None,
    refine: bool = True,
    family_reason: str | None = None,
    known: tuple[Conversion | None, Mapping[str, AccountantResult]] = (None, {}),
    rdp_method: str | None = None,
) -> PlanAccounting:
    """ε at ``delta`` (less the plan's reserved δ) from rdp and from every accountant of :data:`EVENT_ACCOUNTANTS` the
    request needs (not asked for: marked so). ``known``: the plan's Rényi conversion and other answers where the
    request already has them (ε over training computes them at its last checkpoint); ``family_reason``: the family's
    words for why an accountant may not read its plan; ``rdp_method``: its words for the Rényi bound."""
    accounted = plan.accounted_delta(delta)
    known_rdp, known_others = known
    conversion, rdp = known_rdp, None
    if conversion is None:
        try:
            conversion = RdpAccountant(plan.neighbouring).epsilon(plan.event, accounted, orders, refine)
        except UnsupportedEventError as error:
            rdp = _not_applicable("rdp", f"no Rényi curve for this plan: {error}", family_reason)
    others = tuple(
        _other(a, plan, accounted, accountant, family_reason, known_others.get(a.name)) for a in EVENT_ACCOUNTANTS
    )
    return PlanAccounting(conversion, (rdp or rdp_result(conversion, method=rdp_method), *others))


def _other(
    other: EventAccountant,
    plan: MechanismPlan,
    accounted: float,
    accountant: str,
    reason: str | None,
    known: AccountantResult | None,
) -> AccountantResult:
    if not asks(accountant, other.name):
        return not_asked(other.name)
    result = known or other.epsilon(plan.event, plan.neighbouring, accounted)
    if not result.applicable:
        return _not_applicable(other.name, result.reason or "", reason)
    return with_reserved_delta(result, plan.reserved_delta)


def with_reserved_delta(result: AccountantResult, reserved: float) -> AccountantResult:
    """A tight answer for releases accounted at δ less ``reserved`` (δ spent outside them, e.g. a solver's failure
    probability, added by a union bound): an upper bound, no longer exact, and without a lower bound — a mechanism that
    fails with that probability and then reveals the record meets δ with (δ − reserved)/(1 − reserved) for its
    releases, so the true ε can lie below the releases' own."""
    if reserved <= 0.0:
        return result
    return replace(
        result,
        kind=Guarantee.CERTIFIED,
        guarantee="upper bound: exact for the releases at δ less the δ spent outside them, which a union bound adds",
        epsilon_lower=None,
    )


def _not_applicable(name: str, reason: str, family_reason: str | None) -> AccountantResult:
    """Why an accountant does not apply: the spine's reason, after the family's own words where it gives them."""
    return AccountantResult.not_applicable(name, reason if family_reason is None else f"{family_reason} ({reason})")


def calibrate_plan(
    plan_at: PlanAt,
    delta: float,
    target: float,
    knob: Knob,
    accountant: str = "best",
    orders: np.ndarray | None = None,
    family_reason: str | None = None,
    rdp_method: str | None = None,
) -> tuple[AccountantResult, ...]:
    """Calibrations of the knob for ε ≤ ``target`` at ``delta`` by rdp and every accountant of
    :data:`EVENT_ACCOUNTANTS` the request needs (in that order); each result's ``calibrated_value`` is the knob in its
    own units. Each accountant calibrates on its own (starting from rdp's answer where there is one); one that cannot
    meet the target, or read the plan, is not applicable with the reason (``rdp_method``: the family's words for the
    Rényi bound). Raises :class:`CalibrationError` where no accountant asked for meets the target (the reasons of
    each)."""
    reference = plan_at(1.0)
    accounted = reference.accounted_delta(delta)
    rdp, noise = _calibrate_rdp(plan_at, accounted, target, knob, orders, (rdp_method, family_reason))
    if accountant == "rdp" and not rdp.applicable:
        raise CalibrationError(rdp.reason or "the rdp accountant cannot meet the target")
    initial = noise if noise is not None else 1.0
    others = []
    for other in EVENT_ACCOUNTANTS:
        if not asks(accountant, other.name):
            others.append(not_asked(other.name))
            continue
        try:
            found, result = other.calibration(
                lambda x: plan_at(x).event, reference.neighbouring, accounted, target, initial, knob.field
            )
            others.append(
                replace(with_reserved_delta(result, reference.reserved_delta), calibrated_value=knob.from_noise(found))
            )
        except CalibrationError as error:
            others.append(_not_applicable(other.name, str(error), family_reason))
    results = (rdp, *others)
    if accountant == "best" and not any(r.applicable for r in results):
        raise none_meets_the_target(results)
    return results


def none_meets_the_target(results: Sequence[AccountantResult]) -> CalibrationError:
    """The error of a calibration no accountant answers: each one's reason."""
    reasons = "; ".join(f"{r.name}: {r.reason}" for r in results)
    return CalibrationError(f"no accountant meets the target: {reasons}")


def _calibrate_rdp(
    plan_at: PlanAt,
    accounted: float,
    target: float,
    knob: Knob,
    orders: np.ndarray | None,
    words: tuple[str | None, str | None],
) -> tuple[AccountantResult, float | None]:
    """The rdp calibration (its result, and the noise found on the knob's noise scale; None where it fails);
    ``words``: the family's for the Rényi bound and for why an accountant may not read its plan.

    Trees whose curve is ρα with ρ·noise² fixed (Gaussian and zCDP releases the knob scales) are inverted exactly
    (:func:`_linear_inverse`); other trees with a zCDP envelope or a pure-DP sum (:meth:`RdpAccountant.bounded`) are
    calibrated on the accountant's own ε, bound included (each evaluation exact, no grid edge: tiny targets need
    orders near 10⁸); the others by :func:`~accountants.calibration.calibrate_rdp` on the curve (the order search of
    a Rényi calibration)."""
    method, family_reason = words
    reference = plan_at(1.0)
    accountant = RdpAccountant(reference.neighbouring)
    try:
        bounded = (
            accountant.envelope(reference.event) is not None or accountant.pure_epsilon(reference.event) is not None
        )
        exact = _linear_inverse(accountant, reference.event, plan_at, (accounted, target), orders) if bounded else None
        if exact is not None:
            noise, conversion = exact
        elif bounded:
            found = calibrate(
                lambda x: accountant.epsilon(plan_at(x).event, accounted, orders).value, target, parameter=knob.field
            )
            noise = found.noise
            conversion = accountant.epsilon(plan_at(noise).event, accounted, orders)
        else:
            searched = calibrate_rdp(
                lambda x: accountant.curve(plan_at(x).event), accounted, target, orders=orders, parameter=knob.field
            )
            noise, conversion = searched.noise, searched.conversion
    except UnsupportedEventError as error:
        return _not_applicable("rdp", f"no Rényi curve for this plan: {error}", family_reason), None
    except (CalibrationError, ParameterError) as error:
        return AccountantResult.not_applicable("rdp", str(error)), None
    return rdp_result(conversion, knob.from_noise(noise), method), noise


def _linear_inverse(
    accountant: RdpAccountant,
    one: DpEvent,
    plan_at: PlanAt,
    goal: tuple[float, float],
    orders: np.ndarray | None,
) -> tuple[float, Conversion] | None:
    """The exact smallest noise, and its conversion, where the plan's Rényi curve is exactly ρα (every leaf a
    Gaussian or a zCDP release without ξ, none pure) with ρ·noise² the same at noise 1 and 2 (the knob scales every
    release): :func:`~accountants.conversions.noise_for_linear_rdp` of the coefficient ρ(1), whose conversion is the
    accountant's own (its zCDP route, exact over real orders); ``one``: the tree at noise 1, ``goal``: (δ, target ε).
    None otherwise, or outside the calibrator's range."""
    accounted, target = goal
    two = plan_at(2.0).event
    at_one, at_two = accountant.envelope(one), accountant.envelope(two)
    if at_one is None or at_two is None or accountant.pure_epsilon(one) is not None:
        return None
    (xi, coefficient), (xi_two, rho_two) = at_one, at_two
    if xi != 0.0 or xi_two != 0.0 or not math.isclose(coefficient, 4.0 * rho_two, rel_tol=1e-12):
        return None
    try:
        noise = noise_for_linear_rdp(coefficient, target, accounted)
    except ValueError:  # targets far below the floats' range (e.g. 1e-300): the root finder says why
        return None
    if not NOISE_SEARCH_RANGE[0] <= noise <= NOISE_SEARCH_RANGE[1]:
        return None
    conversion = accountant.epsilon(plan_at(noise).event, accounted, orders)
    return (noise, conversion) if conversion.value <= target else None


def rdp_result(
    conversion: Conversion | None, calibrated: float | None = None, method: str | None = None
) -> AccountantResult:
    """The rdp accountant's result for a conversion: not applicable where no finite ε is certified. ``method``: the
    family's words for the bound (default: the generic accountant's), with the conversion's route where it took one."""
    if conversion is None or not math.isfinite(conversion.value):
        return AccountantResult.not_applicable("rdp", "the Rényi curve gives no finite ε at this δ")
    method = method or RDP_METHOD
    method = method if conversion.route is None else f"{method}; here {conversion.route}"
    return AccountantResult.certified(
        "rdp", conversion.value, method, optimal_order=conversion.reported_order, calibrated_value=calibrated
    )


def rdp_curve(conversion: Conversion) -> RdpCurve:
    """The conversion's curve on its orders (None where ε(α) is infinite)."""
    values: list[float] = np.asarray(conversion.rdp, dtype=float).tolist()
    eps = tuple(e if math.isfinite(e) else None for e in values)
    return RdpCurve(tuple(np.asarray(conversion.orders, dtype=float).tolist()), eps)
