"""Adaptive composition of k pure ε₀-DP (and ε₀-bounded-range) mechanisms, e.g. exponential mechanisms.

* Exact RDP of an ε₀-DP mechanism: every ε₀-DP pair is a post-processing of randomized response (Kairouz, Oh &
  Viswanath 2015), so ε(α) ≤ (1/(α−1))·log[(e^{αε₀} + e^{(1−α)ε₀})/(1 + e^{ε₀})], attained by randomized response.
* ε₀-bounded range (the privacy loss ranges over an interval of width ε₀; every exponential mechanism whose score
  has sensitivity Δ is 2Δ-BR): ε₀²/8-zCDP, i.e. ε(α) ≤ αε₀²/8 (Cesar & Rogers 2021; Hoeffding's lemma).
* Optimal composition of k ε₀-DP mechanisms (Kairouz, Oh & Viswanath 2015, Thm. 3.3) is what the PLD accountant
  computes for a tree of pure releases (randomized-response pairs, :mod:`accountants.pld.pairs`).
* Advanced composition: the filter form √(2k log(1/δ))·ε₀ + kε₀²/2 (Whitehouse, Ramdas, Rogers & Wu 2023) and
  Dwork–Rothblum–Vadhan's min{kε₀, √(2k log(1/δ))·ε₀ + kε₀(e^{ε₀} − 1)}.
"""

from __future__ import annotations

import math

import numpy as np

from .._numerics import log_expm1

# -- Rényi curves ------------------------------------------------------------------------------------------------------


def pure_dp_rdp(epsilon0: float, orders: np.ndarray) -> np.ndarray:
    """Exact RDP of randomized response with parameter ε₀, the worst ε₀-DP mechanism at every order α > 1.

    (1/(α−1))·log(1 + x/(1+e^{ε₀})) with x = e^{αε₀} + e^{(1−α)ε₀} − 1 − e^{ε₀} = (e^{(α−1)ε₀} − 1)(e^{αε₀} − 1)
    e^{(1−α)ε₀} > 0, computed in log space (no cancellation for small ε₀, no overflow for large ε₀).
    """
    a = np.asarray(orders, dtype=float)
    e = float(epsilon0)
    if e == 0.0:
        return np.zeros_like(a)
    return _bounded_by_epsilon(_log_x(a, e) - float(np.logaddexp(0.0, e)), a, e)


def _log_x(a: np.ndarray, e: float) -> np.ndarray:
    """log x = log(e^{(α−1)ε₀} − 1) + log(e^{αε₀} − 1) + (1 − α)ε₀ (:func:`pure_dp_rdp`), ∞ where it overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(log_expm1((a - 1.0) * e) + log_expm1(a * e) + (1.0 - a) * e)


def _bounded_by_epsilon(log_term: np.ndarray, a: np.ndarray, e: float) -> np.ndarray:
    """(1/(α−1))·log(1 + e^{log_term}), never above ε₀ (D_α ≤ D_∞ = ε₀; where the terms overflow, it is ε₀ to
    rounding)."""
    with np.errstate(over="ignore", invalid="ignore"):
        value = np.logaddexp(0.0, log_term) / (a - 1.0)
    return np.asarray(np.where(np.isfinite(value), np.minimum(value, e), e))


def randomized_response_rdp(noise_parameter: float, buckets: int, orders: np.ndarray) -> np.ndarray:
    """Exact RDP of k-ary randomized response with noise p, one record's value changed (either order: the pair is
    symmetric). With ε₀ = log(1 + k(1 − p)/p) and b = p/k the masses are (b·e^{ε₀}, b) on the true value, the reverse
    on the new one and b on each of the k − 2 others, so Σ P^α Q^{1−α} − 1 = b·x with the x of
    :func:`pure_dp_rdp` (k = 2 is that function, b = 1/(1 + e^{ε₀})): (1/(α−1))·log(1 + b·x), in log space."""
    a = np.asarray(orders, dtype=float)
    p, k = float(noise_parameter), int(buckets)
    e = math.log1p(k * (1.0 - p) / p)
    if e == 0.0:
        return np.zeros_like(a)
    return _bounded_by_epsilon(_log_x(a, e) + math.log(p / k), a, e)


def bounded_range_rdp(epsilon0: float, orders: np.ndarray) -> np.ndarray:
    """αε₀²/8: RDP of an ε₀-bounded-range mechanism (ε₀²/8-zCDP; Cesar & Rogers 2021, Lemma 3.2)."""
    return np.asarray(orders, dtype=float) * (float(epsilon0) ** 2 / 8.0)


# -- advanced composition ----------------------------------------------------------------------------------------------


def advanced_composition_epsilon(count: float, epsilon0: float, delta: float) -> float:
    """√(2k log(1/δ))·ε₀ + kε₀²/2 (fully adaptive filter, Whitehouse et al. 2023; the zCDP route)."""
    return math.sqrt(2.0 * count * (-math.log(delta))) * epsilon0 + count * epsilon0 * epsilon0 / 2.0


def drv_epsilon(count: float, epsilon0: float, delta: float) -> float:
    """min{kε₀, √(2k log(1/δ))·ε₀ + kε₀(e^{ε₀} − 1)} (Dwork, Rothblum & Vadhan 2010, Thm. III.3)."""
    with np.errstate(over="ignore"):
        advanced = math.sqrt(2.0 * count * (-math.log(delta))) * epsilon0 + count * epsilon0 * math.expm1(
            min(epsilon0, 700.0)
        )
    return min(count * epsilon0, advanced)
