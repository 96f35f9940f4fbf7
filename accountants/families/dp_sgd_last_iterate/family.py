"""The dp-sgd-last-iterate family behind the registry's protocol."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from ...conversions import epsilon_for_linear_rdp, noise_for_linear_rdp
from ...errors import ParameterError
from ...events import ZCdpEvent
from ...family import AlgorithmFamily, CalibrationQuery, Card, PrivacyQuery
from ...params import ParamsModel
from ...plans import MechanismPlan
from ...registry import register
from ...reports import AccountantResult, Accounted, CalibrationReport, PrivacyReport, RdpCurve, UtilityReport
from .bounds import LinearBound, bounds_for
from .paper import corollary_c2
from .params import ALGORITHM_ID, SOURCE, LastIterateParams, steps_and_rule
from .text import (
    METHOD,
    bound_results,
    coefficient,
    finite_order,
    iterate_noise_std,
    resolved_noise_multiplier,
    smallest_bound,
    stated_conventions,
    stated_noise,
    stated_warnings,
)

# -- the family ------------------------------------------------------------------------------------------------------

_TIGHT_REASON = (
    "Kong & Ribero's bounds control Rényi divergences only (shifted-divergence analysis); converting them through "
    "privacy-loss distributions or Gaussian DP is unjustified (a Rényi bound does not determine the privacy "
    "profile), so only the rdp conversion applies"
)
_PAPER_REASON = (
    "Kong & Ribero 2024 state Rényi bounds, not (ε, δ): its statements are what the rdp accountant converts; its own "
    "calibration, Corollary C.2, is reported by /v1/calibrate"
)
_UTILITY_REASON = (
    "Kong & Ribero 2024 prove no utility or convergence bound for Algorithm 1; verification jobs measure utility on "
    "synthetic problems"
)


@register
class DpSgdLastIterate(AlgorithmFamily[LastIterateParams]):
    id = ALGORITHM_ID
    card = Card.load(__file__, ALGORITHM_ID, SOURCE=SOURCE)
    params_model = LastIterateParams
    accountants = ("rdp",)
    accountant_notes = MappingProxyType({"tight": _TIGHT_REASON, "paper": _PAPER_REASON})
    noise_fields = ("noise_multiplier", "noise_std")

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """The last iterate as one release that is ρ-zCDP with ρ = K/z² of the best applicable Kong & Ribero bound: the
        Rényi curve ρ·α (every α > 1) that this family converts itself, under replace-one neighbours. In a composition
        it counts once (only the last iterate is released); no PLD reads it (tight does not apply)."""
        p = self.parse(params)
        steps, _ = steps_and_rule(p)
        best = smallest_bound(bounds_for(p, steps))
        z = resolved_noise_multiplier(p)
        rho = coefficient(best) / (z * z)
        description = f"the last iterate, ρ-zCDP by {best.name} (Kong & Ribero 2024): ρ = K/z² = {rho:.6g}"
        return MechanismPlan(ZCdpEvent(rho), "replace-one", description=description)

    def _privacy(self, query: PrivacyQuery[LastIterateParams]) -> PrivacyReport:
        p, d, grid = query.params, query.delta, query.grid
        z = resolved_noise_multiplier(p)
        steps, rule = steps_and_rule(p)
        found = bounds_for(p, steps)
        best = smallest_bound(found)
        accounted, _ = _accounted(best, z, d, grid)
        if not math.isfinite(accounted.epsilon):
            raise ParameterError.single("noise_multiplier", "is too small for a finite ε bound", "a larger value")
        return accounted.privacy(
            self.id,
            stated_noise(p, z),
            stated_conventions(p, steps, rule),
            warnings=stated_warnings(p, found, best),
            bounds=bound_results(found, best, z, d, grid),
        )

    def _calibrate(self, query: CalibrationQuery[LastIterateParams]) -> CalibrationReport:
        p, target, d, grid = query.params, query.target_epsilon, query.delta, query.grid
        steps, rule = steps_and_rule(p)
        found = bounds_for(p, steps)
        best = smallest_bound(found)
        # every bound is K·α/z²: the conversion is solved for z exactly (one-sided)
        z = noise_for_linear_rdp(coefficient(best), target, d)
        accounted, alpha = _accounted(best, z, d, grid, calibrated=True)
        rho = coefficient(best) / (z * z)
        return accounted.calibration(
            self.id,
            stated_noise(p, z),
            stated_conventions(p, steps, rule),
            target,
            z,
            noise_std=iterate_noise_std(p, z),
            warnings=stated_warnings(p, found, best),
            bounds=bound_results(found, best, z, d, grid),
            utility_reason=_UTILITY_REASON,
            paper=corollary_c2(p, steps, alpha, rho * alpha, d),
        )

    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        self.parse(params)
        return UtilityReport(self.id, (), _UTILITY_REASON)


def _accounted(
    bound: LinearBound, z: float, delta: float, grid: np.ndarray, calibrated: bool = False
) -> tuple[Accounted, float]:
    """The rdp answer of the chosen bound at multiplier z (the only accountant that applies), and its optimal order."""
    rho = coefficient(bound) / (z * z)
    epsilon, alpha = epsilon_for_linear_rdp(rho, delta)
    rdp = AccountantResult.certified(
        "rdp", epsilon, METHOD, optimal_order=finite_order(alpha), noise_multiplier=z if calibrated else None
    )
    results = (
        rdp,
        AccountantResult.not_applicable("tight", _TIGHT_REASON),
        AccountantResult.not_applicable("paper", _PAPER_REASON),
    )
    curve = RdpCurve(tuple(grid.tolist()), tuple((rho * grid).tolist()), tuple(bound.name for _ in grid))
    return Accounted(results, rdp, delta, finite_order(alpha), curve), alpha
