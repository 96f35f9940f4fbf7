"""Log-space helpers shared by the mechanisms (no overflow to ∞, no NaN from ∞ − ∞)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import special


def log_expm1(x: np.ndarray) -> np.ndarray:
    """log(e^x − 1) for x > 0, exact for tiny x and free of overflow for huge x."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):  # e^x − 1 = e^x·(1 − e^{−x}); expm1 keeps 1 − e^{−x} exact for tiny x
        return np.asarray(x + np.log(-np.expm1(-x)))


def log1mexp(x: np.ndarray) -> np.ndarray:
    """log(1 − e^x) for x ≤ 0 (Mächler's two-branch rule)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        return np.asarray(np.where(x > -0.6931471805599453, np.log(-np.expm1(x)), np.log1p(-np.exp(x))))


def segment_logsumexp(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """log Σ exp over consecutive segments of a flat array; ``starts`` are the segment offsets."""
    peak = np.maximum.reduceat(values, starts)
    sizes = np.diff(np.append(starts, values.size))
    shifted = np.exp(values - np.repeat(peak, sizes))
    with np.errstate(divide="ignore"):
        return peak + np.log(np.add.reduceat(shifted, starts))


@lru_cache(maxsize=64)
def integer_order_layout(orders: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Flat arrays over the pairs (α, k), k = 2..α, for integer orders α ≥ 2: α, k, log C(α, k), segment starts.

    Used to evaluate the binomial sums of subsampled mechanisms for all orders in one vectorised pass.
    """
    sizes = np.array([a - 1 for a in orders])
    alpha = np.repeat(np.array(orders, dtype=float), sizes)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    k = np.arange(alpha.size) - np.repeat(starts, sizes) + 2.0
    log_binom = special.gammaln(alpha + 1) - special.gammaln(k + 1) - special.gammaln(alpha - k + 1)
    return alpha, k, log_binom, starts
