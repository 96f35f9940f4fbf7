"""The dominating pairs of a mixture of Gaussians (a Gaussian release with a random sensitivity), add/remove.

In noise units, the release without the record is Q = N(0, 1) and with it P = Σᵢ wᵢ N(μᵢ, 1), μᵢ = sᵢ/z ≥ 0
(:class:`~accountants.events.MixtureOfGaussiansEvent`; Choquette-Choo, Ganesh, Steinke & Thakurta 2024, arXiv
2310.15526, whose Cor. 4.7 reduces a vector release to this scalar one). The likelihood ratio at an outcome x is

    Y(x) = dP/dQ(x) = Σᵢ wᵢ e^{μᵢx − μᵢ²/2},

and R(x) = log Y(x) is convex (a log-sum-exp of affine functions) and increasing (every μᵢ ≥ 0, one > 0). So

* **remove** (P, Q): L = R(x) ≥ ε exactly when x ≥ x(ε), the root of R(x) = ε, so S_P(ε) = Σᵢ wᵢ Φ(μᵢ − x(ε)) and
  S_Q(ε) = Φ(−x(ε)); for ε ≤ log w₀ (w₀ the weight of μ = 0) every outcome has L ≥ ε;
* **add** (Q, P): L = −R(x) ≥ ε exactly when x ≤ x(−ε), so S_P(ε) = Φ(x(−ε)), S_Q(ε) = Σᵢ wᵢ Φ(x(−ε) − μᵢ); its
  losses never reach −log w₀ (the supremum as x → −∞), which bounds every composition's ε.

Both pairs are the output laws themselves, so they are exact (attained by a record whose contributions all point
one way), and their optimistic discretisation bounds δ from below.

**The root.** R(x) = ε is solved as h(x) = log(e^ε − w₀) with h(x) = log Σ_{μᵢ>0} wᵢ e^{μᵢx − μᵢ²/2}, convex and
increasing with slope between the smallest positive μᵢ and the largest: nearly affine on both sides, so Newton's
method converges in a few steps. It starts at min_j (level − log w_j + μ_j²/2)/μ_j, which is ≥ the root (h is
at least each of its terms), and from there Newton's iterates on a convex increasing function decrease
monotonically to the root. It stops when a step moves x by less than 4u·max(1, |x|) (u the unit roundoff): the
survivals then move by a relative |μᵢ − x|·4u·max(1, |x|) ≤ 2e-12 for |x| ≤ 40 and every μᵢ the range reaches,
which the accountant's :data:`~accountants.pld.pairs.SURVIVAL_RTOL` covers — beyond that range the tails underflow.
log(e^ε − w₀) is computed as log(expm1(ε) + w₊) with w₊ the summed positive-shift weights (no cancellation as w₀
→ 1), as Poisson sampling's inverse loss is (:mod:`accountants.pld.sampled`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import special

from .pairs import MAX_LOSS, DominatingPair, Survivals, tail_quantile
from .sampled import _inverse_mixture_loss

NEWTON_STEPS = 200
"""Most Newton steps (a few suffice: the function is nearly affine on both sides); never reached in practice."""
_STOP = 4.0 * float(np.finfo(float).eps)


@dataclass(frozen=True)
class MixtureLoss:
    """The log-likelihood ratio R(x) = log Σᵢ wᵢ e^{μᵢx − μᵢ²/2} of a mixture of Gaussians and its inverse."""

    shifts: tuple[float, ...]
    weights: tuple[float, ...]

    @cached_property
    def _positive(self) -> tuple[np.ndarray, np.ndarray, float]:
        """(μ, log w + (−μ²/2)) of the positive shifts, and their total weight w₊."""
        mus = np.array(self.shifts)
        weights = np.array(self.weights)
        keep = mus > 0.0
        return mus[keep], np.log(weights[keep]) - 0.5 * mus[keep] ** 2, float(math.fsum(weights[keep]))

    @property
    def zero_weight(self) -> float:
        """w₀: the weight of the zero shift (0 where there is none)."""
        return self.weights[0] if self.shifts[0] == 0.0 else 0.0

    @property
    def largest_shift(self) -> float:
        return self.shifts[-1]

    def positive_part(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(h(x), h′(x)): the log-sum over the positive shifts and its slope (their mean under the tilted weights)."""
        mus, offsets = self._positive[:2]
        exponents = np.multiply.outer(np.asarray(x, dtype=float), mus) + offsets
        peak = exponents.max(axis=-1, keepdims=True)
        scaled = np.exp(exponents - peak)
        total = scaled.sum(axis=-1)
        return peak[..., 0] + np.log(total), (scaled @ mus) / total

    def log_ratio(self, x: np.ndarray) -> np.ndarray:
        """R(x) = log(w₀ + e^{h(x)})."""
        h, _ = self.positive_part(x)
        w0 = self.zero_weight
        return np.asarray(h if w0 == 0.0 else np.logaddexp(math.log(w0), h))

    def outcome(self, eps: np.ndarray) -> np.ndarray:
        """x(ε), the root of R(x) = ε (−∞ where ε ≤ log w₀: every outcome's ratio exceeds e^ε)."""
        shape = np.shape(eps)
        eps = np.asarray(eps, dtype=float).ravel()
        mus, offsets, w_plus = self._positive
        level = eps if self.zero_weight == 0.0 else _inverse_mixture_loss(w_plus, eps) + math.log(w_plus)
        x = np.full(eps.shape, -np.inf)
        live = np.flatnonzero(np.isfinite(level))
        target = level[live]
        for block in _blocks(live.size, mus.size):
            chosen = target[block]
            guess = np.min((chosen[:, None] - offsets) / mus, axis=1)  # each term alone reaches the level here
            x[live[block]] = _newton(self, chosen, guess)
        return x.reshape(shape)

    def outcome_range(self, tail: float) -> tuple[float, float]:
        """[lo, hi] with P(X < lo), Q(X < lo), P(X > hi), Q(X > hi) each at most ``tail`` (P the mixture, Q = N(0, 1)):
        bisection on the mixture's tails, which components of tiny weight barely move (a binomial mixture's top
        shift is far out, its mass is not)."""
        k = tail_quantile(tail)

        def above(x: float) -> float:
            return float(self.mixed_normal_cdf(np.array([x]), -1.0)[0])

        def below(x: float) -> float:
            return float(self.mixed_normal_cdf(np.array([x]), 1.0)[0])

        return _bisect(below, -k, self.largest_shift - k, tail), _bisect(above, k, self.largest_shift + k, tail)

    def mixed_normal_cdf(self, x: np.ndarray, sign: float) -> np.ndarray:
        """Σᵢ wᵢ Φ(sign·(x − μᵢ)) at each x, a block of outcomes at a time."""
        mus, weights = np.array(self.shifts), np.array(self.weights)
        flat = np.asarray(x, dtype=float).ravel()
        out = np.empty(flat.shape)
        for block in _blocks(flat.size, mus.size):
            out[block] = special.ndtr(sign * np.subtract.outer(flat[block], mus)) @ weights
        return out.reshape(np.shape(x))


def _bisect(mass: Callable[[float], float], inner: float, outer: float, tail: float) -> float:
    """The point between ``inner`` (where Q's tail is already ``tail``) and ``outer`` (where every component's is) at
    which the monotone tail ``mass`` falls to ``tail``, approached from the safe side (60 halvings)."""
    if mass(inner) <= tail:
        return inner
    safe, unsafe = outer, inner
    for _ in range(60):
        middle = 0.5 * (safe + unsafe)
        if mass(middle) <= tail:
            safe = middle
        else:
            unsafe = middle
    return safe


def _blocks(size: int, width: int) -> list[slice]:
    """Slices of ``size`` rows such that each block holds about 2²⁰ cells of ``width`` columns."""
    rows = max(1, (1 << 20) // max(width, 1))
    return [slice(start, min(start + rows, size)) for start in range(0, size, rows)]


def _newton(loss: MixtureLoss, target: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Newton's iterates from above the root of the convex increasing h(x) = target (module docstring)."""
    active = np.arange(x.size)
    for _ in range(NEWTON_STEPS):
        h, slope = loss.positive_part(x[active])
        step = (h - target[active]) / slope
        x[active] -= np.maximum(step, 0.0)  # never upwards: a rounding-level negative step is the root
        active = active[step > _STOP * np.maximum(1.0, np.abs(x[active]))]
        if active.size == 0:
            return x
    raise ArithmeticError("Newton's method did not converge on a mixture of Gaussians' loss (should not happen)")


@dataclass(frozen=True)
class MixtureRemovePair(DominatingPair):
    """(Σᵢ wᵢ N(μᵢ, 1), N(0, 1)): the record removed (module docstring)."""

    loss: MixtureLoss
    symmetric = False

    def survival(self, losses: np.ndarray) -> Survivals:
        x = self.loss.outcome(np.minimum(np.asarray(losses, dtype=float), MAX_LOSS))
        return self.loss.mixed_normal_cdf(x, -1.0), special.ndtr(-x)

    def loss_range(self, tail: float) -> tuple[float, float]:
        lo, hi = self.loss.log_ratio(np.array(self.loss.outcome_range(tail)))
        return max(float(lo), -MAX_LOSS), min(float(hi), MAX_LOSS)


@dataclass(frozen=True)
class MixtureAddPair(DominatingPair):
    """(N(0, 1), Σᵢ wᵢ N(μᵢ, 1)): the record added (module docstring)."""

    loss: MixtureLoss
    symmetric = False

    def survival(self, losses: np.ndarray) -> Survivals:
        x = self.loss.outcome(np.minimum(-np.asarray(losses, dtype=float), MAX_LOSS))
        return special.ndtr(x), self.loss.mixed_normal_cdf(x, 1.0)

    def loss_range(self, tail: float) -> tuple[float, float]:
        lo, hi = self.loss.log_ratio(np.array(self.loss.outcome_range(tail)))
        return max(-float(hi), -MAX_LOSS), min(-float(lo), MAX_LOSS)

    def largest_loss(self) -> float:
        w0 = self.loss.zero_weight
        return -math.log(w0) if w0 > 0.0 else math.inf


def mixture_pair(shifts: tuple[float, ...], weights: tuple[float, ...], add: bool) -> DominatingPair:
    """The pair of one direction of the mixture Σᵢ wᵢ N(μᵢ, 1) against N(0, 1)."""
    loss = MixtureLoss(shifts, weights)
    return MixtureAddPair(loss) if add else MixtureRemovePair(loss)
