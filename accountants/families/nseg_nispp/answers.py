"""Privacy and calibration reports of the NSEG and NISPP families."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ...errors import ParameterError
from ...params import resolve_noise_multiplier
from ...reports import (
    CalibrationReport,
    Conventions,
    Noise,
    PaperCalibration,
    PrivacyReport,
    Recommendation,
    Release,
    UtilityBound,
    UtilityReport,
)
from .accounting import Accounting

# -- reports ---------------------------------------------------------------------------------------------------------


def resolve_multiplier(noise_multiplier: float | None, noise_std: float | None, sensitivity: float) -> float:
    """z given directly or as σ/Δ (raises a 4xx-style error naming noise_multiplier when neither is given)."""
    return resolve_noise_multiplier(noise_multiplier, noise_std, sensitivity)


def privacy_report(
    algorithm: str,
    answer: Accounting,
    delta: float,
    noise: Noise,
    conventions: Conventions,
    releases: tuple[Release, ...],
    notes: Sequence[str],
) -> PrivacyReport:
    return answer.accounted.privacy(
        algorithm,
        noise,
        conventions,
        warnings=tuple(dict.fromkeys([*notes, *answer.warnings])),
        bounds=answer.bounds,
        releases=releases,
    )


def calibration_report(
    algorithm: str,
    answer: Accounting,
    target_epsilon: float,
    delta: float,
    noise: Noise,
    conventions: Conventions,
    releases: tuple[Release, ...],
    utility: UtilityReport | None,
    paper: PaperCalibration,
    recommended: tuple[Recommendation, ...],
    notes: Sequence[str],
    utility_reason: str | None = None,
) -> CalibrationReport:
    return answer.accounted.calibration(
        algorithm,
        noise,
        conventions,
        target_epsilon,
        answer.noise_multiplier,
        noise_std=noise.noise_std,
        warnings=tuple(dict.fromkeys([*notes, *answer.warnings])),
        bounds=answer.bounds,
        releases=releases,
        utility=utility,
        utility_reason=None if utility is not None else utility_reason,
        paper=paper,
        recommended=recommended,
    )


def finite_bounds(compute: Callable[[], list[UtilityBound]], scale_fields: str) -> list[UtilityBound]:
    """The utility bounds ``compute`` gives, or an error naming the fields to rescale when a bound is not a finite
    number (it overflows, or divides by an underflowed constant: vacuous at these scales)."""
    try:
        bounds = compute()
    except (ZeroDivisionError, OverflowError):
        bounds = []
    if not bounds or not all(math.isfinite(b.value) for b in bounds):
        raise ParameterError.single(
            "params",
            "the predicted utility bounds are not representable in floating point at these scales (check "
            f"{scale_fields})",
            f"values of {scale_fields} whose products stay within [1e-300, 1e300]",
        )
    return bounds
