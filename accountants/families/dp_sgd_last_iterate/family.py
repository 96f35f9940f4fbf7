"""The dp-sgd-last-iterate family behind the registry's protocol."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ...conversions import epsilon_for_linear_rdp, linear_rdp_for_epsilon
from ...errors import ParameterError
from ...family import AlgorithmFamily, CalibrationQuery, Card, PrivacyQuery
from ...registry import register
from ...reports import (
    AccountantResult,
    CalibrationReport,
    PrivacyReport,
    RdpCurve,
    UtilityReport,
)
from .bounds import bounds_for
from .paper import corollary_c2
from .params import ALGORITHM_ID, SOURCE, LastIterateParams, _steps
from .text import _METHOD, _best, _bound_results, _conventions, _noise, _noise_multiplier, _order, _sigma, _warnings

# -- the family ------------------------------------------------------------------------------------------------------

_TIGHT_REASON = (
    "the seed-004 bounds control Rényi divergences only (shifted-divergence analysis); converting them through "
    "privacy-loss distributions or Gaussian DP is unjustified (spec §4), so only the rdp conversion applies"
)
_PAPER_REASON = (
    "seed 004 states Rényi bounds, not (ε, δ): its statements are what the rdp accountant converts; its own "
    "calibration, Corollary C.2, is reported by /v1/calibrate"
)
_UTILITY_REASON = (
    "seed 004 proves no utility or convergence bound for Algorithm 1; verification jobs measure utility on "
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

    def _privacy(self, query: PrivacyQuery[LastIterateParams]) -> PrivacyReport:
        p, d, grid = query.params, query.delta, query.grid
        z = _noise_multiplier(p)
        steps, rule = _steps(p)
        found = bounds_for(p, steps)
        best = _best(found)
        rho = best.coefficient / (z * z)  # type: ignore[operator]
        epsilon, alpha = epsilon_for_linear_rdp(rho, d)
        if not math.isfinite(epsilon):
            raise ParameterError.single("noise_multiplier", "is too small for a finite ε bound", "a larger value")
        results = [
            AccountantResult("rdp", True, epsilon, "certified upper bound", _METHOD, optimal_order=_order(alpha)),
            AccountantResult("tight", False, reason=_TIGHT_REASON),
            AccountantResult("paper", False, reason=_PAPER_REASON),
        ]
        return PrivacyReport(
            algorithm=self.id,
            epsilon=epsilon,
            delta=d,
            accountant="rdp",
            optimal_order=_order(alpha),
            rdp=RdpCurve(tuple(grid.tolist()), tuple((rho * grid).tolist()), tuple(best.name for _ in grid)),
            accountants=tuple(results),
            noise=_noise(p, z),
            conventions=_conventions(p, steps, rule),
            warnings=tuple(_warnings(p, found, best)),
            bounds=tuple(_bound_results(found, best, z, d, grid)),
        )

    def _calibrate(self, query: CalibrationQuery[LastIterateParams]) -> CalibrationReport:
        p, target, d, grid = query.params, query.target_epsilon, query.delta, query.grid
        notes: list[str] = []
        steps, rule = _steps(p)
        found = bounds_for(p, steps)
        best = _best(found)
        # every bound is K·α/z²: solve the conversion for ρ exactly, then z = √(K/ρ), checked one-sided
        rho_target = linear_rdp_for_epsilon(target, d)
        z = math.sqrt(best.coefficient / rho_target)  # type: ignore[operator]
        while epsilon_for_linear_rdp(best.coefficient / (z * z), d)[0] > target:  # type: ignore[operator]
            z = math.nextafter(z, math.inf)
        rho = best.coefficient / (z * z)  # type: ignore[operator]
        epsilon, alpha = epsilon_for_linear_rdp(rho, d)
        results = [
            AccountantResult(
                "rdp", True, epsilon, "certified upper bound", _METHOD, optimal_order=_order(alpha), noise_multiplier=z
            ),
            AccountantResult("tight", False, reason=_TIGHT_REASON),
            AccountantResult("paper", False, reason=_PAPER_REASON),
        ]
        return CalibrationReport(
            algorithm=self.id,
            target_epsilon=target,
            delta=d,
            noise_multiplier=z,
            noise_std=_sigma(p, z),
            epsilon=epsilon,
            accountant="rdp",
            optimal_order=_order(alpha),
            rdp=RdpCurve(tuple(grid.tolist()), tuple((rho * grid).tolist()), tuple(best.name for _ in grid)),
            accountants=tuple(results),
            noise=_noise(p, z),
            conventions=_conventions(p, steps, rule),
            utility=None,
            utility_reason=_UTILITY_REASON,
            paper=corollary_c2(p, steps, alpha, rho * alpha, d),
            paper_reason=None,
            calibrated_parameter="noise_multiplier",
            calibrated_value=z,
            warnings=tuple(notes + _warnings(p, found, best)),
            bounds=tuple(_bound_results(found, best, z, d, grid)),
        )

    def utility(self, params: Mapping[str, Any] | LastIterateParams) -> UtilityReport:
        self.parse(params)
        return UtilityReport(self.id, (), _UTILITY_REASON)
