"""Dominating pairs (P, Q) of single releases, described by the survival functions of their privacy loss.

A pair (P, Q) *dominates* a mechanism under a neighbouring relation if H_{e^ε}(M(D) ‖ M(D′)) ≤ H_{e^ε}(P ‖ Q) for
every ε ∈ ℝ and every ordered pair of neighbours (Zhu, Dong & Wang 2022, "Optimal accounting of differential privacy
via characteristic function", Def. 7); composing the pairs then dominates the adaptive composition (their Thm. 10).
The loss L = log dP/dQ under P is what :mod:`accountants.pld.discrete` discretises, and it needs only

    S_P(ε) = P(L ≥ ε)  and  S_Q(ε) = Q(L ≥ ε)  at the grid's knots,

each to relative accuracy :data:`SURVIVAL_RTOL` (Gaussian tails from scipy's ``ndtr``, whose own error plus the
rounding of its argument stays below u·x² ≤ 2e-13 for |x| ≤ 38, beyond which the tails underflow to 0). The pairs:

====================================  ================================================================================
pair                                  dominates
====================================  ================================================================================
:class:`GaussianPair` (μ)             a Gaussian release with multiplier 1/μ (N(μ, 1) vs N(0, 1); exact)
:class:`LaplacePair` (b)              a Laplace release with scale b over the L1 sensitivity (Lap(1, b) vs Lap(0, b))
:class:`RandomizedResponsePair` (ε₀)  any ε₀-DP release (Kairouz, Oh & Viswanath 2015: the randomized-response pair)
:class:`PoissonRemovePair` (q)        Poisson sampling, add/remove, a record removed: ((1−q)Q_b + qP_b, Q_b)
:class:`PoissonAddPair` (q)           Poisson sampling, add/remove, a record added: (Q_b, (1−q)Q_b + qP_b) (ZDW22)
:class:`ReplaceOnePoissonPair`        Poisson-sampled Gaussian, replace-one: ((1−q)N(0) + qN(−1), (1−q)N(0) + qN(1))
                                      in units of the clip norm (dp_accounting's ``REPLACE`` pair)
:class:`MixturePair`                  the pairs' mixture with the component revealed (each component's loss law,
                                      weighted): dominates a mechanism that runs component i with probability wᵢ
                                      (revealing the coin only helps the adversary)
:class:`SymmetrizedPair`              a symmetric relation whose every ordered pair obeys the inner pair's profile at
                                      ε ≥ 0 (sampling without replacement, replace-one: Balle, Barthe & Gaboardi
                                      2018, Thm. 10, with the remove pair at γ = m/n)
====================================  ================================================================================

:class:`SymmetrizedPair` needs its own argument. BBG18 bound every ordered pair of replace-one neighbours by
δ_R(ε) = H_{e^ε}((1−γ)Q + γP ‖ Q) for ε ≥ 0 only. For ε < 0, H_{e^ε}(A ‖ B) = 1 − e^ε + e^ε H_{e^{−ε}}(B ‖ A) and
(B, A) are neighbours too, so δ(ε) = 1 − e^ε + e^ε δ_R(−ε) bounds every ordered pair on all of ℝ. That extension is
the profile of the symmetric pair whose loss has the law of L_R on (0, ∞), mass e^{−ℓ}·ω_R(ℓ) at −ℓ and the rest at
0 (non-negative, and the profile convex in e^ε, exactly when P_R(L_R > 0) + Q_R(L_R > 0) ≤ 1, which holds for the
Gaussian mixtures used here since it reduces to Φ(−μ/2) ≤ ½); its survivals are S_P(ε), S_Q(ε) for ε > 0 and
1 − S_Q(−ε), 1 − S_P(−ε) for ε ≤ 0.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
from scipy import special

SURVIVAL_RTOL = 1e-12
"""Relative accuracy assumed of every survival value (scipy's ``ndtr`` with its argument's rounding)."""

Survivals = tuple[np.ndarray, np.ndarray]
_MAX_LOSS = 700.0
"""Knots beyond ±700 are never asked for (e^700 is near the float range); pairs clamp their loss ranges to it."""


def _tail_quantile(tail: float) -> float:
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
        spread = _tail_quantile(tail) * self.mu + 0.5 * self.mu * self.mu
        return max(-spread, -_MAX_LOSS), min(spread, _MAX_LOSS)


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
        inside = (eps > -edge) & (eps <= edge)
        below = eps <= -edge
        return (
            np.where(below, 1.0, np.where(inside, 1.0 - left, 0.0)),
            np.where(below, 1.0, np.where(inside, right, 0.0)),
        )

    def cdf(self, losses: np.ndarray) -> Survivals:
        eps = np.asarray(losses, dtype=float)
        left, right = self._inner(eps)
        edge = 1.0 / self.scale
        inside = (eps >= -edge) & (eps < edge)
        above = eps >= edge
        return (
            np.where(above, 1.0, np.where(inside, left, 0.0)),
            np.where(above, 1.0, np.where(inside, 1.0 - right, 0.0)),
        )

    def loss_range(self, tail: float) -> tuple[float, float]:
        edge = min(1.0 / self.scale, _MAX_LOSS)
        return -edge, _above_atom(edge)


@dataclass(frozen=True)
class RandomizedResponsePair(BasePair):
    """(p, 1 − p) vs (1 − p, p) with p = e^ε₀/(1 + e^ε₀): L = ±ε₀, the worst ε₀-DP pair."""

    epsilon: float

    def survival(self, losses: np.ndarray) -> Survivals:
        eps = np.asarray(losses, dtype=float)
        p, r = float(special.expit(self.epsilon)), float(special.expit(-self.epsilon))
        below, inside = eps <= -self.epsilon, (eps > -self.epsilon) & (eps <= self.epsilon)
        return np.where(below, 1.0, np.where(inside, p, 0.0)), np.where(below, 1.0, np.where(inside, r, 0.0))

    def cdf(self, losses: np.ndarray) -> Survivals:
        eps = np.asarray(losses, dtype=float)
        p, r = float(special.expit(self.epsilon)), float(special.expit(-self.epsilon))
        above, inside = eps >= self.epsilon, (eps >= -self.epsilon) & (eps < self.epsilon)
        return np.where(above, 1.0, np.where(inside, r, 0.0)), np.where(above, 1.0, np.where(inside, p, 0.0))

    def loss_range(self, tail: float) -> tuple[float, float]:
        edge = min(self.epsilon, _MAX_LOSS)
        return -edge, _above_atom(edge)


def _above_atom(edge: float) -> float:
    """A range end strictly above an atom at ``edge``: the top knot's mass goes to +∞, the atom's must not."""
    return edge + 1e-9 * max(edge, 1e-3)


def _mixture_loss(q: float, base_loss: float) -> float:
    """log(1 − q + q·e^ℓ), the loss of ((1−q)Q + qP, Q) where the base loss is ℓ."""
    if q == 1.0:
        return base_loss
    return float(np.logaddexp(math.log1p(-q), math.log(q) + base_loss))


def _inverse_mixture_loss(q: float, eps: np.ndarray) -> np.ndarray:
    """ℓ = log((e^ε − 1 + q)/q), the base loss where the mixture loss is ε; −∞ where e^ε ≤ 1 − q."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        small = np.log(np.expm1(eps) + q)
        big = eps > 30.0  # e^ε − (1 − q) = e^ε·(1 − (1 − q)e^{−ε}) without overflow
        large = np.where(big, eps, 0.0) + np.log1p(-(1.0 - q) * np.exp(-np.where(big, eps, 0.0)))
        value = np.where(big, large, small) - math.log(q)
    return np.where(np.isnan(value), -np.inf, value)


@dataclass(frozen=True)
class PoissonRemovePair(DominatingPair):
    """((1−q)Q_b + qP_b, Q_b): Poisson sampling with rate q, add/remove neighbours, the record removed.

    L = log(1 − q + q e^{L_b}) is increasing in the base loss L_b, so L ≥ ε exactly when L_b ≥ ℓ(ε) and
    S_P(ε) = (1−q)S_{Q_b}(ℓ) + q S_{P_b}(ℓ), S_Q(ε) = S_{Q_b}(ℓ)."""

    base: BasePair
    sampling_rate: float
    symmetric = False

    def survival(self, losses: np.ndarray) -> Survivals:
        q = self.sampling_rate
        level = _inverse_mixture_loss(q, np.asarray(losses, dtype=float))
        p_b, q_b = self.base.survival(level)
        return (1.0 - q) * q_b + q * p_b, q_b

    def loss_range(self, tail: float) -> tuple[float, float]:
        lo, hi = self.base.loss_range(tail)
        return max(_mixture_loss(self.sampling_rate, lo), -_MAX_LOSS), min(
            _mixture_loss(self.sampling_rate, hi), _MAX_LOSS
        )


@dataclass(frozen=True)
class PoissonAddPair(DominatingPair):
    """(Q_b, (1−q)Q_b + qP_b): Poisson sampling with rate q, add/remove neighbours, a record added.

    L = −log(1 − q + q e^{L_b}) is decreasing in L_b: L ≥ ε exactly when L_b ≤ ℓ(−ε), so
    S_P(ε) = F_{Q_b}(ℓ), S_Q(ε) = (1−q)F_{Q_b}(ℓ) + q F_{P_b}(ℓ) with the base's distribution functions F."""

    base: BasePair
    sampling_rate: float
    symmetric = False

    def survival(self, losses: np.ndarray) -> Survivals:
        q = self.sampling_rate
        level = _inverse_mixture_loss(q, -np.asarray(losses, dtype=float))
        p_b, q_b = self.base.cdf(level)
        return q_b, (1.0 - q) * q_b + q * p_b

    def loss_range(self, tail: float) -> tuple[float, float]:
        lo, hi = self.base.loss_range(tail)
        q = self.sampling_rate
        return max(-_mixture_loss(q, hi), -_MAX_LOSS), min(-_mixture_loss(q, lo), _MAX_LOSS)


@dataclass(frozen=True)
class ReplaceOnePoissonPair(DominatingPair):
    """((1−q)N(0, z²) + qN(−1, z²), (1−q)N(0, z²) + qN(1, z²)): a Poisson-sampled Gaussian sum of contributions of
    norm ≤ 1 with one record replaced (z = noise std over the clip norm).

    With r = 1 − q, a = q·e^{−1/(2z²)} and v = x/z², L(x) = log(r + a e^{−v}) − log(r + a e^{v}), decreasing and odd
    in v; L ≥ ε exactly when x ≤ z²·v(ε), v(ε) = log(2a) − log(r·(e^ε − 1) + √(r²(e^ε − 1)² + 4a²e^ε)) for ε ≥ 0
    and v(ε) = −v(−ε) below."""

    sampling_rate: float
    noise_multiplier: float

    def _outcome(self, eps: np.ndarray) -> np.ndarray:
        q, z = self.sampling_rate, self.noise_multiplier
        r, log_a = 1.0 - q, math.log(q) - 0.5 / (z * z)
        e = np.minimum(np.abs(eps), _MAX_LOSS)
        gap = r * np.expm1(e)
        with np.errstate(divide="ignore"):
            v = math.log(2.0) + log_a - np.log(gap + np.hypot(gap, 2.0 * np.exp(log_a + 0.5 * e)))
        return np.asarray(z * z * np.where(eps >= 0.0, v, -v))

    def survival(self, losses: np.ndarray) -> Survivals:
        q, z = self.sampling_rate, self.noise_multiplier
        x = self._outcome(np.asarray(losses, dtype=float))
        centre = special.ndtr(x / z)
        return (1.0 - q) * centre + q * special.ndtr((x + 1.0) / z), (1.0 - q) * centre + q * special.ndtr(
            (x - 1.0) / z
        )

    def _loss(self, x: float) -> float:
        q, z = self.sampling_rate, self.noise_multiplier
        r, log_a, v = math.log1p(-q) if q < 1.0 else -math.inf, math.log(q) - 0.5 / (z * z), x / (z * z)
        return float(np.logaddexp(r, log_a - v) - np.logaddexp(r, log_a + v))

    def loss_range(self, tail: float) -> tuple[float, float]:
        reach = 1.0 + _tail_quantile(tail) * self.noise_multiplier
        top = min(self._loss(-reach), _MAX_LOSS)
        return -top, top


@dataclass(frozen=True)
class SymmetrizedPair(DominatingPair):
    """The symmetric pair whose profile is the inner pair's for ε ≥ 0 (module docstring)."""

    inner: DominatingPair

    def survival(self, losses: np.ndarray) -> Survivals:
        eps = np.asarray(losses, dtype=float)
        positive = eps > 0.0
        p_up, q_up = self.inner.survival(np.where(positive, eps, 1.0))
        p_down, q_down = self.inner.survival(np.where(positive, 1.0, -eps))
        return np.where(positive, p_up, 1.0 - q_down), np.where(positive, q_up, 1.0 - p_down)

    def loss_range(self, tail: float) -> tuple[float, float]:
        _, hi = self.inner.loss_range(tail)
        top = max(hi, 0.0)
        return -top, top


@dataclass(frozen=True)
class MixturePair(DominatingPair):
    """Σ wᵢ(Pᵢ, Qᵢ) on the disjoint union of the components' spaces (the component revealed): the loss at a point of
    component i is that component's loss, so S_P = Σ wᵢ S_{Pᵢ} and S_Q = Σ wᵢ S_{Qᵢ}."""

    components: tuple[tuple[float, DominatingPair], ...]

    @property
    def symmetric(self) -> bool:  # type: ignore[override]  # the class attribute of the base, computed here
        return all(pair.symmetric for _, pair in self.components)

    def survival(self, losses: np.ndarray) -> Survivals:
        p_total, q_total = np.zeros(np.shape(losses)), np.zeros(np.shape(losses))
        for weight, pair in self.components:
            p_part, q_part = pair.survival(losses)
            p_total += weight * np.asarray(p_part)
            q_total += weight * np.asarray(q_part)
        return p_total, q_total

    def loss_range(self, tail: float) -> tuple[float, float]:
        ranges = [pair.loss_range(tail) for _, pair in self.components]
        return min(lo for lo, _ in ranges), max(hi for _, hi in ranges)
