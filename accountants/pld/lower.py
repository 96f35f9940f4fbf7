"""Certified lower bounds on ε: the optimistic discretisation, composed on the circle of the upper answer.

Every tight answer is an upper bound ε⁺; this module gives ε⁻ ≤ the exact ε of the same dominating pairs (the
mechanism's own ε wherever the pairs are attained, :mod:`accountants.pld.reading`), so that [ε⁻, ε⁺] brackets it.

1. *Lower laws.* For a pair with profile H(s) = H_s(P ‖ Q) and a non-negative measure λ on losses, write
   F_λ(s) = Σ λ_i (1 − s·e^{−ℓ_i})₊. If F_λ ≤ H at every s > 0 for every leaf, the composition of the λ's bounds δ
   from below: δ of a composition at ε is ∫ H_leaf(e^{ε − r}) dν(r) over the law ν of the other releases' summed
   loss (any non-negative measure), so replacing the leaves one at a time by their λ only lowers it.
2. *The optimistic leaf* (:func:`~accountants.pld.discrete.optimistic_leaf`) is a sub-measure of a post-processing of
   the pair (merging parts of adjacent bins into outcomes of likelihood ratio e^{ε_k}, keeping the rest of each bin
   at its lower knot), every outcome placed at or below its own loss: F_λ ≤ H. For a smooth loss it differs from
   connect-the-dots by O(Δ²) per release; an atom between two knots is moved down to the lower one.
3. *Composition* on the upper answer's circle (same grid, tilt θ and window [B, B + nΔ)): the computed main sum is
   within the factor ``rounding`` of the exact circular one, and the circle within the FFT term (in L1) of the exact
   circular convolution, so both are subtracted. The circle is the exact composed law plus what wraps around, which
   only adds there and is subtracted too, bounded with the lower laws' own K(θ′): mass at or above the top lands at
   the bottom, at most min_{θ′>θ} e^{K(θ′) − θB − (θ′ − θ)·top}; mass below B lands nΔ higher (where it is not
   above the largest finite loss, which the circle sets to 0), at most e^{−θnΔ}·min_{θ′<0} e^{K(θ′) − θ′B}.
4. Wherever δ⁻(ε) > δ the true δ exceeds δ, so the true ε is above that ε (δ is non-increasing); ε⁻ is such an ε
   found just below the upper answer (:meth:`LowerComposition.epsilon`). Each direction is bounded on its own; the
   answer's ε⁻ is the larger (the worse direction's ε is at least either's).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from .composition import SUM_MARGIN, TiltedComposition, Window
from .discrete import LeafPld, optimistic_leaf
from .pairs import DominatingPair

_ABOVE_TILTS = np.array([1.25, 1.5, 2.0, 4.0])
COARSE_WRAP_SHARE = 1e-7
"""Where the circle's damping alone, e^{−θnΔ}, keeps the mass wrapping up from below the window under this share of
δ, P(S < B) ≤ 1 bounds it (no Chernoff bound: its tilts cost a quarter of a lower bound); the window was planned
for about this share (:data:`~accountants.pld.window.CONTAMINATION`)."""
_BISECTIONS = 60


def lower_leaves(pairs: Sequence[DominatingPair], leaves: Sequence[LeafPld]) -> list[LeafPld]:
    """Each pair's optimistic leaf on the knots of its (pessimistic) leaf."""
    return [
        optimistic_leaf(pair.optimistic(), leaf.grid, leaf.offset, leaf.offset + leaf.size - 1)
        for pair, leaf in zip(pairs, leaves, strict=True)
    ]


class LowerComposition:
    """The composed optimistic leaves on one circle; :meth:`delta` is a certified lower bound on δ(ε). ``delta``:
    the δ of the query, which sets what wrapped mass is small enough to bound coarsely (:func:`_wrapped`)."""

    def __init__(self, leaves: Sequence[tuple[int, LeafPld]], theta: float, window: Window, delta: float) -> None:
        self.composed = TiltedComposition(leaves, theta, window)
        self.wrapped = _wrapped(leaves, theta, window, COARSE_WRAP_SHARE * delta)

    def delta(self, epsilon: float) -> float:
        """A certified lower bound on δ(ε) (0 below the window, where nothing is known)."""
        c = self.composed
        if epsilon < c.bottom:
            return 0.0
        main = c.main_sum(epsilon) / (c.rounding * (1.0 + SUM_MARGIN))
        return max(main - c.fft_term(epsilon, capped=False) - self.wrapped, 0.0)

    def epsilon(self, delta: float, upper: float) -> float | None:
        """A large ε ≤ ``upper`` with δ⁻(ε) > δ (so the true ε is above it); 0 where none is above 0; None where
        none is found in the window and it may lie below (the caller moves the window down).

        δ⁻ is not monotone (the subtracted FFT term grows as ε falls, e^{−θε}), but any ε where it exceeds δ
        certifies: the candidates upper − g for gaps g growing geometrically from a fraction of a knot are tried from
        the top, and the first that certifies is pushed up by bisection towards the last that did not — all on the
        suffix sums (:meth:`~accountants.pld.composition.TiltedComposition.suffix_sums`), then checked by the direct
        sum, stepping down where that disagrees."""
        c = self.composed
        bottom = max(c.bottom, 0.0)
        suffix_a, log_suffix_b = c.suffix_sums(bottom)
        scale = 1.0 / (c.rounding * (1.0 + SUM_MARGIN))

        def estimate(eps: float) -> float:
            j = int(np.searchsorted(c.losses, eps, side="right"))
            main = suffix_a[j] - math.exp(min(eps + float(log_suffix_b[j]), 700.0)) if j < c.losses.size else 0.0
            return main * scale - c.fft_term(eps, capped=False) - self.wrapped

        gaps = np.unique(
            np.concatenate((c.grid * 2.0 ** np.arange(-20, 60), upper * 10.0 ** -np.arange(15.0, 0.0, -1)))
        )
        above = upper
        for gap in gaps.tolist():
            candidate = upper - gap
            if candidate < bottom:
                break
            if estimate(candidate) > delta:
                return self._checked(delta, _bisected(estimate, delta, candidate, above), candidate)
            above = candidate
        return 0.0 if bottom == 0.0 else None

    def _checked(self, delta: float, found: float, floor: float) -> float:
        """``found`` where the direct sum certifies it, else the nearest ε below it (down to ``floor``) that does."""
        step = 1e-12 * max(1.0, abs(found))
        candidate = found
        for _ in range(_BISECTIONS):
            if self.delta(candidate) > delta:
                return candidate
            candidate, step = max(candidate - step, floor), step * 4.0
        return floor if self.delta(floor) > delta else 0.0


def _bisected(value: Callable[[float], float], delta: float, certified: float, above: float) -> float:
    """Bisection between an ε where ``value`` exceeds δ and a larger one where it did not (keeping the first end)."""
    lo, hi = certified, above
    for _ in range(_BISECTIONS):
        if hi - lo <= 1e-13 * max(1.0, hi):
            break
        mid = 0.5 * (lo + hi)
        if value(mid) > delta:
            lo = mid
        else:
            hi = mid
    return lo


def _wrapped(leaves: Sequence[tuple[int, LeafPld]], theta: float, window: Window, negligible: float) -> float:
    """Bound on what wraps around the circle into the main sum (module docstring, step 3); the mass from below the
    window bounded by its damping alone where that is at most ``negligible``."""
    grid = leaves[0][1].grid
    bottom, size = window.bottom * grid, window.size
    top = bottom + size * grid
    support_lo = sum(count * leaf.offset for count, leaf in leaves)
    support_hi = sum(count * (leaf.offset + leaf.size - 1) for count, leaf in leaves)
    above_tilts = np.unique(np.concatenate((theta * _ABOVE_TILTS, window.tail_tilt * np.array([0.8, 1.0, 1.25]))))
    above_tilts = above_tilts[above_tilts > theta]
    total = 0.0
    if above_tilts.size and top <= support_hi * grid:
        k = _log_mgf(leaves, above_tilts)
        total += math.exp(min(float(np.min(k - theta * bottom - (above_tilts - theta) * top)), 0.0))
    elif top <= support_hi * grid:
        total += 1.0  # no usable tilt: nothing is certified from this circle
    # mass below B lands nΔ higher; only what lands at or below the largest finite loss is not set to 0
    reach = min(window.bottom, support_hi + 1 - size)
    if reach > support_lo:
        log_damping = -max(theta, 0.0) * size * grid
        below = 0.0 if log_damping <= math.log(negligible) else _log_mass_below(leaves, reach * grid)
        total += math.exp(below + log_damping)
    return min(total, 1.0)


def _log_mass_below(leaves: Sequence[tuple[int, LeafPld]], point: float) -> float:
    """A Chernoff bound on log P(S < point): min over θ′ < 0 of K(θ′) − θ′·point, on a geometric grid of tilts
    refined around its best."""
    tilts = -np.geomspace(1e-3, 1e4, 15)
    values = _log_mgf(leaves, tilts) - tilts * point
    best = int(np.argmin(values))
    fine = -np.geomspace(-tilts[max(best - 1, 0)], -tilts[min(best + 1, tilts.size - 1)], 9)
    finer = _log_mgf(leaves, fine) - fine * point
    return min(float(np.min(values)), float(np.min(finer)), 0.0)


def _log_mgf(leaves: Sequence[tuple[int, LeafPld]], thetas: np.ndarray) -> np.ndarray:
    """K(θ′) = Σ c_i log M_i(θ′) of the leaves, rounded up (every use is a Chernoff bound); +∞ where it overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        values = np.asarray(sum(count * leaf.log_mgf(thetas) for count, leaf in leaves), dtype=float)
    values = np.where(np.isnan(values), np.inf, values)
    return values * (1.0 + 1e-12) + 1e-12
