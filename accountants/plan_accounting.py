"""Privacy and calibration of a mechanism plan by the generic accountants, written once.

:func:`account_plan` answers ε at δ for a :class:`~accountants.plans.MechanismPlan`: ``rdp`` (the RDP accountant on
its event tree, improved conversion) and ``tight`` (:mod:`accountants.tight`: exact Gaussian DP where the tree is made
of Gaussian releases, the certified PLD accountant where it can read the tree).
:func:`calibrate_plan` finds each one's knob for a target ε over a family of plans indexed by the knob. Families
(:class:`~accountants.planned.PlannedFamily`) and compositions over HTTP build their answers from these.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from .calibration import calibrate_rdp
from .conversions import Conversion
from .errors import CalibrationError
from .plans import Knob, MechanismPlan
from .rdp import RdpAccountant
from .reports import AccountantResult, RdpCurve, not_asked
from .tight import tight_calibration, tight_epsilon

RDP_METHOD = "Rényi curve of the mechanism plan (generic RDP accountant), improved conversion (Balle et al. 2020)"

PlanAt = Callable[[float], MechanismPlan]
"""Plans indexed by the knob on its noise scale (larger is more private, :meth:`Knob.as_noise`)."""


@dataclass(frozen=True)
class PlanAccounting:
    """Every generic accountant's answer for one plan at δ (``rdp`` first), and the Rényi conversion behind rdp."""

    conversion: Conversion
    results: tuple[AccountantResult, ...]

    @property
    def curve(self) -> RdpCurve:
        return rdp_curve(self.conversion)


def account_plan(
    plan: MechanismPlan,
    delta: float,
    accountant: str = "best",
    orders: np.ndarray | None = None,
    refine: bool = True,
    tight_reason: str | None = None,
    known: tuple[Conversion | None, AccountantResult | None] = (None, None),
) -> PlanAccounting:
    """ε at ``delta`` (less the plan's reserved δ) from rdp and, unless only ``rdp`` is asked for, tight. ``known``:
    the plan's Rényi conversion and tight answer where the request already has them (ε over training computes
    them at its last checkpoint)."""
    accounted = plan.accounted_delta(delta)
    known_rdp, known_tight = known
    conversion = known_rdp or RdpAccountant(plan.neighbouring).epsilon(plan.event, accounted, orders, refine)
    tight = _tight(plan, accounted, accountant, tight_reason, known_tight)
    return PlanAccounting(conversion, (rdp_result(conversion), tight))


def _tight(
    plan: MechanismPlan, accounted: float, accountant: str, tight_reason: str | None, known: AccountantResult | None
) -> AccountantResult:
    if accountant == "rdp":
        return not_asked()
    result = known or tight_epsilon(plan.event, plan.neighbouring, accounted)
    return result if result.applicable else _not_applicable(result.reason or "", tight_reason)


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
) -> tuple[AccountantResult, AccountantResult]:
    """(rdp, tight) calibrations of the knob for ε ≤ ``target`` at ``delta``; each result's ``calibrated_value`` is
    the knob in its own units. Raises :class:`CalibrationError` where rdp cannot meet the target."""
    reference = plan_at(1.0)
    accounted = reference.accounted_delta(delta)
    found = calibrate_rdp(
        lambda noise: RdpAccountant(plan_at(noise).neighbouring).curve(plan_at(noise).event),
        accounted,
        target,
        orders=orders,
        parameter=knob.field,
    )
    rdp = rdp_result(found.conversion, knob.from_noise(found.noise))
    if accountant == "rdp":
        return rdp, not_asked()
    try:
        noise, tight = tight_calibration(
            lambda noise: plan_at(noise).event, reference.neighbouring, accounted, target, found.noise, knob.field
        )
    except CalibrationError as error:
        return rdp, _not_applicable(str(error), tight_reason)
    return rdp, replace(tight, calibrated_value=knob.from_noise(noise))


def rdp_result(conversion: Conversion, calibrated: float | None = None) -> AccountantResult:
    return AccountantResult.certified(
        "rdp", conversion.value, RDP_METHOD, optimal_order=conversion.optimal_order, calibrated_value=calibrated
    )


def rdp_curve(conversion: Conversion) -> RdpCurve:
    """The conversion's curve on its orders (None where ε(α) is infinite)."""
    eps: tuple[float | None, ...] = tuple(float(e) if math.isfinite(e) else None for e in conversion.rdp)
    return RdpCurve(tuple(float(a) for a in conversion.orders), eps)
