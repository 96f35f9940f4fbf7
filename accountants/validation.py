"""Input checks shared by every mechanism and family.

The established libraries accept NaN, δ > 1, fractional step counts and more;
we check everything before any computation and raise :class:`ParameterError` naming the field and
the allowed range.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .errors import ParameterError


def _as_real(name: str, value: object, allowed: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError.single(name, f"must be a real number, {allowed}", allowed, value)
    x = float(value)
    if not math.isfinite(x):
        raise ParameterError.single(name, f"must be finite, {allowed}", allowed, value)
    return x


def positive(name: str, value: object) -> float:
    """A finite real number > 0."""
    allowed = "> 0 and finite"
    x = _as_real(name, value, allowed)
    if x <= 0:
        raise ParameterError.single(name, f"must be {allowed}", allowed, value)
    return x


MIN_NOISE_MULTIPLIER = 1e-150
"""Below this, 1/z² overflows: the Gaussian carries no noise in floating point."""
MAX_NOISE_MULTIPLIER = 1e150
"""Above this, 1/z² underflows: the Gaussian releases nothing in floating point (and divisions by it fail)."""


def noise_multiplier(name: str, value: object) -> float:
    """A noise multiplier: in [:data:`MIN_NOISE_MULTIPLIER`, :data:`MAX_NOISE_MULTIPLIER`]."""
    allowed = f"> 0, finite, in [{MIN_NOISE_MULTIPLIER:g}, {MAX_NOISE_MULTIPLIER:g}]"
    x = _as_real(name, value, allowed)
    if not MIN_NOISE_MULTIPLIER <= x <= MAX_NOISE_MULTIPLIER:
        raise ParameterError.single(name, f"must be {allowed}", allowed, value)
    return x


def non_negative(name: str, value: object) -> float:
    """A finite real number >= 0."""
    allowed = ">= 0 and finite"
    x = _as_real(name, value, allowed)
    if x < 0:
        raise ParameterError.single(name, f"must be {allowed}", allowed, value)
    return x


def probability(name: str, value: object) -> float:
    """A sampling probability in (0, 1]."""
    allowed = "in (0, 1]"
    x = _as_real(name, value, allowed)
    if not 0 < x <= 1:
        raise ParameterError.single(name, f"must be {allowed}", allowed, value)
    return x


def delta(name: str, value: object) -> float:
    """A δ in the open interval (0, 1)."""
    allowed = "in (0, 1)"
    x = _as_real(name, value, allowed)
    if not 0 < x < 1:
        raise ParameterError.single(name, f"must be {allowed}", allowed, value)
    return x


def positive_int(name: str, value: object, maximum: int | None = None) -> int:
    """A positive integer (an integral float such as ``3.0`` is accepted; ``10.5`` is not)."""
    allowed = "an integer >= 1" + (f" and <= {maximum}" if maximum is not None else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError.single(name, f"must be {allowed}", allowed, value)
    x = float(value)
    if not math.isfinite(x) or x != math.floor(x) or x < 1 or (maximum is not None and x > maximum):
        raise ParameterError.single(name, f"must be {allowed}", allowed, value)
    return int(x)


MAX_ORDER = 1e5


def orders(name: str, values: object) -> np.ndarray:
    """Rényi orders α: a non-empty 1-D sequence of finite reals in (1, 1e5]."""
    allowed = f"a non-empty list of finite numbers in (1, {MAX_ORDER:g}]"
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError.single(name, f"must be {allowed}", allowed) from None
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError.single(name, f"must be {allowed}", allowed)
    bad = ~np.isfinite(arr) | (arr <= 1) | (arr > MAX_ORDER)
    if bad.any():
        first = float(arr[np.argmax(bad)])
        raise ParameterError.single(name, f"must be {allowed}", allowed, first)
    return arr


def sampled_gaussian(rate: object, multiplier: object, alphas: object) -> tuple[float, float, np.ndarray]:
    """(q, z, α) of a sampled Gaussian's Rényi curve: ``sampling_rate`` in (0, 1], ``noise_multiplier``, ``orders``
    > 1 (each error names its field)."""
    return (
        probability("sampling_rate", rate),
        noise_multiplier("noise_multiplier", multiplier),
        orders("orders", alphas),
    )
