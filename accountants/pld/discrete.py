"""One release's privacy loss on a grid: the pessimistic connect-the-dots discretisation, and its moment generator.

:func:`connect_the_dots` places the loss of a :class:`~accountants.pld.pairs.DominatingPair` on the knots
ε_j = jΔ, j = lo…hi (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022, "Connect the dots"; the pessimistic mode of
dp_accounting's ``PLDAccountant``). The P-mass m_j and Q-mass n_j of each bin [ε_j, ε_{j+1}) are split between its
two knots so that both are preserved: b_j = (m_j − e^{ε_j} n_j)/(1 − e^{−Δ}) goes up to ε_{j+1}, the rest stays at
ε_j. The result's profile is the chord of the true one between knots (in e^ε), hence above it: a dominating pair.
P-mass below the lowest knot is moved up to it, P-mass at or above the highest knot goes to an atom at +∞.

Rounding never moves mass down. The masses come from *upper* survivals S⁺_j = S_P(ε_j)·(1 + ρ + 4u) (ρ the pairs'
relative accuracy, made non-increasing by a running maximum, and 1 at the lowest knot), so every tail sum of the
result, S⁺_k + b⁺_{k−1}, is at least the exact construction's, S_k + b_{k−1}, provided b⁺_j ≥ b_j or b⁺_j = m⁺_j
(then the tail sum is S⁺_{k−1} ≥ S_{k−1} ≥ S_k + b_{k−1}); b⁺ is b computed from the unrounded survivals plus an
explicit bound on its cancellation error, rounded up and capped at m⁺_j. Every δ(ε) = E[(1 − e^{ε−L})₊] is
non-decreasing in such moves (the integrand is non-decreasing in L), and so is that of any composition with them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import special

from .pairs import SURVIVAL_RTOL, DominatingPair

U = float(np.finfo(float).eps) / 2.0
"""Unit roundoff of float64."""


@dataclass(frozen=True, eq=False)
class LeafPld:
    """A release's pessimistic loss law on the grid {(offset + i)·Δ}: masses ``probs`` plus ``infinity`` at +∞."""

    grid: float
    offset: int
    probs: np.ndarray
    infinity: float

    @property
    def size(self) -> int:
        return int(self.probs.size)

    @property
    def losses(self) -> np.ndarray:
        return (self.offset + np.arange(self.probs.size)) * self.grid

    def log_probs(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.asarray(np.log(self.probs))

    def log_mgf(self, thetas: np.ndarray) -> np.ndarray:
        """log Σ_i p_i e^{θ L_i} of the finite part at each θ (a vectorised log-sum-exp)."""
        thetas = np.atleast_1d(np.asarray(thetas, dtype=float))
        weights, losses = self._finite
        if weights.size == 0:
            return np.full(thetas.size, -np.inf)
        out = np.empty(thetas.size)
        chunk = max(1, (1 << 21) // weights.size)
        for start in range(0, thetas.size, chunk):
            exponents = np.multiply.outer(thetas[start : start + chunk], losses)  # in place from here: large
            exponents += weights  # temporaries cost more than the arithmetic
            peak = np.max(exponents, axis=1)
            exponents -= peak[:, None]
            np.exp(exponents, out=exponents)
            out[start : start + chunk] = peak + np.log(np.sum(exponents, axis=1))
        return out

    @cached_property
    def finite_mass(self) -> float:
        """The mass at finite losses (1 − ``infinity``, up to rounding)."""
        return float(np.sum(self.probs))

    @cached_property
    def variance(self) -> float:
        """The variance of the finite part (renormalised; 0 for a point mass)."""
        weights, losses = self.probs, self.losses
        total = float(np.sum(weights))
        if total <= 0.0:
            return 0.0
        mean = float(np.sum(weights * losses)) / total  # no BLAS (threads on a busy host)
        return float(np.sum(weights * (losses - mean) ** 2)) / total

    @cached_property
    def _finite(self) -> tuple[np.ndarray, np.ndarray]:
        """log p_i and L_i where p_i > 0."""
        positive = self.probs > 0
        return np.log(self.probs[positive]), self.losses[positive]

    def tilted(self, theta: float) -> tuple[np.ndarray, float, float]:
        """x_i = p_i e^{θL_i}/M(θ) (a probability vector), log M(θ), and the largest relative rounding of an x_i."""
        exponent = self.log_probs() + theta * self.losses
        log_norm = float(special.logsumexp(exponent))
        shifted = exponent - log_norm
        x = np.exp(shifted)
        finite = np.isfinite(shifted)
        worst = float(np.max(np.abs(shifted[finite]), initial=0.0))
        return x, log_norm, U * (worst + abs(log_norm) + 4.0)


def wanted_grid(relative: float, max_grid: float, epsilon: float, steps: int) -> float:
    """The grid an ε over ``steps`` releases asks for at relative accuracy τ: min(max_grid, √(τε/(2T)), 8τε) (the
    connect-the-dots error of T compositions grows like T·Δ², and like Δ for few)."""
    return min(max_grid, math.sqrt(relative * epsilon / (2.0 * max(steps, 1))), 8.0 * relative * epsilon)


def connect_the_dots(pair: DominatingPair, grid: float, lo: int, hi: int) -> LeafPld:
    """The pessimistic connect-the-dots PLD of ``pair`` on the knots lo·Δ … hi·Δ (module docstring)."""
    hi = max(hi, lo + 1)
    knots = np.arange(lo, hi + 1) * grid
    s_p, s_q = (np.asarray(s, dtype=float) for s in pair.survival(knots))
    upper = s_p * (1.0 + SURVIVAL_RTOL + 4.0 * U)
    upper[0] = max(float(upper[0]), 1.0)
    upper = np.maximum.accumulate(upper[::-1])[::-1]
    bin_mass = upper[:-1] - upper[1:]
    scale = np.exp(knots[:-1])
    p_bin, q_bin = s_p[:-1] - s_p[1:], s_q[:-1] - s_q[1:]
    numerator = p_bin - scale * q_bin
    error = SURVIVAL_RTOL * ((s_p[:-1] + s_p[1:]) + scale * (s_q[:-1] + s_q[1:])) + 4.0 * U * (
        np.abs(p_bin) + scale * np.abs(q_bin)
    )
    up = (numerator + error) * ((1.0 + 4.0 * U) / -math.expm1(-grid))
    up = np.clip(up, 0.0, bin_mass)
    probs = np.zeros(knots.size)
    probs[:-1] += bin_mass - up
    probs[1:] += up
    # the top knot's own mass (L ≥ ε_hi) goes to +∞; 1e-300 stands for a survival that underflowed to 0
    return LeafPld(grid, lo, probs, float(upper[-1]) + 1e-300)
