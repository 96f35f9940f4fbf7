"""The dp-sgd-last-iterate family on the spine: its plan is the last iterate as one ρ-zCDP release (ρ = K/z² of the
best applicable Kong & Ribero bound), which the spine's rdp accountant converts exactly over real orders and
calibrates exactly (the curve is ρα). What only this family adds: the bounds with their conditions, the paper's
own calibration (Corollary C.2), its wording and why no other accountant applies."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from ...events import ZCdpEvent
from ...family import Card
from ...params import ParamsModel
from ...planned import Answered, CalibrationDetails, Details, PlannedFamily
from ...plans import MechanismPlan
from ...registry import register
from ...reports import AccountantResult, Conventions, Noise
from .bounds import bounds_for
from .paper import corollary_c2
from .params import ALGORITHM_ID, SOURCE, LastIterateParams, steps_and_rule
from .text import (
    METHOD,
    bound_results,
    coefficient,
    resolved_noise_multiplier,
    smallest_bound,
    stated_conventions,
    stated_noise,
    stated_warnings,
)

TIGHT_REASON = (
    "Kong & Ribero's bounds control Rényi divergences only (shifted-divergence analysis); converting them through "
    "privacy-loss distributions or Gaussian DP is unjustified (a Rényi bound does not determine the privacy "
    "profile), so only the rdp conversion applies"
)
PAPER_REASON = (
    "Kong & Ribero 2024 state Rényi bounds, not (ε, δ): its statements are what the rdp accountant converts; its own "
    "calibration, Corollary C.2, is reported by /v1/calibrate"
)
UTILITY_REASON = (
    "Kong & Ribero 2024 prove no utility or convergence bound for Algorithm 1; verification jobs measure utility on "
    "synthetic problems"
)


@register
class DpSgdLastIterate(PlannedFamily[LastIterateParams]):
    id = ALGORITHM_ID
    card = Card.load(__file__, ALGORITHM_ID, SOURCE=SOURCE)
    params_model = LastIterateParams
    never_read = ("tight",)
    accountant_notes = MappingProxyType({"tight": TIGHT_REASON, "paper": PAPER_REASON})
    noise_fields = ("noise_multiplier", "noise_std")
    utility_reason = UTILITY_REASON

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """The last iterate as one release that is ρ-zCDP with ρ = K/z² of the best applicable Kong & Ribero bound:
        the Rényi curve ρ·α (every α > 1), under replace-one neighbours. In a composition it counts once (only the
        last iterate is released); no PLD reads it (tight does not apply)."""
        p = self.parse(params)
        steps, _ = steps_and_rule(p)
        best = smallest_bound(bounds_for(p, steps))
        z = resolved_noise_multiplier(p)
        rho = coefficient(best) / (z * z)
        description = f"the last iterate, ρ-zCDP by {best.name} (Kong & Ribero 2024): ρ = K/z² = {rho:.6g}"
        return MechanismPlan(ZCdpEvent(rho), "replace-one", description=description)

    def knob_value(self, params: LastIterateParams) -> float | None:
        """noise_multiplier, or noise_std over one clipped gradient's share of a step (λC/b)."""
        if params.noise_multiplier is None and params.noise_std is None:
            return None
        return resolved_noise_multiplier(params)

    def conventions(self, params: LastIterateParams, plan: MechanismPlan) -> Conventions:
        steps, rule = steps_and_rule(params)
        return stated_conventions(params, steps, rule)

    def noise(self, params: LastIterateParams, value: float) -> Noise:
        return stated_noise(params, value)

    def unread_reason(self, plan: MechanismPlan) -> str:
        return TIGHT_REASON

    def method(self, accountant: str, params: LastIterateParams, plan: MechanismPlan) -> str | None:
        return METHOD if accountant == "rdp" else None

    def curve_bounds(self, params: LastIterateParams, plan: MechanismPlan, orders: np.ndarray) -> tuple[str, ...]:
        name = smallest_bound(bounds_for(params, steps_and_rule(params)[0])).name
        return tuple(name for _ in orders)

    def extra_results(
        self, params: LastIterateParams, plan: MechanismPlan, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        return [AccountantResult.not_applicable("paper", PAPER_REASON)]

    def extra_calibrations(
        self, params: LastIterateParams, target: float, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        return [AccountantResult.not_applicable("paper", PAPER_REASON)]

    def details(self, params: LastIterateParams, plan: MechanismPlan, answered: Answered) -> Details:
        """Every bound with its conditions and curve (the chosen one marked), and the warnings they call for."""
        found = bounds_for(params, steps_and_rule(params)[0])
        best = smallest_bound(found)
        z = resolved_noise_multiplier(params)
        bounds = bound_results(found, best, z, answered.delta, answered.orders)
        return Details(stated_warnings(params, found, best), bounds)

    def calibration_details(self, at: LastIterateParams, plan: MechanismPlan, answered: Answered) -> CalibrationDetails:
        """Corollary C.2 for the Rényi point (α, ρα) the calibration reaches, and what the rdp accountant certifies
        at the noise it prescribes."""
        assert isinstance(plan.event, ZCdpEvent)  # the plan of this family
        order = answered.chosen.optimal_order
        alpha = order if order is not None else math.inf
        steps, _ = steps_and_rule(at)
        return CalibrationDetails(paper=corollary_c2(at, steps, alpha, plan.event.rho * alpha, answered.delta))
