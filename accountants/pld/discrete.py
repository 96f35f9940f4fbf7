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

:func:`optimistic_leaf` is the mirror image for certified *lower* bounds (:mod:`accountants.pld.lower`): a
post-processing of the pair that merges parts of adjacent bins into outcomes sitting exactly on knots, every
outcome placed at or below its own loss, masses rounded down.
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


def optimistic_leaf(pair: DominatingPair, grid: float, lo: int, hi: int) -> LeafPld:
    """A loss law on the knots lo·Δ … hi·Δ whose composition with anything bounds δ(ε) from *below*: the optimistic
    counterpart of :func:`connect_the_dots` (module docstring of :mod:`accountants.pld.lower`).

    Bin j = [ε_j, ε_{j+1}) has masses m_j (P) and n_j (Q), its surplus over its lower knot U_j = m_j − e^{ε_j}n_j ≥ 0
    and its deficit under its upper knot D_j = e^{ε_{j+1}}n_j − m_j ≥ 0 (the mass above the top knot is the last
    bin). A fraction u_j of bin j (deficit D_j per unit) and a fraction v_{j+1} of bin j+1 (surplus U_{j+1} per
    unit) with u_j·D_j ≤ v_{j+1}·U_{j+1} merge into one outcome whose likelihood ratio is at least e^{ε_{j+1}}: a
    post-processing of the pair, placed at ε_{j+1} (at or below its loss). The balance merged at ε_{j+1} is
    t_{j+1} = ½√(D_j·U_{j+1}) (u_j = t_{j+1}/D_j, v_{j+1} = t_{j+1}/U_{j+1}), each t scaled down where a bin would
    give more than itself (v_j + u_j ≤ 1), and what is left merged again the same way (:func:`_merged_fractions`);
    what is left at the end stays at ε_j (at or below its loss). So λ_j = u_{j−1}m_{j−1} + (1 − u_j)m_j: bin j sends
    the fraction u_j up, as connect-the-dots sends b_j/m_j = U_j/((1 − e^{−Δ})m_j). For a smooth loss u, v ≈ ½,
    little is left after the first round and next to nothing after the last, and the two laws differ by O(Δ²).
    The masses are lower bounds (survivals' relative error and rounding subtracted), D an upper and U a lower bound,
    so each merged outcome's true ratio is at least its knot's; the mass below the lowest knot is dropped; nothing
    goes to +∞."""
    hi = max(hi, lo + 1)
    knots = np.arange(lo, hi + 1) * grid
    s_p, s_q = (np.asarray(s, dtype=float) for s in pair.survival(knots))
    s_p[0], s_q[0] = min(float(s_p[0]), 1.0), min(float(s_q[0]), 1.0)
    p_next, q_next = np.append(s_p[1:], 0.0), np.append(s_q[1:], 0.0)  # the last bin: the mass above the top knot
    scale = np.exp(knots)
    m, n = s_p - p_next, s_q - q_next
    slack = SURVIVAL_RTOL + 4.0 * U
    m_low = np.maximum(m - slack * (s_p + p_next), 0.0)
    n_low = np.maximum(n - slack * (s_q + q_next), 0.0)
    surplus = m - scale * n
    surplus_error = slack * ((s_p + p_next) + scale * (s_q + q_next)) + 4.0 * U * (np.abs(m) + scale * np.abs(n))
    u_low = np.maximum(surplus - surplus_error, 0.0)
    deficit = math.expm1(grid) * scale * n - surplus  # e^{ε_{j+1}}n_j − m_j
    d_up = np.maximum(deficit + surplus_error + 4.0 * U * math.expm1(grid) * scale * np.abs(n), 0.0)
    probs = _merged(m_low, n_low, u_low, d_up, scale)
    return LeafPld(grid, lo, probs * (1.0 - 4.0 * U), 0.0)


MERGE_ROUNDS = 3
"""Rounds of merging in :func:`optimistic_leaf`: each merges what the previous ones left (for a smooth loss what is
left shrinks by orders of magnitude each round)."""
MERGE_DISTANCES = (1, 2, 4, 8)
"""Bins j and j + d merge at knot j + 1 for these d: adjacent bins balance a smooth loss; where the bin masses fall
steeply (a loss concentrated within a few knots), the deficit of bin j finds its balance in bins further up."""


def _merged(
    mass: np.ndarray, q_mass: np.ndarray, surplus: np.ndarray, deficit: np.ndarray, scale: np.ndarray
) -> np.ndarray:
    """The optimistic law's masses: over :data:`MERGE_ROUNDS` rounds and each distance d of :data:`MERGE_DISTANCES`,
    bin j (deficit D_j under knot j + 1) and bin i = j + d (surplus U⁽ᵈ⁾_i = U_i + (e^{ε_i} − e^{ε_{j+1}})n_i over
    it, n_i its Q-mass) merge the balance t = ½√(ℓ_j D_j·ℓ_i U⁽ᵈ⁾_i) at knot j + 1 (ℓ the fractions still left),
    scaled down where a bin would give more than it has left; what is left at the end stays at its own knot. A bin
    with no surplus over its own knot (an atom on it) is left where it is: it loses nothing there."""
    size = mass.size
    left = np.ones(size)
    probs = np.zeros(size)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(MERGE_ROUNDS):
            for d in MERGE_DISTANCES:
                if d >= size:
                    continue
                lift = np.maximum(scale[d:] - scale[1 : size - d + 1], 0.0) * q_mass[d:] if d > 1 else 0.0
                # U⁽ᵈ⁾ of bins d…, over the knot d − 1 below them; a bin at its own knot (an atom there) stays put
                above = np.where(surplus[d:] > 0.0, surplus[d:] + lift, 0.0)
                merged = 0.5 * np.sqrt(left[:-d] * deficit[:-d] * left[d:] * above)
                up_part = np.where(deficit[:-d] > 0.0, merged / deficit[:-d], 0.0)  # of bins 0 … size − d − 1
                down_part = np.where(above > 0.0, merged / above, 0.0)  # of bins d … size − 1
                given = np.zeros(size)
                given[:-d] += up_part
                given[d:] += down_part
                over = left / np.maximum(given * (1.0 + 8.0 * U), left)
                factor = _zero_nan(np.minimum(over[:-d], over[d:]))  # (0/0 where a bin has nothing left)
                up_part, down_part = _zero_nan(up_part * factor), _zero_nan(down_part * factor)
                probs[1 : size - d + 1] += up_part * mass[:-d] + down_part * mass[d:]
                left[:-d] -= up_part
                left[d:] -= down_part
                np.maximum(left, 0.0, out=left)
    return np.asarray(probs + left * mass)


def _zero_nan(values: np.ndarray) -> np.ndarray:
    """``values`` with NaN set to 0, in place (``np.nan_to_num`` at a fraction of its cost; no infinities arise in
    :func:`_merged`: every part is at most √(mass/deficit)/2 of finite masses, every factor at most 1)."""
    values[np.isnan(values)] = 0.0
    return values


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
