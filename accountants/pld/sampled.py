"""Dominating pairs of subsampled releases: Poisson sampling (both relations) and sampling without replacement.

====================================  ================================================================================
pair                                  dominates (and is attained by)
====================================  ================================================================================
:class:`PoissonRemovePair` (q)        Poisson sampling, add/remove, a record removed: ((1−q)Q_b + qP_b, Q_b)
:class:`PoissonAddPair` (q)           Poisson sampling, add/remove, a record added: (Q_b, (1−q)Q_b + qP_b) (ZDW22);
                                      both exact for a Gaussian or Laplace base b
:class:`ReplaceOnePoissonPair`        Poisson-sampled Gaussian, replace-one: ((1−q)N(0) + qN(−1), (1−q)N(0) + qN(1))
                                      in units of the clip norm (dp_accounting's ``REPLACE`` pair)
:class:`ReplaceOneLaplacePair`        Poisson-sampled Laplace, replace-one: the same with Laplace laws
:class:`MixturePair`                  the pairs' mixture with the component revealed (each component's loss law,
                                      weighted): dominates a mechanism that runs component i with probability wᵢ
                                      (revealing the coin only helps the adversary)
:class:`SymmetrizedPair`              sampling without replacement under replace-one (below): the least pair that
                                      dominates it
====================================  ================================================================================

**Sampling without replacement, replace-one.** A uniformly random m-subset of the n records (γ = m/n) is released
through a Gaussian sum of contributions g(·) of norm ≤ C with noise std z·2C (the multiplier is relative to the
replace-one sensitivity 2C). Let R = ((1−γ)N(0) + γN(2C), N(0)) be the *remove* pair at rate γ, with profile
δ_R(ε) = H_{e^ε}(R), and A = (N(0), (1−γ)N(0) + γN(2C)) its reverse.

1. *Every ordered pair of neighbours is below δ_R at ε ≥ 0.* For D = D₀ ∪ {x}, D′ = D₀ ∪ {x′}, draw an (m−1)-subset
   T of D₀ and j ∈ D₀ \\ T uniformly; the sample is T ∪ {x} with probability γ, else T ∪ {j} — the uniform m-subset —
   and the same coupling serves D′ with x′. Given (T, j) the outputs are (1−γ)N(s_T + g_j) + γN(s_T + g(x)) and the
   same with g(x′); by joint convexity H(M(D) ‖ M(D′)) ≤ E_{T,j} H((1−γ)N(u) + γN(v) ‖ (1−γ)N(u) + γN(v′)) with
   ‖v − v′‖ ≤ 2C. For ε ≥ 0 each term is at most γ·H_{e^ε′}(N(v) ‖ N(v′)) with e^ε = 1 + γ(e^ε′ − 1) (advanced joint
   convexity: Balle, Barthe & Gaboardi 2018, Thm. 2 and Thm. 10), which is δ_R(ε).
2. *Below zero by symmetry.* For ε < 0, H_{e^ε}(P ‖ Q) = 1 − e^ε + e^ε·H_{e^{−ε}}(Q ‖ P), and (D′, D) are neighbours
   too, so every ordered pair is below h_S(ε) = 1 − e^ε + e^ε·δ_R(−ε) = H_{e^ε}(A).
3. *The bound is attained on both sides.* D = {x, x′, …, x′} and D′ = {x′, …, x′} with g(x) = −g(x′) of norm C:
   every sample of D′ sums to m·g(x′), a sample of D to that plus 2C·e with probability γ, so after a shift
   (M(D), M(D′)) is exactly R, and (M(D′), M(D)) exactly A. Hence h_S = max(δ_R, δ_A) pointwise is the least profile
   of any pair that dominates the mechanism: the symmetric pair S with that profile (below) is the *best* dominating
   pair — every other one is a Blackwell refinement of it and composes to at least as large an ε. Whether an
   adaptive adversary attains S's composition is open: two fixed datasets give Rᵀ (and the reverse Aᵀ), which is
   what ``tests/unit/test_pld_sampling.py`` bounds from below by Monte Carlo; S's composition lies above it.

S has the law of L_R on (0, ∞), mass e^{−ℓ}·ω_R(ℓ) at −ℓ and the rest at 0 (non-negative, and its profile convex in
e^ε, exactly when P_R(L_R > 0) + Q_R(L_R > 0) ≤ 1, which holds here since it reduces to Φ(−μ/2) ≤ ½); its survivals
are S_P(ε), S_Q(ε) of R for ε > 0 and 1 − S_Q(−ε), 1 − S_P(−ε) for ε ≤ 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .pairs import MAX_LOSS, BasePair, DominatingPair, Survivals, above_atom, snapped_down, tail_quantile


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
        return max(_mixture_loss(self.sampling_rate, lo), -MAX_LOSS), min(
            _mixture_loss(self.sampling_rate, hi), MAX_LOSS
        )

    def atoms(self) -> tuple[float, ...]:
        return tuple(_mixture_loss(self.sampling_rate, atom) for atom in self.base.atoms())

    def largest_loss(self) -> float:
        top = self.base.largest_loss()
        return top if math.isinf(top) else _mixture_loss(self.sampling_rate, top)


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
        return max(-_mixture_loss(q, hi), -MAX_LOSS), min(-_mixture_loss(q, lo), MAX_LOSS)

    def atoms(self) -> tuple[float, ...]:
        return tuple(-_mixture_loss(self.sampling_rate, atom) for atom in self.base.atoms())

    def largest_loss(self) -> float:
        top = self.base.largest_loss()  # the bases (Gaussian, Laplace) are symmetric: their smallest loss is −top
        return top if math.isinf(top) else -_mixture_loss(self.sampling_rate, -top)


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
        e = np.minimum(np.abs(eps), MAX_LOSS)
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
        reach = 1.0 + tail_quantile(tail) * self.noise_multiplier
        top = min(self._loss(-reach), MAX_LOSS)
        return -top, top


@dataclass(frozen=True)
class ReplaceOneLaplacePair(DominatingPair):
    """((1−q)Lap(0, b) + qLap(−1, b), (1−q)Lap(0, b) + qLap(1, b)): a Poisson-sampled Laplace release of
    contributions in [−1, 1] (L1 sensitivity 1 per record, b the scale over it) with one record replaced by its
    opposite — the Laplace counterpart of :class:`ReplaceOnePoissonPair`.

    The Laplace law has a monotone likelihood ratio, so L(x) = log(r + q·f(x + 1)/f(x)) − log(r + q·f(x − 1)/f(x))
    (r = 1 − q) is non-increasing in x: constant ℓ_max = log(r + qe^{1/b}) − log(r + qe^{−1/b}) for x ≤ −1 (an atom),
    log(r + qe^{−(2x+1)/b}) − log c on [−1, 0] and log c − log(r + qe^{(2x−1)/b}) on [0, 1] with c = r + qe^{−1/b},
    −ℓ_max for x ≥ 1. So L ≥ ε exactly when x ≤ x(ε) for |ε| ≤ ℓ_max, with x(ε) from those two pieces in closed form
    (c·e^{±ε} − r = q·e^{−1/b} + c·expm1(±ε): no cancellation). Symmetric (x ↦ −x swaps P and Q)."""

    sampling_rate: float
    scale: float

    @property
    def _top(self) -> float:
        q, b = self.sampling_rate, self.scale
        r = math.log1p(-q) if q < 1.0 else -math.inf
        return float(np.logaddexp(r, math.log(q) + 1.0 / b) - np.logaddexp(r, math.log(q) - 1.0 / b))

    def _outcome(self, eps: np.ndarray) -> np.ndarray:
        """x(ε) for |ε| < ℓ_max (clipped to [−1, 1])."""
        q, b = self.sampling_rate, self.scale
        r = 1.0 - q
        c = r + q * math.exp(-1.0 / b)
        e = np.minimum(np.abs(eps), MAX_LOSS)
        with np.errstate(divide="ignore", invalid="ignore"):
            level = np.log(q * math.exp(-1.0 / b) + c * np.expm1(e)) - math.log(q)  # = −(2x+1)/b or (2x−1)/b
        x = np.where(eps >= 0.0, -(b * level + 1.0) / 2.0, (b * level + 1.0) / 2.0)
        return np.asarray(np.clip(np.nan_to_num(x, nan=-1.0), -1.0, 1.0))

    def survival(self, losses: np.ndarray) -> Survivals:
        q, b = self.sampling_rate, self.scale
        eps = np.asarray(losses, dtype=float)
        x = self._outcome(eps)
        p = (1.0 - q) * _laplace_cdf(x, 0.0, b) + q * _laplace_cdf(x, -1.0, b)
        r = (1.0 - q) * _laplace_cdf(x, 0.0, b) + q * _laplace_cdf(x, 1.0, b)
        top = self._top
        low = snapped_down(eps)
        below, above = low <= -top, low > top
        return np.where(below, 1.0, np.where(above, 0.0, p)), np.where(below, 1.0, np.where(above, 0.0, r))

    def loss_range(self, tail: float) -> tuple[float, float]:
        top = min(self._top, MAX_LOSS)
        return -top, above_atom(top)

    def atoms(self) -> tuple[float, ...]:
        return (-self._top, self._top)

    def largest_loss(self) -> float:
        return self._top


def _laplace_cdf(x: np.ndarray, centre: float, scale: float) -> np.ndarray:
    """P(X ≤ x) for X ~ Lap(centre, scale), each side from its own exponential (accurate in both tails)."""
    d = (x - centre) / scale
    return np.asarray(np.where(d < 0.0, 0.5 * np.exp(np.minimum(d, 0.0)), 1.0 - 0.5 * np.exp(-np.maximum(d, 0.0))))


@dataclass(frozen=True)
class SymmetrizedPair(DominatingPair):
    """The symmetric pair whose profile is the inner (remove) pair's for ε ≥ 0 and its reverse's below: for sampling
    without replacement under replace-one, the least dominating pair (module docstring)."""

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

    def atoms(self) -> tuple[float, ...]:
        inner = self.inner.atoms()
        return (*(-atom for atom in inner), 0.0, *inner)

    def largest_loss(self) -> float:
        return max(self.inner.largest_loss(), 0.0)


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

    def atoms(self) -> tuple[float, ...]:
        return tuple(atom for _, pair in self.components for atom in pair.atoms())

    def largest_loss(self) -> float:
        return max(pair.largest_loss() for weight, pair in self.components if weight > 0.0)
