"""Privacy and calibration of a mechanism plan by the generic accountants, written once.

:func:`account_plan` answers ε at δ for a :class:`~accountants.plans.MechanismPlan`: ``rdp`` (the RDP accountant on
its event tree, improved conversion) and ``tight`` (:mod:`accountants.tight`: exact Gaussian DP where the tree is made
of Gaussian releases, the certified PLD accountant where it can read the tree). Each runs on its own: one that cannot
read the tree (no Rényi curve for a sampled Laplace, no dominating pair for some node) is reported not applicable with
its reason, and ``best`` answers from the others.
:func:`calibrate_plan` finds each one's knob for a target ε over a family of plans indexed by the knob, again each on
its own. Families (:class:`~accountants.planned.PlannedFamily`) and compositions over HTTP build their answers from
these.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from .calibration import calibrate, calibrate_rdp
from .conversions import Conversion
from .errors import CalibrationError, ParameterError
from .plans import Knob, MechanismPlan
from .rdp import RdpAccountant, UnsupportedEventError
from .reports import AccountantResult, Guarantee, RdpCurve, not_asked
from .tight import tight_calibration, tight_epsilon

RDP_METHOD = "Rényi curve of the mechanism plan (generic RDP accountant), improved conversion (Balle et al. 2020)"

PlanAt = Callable[[float], MechanismPlan]
"""Plans indexed by the knob on its noise scale (larger is more private, :meth:`Knob.as_noise`)."""


@dataclass(frozen=True)
class PlanAccounting:
    """Every generic accountant's answer for one plan at δ (``rdp`` first), and the Rényi conversion behind rdp
    (None where the RDP accountant cannot read the plan)."""

    conversion: Conversion | None
    results: tuple[AccountantResult, ...]

    @property
    def curve(self) -> RdpCurve | None:
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
    tight_reason: str | None = None,
    known: tuple[Conversion | None, AccountantResult | None] = (None, None),
    rdp_method: str | None = None,
) -> PlanAccounting:
    """ε at ``delta`` (less the plan's reserved δ) from rdp and, unless only ``rdp`` is asked for, tight. ``known``:
    the plan's Rényi conversion and tight answer where the request already has them (ε over training computes
    them at its last checkpoint); ``rdp_method``: the family's words for the Rényi bound."""
    accounted = plan.accounted_delta(delta)
    known_rdp, known_tight = known
    conversion, rdp = known_rdp, None
    if conversion is None:
        try:
            conversion = RdpAccountant(plan.neighbouring).epsilon(plan.event, accounted, orders, refine)
        except UnsupportedEventError as error:
            rdp = AccountantResult.not_applicable("rdp", f"no Rényi curve for this plan: {error}")
    tight = _tight(plan, accounted, accountant, tight_reason, known_tight)
    return PlanAccounting(conversion, (rdp or rdp_result(conversion, method=rdp_method), tight))


def _tight(
    plan: MechanismPlan, accounted: float, accountant: str, tight_reason: str | None, known: AccountantResult | None
) -> AccountantResult:
    if accountant == "rdp":
        return not_asked()
    result = known or tight_epsilon(plan.event, plan.neighbouring, accounted)
    if not result.applicable:
        return _not_applicable(result.reason or "", tight_reason)
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


def _not_applicable(reason: str, tight_reason: str | None) -> AccountantResult:
    """Why tight does not apply: the spine's reason, after the family's own words where it gives them."""
    return AccountantResult.not_applicable("tight", reason if tight_reason is None else f"{tight_reason} ({reason})")


def calibrate_plan(
    plan_at: PlanAt,
    delta: float,
    target: float,
    knob: Knob,
    accountant: str = "best",
    orders: np.ndarray | None = None,
    tight_reason: str | None = None,
    rdp_method: str | None = None,
) -> tuple[AccountantResult, AccountantResult]:
    """(rdp, tight) calibrations of the knob for ε ≤ ``target`` at ``delta``; each result's ``calibrated_value`` is
    the knob in its own units. Each accountant calibrates on its own (tight starts from rdp's answer where there is
    one); one that cannot meet the target, or read the plan, is not applicable with the reason (``rdp_method``: the
    family's words for the Rényi bound). Raises
    :class:`CalibrationError` where no accountant asked for meets the target (the reasons of each)."""
    reference = plan_at(1.0)
    accounted = reference.accounted_delta(delta)
    rdp, noise = _calibrate_rdp(plan_at, accounted, target, knob, orders, rdp_method)
    if accountant == "rdp":
        if not rdp.applicable:
            raise CalibrationError(rdp.reason or "the rdp accountant cannot meet the target")
        return rdp, not_asked()
    try:
        initial = noise if noise is not None else 1.0
        found, tight = tight_calibration(
            lambda x: plan_at(x).event, reference.neighbouring, accounted, target, initial, knob.field
        )
        tight = replace(with_reserved_delta(tight, reference.reserved_delta), calibrated_value=knob.from_noise(found))
    except CalibrationError as error:
        tight = _not_applicable(str(error), tight_reason)
    if accountant == "best" and not rdp.applicable and not tight.applicable:
        raise CalibrationError(f"no accountant meets the target: rdp: {rdp.reason}; tight: {tight.reason}")
    return rdp, tight


def _calibrate_rdp(
    plan_at: PlanAt, accounted: float, target: float, knob: Knob, orders: np.ndarray | None, method: str | None
) -> tuple[AccountantResult, float | None]:
    """The rdp calibration (its result, and the noise found on the knob's noise scale; None where it fails).

    Trees with a zCDP envelope or a pure-DP sum (:meth:`RdpAccountant.bounded`) are calibrated on the accountant's
    own ε, bound included (each evaluation exact, no grid edge: tiny targets need orders near 10⁸); the others by
    :func:`~accountants.calibration.calibrate_rdp` on the curve (the order search of a Rényi calibration)."""
    reference = plan_at(1.0)
    accountant = RdpAccountant(reference.neighbouring)
    try:
        bounded = (
            accountant.envelope(reference.event) is not None or accountant.pure_epsilon(reference.event) is not None
        )
        if bounded:
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
        return AccountantResult.not_applicable("rdp", f"no Rényi curve for this plan: {error}"), None
    except (CalibrationError, ParameterError) as error:
        return AccountantResult.not_applicable("rdp", str(error)), None
    return rdp_result(conversion, knob.from_noise(noise), method), noise


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
    eps: tuple[float | None, ...] = tuple(float(e) if math.isfinite(e) else None for e in conversion.rdp)
    return RdpCurve(tuple(float(a) for a in conversion.orders), eps)
