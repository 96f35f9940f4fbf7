"""Random allocation of a Gaussian ("balls in bins"), add/remove neighbours: a certified Rényi curve.

A record is released in one of t steps chosen uniformly; each step adds N(0, z²) noise to its (unit-sensitivity) sum.
With the record's step hidden, the outputs with and without the record are P = (1/t) Σ_i N(e_i, z²I) and
Q = N(0, z²I) on R^t. The likelihood ratio is X = P/Q = (1/t) Σ_i e^{ℓ_i} with ℓ_i = x_i/z² − m, m = 1/(2z²): under Q
the ℓ_i are independent N(−m, 2m), so E_Q e^{jℓ} = e^{j(j−1)m}. The adaptive mechanism is dominated by this
non-adaptive pair (Feldman & Shenfeld 2025, "Privacy amplification by random allocation", arXiv 2502.08202). Under
add/remove neighbours both directions count: ε(α) = max(D_α(P‖Q), D_α(Q‖P)).

**Remove**, D_α(P‖Q) = log E_Q X^α/(α − 1). At an integer α the multinomial expansion gives
E_Q X^α = t^{−α} α! [w^α] f(w)^t with f(w) = Σ_j e^{j(j−1)m} w^j/j! (the sum over partitions of α in Feldman &
Shenfeld 2025, written as a power series). The coefficients of f^t come from J. C. P. Miller's recurrence
g_n = (1/n) Σ_{k=1}^{n} ((t + 1)k − n) f_k g_{n−k}, every term positive while n ≤ t, or by repeated squaring where
t < n; both in log space, exact up to rounding. Between integers, log E_Q X^α is convex in α (Hölder), so the chord
through ⌊α⌋ and ⌈α⌉ lies above it (at α = 1 it is log E_Q X = 0).

**Add**, D_α(Q‖P) = log E_Q X^{−β}/β with β = α − 1. For x > 0, x^{−β} = (1/Γ(β)) ∫_0^∞ s^{β−1} e^{−sx} ds, and by
independence E_Q e^{−sX} = L(s/t)^t with L(u) = E e^{−uW}, W = e^{ℓ}. For any S > 0,

    E_Q X^{−β} = (1/Γ(β)) ∫_0^S s^{β−1} L(s/t)^t ds + E_Q[X^{−β} Q(β, SX)],

Q the regularised upper incomplete gamma function. Each piece is bounded from above:

* L(u) = 1 − u + V(u) with V(u) = E ψ(uW), ψ(y) = y − 1 + e^{−y} (E W = 1). In the standard normal variable
  ζ = (ℓ + m)/√(2m), ψ(u e^{ℓ}) is convex and increasing; on each cell of a ζ-grid it lies below its chord,
  integrated against the normal density exactly; below the grid it is at most its value at the grid's left end, above
  it at most u·Φ̄(Z − √(2m)) in all (ψ(y) ≤ y). With log u spaced √(2m) times the ζ spacing, V on the whole u-grid
  is one correlation of two arrays of positive terms.
* s ↦ t log L(s/t) is convex (a cumulant generating function), so on each cell of the s-grid it lies below the chord
  through its upper values at the cell's ends; (β − 1) log s is concave for β ≥ 1 (below its tangent at the cell's
  middle) and convex for β < 1 (below its chord). The integrand is then at most e^{linear}, integrated exactly.
* On [0, s₀]: e^{−sx} ≤ 1 − sx + s²x²/2 with E_Q X = 1 and E_Q X² = 1 + (e^{2m} − 1)/t.
* The remainder: X^{−β} Q(β, SX) decreases in X, so on {X ≥ c} it is at most c^{−β} Q(β, Sc); on {X < c} at most
  X^{−β} ≤ e^{−βM} where M = (1/t) Σ ℓ_i ~ N(−m, 2m/t) (AM–GM: X ≥ e^M), and E[e^{−βM}; M < log c] is a tilted
  normal tail in closed form. c is chosen so that this tail is below e^{−40}, the grid's end S so that Sc ≥
  β + 10√β + 40.

The value is never below the add divergence (up to floating-point rounding) and above it by about (spacing)²/8 with
a log-s spacing of :data:`SPACING`.

**Caps.** Both directions are at most the plain Gaussian's α/(2z²) (Rényi divergence is jointly quasi-convex: the
mixture of the t shifted Gaussians is no farther from Q, nor Q from it, than each of them), which is the value taken
at orders the series do not reach (above :data:`MAX_EXACT_ORDER`, or :data:`MAX_SQUARED_ORDER` where t is below the
order) and where the add integral's range would exceed :data:`MAX_LOG_RANGE`.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import special

from .. import validation as check

MAX_EXACT_ORDER = 1024
"""Largest order the remove series is computed to (Miller's recurrence, t ≥ the order: ~1024²/2 terms)."""
MAX_SQUARED_ORDER = 256
"""Largest order where t is smaller than the order (repeated squaring of the series: ~2 log₂ t products of 257²)."""
SPACING = 1e-2
"""Spacing of the add integral's grid in log s (and of √(2m)·ζ): its excess is about SPACING²/8 ≈ 1e-5 in ε(α)."""
MAX_LOG_RANGE = 40.0
"""Widest range of log s the add integral covers; orders that would need more take the Gaussian cap."""
_MAX_GRID_WORK = 3e7
"""Largest (u-grid × ζ-grid) correlation; a wider product widens the spacing instead."""
_TAIL_LOG = 40.0
_DIRECT_FROM = 2.0
"""Where u exceeds this multiple of L(u), L is also bounded directly (:func:`_log_laplace_direct`), the smaller
bound kept."""
_DIRECT_STEP = 0.04
_DIRECT_HALF_WIDTH = 9.0
_DIRECT_CELLS = round(2 * _DIRECT_HALF_WIDTH / _DIRECT_STEP)
_ROUNDING = 1e-13


def allocation_gaussian_rdp(noise_multiplier: float, num_steps: int, orders: np.ndarray) -> np.ndarray:
    """ε(α) of one random allocation of a Gaussian of multiplier ``noise_multiplier`` to one of ``num_steps``
    steps, both add/remove directions, at each order (> 1)."""
    z = check.positive("noise_multiplier", noise_multiplier)
    t = check.positive_int("num_steps", num_steps)
    return rdp_kernel(z, t, check.orders("orders", orders))


def rdp_kernel(z: float, t: int, alphas: np.ndarray) -> np.ndarray:
    """:func:`allocation_gaussian_rdp` without input checks (for accountants, whose events are validated)."""
    alphas = np.asarray(alphas, dtype=float)
    gaussian = alphas / (2.0 * z * z)
    if t == 1:
        return gaussian
    out = gaussian.copy()
    exact = alphas <= _top_order(t)
    if exact.any():
        a = alphas[exact]
        both = np.maximum(remove_rdp(z, t, a), add_rdp(z, t, a))
        out[exact] = np.minimum(both, gaussian[exact])
    return out


def _top_order(t: int) -> int:
    """The largest order the series reach for t steps (module docstring, caps)."""
    return MAX_EXACT_ORDER if t >= MAX_EXACT_ORDER else MAX_SQUARED_ORDER


# -- remove: E_Q X^α at integer orders, chords between them ---------------------------------------------------------


def remove_rdp(z: float, t: int, alphas: np.ndarray) -> np.ndarray:
    """D_α(P‖Q) from above at orders ≤ the series' top (module docstring)."""
    top = math.ceil(float(alphas.max()))
    size = next(n for n in (16, 64, 256, 1024) if n >= top)
    log_moments = _log_integer_moments(z, t, size)
    low = np.floor(alphas).astype(int)
    high = np.minimum(low + 1, size)
    theta = alphas - low
    log_moment = (1.0 - theta) * log_moments[low] + theta * log_moments[high]
    log_moment += _ROUNDING * (1.0 + np.abs(log_moment)) * alphas
    return np.asarray(log_moment / (alphas - 1.0))


@lru_cache(maxsize=16)
def _log_integer_moments(z: float, t: int, size: int) -> np.ndarray:
    """log E_Q X^n for n = 0…size (read-only)."""
    n = np.arange(size + 1, dtype=float)
    log_f = n * (n - 1.0) / (2.0 * z * z) - special.gammaln(n + 1.0)
    log_g = _log_power_series(log_f, t) if t < size else _miller(log_f, t)
    out = np.asarray(special.gammaln(n + 1.0) + log_g - n * math.log(t))
    out[:2] = 0.0  # E_Q X⁰ = E_Q X = 1 exactly
    out.flags.writeable = False
    return out


def _miller(log_f: np.ndarray, t: int) -> np.ndarray:
    """log [w^n] f^t for f₀ = 1, by g_n = (1/n) Σ_{k=1}^n ((t + 1)k − n) f_k g_{n−k}: all terms positive for n ≤ t."""
    size = log_f.size - 1
    log_g = np.full(size + 1, -np.inf)
    log_g[0] = 0.0
    k = np.arange(1, size + 1, dtype=float)
    for n in range(1, size + 1):
        terms = np.log((t + 1.0) * k[:n] - n) + log_f[1 : n + 1] + log_g[n - 1 :: -1]
        log_g[n] = special.logsumexp(terms) - math.log(n)
    return log_g


def _log_power_series(log_f: np.ndarray, t: int) -> np.ndarray:
    """log [w^n] f^t by repeated squaring, truncated at the series' length (positive coefficients, log space)."""
    size = log_f.size
    result = np.full(size, -np.inf)
    result[0] = 0.0
    base = log_f.copy()
    power = t
    while power:
        if power & 1:
            result = _log_product(result, base)
        power >>= 1
        if power:
            base = _log_product(base, base)
    return result


def _log_product(log_a: np.ndarray, log_b: np.ndarray) -> np.ndarray:
    """log of the coefficients of the product of two power series given by log coefficients, truncated."""
    size = log_a.size
    padded = np.concatenate((np.full(size - 1, -np.inf), log_b))
    shifted = sliding_window_view(padded, size)[::-1]  # row k: log_b[n − k] at column n (−∞ where n < k)
    with np.errstate(invalid="ignore"):
        return np.asarray(special.logsumexp(log_a[:, None] + shifted, axis=0))


# -- add: E_Q X^{−β} by the gamma integral of the Laplace transform ------------------------------------------------


def add_rdp(z: float, t: int, alphas: np.ndarray) -> np.ndarray:
    """D_α(Q‖P) from above (module docstring); the Gaussian's α/(2z²) at orders the integral does not cover."""
    out = alphas / (2.0 * z * z)
    table = _add_table(z, t)
    if table is None:
        return out
    betas = alphas - 1.0
    covered = betas <= table.top_beta
    if covered.any():
        out[covered] = table.log_moments(betas[covered]) / betas[covered]
    return out


class _AddTable:
    """t log L(s/t) from above on a geometric s-grid, and what the remainder terms need (module docstring)."""

    def __init__(self, z: float, t: int, top_beta: float, log_s_end: float) -> None:
        self.m = 0.5 / (z * z)
        self.v = 2.0 * self.m / t
        self.log_kappa, self.log_s0 = _near_zero(self.m, t)
        self.top_beta = top_beta
        span = log_s_end - self.log_s0
        b = 1.0 / z
        zeta_end = 12.0 + b
        spacing = max(SPACING, math.sqrt(span * 2.0 * zeta_end * b / _MAX_GRID_WORK))
        self.log_s = self.log_s0 + spacing * np.arange(math.ceil(span / spacing) + 1)
        self.upper = t * _log_laplace_upper(self.log_s - math.log(t), self.m, b, spacing, zeta_end)

    def log_moments(self, betas: np.ndarray) -> np.ndarray:
        """log E_Q X^{−β} from above, for β ≤ top_beta."""
        s0, kappa = math.exp(self.log_s0), math.exp(self.log_kappa)
        correction = -s0 * betas / (betas + 1) + kappa * s0 * s0 * betas / (2 * (betas + 2))
        near_zero = betas * self.log_s0 - np.log(betas) + np.log1p(correction)
        cells = _log_cell_integrals(self.log_s, self.upper, betas)
        main = np.logaddexp(near_zero, special.logsumexp(cells, axis=1)) - special.gammaln(betas)
        log_c, below_cut = _cut(self.m, self.v, betas)
        s_end = math.exp(self.log_s[-1])
        with np.errstate(divide="ignore"):
            above_cut = -betas * log_c + np.log(special.gammaincc(betas, s_end * np.exp(log_c)))
        total = special.logsumexp(np.stack((main, above_cut, below_cut)), axis=0)
        return np.asarray(total + _ROUNDING * (1.0 + np.abs(total)) * (betas + 1.0))


def _near_zero(m: float, t: int) -> tuple[float, float]:
    """log E_Q X² = log(1 + (e^{2m} − 1)/t), and log s₀ with κ·s₀² = 1e-6 (the Taylor bound's piece [0, s₀])."""
    log_kappa = math.log1p(math.expm1(2.0 * m) / t)
    return log_kappa, math.log(1e-3) - 0.5 * log_kappa


def _cut(m: float, v: float, betas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log c with E[e^{−βM}; M < log c] ≤ e^{−40} for M ~ N(−m, v) (module docstring), and that tail's log."""
    k = np.sqrt(2.0 * (betas * m + 0.5 * betas * betas * v + _TAIL_LOG))
    log_c = -m - betas * v - k * math.sqrt(v)
    return log_c, betas * m + 0.5 * betas * betas * v + special.log_ndtr(-k)


def _needed_log_s(m: float, v: float, betas: np.ndarray) -> np.ndarray:
    """log S with S·c ≥ β + 10√β + 40 (module docstring)."""
    return np.asarray(np.log(betas + 10.0 * np.sqrt(betas) + 40.0) - _cut(m, v, betas)[0])


@lru_cache(maxsize=16)
def _add_table(z: float, t: int) -> _AddTable | None:
    """The add integral's table for (z, t), covering every β whose range fits MAX_LOG_RANGE (None: none does, or the
    Gaussian is so weak (m > 300) that no amplification is worth claiming)."""
    m = 0.5 / (z * z)
    if 2.0 * m > 600.0:
        return None
    betas = np.arange(1.0, float(_top_order(t)))
    log_s0 = _near_zero(m, t)[1]
    needed = _needed_log_s(m, 2.0 * m / t, betas)
    fits = needed - log_s0 <= MAX_LOG_RANGE
    if not fits[0]:
        return None
    last = int(np.argmin(fits)) - 1 if not fits.all() else betas.size - 1
    return _AddTable(z, t, float(betas[last]), float(needed[last]))


def _psi(y: np.ndarray) -> np.ndarray:
    """y − 1 + e^{−y} ≥ 0, accurate for small y (series below 1e-2)."""
    small = y < 1e-2
    out = np.empty_like(y)
    ys = y[small]
    out[small] = 0.5 * ys * ys * (1.0 - ys / 3.0 + ys * ys / 12.0 - ys * ys * ys / 60.0)
    yl = y[~small]
    out[~small] = yl + np.expm1(-yl)
    return out


def _log_laplace_upper(log_u: np.ndarray, m: float, b: float, spacing: float, zeta_end: float) -> np.ndarray:
    """log L(u) from above on a grid of log u with the given spacing (module docstring: chords on a ζ-grid whose
    spacing is spacing/b, so that V on the u-grid is one correlation)."""
    h = spacing / b
    cells = math.ceil(2.0 * zeta_end / h)
    zeta = -zeta_end + h * np.arange(cells + 1)
    left_tail = special.ndtr(zeta[1:]) - special.ndtr(zeta[:-1])
    w0 = np.where(zeta[1:] > 0, special.ndtr(-zeta[:-1]) - special.ndtr(-zeta[1:]), left_tail)  # no 1 − Φ rounding
    pdf = np.exp(-0.5 * zeta * zeta) / math.sqrt(2.0 * math.pi)
    w1 = np.clip(pdf[:-1] - pdf[1:] - zeta[:-1] * w0, 0.0, h * w0)
    weights = np.zeros(cells + 1)
    weights[:-1] += w0 - w1 / h
    weights[1:] += w1 / h
    weights[0] += special.ndtr(-zeta_end)
    x = log_u[0] - m - b * zeta_end + spacing * np.arange(log_u.size + cells)
    values = np.correlate(_psi(np.exp(x)), weights, mode="valid")
    u = np.exp(log_u)
    values += u * special.ndtr(b - zeta_end)
    log_laplace = np.log1p(np.minimum(values - u, 0.0))
    # where 1 − u + V has lost L's relative accuracy (its excess, ~(spacing²/8)·u, is not small beside L): L directly
    far = u > _DIRECT_FROM * np.exp(log_laplace)
    if far.any():
        log_laplace[far] = np.minimum(log_laplace[far], _log_laplace_direct(u[far], m, b))
    return np.asarray(log_laplace)


def _log_laplace_direct(u: np.ndarray, m: float, b: float) -> np.ndarray:
    """log L(u) from above, by log-concavity: f(ζ) = log φ(ζ) − u e^{−m + bζ} is concave, so on each cell of a window
    around its peak ζ* = −W₀(u b² e^{−m})/b it lies below its tangent at the cell's middle, and beyond the window below
    the tangent at the window's end; each bound integrates in closed form."""
    peak = -special.lambertw(u * b * b * math.exp(-m)).real / b
    offsets = _DIRECT_STEP * (np.arange(_DIRECT_CELLS) + 0.5) - _DIRECT_HALF_WIDTH
    out = np.empty_like(u)
    for start in range(0, u.size, 256):
        rows = slice(start, start + 256)
        mids = peak[rows, None] + offsets[None, :]
        values, slopes = _log_integrand(mids, u[rows, None], m, b)
        cells = values + _log_sinhc(0.5 * _DIRECT_STEP * slopes)
        ends = peak[rows, None] + np.array([-_DIRECT_HALF_WIDTH, _DIRECT_HALF_WIDTH])[None, :]
        end_values, end_slopes = _log_integrand(ends, u[rows, None], m, b)
        tails = end_values - np.log(np.abs(end_slopes)) - math.log(_DIRECT_STEP)  # beyond the end e, the tangent's
        out[rows] = _row_logsumexp(np.concatenate((cells, tails), axis=1)) + math.log(_DIRECT_STEP)
    return out


def _row_logsumexp(x: np.ndarray) -> np.ndarray:
    top = x.max(axis=1)
    return np.asarray(top + np.log(np.exp(x - top[:, None]).sum(axis=1)))


def _log_integrand(zeta: np.ndarray, u: np.ndarray, m: float, b: float) -> tuple[np.ndarray, np.ndarray]:
    """f(ζ) = log φ(ζ) − u e^{−m + bζ} and f′(ζ)."""
    load = u * np.exp(-m + b * zeta)
    return -0.5 * zeta * zeta - 0.5 * math.log(2.0 * math.pi) - load, -zeta - b * load


def _log_sinhc(y: np.ndarray) -> np.ndarray:
    """log(sinh(y)/y): the integral of e^{2yx/h} over a cell of width h, over h."""
    a = np.maximum(np.abs(y), 1e-300)
    return np.asarray(a + np.log(-np.expm1(-2.0 * a) / (2.0 * a)))


def _log_cell_integrals(log_s: np.ndarray, upper: np.ndarray, betas: np.ndarray) -> np.ndarray:
    """log ∫ over each cell of e^{linear} ≥ s^{β−1} L(s/t)^t (rows: β, columns: cells; module docstring)."""
    s = np.exp(log_s)
    ds = s[1:] - s[:-1]
    chord = (upper[1:] - upper[:-1]) / ds
    power = (betas - 1.0)[:, None]
    mid = 0.5 * (s[1:] + s[:-1])
    concave = power >= 0.0
    start = np.where(concave, power * (np.log(mid) + (s[:-1] - mid) / mid), power * log_s[:-1]) + upper[:-1]
    slope = np.where(concave, power / mid, power * (log_s[1:] - log_s[:-1]) / ds) + chord
    return np.asarray(start + np.log(ds) + _log_expm1_ratio(slope * ds))


def _log_expm1_ratio(y: np.ndarray) -> np.ndarray:
    """log((e^y − 1)/y), 0 at y = 0."""
    out = np.zeros_like(y)
    small = np.abs(y) < 1e-8
    out[small] = 0.5 * y[small]
    mid = ~small & (np.abs(y) <= 1.0)
    out[mid] = np.log(np.expm1(y[mid]) / y[mid])
    pos = y > 1.0
    out[pos] = y[pos] + np.log(-np.expm1(-y[pos])) - np.log(y[pos])
    neg = y < -1.0
    out[neg] = np.log(-np.expm1(y[neg])) - np.log(-y[neg])
    return out
