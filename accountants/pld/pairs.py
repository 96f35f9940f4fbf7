"""Dominating pairs (P, Q) of single releases, described by the survival functions of their privacy loss.

A pair (P, Q) *dominates* a mechanism under a neighbouring relation if H_{e^ε}(M(D) ‖ M(D′)) ≤ H_{e^ε}(P ‖ Q) for
every ε ∈ ℝ and every ordered pair of neighbours (Zhu, Dong & Wang 2022, "Optimal accounting of differential privacy
via characteristic function", Def. 7); composing the pairs then dominates the adaptive composition (their Thm. 10).
The loss L = log dP/dQ under P is what :mod:`accountants.pld.discrete` discretises, and it needs only

    S_P(ε) = P(L ≥ ε)  and  S_Q(ε) = Q(L ≥ ε)  at the grid's knots,

each to relative accuracy :data:`SURVIVAL_RTOL` (Gaussian tails from scipy's ``ndtr``, whose own error plus the
rounding of its argument stays below u·x² ≤ 2e-13 for |x| ≤ 38, beyond which the tails underflow to 0; finite pairs
by suffix sums of at most a few thousand non-negative masses, within n·u). The pairs of one release:

====================================  ================================================================================
pair                                  dominates (and is attained by)
====================================  ================================================================================
:class:`GaussianPair` (μ)             a Gaussian release with multiplier 1/μ (N(μ, 1) vs N(0, 1); exact)
:class:`LaplacePair` (b)              a Laplace release with scale b over the L1 sensitivity (Lap(1, b) vs Lap(0, b);
                                      exact for a scalar release, the worst case in any dimension)
:class:`FinitePair`                   a release with finitely many outcomes, given by its masses under P and Q:
                                      k-ary randomized response (:func:`randomized_response_pair`; exact) and any
                                      ε₀-DP release (:func:`pure_pair`: randomized response with ε₀ dominates every
                                      ε₀-DP pair, Kairouz, Oh & Viswanath 2015, and is one)
====================================  ================================================================================

Subsampled releases are in :mod:`accountants.pld.sampled`; the adaptive composition of bounded-range releases in
:mod:`accountants.pld.bounded_range`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import special

SURVIVAL_RTOL = 1e-12
"""Relative accuracy assumed of every survival value (scipy's ``ndtr`` with its argument's rounding)."""
ATOM_SNAP = 4.0 * float(np.finfo(float).eps)
"""An atom within this relative distance below a loss ε counts as at ε (in P(L ≥ ε)), and within it above, as at
ε in P(L ≤ ε): a knot meant to sit on an atom (a grid that divides the atoms' spacing) may miss it by a few ulps.
That moves the atom's loss up by at most this share of it: pessimistic for an upper bound, and a lower bound
subtracts it (:meth:`~accountants.pld.accountant.PldAccountant.epsilon`)."""


def snapped_down(losses: np.ndarray) -> np.ndarray:
    """The losses lowered by :data:`ATOM_SNAP` of their size (atoms at or above these count as ≥ the loss)."""
    return np.asarray(np.where(np.isfinite(losses), losses - ATOM_SNAP * np.abs(losses), losses))


def snapped_up(losses: np.ndarray) -> np.ndarray:
    """The losses raised by :data:`ATOM_SNAP` of their size (atoms at or below these count as ≤ the loss)."""
    return np.asarray(np.where(np.isfinite(losses), losses + ATOM_SNAP * np.abs(losses), losses))


Survivals = tuple[np.ndarray, np.ndarray]
MAX_LOSS = 700.0
"""Knots beyond ±700 are never asked for (e^700 is near the float range); pairs clamp their loss ranges to it."""


def tail_quantile(tail: float) -> float:
    """k with Φ(−k) = tail."""
    return float(-special.ndtri(tail))


class DominatingPair(ABC):
    """A pair (P, Q) with privacy loss L = log dP/dQ under P, given by its survival functions at loss values."""

    symmetric: bool = True
    """Whether (Q, P) has the same loss law (then add/remove need not be told apart)."""

    @abstractmethod
    def survival(self, losses: np.ndarray) -> Survivals:
        """(P(L ≥ ε), Q(L ≥ ε)) at each ε of ``losses`` (to relative accuracy :data:`SURVIVAL_RTOL`)."""

    @abstractmethod
    def loss_range(self, tail: float) -> tuple[float, float]:
        """[lo, hi] with P(L < lo) ≤ tail and P(L > hi) ≤ tail (and the same under Q)."""

    def atoms(self) -> tuple[float, ...]:
        """The losses at which L has point masses (the accountant puts knots there where it can: a grid through them
        discretises them exactly, both ways)."""
        return ()

    def largest_loss(self) -> float:
        """The largest loss L takes with positive probability under P (∞ if unbounded): at ε at or above the sum of
        a composition's largest losses δ(ε) = 0 exactly, which caps every ε the accountant reports."""
        return math.inf

    def optimistic(self) -> DominatingPair:
        """The pair whose optimistic discretisation bounds the mechanism's δ from below (:mod:`accountants.pld.lower`):
        the pair itself where it is attained; a numerically bracketed pair gives its lower bracket."""
        return self


def common_spacing(atoms: Iterable[float], largest_divisor: int = 12) -> float | None:
    """The largest a = min|x|/k (k ≤ ``largest_divisor``) of which every atom x is an integer multiple (to 1e-9
    relative), or None (no atoms other than 0, or none such)."""
    values = np.abs(np.array([x for x in atoms if x != 0.0 and math.isfinite(x)], dtype=float))
    if values.size == 0:
        return None
    smallest = float(values.min())
    for divisor in range(1, largest_divisor + 1):
        spacing = smallest / divisor
        ratio = values / spacing
        if np.all(np.abs(ratio - np.round(ratio)) <= 1e-9 * np.maximum(ratio, 1.0)):
            return spacing
    return None


class BasePair(DominatingPair):
    """A pair that can be subsampled: it also gives the distribution functions P(L ≤ ε), Q(L ≤ ε)."""

    @abstractmethod
    def cdf(self, losses: np.ndarray) -> Survivals:
        """(P(L ≤ ε), Q(L ≤ ε)) at each ε, accurate in the lower tail."""


@dataclass(frozen=True)
class GaussianPair(BasePair):
    """N(μ, 1) vs N(0, 1): L ~ N(μ²/2, μ²) under P and N(−μ²/2, μ²) under Q (μ = 1/z, z the multiplier)."""

    mu: float

    def survival(self, losses: np.ndarray) -> Survivals:
        x = np.asarray(losses, dtype=float) / self.mu
        half = 0.5 * self.mu
        return special.ndtr(half - x), special.ndtr(-half - x)

    def cdf(self, losses: np.ndarray) -> Survivals:
        x = np.asarray(losses, dtype=float) / self.mu
        half = 0.5 * self.mu
        return special.ndtr(x - half), special.ndtr(x + half)

    def loss_range(self, tail: float) -> tuple[float, float]:
        spread = tail_quantile(tail) * self.mu + 0.5 * self.mu * self.mu
        return max(-spread, -MAX_LOSS), min(spread, MAX_LOSS)


@dataclass(frozen=True)
class LaplacePair(BasePair):
    """Lap(1, b) vs Lap(0, b): L = (|x| − |x − 1|)/b ∈ [−1/b, 1/b], with atoms at both ends."""

    scale: float

    def _inner(self, losses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """x(ε) = (bε + 1)/2 and the two one-sided masses ½e^{−(1−x)/b}, ½e^{−x/b} (x ∈ [0, 1])."""
        x = np.clip((self.scale * np.asarray(losses, dtype=float) + 1.0) / 2.0, 0.0, 1.0)
        return 0.5 * np.exp(-(1.0 - x) / self.scale), 0.5 * np.exp(-x / self.scale)

    def survival(self, losses: np.ndarray) -> Survivals:
        eps = np.asarray(losses, dtype=float)
        left, right = self._inner(eps)  # P(X < x) = left, Q(X ≥ x) = right
        edge = 1.0 / self.scale
        low = snapped_down(eps)
        inside = (low > -edge) & (low <= edge)
        below = low <= -edge
        return (
            np.where(below, 1.0, np.where(inside, 1.0 - left, 0.0)),
            np.where(below, 1.0, np.where(inside, right, 0.0)),
        )

    def cdf(self, losses: np.ndarray) -> Survivals:
        eps = np.asarray(losses, dtype=float)
        left, right = self._inner(eps)
        edge = 1.0 / self.scale
        high = snapped_up(eps)
        inside = (high >= -edge) & (high < edge)
        above = high >= edge
        return (
            np.where(above, 1.0, np.where(inside, left, 0.0)),
            np.where(above, 1.0, np.where(inside, 1.0 - right, 0.0)),
        )

    def loss_range(self, tail: float) -> tuple[float, float]:
        edge = min(1.0 / self.scale, MAX_LOSS)
        return -edge, above_atom(edge)

    def atoms(self) -> tuple[float, ...]:
        return (-1.0 / self.scale, 1.0 / self.scale)

    def largest_loss(self) -> float:
        return 1.0 / self.scale


@dataclass(frozen=True)
class FinitePair(BasePair):
    """A pair on finitely many outcomes: outcome i has loss ``losses[i]`` (ascending) and masses ``p_masses[i]``
    under P, ``q_masses[i]`` under Q (so losses[i] = log(p_i/q_i), which the constructors compute in closed form).
    ``symmetric``: the outcomes come in mirrored pairs (ℓ, p, q) and (−ℓ, q, p)."""

    losses: tuple[float, ...]
    p_masses: tuple[float, ...]
    q_masses: tuple[float, ...]
    symmetric: bool = True

    @cached_property
    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return np.array(self.losses), np.array(self.p_masses), np.array(self.q_masses)

    def survival(self, losses: np.ndarray) -> Survivals:
        atoms, p, q = self._arrays
        first = np.searchsorted(atoms, snapped_down(np.asarray(losses, dtype=float)), side="left")  # atoms ≥ ε
        p_tail = np.concatenate((np.cumsum(p[::-1])[::-1], [0.0]))
        q_tail = np.concatenate((np.cumsum(q[::-1])[::-1], [0.0]))
        return p_tail[first], q_tail[first]

    def cdf(self, losses: np.ndarray) -> Survivals:
        atoms, p, q = self._arrays
        eps = np.asarray(losses, dtype=float)
        last = np.searchsorted(atoms, snapped_up(eps), side="right")  # atoms ≤ ε before this
        p_head = np.concatenate(([0.0], np.cumsum(p)))
        q_head = np.concatenate(([0.0], np.cumsum(q)))
        return p_head[last], q_head[last]

    def atoms(self) -> tuple[float, ...]:
        return self.losses

    def largest_loss(self) -> float:
        positive = [loss for loss, mass in zip(self.losses, self.p_masses, strict=True) if mass > 0.0]
        return max(positive, default=-math.inf)

    def loss_range(self, tail: float) -> tuple[float, float]:
        atoms, p, q = self._arrays
        below = (np.cumsum(p) <= tail) & (np.cumsum(q) <= tail)  # left out below the range
        above = (np.cumsum(p[::-1])[::-1] <= tail) & (np.cumsum(q[::-1])[::-1] <= tail)
        lo = atoms[int(np.argmin(below))] if not below.all() else atoms[-1]
        kept = np.flatnonzero(~above)
        hi = atoms[int(kept[-1])] if kept.size else atoms[0]
        return max(float(lo), -MAX_LOSS), above_atom(min(float(hi), MAX_LOSS))


def randomized_response_pair(noise_parameter: float, buckets: int) -> FinitePair:
    """k-ary randomized response with noise p (the true value with probability 1 − p, else a uniform one of k),
    one record's value changed: the true value's outcome has masses (1 − p + p/k, p/k), the new value's the reverse,
    the k − 2 others p/k each under both (loss 0); ε₀ = log(1 + k(1 − p)/p). Exact: these are the output laws."""
    p, k = float(noise_parameter), int(buckets)
    eps = math.log1p(k * (1.0 - p) / p)
    low, high = p / k, 1.0 - p + p / k
    if k == 2:
        return FinitePair((-eps, eps), (low, high), (high, low))
    middle = (k - 2) * low
    return FinitePair((-eps, 0.0, eps), (low, middle, high), (high, middle, low))


def pure_pair(epsilon: float) -> FinitePair:
    """Randomized response with ε₀ (two outcomes, masses e^{±ε₀}/(1 + e^{±ε₀})): every ε₀-DP pair is a
    post-processing of it (Kairouz, Oh & Viswanath 2015), so it dominates any ε₀-DP release and is attained."""
    eps = float(epsilon)
    low, high = float(special.expit(-eps)), float(special.expit(eps))
    return FinitePair((-eps, eps), (low, high), (high, low))


def above_atom(edge: float) -> float:
    """A range end strictly above an atom at ``edge``: the top knot's mass goes to +∞, the atom's must not."""
    return edge + 1e-9 * max(edge, 1e-3)
