"""Discrete privacy-loss distributions (PLDs) on a grid: pessimistic truncation, FFT composition with a bounded
rounding error, coarsening, and the hockey-stick profile δ(ε) and its inverse ε(δ).

A :class:`DiscretePld` is a non-negative measure on the grid {(offset + i)·Δ} (the distribution of the privacy loss
L = log dP/dQ under P of a dominating pair) plus an atom at +∞. Its profile is δ(ε) = Σ_i p_i (1 − e^{ε − L_i})₊
+ p_∞. Every operation here only moves mass *up* (towards larger loss, or to +∞), and the profile is non-decreasing
in that order (g(s) = (1 − e^{ε−s})₊ is non-decreasing, and the order is preserved by convolution of non-negative
measures of any total mass), so every δ computed from the result is an upper bound on the δ of the exact measure.
Each numerical step is made to move mass only **up**:

* truncation of a composed array (pessimistic, as dp_accounting): lower-tail mass is added to the lowest kept point
  (sound; it costs only tightness), upper-tail mass to the atom at +∞, where it counts in every reported δ;
* FFT convolution (Koskela, Jälkö & Honkela 2020): the computed convolution differs from the exact one by
  ‖e‖₂ ≤ (3η + 6u)(‖a‖₂‖b‖₁ + ‖a‖₁‖b‖₂) with η = 10·u·⌈log₂ n⌉ the relative L2 error of one FFT of length n
  (Higham 2002, Thm. 24.2, constant rounded up); negative values are clipped (towards the exact entries) and
  ‖e‖₁ ≤ √m‖e‖₂ (m kept entries) is added to the atom at +∞;
* the atom at +∞ of a convolution is bounded by i_a·M_b + i_b·M_a (total masses M), and the final sum for δ(ε) is
  inflated by (1 + 1e-12) for summation error.

:mod:`accountants.mechanisms.bounded_range_composition` (the bounded-range composition of private mirror descent)
builds on this module; the general event-tree accountant is :mod:`accountants.pld`, whose tilted composition bounds
its rounding differently (per frequency bin, after an exponential tilt).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import fft

from ..errors import ParameterError

U = np.finfo(float).eps / 2.0
"""Unit roundoff of float64."""
SUM_MARGIN = 1e-12
"""Relative allowance for the rounding of a sum of non-negative terms."""


@dataclass(frozen=True)
class DiscretePld:
    """A non-negative measure on the grid {(offset + i)·Δ} plus an atom at +∞ (``infinity``, error margins included)."""

    offset: int
    probs: np.ndarray
    infinity: float

    def total(self) -> float:
        return float(self.probs.sum()) * (1.0 + SUM_MARGIN) + self.infinity


def truncate(pld: DiscretePld, lower_tail: float, upper_tail: float) -> DiscretePld:
    """Drop the outer entries whose mass is ≤ the given tails: the lower part is added to the lowest kept entry, the
    upper part to the atom at ∞ (both moves are upward)."""
    p = pld.probs
    if p.size <= 2:
        return pld
    cum = np.cumsum(p)
    total = cum[-1]
    lo = int(np.searchsorted(cum, lower_tail, side="right"))
    upper_cum = total - cum  # mass strictly above index i (approximately)
    hi = int(np.searchsorted(-upper_cum, -upper_tail, side="left"))
    lo, hi = min(lo, p.size - 1), max(min(hi, p.size - 1), 0)
    if hi < lo:
        lo = hi = int(np.argmax(p))
        lo = min(lo, hi)
    below = float(p[:lo].sum())
    above = float(p[hi + 1 :].sum())
    kept = p[lo : hi + 1].copy()
    kept[0] += below
    margin = 4.0 * U * (below + above) * max(1, p.size)  # the two sums and the addition, rounded
    return DiscretePld(pld.offset + lo, kept, pld.infinity + above * (1.0 + SUM_MARGIN) + margin)


def convolve(a: DiscretePld, b: DiscretePld, direct_limit: int = 0) -> tuple[DiscretePld, float]:
    """Convolution by real FFT; rounding error bounded (module docstring, step 2) and added to the atom at ∞.
    Also returns that bound (the clipped noise floor, which the lower truncation may then absorb).
    With ``a.size·b.size ≤ direct_limit`` the convolution is summed directly instead: every entry is a sum of at
    most n = min(sizes) non-negative products, relative error ≤ (n + 1)u, so rounding it up by 2(n + 1)u bounds it
    entry by entry and nothing goes to ∞ (the FFT's error is absolute, and multiplied by the copies of the array
    that end up in the result)."""
    a1, b1 = float(a.probs.sum()) * (1 + SUM_MARGIN), float(b.probs.sum()) * (1 + SUM_MARGIN)
    infinity = (a.infinity * (b1 + b.infinity) + b.infinity * (a1 + a.infinity)) * (1.0 + SUM_MARGIN)
    if a.probs.size * b.probs.size <= direct_limit:
        n = min(a.probs.size, b.probs.size)
        out = np.convolve(a.probs, b.probs) * (1.0 + 2.0 * (n + 1) * U)
        return DiscretePld(a.offset + b.offset, out, infinity), 0.0
    m = a.probs.size + b.probs.size - 1
    n = fft.next_fast_len(m, real=True)
    fa = fft.rfft(a.probs, n)
    same = a is b
    out = fft.irfft(fa * fa if same else fa * fft.rfft(b.probs, n), n)[:m]
    np.maximum(out, 0.0, out=out)
    eta = 10.0 * U * math.ceil(math.log2(max(n, 2)))
    a2, b2 = _norm(a.probs), _norm(b.probs)
    l2 = (3.0 * eta + 6.0 * U) * (a2 * b1 + a1 * b2) * (1.0 + 1e-6)
    fft_error = math.sqrt(m) * l2
    return DiscretePld(a.offset + b.offset, out, infinity + fft_error), fft_error


def _dot(x: np.ndarray, y: np.ndarray) -> float:
    """Σ xᵢyᵢ by numpy's pairwise summation, not BLAS: a multi-threaded BLAS on a busy host turns this level-1 call
    into thread hand-offs (11.7 ms instead of 11 µs for 70k doubles), and pairwise summation errs less."""
    return float(np.sum(x * y))


def _norm(x: np.ndarray) -> float:
    """‖x‖₂ without BLAS (see :func:`_dot`); the entries are probabilities, so no scaling is needed."""
    return math.sqrt(_dot(x, x))


def coarsen(pld: DiscretePld, factor: int) -> DiscretePld:
    """Regrid to spacing factor·Δ, rounding each loss up (index i ↦ ⌈i/factor⌉)."""
    start = -((-pld.offset) // factor)  # ⌈offset / factor⌉
    idx = -((-(pld.offset + np.arange(pld.probs.size))) // factor) - start
    probs = np.bincount(idx, weights=pld.probs)
    margin = 4.0 * U * float(pld.probs.sum())
    return DiscretePld(int(start), probs, pld.infinity + margin)


def delta_at(pld: DiscretePld, grid: float, epsilon: float) -> float:
    """Upper bound on E[(1 − e^{ε−S})₊] + mass at ∞ for this discrete PLD."""
    losses = (pld.offset + np.arange(pld.probs.size)) * grid
    above = losses > epsilon
    value = _dot(pld.probs[above], -np.expm1(epsilon - losses[above]))
    return value * (1.0 + SUM_MARGIN) + pld.infinity


def epsilon_at(pld: DiscretePld, grid: float, delta: float) -> float:
    """Smallest ε ≥ 0 with :func:`delta_at` ≤ δ (the upper end of a verified bracket); ∞ if the atom at ∞ is ≥ δ."""
    if pld.infinity >= delta:
        return math.inf
    if delta_at(pld, grid, 0.0) <= delta:
        return 0.0
    p = pld.probs
    losses = (pld.offset + np.arange(p.size)) * grid
    # tail sums at each knot (approximate, only to locate the knot interval; the answer is verified below)
    hi = p.size - 1
    lo = max(int(np.searchsorted(losses, 0.0, side="left")) - 1, 0)
    if delta_at(pld, grid, losses[lo]) <= delta:  # only when losses[0] > 0: the answer lies in [0, losses[0]]
        hi, lo = lo, -1
    while hi - lo > 1:  # invariant: δ(losses[hi]) ≤ δ (δ at the top knot is the ∞ atom)
        mid = (lo + hi) // 2
        if delta_at(pld, grid, losses[mid]) <= delta:
            hi = mid
        else:
            lo = mid
    # on [losses[hi−1], losses[hi]], δ(ε) = A − e^{ε−s} B with the entries ≥ hi: solve, then verify
    s = losses[hi]
    tail = p[hi:]
    a_sum = float(tail.sum()) * (1.0 + SUM_MARGIN) + pld.infinity
    b_sum = _dot(tail, np.exp(s - losses[hi:]))
    if b_sum > 0.0 and a_sum > delta:
        eps = s + math.log((a_sum - delta) / b_sum)
        eps = min(max(eps, losses[hi - 1] if hi > 0 else 0.0, 0.0), s)
    else:
        eps = s
    eps = max(eps, 0.0)
    step = 1e-12 * max(1.0, abs(eps))
    while delta_at(pld, grid, eps) > delta:
        if eps >= s:
            eps = s
            break
        eps = min(eps + step, s)
        step *= 2.0
    return float(eps)


def uncertified(floor: float, delta: float) -> ParameterError:
    """The error for a δ at or below a PLD's mass at ∞ (``floor``): no finite ε is certified there."""
    allowed = (
        f"> {floor:.3g} (the PLD's mass at infinity, margins included)"
        if floor < 1.0
        else "none: the error margins of this PLD exceed 1 (too many steps for this accountant)"
    )
    return ParameterError.single(
        "delta", f"is too small: no finite epsilon is certified at this delta; must be {allowed}", allowed, delta
    )


def loss_variance(pld: DiscretePld, grid: float) -> float:
    losses = (pld.offset + np.arange(pld.probs.size)) * grid
    p = pld.probs / max(float(pld.probs.sum()), 1e-300)
    mean = _dot(p, losses)
    return _dot(p, (losses - mean) ** 2)


def compose(
    single: DiscretePld, steps: int, tail_mass: float, max_points: int, direct_limit: int = 0
) -> tuple[DiscretePld, int]:
    """``steps``-fold self-convolution by repeated squaring, truncating and (if needed) coarsening pessimistically.
    Returns the result and the coarsening factor applied to the grid."""
    result: DiscretePld | None = None
    power = single
    remaining = steps
    factor = 1
    copies = steps  # copies of `power` in the final result, ≈ steps / 2^k
    while True:
        if remaining & 1:
            if result is None:
                result = power
            else:
                product, noise = convolve(result, power, direct_limit)
                result = truncate(product, max(tail_mass, noise), tail_mass)
        remaining >>= 1
        if remaining == 0:
            break
        copies = max(copies // 2, 1)
        square, noise = convolve(power, power, direct_limit)
        power = truncate(square, max(tail_mass, noise), tail_mass / copies)
        while power.probs.size > max_points or (result is not None and result.probs.size > max_points):
            power = coarsen(power, 2)
            result = None if result is None else coarsen(result, 2)
            factor *= 2
    assert result is not None
    while result.probs.size > max_points:
        result = coarsen(result, 2)
        factor *= 2
    return result, factor


__all__ = [
    "SUM_MARGIN",
    "DiscretePld",
    "U",
    "coarsen",
    "compose",
    "convolve",
    "delta_at",
    "epsilon_at",
    "loss_variance",
    "truncate",
    "uncertified",
]
