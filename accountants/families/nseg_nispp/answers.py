"""What NSEG and NISPP share in their answers: the multiplier from either unit, and finite utility bounds."""

from __future__ import annotations

import math
from collections.abc import Callable

from ...errors import ParameterError
from ...params import resolve_noise_multiplier
from ...reports import (
    UtilityBound,
)

# -- reports ---------------------------------------------------------------------------------------------------------


def resolve_multiplier(noise_multiplier: float | None, noise_std: float | None, sensitivity: float) -> float:
    """z given directly or as σ/Δ (raises a 4xx-style error naming noise_multiplier when neither is given)."""
    return resolve_noise_multiplier(noise_multiplier, noise_std, sensitivity)


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
