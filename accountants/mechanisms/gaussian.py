"""The Gaussian mechanism: Rényi curve and the exact (analytic) (ε, δ) profile.

Conventions: ``noise_multiplier`` z = noise std / L2 sensitivity. ``count`` identical releases compose to one
Gaussian with multiplier z/√count (equivalently the Gaussian-DP parameter μ = √count / z), so the analytic profile
is exact for any number of compositions.

* RDP (Mironov 2017, Prop. 7): ε(α) = α / (2 z²).
* Exact profile (Balle & Wang 2018, Thm. 8), with μ = 1/z:
  δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from .. import validation as check

_LOG_HALF = math.log(0.5)
_SQRT_HALF = math.sqrt(0.5)


def gaussian_rdp(noise_multiplier: float, orders: np.ndarray) -> np.ndarray:
    """ε(α) = α / (2 z²) for one release (Mironov 2017, Prop. 7)."""
    z = check.noise_multiplier("noise_multiplier", noise_multiplier)
    alphas = check.orders("orders", orders)
    return alphas / (2.0 * z * z)


def gaussian_log_delta(mu: float, epsilon: float) -> float:
    """log δ(ε) of μ-GDP, i.e. of N(0, 1) vs N(μ, 1) (Balle & Wang 2018, Thm. 8), in log space.

    In the small-δ regime (x₁ < 0) the difference Φ(x₁) − e^ε Φ(x₂) is rewritten with the scaled
    complementary error function, ½ e^{−x₁²/2} [erfcx(−x₁/√2) − erfcx(−x₂/√2)], which avoids both
    underflow and the cancellation of two nearly equal tails.
    """
    x1 = mu / 2.0 - epsilon / mu
    x2 = -mu / 2.0 - epsilon / mu
    if x1 < 0.0:
        gap = special.erfcx(-x1 * _SQRT_HALF) - special.erfcx(-x2 * _SQRT_HALF)
        if gap <= 0.0:
            return -math.inf
        return _LOG_HALF - 0.5 * x1 * x1 + math.log(gap)
    log_p1 = float(special.log_ndtr(x1))
    log_p2 = float(special.log_ndtr(x2))
    ratio = epsilon + log_p2 - log_p1
    if ratio >= 0.0:
        return -math.inf
    return log_p1 + math.log(-math.expm1(ratio))


def gdp_mu(noise_multiplier: float, count: int = 1) -> float:
    """Gaussian-DP parameter μ = √count / z of ``count`` releases with multiplier z."""
    z = check.noise_multiplier("noise_multiplier", noise_multiplier)
    k = check.positive_int("count", count)
    return math.sqrt(k) / z


def gaussian_delta(noise_multiplier: float, epsilon: float, count: int = 1) -> float:
    """Exact δ(ε) of ``count`` Gaussian releases with multiplier z."""
    mu = gdp_mu(noise_multiplier, count)
    eps = check.non_negative("epsilon", epsilon)
    return min(1.0, math.exp(gaussian_log_delta(mu, eps)))


GDP_SMALL_MU = 1e-8
"""Below this μ the Gaussian profile cancels catastrophically: :func:`gdp_epsilon` uses a closed-form bound."""


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest ε with δ_μ(ε) ≤ δ for μ-GDP (Balle & Wang 2018): exact up to 1e-13 relative, never below the true
    value, at every μ ≥ 0 and δ in (0, 1).

    Brent's method on the profile :func:`gaussian_log_delta` (a relative tolerance only, so tiny ε converge), then a
    geometric one-sided correction until the profile certifies δ(ε) ≤ δ (it cannot spin at the ends of the ranges).
    Below μ = :data:`GDP_SMALL_MU` the profile cancels catastrophically; there ε = 0 where δ ≥ δ_μ(0) =
    erf(μ/(2√2)) and otherwise the upper bound μ²/2 + μ√(2 ln(1/δ)) (μ-GDP ⇒ μ²/2-zCDP)."""
    mu = check.non_negative("mu", mu)
    target = math.log(check.delta("delta", delta))
    if mu == 0.0:
        return 0.0
    if mu < GDP_SMALL_MU:
        return 0.0 if delta >= math.erf(mu / (2.0 * math.sqrt(2.0))) else mu * mu / 2.0 + mu * math.sqrt(-2.0 * target)
    if gaussian_log_delta(mu, 0.0) <= target:
        return 0.0
    # classical sufficient bound ε = μ²/2 + μ√(2 log(1/δ)) brackets the root from above
    hi = max(1e-3, mu * mu / 2.0 + mu * math.sqrt(-2.0 * target))
    while gaussian_log_delta(mu, hi) > target:
        hi *= 2.0
    root = optimize.brentq(lambda e: gaussian_log_delta(mu, e) - target, 0.0, hi, xtol=1e-300, rtol=1e-13)
    step = 1e-13
    while gaussian_log_delta(mu, root) > target:
        root = root * (1.0 + step) + 1e-300
        step *= 2.0
    return float(root)


def gdp_epsilon_lower(mu: float, delta: float, upper: float) -> float:
    """A lower bound on the smallest ε with δ_μ(ε) ≤ δ, just below ``upper`` (:func:`gdp_epsilon`'s answer): the
    largest ε found below it where the profile still exceeds δ (so the exact ε is above it); 0 where none is above 0
    (and below μ = :data:`GDP_SMALL_MU`, where the profile cancels, 0)."""
    if upper <= 0.0 or mu < GDP_SMALL_MU:
        return 0.0
    target = math.log(delta)
    step = 1e-13
    lower = upper * (1.0 - step)
    while lower > 0.0 and not gaussian_log_delta(mu, lower) > target:
        step *= 4.0
        lower = upper * (1.0 - step) if step < 1.0 else 0.0
    return max(lower, 0.0)


def gaussian_epsilon(noise_multiplier: float, delta: float, count: int = 1) -> float:
    """Exact ε(δ) of ``count`` Gaussian releases with multiplier z (analytic Gaussian)."""
    return gdp_epsilon(gdp_mu(noise_multiplier, count), delta)


def gdp_mu_for(epsilon: float, delta: float) -> float:
    """Largest μ whose μ-GDP profile satisfies δ_μ(ε) ≤ δ (never above the true value)."""
    eps = check.positive("epsilon", epsilon)
    target = math.log(check.delta("delta", delta))

    def gap(log_mu: float) -> float:
        return gaussian_log_delta(math.exp(log_mu), eps) - target

    lo, hi = -1.0, 1.0
    while gap(lo) > 0.0:
        lo -= 2.0
    while gap(hi) <= 0.0:
        hi += 2.0
    root = optimize.brentq(gap, lo, hi, xtol=1e-14, rtol=1e-14)
    while gap(root) > 0.0:
        root -= 1e-14 * max(1.0, abs(root))
    return math.exp(root)


def gaussian_noise_multiplier(epsilon: float, delta: float, count: int = 1) -> float:
    """Smallest multiplier z such that ``count`` Gaussian releases are (ε, δ)-DP (Balle & Wang 2018)."""
    k = check.positive_int("count", count)
    z = math.sqrt(k) / gdp_mu_for(epsilon, delta)
    # μ = √k/z is recomputed by every consumer: make the rounded z itself meet the target
    while gaussian_epsilon(z, delta, k) > epsilon:
        z = math.nextafter(z, math.inf)
    return z
