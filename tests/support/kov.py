"""Test oracle: the optimal composition of k pure ε₀-DP mechanisms in closed form (Kairouz, Oh & Viswanath 2015,
Thm. 3.3; valid for adaptive composition): δ(ε) = E[(1 − e^{ε−L})₊], L = ε₀(k − 2W), W ~ Bin(k, 1/(1+e^{ε₀})).

Evaluated in log space with the saddle-point binomial pmf (Loader 2000), on a window outside which the binomial tails
are bounded by Chernoff and added; windows wider than :data:`MAX_TERMS` are summed in blocks with each block bounded
from above (width × largest pmf × largest factor). Every returned δ is therefore an upper bound, and every ε
one-sided. The library answers these compositions with its PLD accountant (randomized-response pairs); this exact
sum is the independent reference the tests hold it to.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from accountants.mechanisms.pure_composition import advanced_composition_epsilon

MAX_TERMS = 8192
"""Largest window summed term by term; wider windows are bounded blockwise with this many blocks."""
MAX_COMPOSITIONS = 10**12
"""Largest k for the optimal composition: beyond it the rounding of log q, magnified k-fold in the binomial exponent,
makes the error margin (:func:`pmf_log_error`) exceed 0.4 %."""


# -- optimal composition (Kairouz, Oh & Viswanath) -------------------------------------------------------------------

_S0, _S1, _S2, _S3, _S4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _stirlerr(n: np.ndarray) -> np.ndarray:
    """log(n!) − log(√(2πn)(n/e)^n) for n ≥ 1 (Loader 2000): gammaln below 16, the asymptotic series above."""
    n = np.asarray(n, dtype=float)
    big = np.maximum(n, 16.0)
    nn = big * big
    series = (_S0 - (_S1 - (_S2 - (_S3 - _S4 / nn) / nn) / nn) / nn) / big
    small = np.clip(n, 1.0, 16.0)
    direct = special.gammaln(small + 1.0) - (small + 0.5) * np.log(small) + small - _LOG_SQRT_2PI
    return np.asarray(np.where(n >= 16.0, series, direct))


def _bd0(x: np.ndarray, mean: np.ndarray | float) -> np.ndarray:
    """x·log(x/mean) + mean − x without cancellation (Loader 2000)."""
    x = np.asarray(x, dtype=float)
    m = np.broadcast_to(np.asarray(mean, dtype=float), x.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = (x - m) / (x + m)
        near = np.abs(x - m) < 0.1 * (x + m)
        s = (x - m) * v
        ej = 2.0 * x * v
        v2 = v * v
        for j in range(1, 16):
            ej = ej * v2
            s = s + ej / (2 * j + 1)
        far = x * np.log(x / m) + m - x
    return np.asarray(np.where(near, s, far))


def binomial_logpmf(w: np.ndarray, count: float, log_q: float, log_1mq: float) -> np.ndarray:
    """log P(W = w), W ~ Bin(count, q), in the saddle-point form of Loader (2000).

    ``log_q`` and ``log_1mq`` are log q and log(1 − q) (passed separately so neither suffers cancellation). The
    absolute error is about 1e-15 plus count × the absolute error of log q and log(1 − q) (the exponent w·log q
    magnifies their last bit): see :func:`pmf_log_error`."""
    w = np.asarray(w, dtype=float)
    n = float(count)
    q, p = math.exp(log_q), math.exp(log_1mq)
    excess = n * math.fsum((q, p, -1.0))  # bd0(w, nq) + bd0(n−w, np) carries n(q + p − 1): remove it
    inner = (w > 0) & (w < n)
    wi = np.where(inner, w, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = (
            _stirlerr(np.array(n))
            - _stirlerr(wi)
            - _stirlerr(n - wi)
            - (_bd0(wi, n * q) + _bd0(n - wi, n * p) - excess)
            + 0.5 * np.log(n / (2.0 * math.pi * wi * (n - wi)))
        )
    edge = np.where(w <= 0, n * log_1mq, n * log_q)
    return np.where(inner, value, edge)


def pmf_log_error(count: float, log_q: float, log_1mq: float) -> float:
    """A bound on the absolute error of :func:`binomial_logpmf`: 1e-12 plus 8 ulps of log q and log(1 − q), times
    count (their rounding is what the exponents magnify)."""
    return 1e-12 + 8.0 * 2.0**-52 * float(count) * (1.0 + abs(log_q) + abs(log_1mq))


def _log_chernoff_lower(w: float, count: float, q: float) -> float:
    """log of the Chernoff bound on P(W ≤ w) for w < count·q: −count·KL(w/count ‖ q)."""
    if w < 0:
        return -math.inf
    return -float(_bd0(np.array(w), count * q) + _bd0(np.array(count - w), count * (1.0 - q)))


def _window(count: float, q: float, log_resolution: float) -> tuple[float, float, float, float]:
    """[lo, hi] around the mean outside which each binomial tail has mass ≤ e^{log_resolution} (Chernoff), and the
    logs of the two tail bounds actually achieved."""
    mean = count * q
    sd = math.sqrt(max(count * q * (1.0 - q), 1e-300))
    z = math.sqrt(2.0 * max(-log_resolution, 1.0)) + 2.0
    lo = max(0.0, math.floor(mean - z * sd))
    hi = min(count, math.ceil(mean + z * sd))
    log_lo = _log_chernoff_lower(lo - 1.0, count, q) if lo > 0 else -math.inf
    log_hi = _log_chernoff_lower(count - hi - 1.0, count, 1.0 - q) if hi < count else -math.inf
    return lo, hi, log_lo, log_hi


def kov_log_delta(count: int, epsilon0: float, epsilon: float, log_resolution: float | None = None) -> float:
    """log of an upper bound on δ(ε) of the optimal composition of ``count`` ε₀-DP mechanisms (KOV 2015, Thm. 3.3).

    Exact up to the pmf's error margin (:func:`pmf_log_error`, added) when the window is summed term by term;
    blockwise (still an upper bound) beyond :data:`MAX_TERMS` terms. ``log_resolution``: binomial tails below this
    (log) mass are bounded by Chernoff and added, not summed (default: e^{−745}).
    """
    k = float(count)
    e0, eps = float(epsilon0), float(epsilon)
    if e0 <= 0.0 or eps >= k * e0:
        return -math.inf
    log_q = -float(np.logaddexp(0.0, e0))  # q = 1/(1 + e^{ε₀}): W counts the coordinates that "disagree"
    log_1mq = -float(np.logaddexp(0.0, -e0))
    q = math.exp(log_q)
    # terms with L = ε₀(k − 2w) > ε, i.e. w < (k − ε/ε₀)/2
    w_top = math.ceil((k - eps / e0) / 2.0) - 1.0
    if w_top < 0:
        return -math.inf
    resolution = -745.0 if log_resolution is None else log_resolution
    lo, hi, log_tail_lo, log_tail_hi = _window(k, q, resolution)
    tails = [log_tail_lo]  # the lower tail (w < lo) lies under w_top whenever lo ≤ w_top; bounded by factor 1
    top = min(w_top, hi)
    if w_top > hi:
        tails.append(log_tail_hi)
    if top < lo:  # every term lies in the lower tail: bound it by the tail mass below w_top + 1
        bound = _log_chernoff_lower(w_top, k, q) if w_top < k * q else 0.0
        return min(0.0, bound)
    width = top - lo + 1.0
    blocks = int(min(width, MAX_TERMS))
    size = math.ceil(width / blocks)
    starts = lo + size * np.arange(math.ceil(width / size), dtype=float)
    ends = np.minimum(starts + size - 1.0, top)
    mode = math.floor((k + 1.0) * q)
    nearest = np.clip(mode, starts, ends)  # the pmf is unimodal: its largest value on a block is nearest the mode
    log_terms = (
        np.log(ends - starts + 1.0)
        + binomial_logpmf(nearest, k, log_q, log_1mq)
        + _log1mexp(eps - e0 * (k - 2.0 * starts))  # the factor 1 − e^{ε−L} is largest at the block's first w
    )
    total = float(special.logsumexp(np.concatenate((log_terms, np.array(tails)))))
    return min(0.0, total + pmf_log_error(k, log_q, log_1mq))


def _log1mexp(x: np.ndarray) -> np.ndarray:
    """log(1 − e^x) for x < 0 (Mächler's two branches, each evaluated only where it is accurate)."""
    x = np.minimum(np.asarray(x, dtype=float), -1e-300)
    near = x > -0.6931471805599453
    out = np.empty_like(x)
    out[near] = np.log(-np.expm1(x[near]))
    out[~near] = np.log1p(-np.exp(x[~near]))
    return out


def kov_epsilon(count: int, epsilon0: float, delta: float, rtol: float = 1e-10) -> float:
    """Smallest ε (to relative ``rtol``, rounded up) with δ_KOV(ε) ≤ δ for ``count`` ε₀-DP mechanisms."""
    log_delta = math.log(delta)
    resolution = log_delta - 30.0
    k = float(count)

    def feasible(eps: float) -> bool:
        return kov_log_delta(count, epsilon0, eps, resolution) <= log_delta

    if feasible(0.0):
        return 0.0
    lo, hi = 0.0, k * epsilon0  # δ(kε₀) = 0
    guess = min(hi, advanced_composition_epsilon(k, epsilon0, delta))
    if feasible(guess):
        hi = guess
    else:
        lo = guess
    for _ in range(200):  # bisection; the cap only matters for subnormal ε, where rtol cannot be resolved
        mid = 0.5 * (lo + hi)
        if hi - lo <= rtol * hi or not lo < mid < hi:
            break
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    return hi


def kov_max_epsilon0(count: int, epsilon: float, delta: float, rtol: float = 1e-10) -> float:
    """Largest ε₀ (to relative ``rtol``, rounded down) whose optimal k-fold composition is (ε, δ)-DP.

    δ_KOV(ε) increases with ε₀ (randomized response with a smaller ε₀ is a post-processing of one with a larger ε₀),
    so the feasible ε₀ form an interval (0, ε₀*]; ε₀ = ε/k is always feasible (pure composition), and so is the
    root of √(2k log(1/δ))·ε₀ + kε₀²/2 = ε (advanced composition), where the search starts."""
    log_delta = math.log(delta)
    resolution = log_delta - 30.0

    def feasible(e0: float) -> bool:
        return kov_log_delta(count, e0, epsilon, resolution) <= log_delta

    k = float(count)
    lg = -math.log(delta)
    # the advanced-composition ε₀ is feasible (KOV is optimal, so never worse): start the search there
    advanced = 2.0 * epsilon / (math.sqrt(2.0 * k * lg + 2.0 * k * epsilon) + math.sqrt(2.0 * k * lg))
    lo = max(epsilon / k, advanced)
    if not feasible(lo):  # rounding at the edge of the float range: fall back to pure composition
        lo = epsilon / k
    if not lo > 0.0:  # ε/k underflows: no representable ε₀ is known to be feasible
        return 0.0
    step = 2.0
    hi = lo * step
    while feasible(hi):  # expand geometrically with a growing factor (2, 4, 16, 256, …)
        lo, step = hi, min(step * step, 1e100)
        hi = lo * step
        if hi > 1e300:
            return lo
    for _ in range(400):
        mid = lo * math.sqrt(hi / lo) if hi / lo > 1.5 else 0.5 * (lo + hi)  # geometric mean without underflow
        if hi - lo <= rtol * lo or not lo < mid < hi:
            break
        if feasible(mid):
            lo = mid
        else:
            hi = mid
    return lo
