"""Poisson-subsampled Gaussian mechanism (DP-SGD step), add/remove-one neighbours: exact Rényi curve.

Each record enters the batch independently with probability q; the summed (clipped) contributions get
Gaussian noise of std z·C where C is the L2 sensitivity. With μ₀ = N(0, z²), μ₁ = N(1, z²) (unit sensitivity),
the RDP at order α is (Mironov, Talwar & Zhang 2019, "Rényi DP of the Sampled Gaussian Mechanism")

    ε(α) = log A_α / (α − 1),   A_α = E_{x∼μ₀}[((1 − q) + q μ₁(x)/μ₀(x))^α].

* Integer α: A_α = Σ_k C(α,k)(1−q)^{α−k} q^k e^{(k²−k)/(2z²)} (MTZ19 §3.3). We sum A_α − 1 =
  Σ_{k≥2} C(α,k)(1−q)^{α−k} q^k (e^{(k²−k)/(2z²)} − 1), a sum of positive terms, so small RDP values keep full
  relative precision.
* Fractional α: the two-sided series of MTZ19 §3.3 split at z₀ = z² log(1/q − 1) + ½, with the **signed** generalised
  binomial coefficients C(α, i) (as TF-Privacy, opacus and prv-accountant do; matches mpmath quadrature).
  dp_accounting 0.6.0 sums |terms| instead, which overstates fractional orders (+4 % at q = 0.01, z = 1, α = 1.5).
  Past i > α the series alternates and decays only polynomially; its tail is bracketed rigorously by an Euler
  transform (see :func:`_log_a_fractional`), which converges geometrically. We stop when the bracket is below
  1e-10·(A_α − 1) (or at rounding level) and return its *upper* end plus a rounding margin of 2e-15·(1 + log A_α)
  on log A_α, so the value is an upper bound: within 1e-9 relative of the exact value, or within 5e-15/(α − 1)
  absolute where ε(α) is tiny (A_α − 1 is then below what a sum of terms of size 1 resolves).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from scipy import special

from .. import validation as check
from .._numerics import integer_order_layout, log_expm1, segment_logsumexp

_EULER_DIFFERENCES = 16
_ROUNDING = 2e-15


def _euler_weights(m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights w with Σ_{j<m} c_j / 2^{j+1} = w·a and v with c_m = v·a, for c_j = (−1)^j Δ^j a_0 = Σ_k C(j,k)(−1)^k a_k;
    also |v| (to bound rounding)."""
    k = np.arange(m + 1)
    binom = special.comb(k[:, None], k[None, :])
    signed = binom * (-1.0) ** k[None, :]
    weights = (signed[:m] / 2.0 ** (np.arange(m)[:, None] + 1)).sum(axis=0)
    return weights, signed[m], binom[m]


_EULER_MATRIX = np.column_stack(_euler_weights(_EULER_DIFFERENCES))
_FRACTIONAL_MAX_TERMS = 1 << 16
_FRACTIONAL_RTOL = 1e-10


def poisson_subsampled_gaussian_rdp(sampling_rate: float, noise_multiplier: float, orders: np.ndarray) -> np.ndarray:
    """Per-step RDP ε(α) of the Poisson-subsampled Gaussian for every order in ``orders`` (integer or fractional).

    ``sampling_rate`` q ∈ (0, 1]; ``noise_multiplier`` z > 0 (std over sensitivity); orders α > 1.
    For q = 1 this is the plain Gaussian, α/(2z²).
    """
    return rdp_kernel(*check.sampled_gaussian(sampling_rate, noise_multiplier, orders))


_REMEMBERED_ORDERS = 32
"""Curves on at least this many orders (an order grid) are remembered for the last few (q, z): a request that
converts the same release's curve twice (its answer, then ε over training; a calibration's last check) evaluates it
once."""


def rdp_kernel(q: float, z: float, alphas: np.ndarray) -> np.ndarray:
    """:func:`poisson_subsampled_gaussian_rdp` without input checks (for accountants, whose events are validated).

    Never above the plain Gaussian's α/(2z²), which also bounds the subsampled release (Rényi divergence is jointly
    quasi-convex: the mixture (1 − q)Q + qP is no farther from Q than P is): the series' rounding allowance, divided
    by α − 1, could otherwise lift a q within rounding of 1 above it."""
    if alphas.size >= _REMEMBERED_ORDERS:
        return _remembered(q, z, np.ascontiguousarray(alphas, dtype=float).tobytes()).copy()
    return _kernel(q, z, alphas)


@lru_cache(maxsize=8)
def _remembered(q: float, z: float, orders: bytes) -> np.ndarray:
    return _kernel(q, z, np.frombuffer(orders, dtype=float).copy())


def _kernel(q: float, z: float, alphas: np.ndarray) -> np.ndarray:
    gaussian = alphas / (2.0 * z * z)
    if q == 1.0:
        return gaussian
    out = np.empty_like(alphas)
    integer = alphas == np.floor(alphas)
    if integer.any():
        out[integer] = _rdp_integer(q, z, alphas[integer])
    if (~integer).any():
        out[~integer] = _rdp_fractional(q, z, alphas[~integer])
    return np.asarray(np.minimum(out, gaussian))


def _rdp_integer(q: float, z: float, alphas: np.ndarray) -> np.ndarray:
    """A_α = 1 + Σ_{k=2}^{α} C(α, k) q^k (1 − q)^{α−k} (e^{(k²−k)/(2z²)} − 1) (MTZ19, Thm. 11, integer α)."""
    orders = tuple(alphas.astype(int).tolist())
    alpha, k, log_binom, starts = integer_order_layout(orders)
    distinct_k, k_index = _distinct_k(orders)
    moment = log_expm1((distinct_k * distinct_k - distinct_k) / (2.0 * z * z))[k_index]
    terms = log_binom + k * (math.log(q) - math.log1p(-q)) + alpha * math.log1p(-q) + moment
    log_a_minus_1 = segment_logsumexp(terms, starts)
    return np.asarray(np.logaddexp(0.0, log_a_minus_1) / (alphas - 1.0))


@lru_cache(maxsize=64)
def _distinct_k(orders: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """k = 2..max α, and where each pair (α, k) of :func:`integer_order_layout` finds its k (the moment term
    depends on k alone, so it is evaluated once per k)."""
    distinct_k = np.arange(2.0, max(orders) + 1.0)
    _, k, _, _ = integer_order_layout(orders)
    return distinct_k, (k - 2.0).astype(np.intp)


def _rdp_fractional(q: float, z: float, alphas: np.ndarray) -> np.ndarray:
    """Each order with its own number of terms (a multiple of 8 at least 7 past the order, so an order's value
    does not depend on the others evaluated with it), four times as many where the bracket is not yet narrow."""
    # the Euler transform starts ≥ 7 terms past the order: enough for a 1e-10 bracket on every (q, z, α) tried
    # (α < 32, q from 1e-3 to 0.5, z from 0.5 to 3)
    n_terms = 8 * ((np.floor(alphas).astype(int) + _EULER_DIFFERENCES + 15) // 8)
    log_a, converged = _log_a_in_passes(q, z, alphas, n_terms)
    pending = np.flatnonzero(~converged & (n_terms < _FRACTIONAL_MAX_TERMS))  # usually none: all narrow at once
    while pending.size:
        n_terms[pending] *= 4
        log_a[pending], converged = _log_a_in_passes(q, z, alphas[pending], n_terms[pending])
        pending = pending[~converged & (n_terms[pending] < _FRACTIONAL_MAX_TERMS)]
    return np.asarray(np.maximum(log_a / (alphas - 1.0), 0.0))


def _log_a_in_passes(q: float, z: float, alphas: np.ndarray, n_terms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_log_a_fractional` of every order, one pass per octave of the number of terms (a grid's or a zoom
    round's orders: one pass; the padding of a pass's shorter rows stays below its longest row's length)."""
    octave = np.frexp(n_terms)[1]  # N in [2^(e−1), 2^e)
    if (octave == octave[0]).all():
        return _log_a_fractional(q, z, alphas.tolist(), n_terms.tolist())
    log_a, converged = np.empty_like(alphas), np.empty(alphas.size, dtype=bool)
    for level in np.unique(octave).tolist():
        rows = np.flatnonzero(octave == level)
        log_a[rows], converged[rows] = _log_a_fractional(q, z, alphas[rows].tolist(), n_terms[rows].tolist())
    return log_a, converged


class _Layout(NamedTuple):
    """The σ-independent parts of the fractional series for some orders (of one octave of N: see
    :func:`_log_a_in_passes`), each with its own number of terms N, right-aligned in rows of the largest N (W
    columns; column c holds term c − (W − N), the columns before the first term are padding with log|C| = −∞, i.e.
    zero terms): the last :data:`_EULER_DIFFERENCES` + 1 columns are every row's tail block. The padding is a
    multiple of 8 columns (every N is), so each row's sums take their terms in the same groups and order as when
    the order is evaluated alone: its value is the same float (tested, for lattices of orders and for unrelated
    ones)."""

    alphas: np.ndarray
    log_binom: np.ndarray
    """log|C(α, i)| (−∞ in the padding)."""
    sign: np.ndarray
    near_index: np.ndarray | None
    """Term i of each column (0 in the padding): where the left side's factor is read (None: no padding, term i in
    column i)."""
    far_points: np.ndarray
    """Where the right side's factor is evaluated: α − i for every (order, term), or, for orders sharing fractional
    parts, each fractional part plus the integers needed (see :func:`_far_side_points`)."""
    far_index: np.ndarray | None
    """Where each (order, column) reads its right side's factor in the values at ``far_points`` (None: the values
    are α − i row by row)."""
    tail_start: np.ndarray
    """The term at which each order's tail block starts (N − 17)."""


_CACHED_LAYOUT_ORDERS = 256
"""Layouts of at most this many orders (an order grid, a zoom round) are cached; larger ones (many checkpoints'
zooms at once, ~1 kB per order) are not kept."""


def _fractional_layout(orders: list[float], n_terms: list[int]) -> _Layout:
    """:func:`_layout`, cached for batches of 2 to :data:`_CACHED_LAYOUT_ORDERS` orders (a grid, a zoom round), and
    for single orders in a small cache of their own (a calibration asks for one order at several noises; a
    conversion's vertices, asked once, do not push grids out of the main cache)."""
    if 1 < len(orders) <= _CACHED_LAYOUT_ORDERS:
        return _cached_layout(tuple(orders), tuple(n_terms))
    if len(orders) == 1:
        return _single_order_layout(tuple(orders), tuple(n_terms))
    return _layout(tuple(orders), tuple(n_terms))


def _layout(orders: tuple[float, ...], n_terms: tuple[int, ...]) -> _Layout:
    """σ-independent parts of the fractional series (:class:`_Layout`). C(α, i) = Π_{m<i} (α − m) / i!, so
    log|C(α, i)| is a running sum of log|α − m| (one logarithm per term; rounding ≤ i + 2 ulps of the terms'
    logarithms, as small as log-gamma's where the terms that matter lie) and the sign is the parity of the negative
    factors."""
    alphas, counts = np.array(orders), np.array(n_terms)
    width = int(counts.max())
    terms = np.arange(width) - (width - counts)[:, None]  # term index of each column (negative: padding)
    index = np.maximum(terms, 0)
    factors = alphas[:, None] - np.arange(width - 1, dtype=float)[None, :]
    log_binom = np.zeros((alphas.size, width))
    np.cumsum(np.log(np.abs(factors)), axis=1, out=log_binom[:, 1:])
    log_binom -= _log_factorials(width)
    negatives = np.zeros((alphas.size, width), dtype=np.int64)
    np.cumsum(factors < 0.0, axis=1, out=negatives[:, 1:])
    padded = bool(counts.min() < width)
    if padded:  # right-align the shorter rows
        rows = np.arange(alphas.size)[:, None]
        log_binom, negatives = log_binom[rows, index], negatives[rows, index]
        log_binom[terms < 0] = -np.inf
    far_points, far_index = _far_side_points(alphas, index)
    sign = 1.0 - 2.0 * (negatives & 1)
    tail_start = counts - _EULER_DIFFERENCES - 1
    return _Layout(alphas, log_binom, sign, index if padded else None, far_points, far_index, tail_start)


@lru_cache(maxsize=16)
def _log_factorials(n_terms: int) -> np.ndarray:
    return np.asarray(special.gammaln(np.arange(n_terms, dtype=float) + 1.0))


def _side_factor(q: float, z: float, k: np.ndarray, left: bool) -> np.ndarray:
    """A term's factor from one side of z₀ = z² log(1/q − 1) + ½: k·log(q/(1 − q)) + (k² − k)/(2z²) + log Φ(s), with
    s = (z₀ − k)/z left of z₀ (k = i) and s = (k − z₀)/z right of it (k = j = α − i)."""
    z0 = z * z * math.log(1.0 / q - 1.0) + 0.5
    tail = (z0 - k) / z if left else (k - z0) / z
    return np.asarray(k * (math.log(q) - math.log1p(-q)) + (k * k - k) * (0.5 / (z * z)) + special.log_ndtr(tail))


@lru_cache(maxsize=64)
def _near_side(q: float, z: float, n_terms: int) -> np.ndarray:
    """The left side's factor of term i (:func:`_side_factor`): the same for every order."""
    return _side_factor(q, z, np.arange(n_terms, dtype=float), left=True)


_cached_layout = lru_cache(maxsize=256)(_layout)
_single_order_layout = lru_cache(maxsize=16)(_layout)


def _far_side_points(alphas: np.ndarray, terms: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Where to evaluate the right side's factor of term i of each order (:func:`_side_factor` at j = α − i), and
    where each (order, term) reads it. It depends on α − i alone, so orders with the same fractional part (a lattice
    of orders) share it: it is tabulated once per fractional part φ at φ + n for the integers n needed. φ + (m − i)
    is the same float as α − i (α = m + φ: both round the same real number, and α − m is exact), so the values are
    those computed order by order."""
    if alphas.size == 1:  # nothing to share
        return (alphas[:, None] - terms).ravel(), None
    whole = np.floor(alphas)
    distinct, group = np.unique(alphas - whole, return_inverse=True)
    low, high = int((whole - terms.max(axis=1)).min()), int(whole.max())
    if distinct.size * (high - low + 1) >= 0.7 * terms.size:  # little to share: order by order
        return (alphas[:, None] - terms).ravel(), None
    table = distinct[:, None] + np.arange(low, high + 1, dtype=float)[None, :]
    index = group[:, None] * (high - low + 1) + (whole[:, None] - terms).astype(np.intp) - low
    return table.ravel(), index


def _log_a_fractional(q: float, z: float, orders: list[float], n_terms: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Upper end of a rigorous bracket on log A_α from ``n_terms`` terms of the series (one count per order, laid out
    by :func:`_layout`); and whether it is narrow.

    Terms i < N are summed directly; the tail i ≥ N (N > α) is alternating and its magnitudes a_k = |t_{N+k}| form a
    Hausdorff moment sequence (|C(α, i)| ∝ Γ(i − α)/Γ(i + 1) is a Beta moment sequence for i > α, and each side is
    ∫ t^i dμ with t = qL/(1 − q) ≤ 1 left of z₀, t = (1 − q)/(qL) ≤ 1 right of it). Hence the Euler transform
    Σ_k (−1)^k a_k = Σ_j c_j / 2^{j+1} has c_j = (−1)^j Δ^j a_0 ≥ 0 decreasing in j, and the tail lies in
    [E_m, E_m + c_m / 2^m] with E_m = Σ_{j<m} c_j / 2^{j+1}; rounding in the differences is added to the width.
    """
    layout = _fractional_layout(orders, n_terms)
    sign, alphas = layout.sign, layout.alphas
    columns = sign.shape[1]
    # terms / (1−q)^α: side x < z0, C(α,i) (q/(1−q))^i e^{(i²−i)/(2z²)} Φ((z0 − i)/z); side x > z0, i ↔ j = α − i
    near = _near_side(q, z, columns)
    far = _side_factor(q, z, layout.far_points, left=False)
    near = near[None, :] if layout.near_index is None else near[layout.near_index]
    far = far.reshape(sign.shape) if layout.far_index is None else far[layout.far_index]
    log_term = layout.log_binom + np.logaddexp(near, far)
    peak = log_term.max(axis=1)
    magnitude = np.exp(log_term - peak[:, None])
    start = columns - _EULER_DIFFERENCES - 1
    head = np.einsum("ij,ij->i", sign[:, :start], magnitude[:, :start])
    euler, last_difference, rounding = (magnitude[:, start:] @ _EULER_MATRIX).T
    width = np.abs(last_difference) * 0.5**_EULER_DIFFERENCES + 4e-16 * rounding
    tail_sign = sign[:, start]
    upper = head + tail_sign * euler + (tail_sign > 0) * width
    positive = upper > 0.0  # a non-positive sum can only be rounding in an unconverged block
    log_a = alphas * math.log1p(-q) + peak + np.log(np.where(positive, upper, 1.0))
    log_a += _ROUNDING * (1.0 + np.abs(log_a))  # rounding in the sum: keep the value an upper bound
    # RDP is log A/(α − 1) ≈ (A − 1)/(α − 1): the bracket (on the scale of `upper`) must be small against A − 1,
    # which on that scale is upper·(1 − 1/A), or be at rounding level
    relative_excess = np.abs(np.expm1(-log_a))
    converged = (
        positive
        & (layout.tail_start > alphas)
        & (width <= upper * np.maximum(_FRACTIONAL_RTOL * relative_excess, 4e-16))
    )
    return np.where(positive, log_a, np.inf), converged
