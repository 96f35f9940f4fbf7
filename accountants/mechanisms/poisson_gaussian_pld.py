"""Poisson-subsampled Gaussian, add/remove-one neighbours: a sound, numerically tight privacy-loss-distribution (PLD)
accountant for ``steps``-fold adaptive composition.

Conventions: sampling rate q ∈ (0, 1], sensitivity 1, noise std z (= ``noise_multiplier``); μ₀ = N(0, z²),
μ₁ = N(1, z²). A pair (P, Q) has privacy loss L = log(dP/dQ) under P and hockey-stick profile
δ(ε) = E_P[(1 − e^{ε−L})₊] + P(L = +∞). Add/remove-one adjacency has two dominating pairs (Zhu, Dong & Wang 2022,
"Optimal accounting of DP via characteristic function"; dp_accounting's design): *remove* P = (1−q)μ₀ + qμ₁ vs
Q = μ₀ and *add* P = μ₀ vs Q = (1−q)μ₀ + qμ₁. Adaptive composition of T steps is dominated by the T-fold products
(ZDW22, composition of dominating pairs), whose loss is the sum of T independent losses, so
δ_T(ε) = max over the two directions of E[(1 − e^{ε−S_T})₊] with S_T = L₁ + … + L_T. For q = 1 both directions
are the Gaussian pair (Balle & Wang 2018), and only one is computed.

Every reported δ is an **upper bound**; the argument, step by step:

1. *Connect-the-dots discretisation* (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022, "Connect the dots";
   the pessimistic mode of dp_accounting's ``PLDAccountant``). On the grid ε_j = jΔ, the outcome
   mass of each bin {ε_j ≤ L < ε_{j+1}} is split between the two knots so that its P- and Q-mass are preserved:
   b_j = E_P[(1 − e^{ε_j − L}) 1_bin] / (1 − e^{−Δ}) goes up to ε_{j+1}, the rest stays at ε_j. The profile of the
   result, as a function of e^ε, is the chordal interpolation of the (convex) true profile, hence above it for every
   ε: a dominating pair, so the composition of the discretised pairs dominates the true composition. Loss below the
   lowest knot is moved up to it, loss above the highest knot goes to the atom at +∞ (Meiser & Mohammadi 2018's
   pessimistic privacy buckets).
2. *Stochastic dominance carries everything else* (the grid operations live in
   :mod:`accountants.mechanisms.discrete_pld`). g(s) = (1 − e^{ε−s})₊ is non-decreasing, so any array whose
   tail sums Σ_{s_j > s} p_j (+ atom at ∞) are ≥ those of the exact array gives a larger E[g], and this order is
   preserved by convolution (for non-negative measures, of any total mass). Each numerical step below is made to
   move mass only **up**:
   * single step: the survival P(L ≥ ε_j) is computed with a relative margin 2ρ (ρ = 1e-12: the assumed accuracy of
     scipy's ``ndtr`` including the rounding of its argument, ≈ u·x² ≤ 2e-13 for |x| ≤ 40, beyond which the tails
     underflow) and b_j is rounded up by an explicit bound on its cancellation error (it is a difference of Gaussian
     masses); 4u absorbs the rounding of the masses themselves;
   * truncation of each composed array (Koskela, Jälkö & Honkela 2020 truncate symmetrically; we do it
     pessimistically as dp_accounting): lower-tail mass (≤ ``tail_mass``, or ≤ the FFT error bound of that
     convolution, whose clipped noise would otherwise keep the support from shrinking) is added to the lowest kept
     point — sound; it only costs tightness, at most that mass times the number of copies of the array, in δ —
     and upper-tail mass to the atom at ∞, where it counts in every reported δ; its budget is ``tail_mass`` divided
     by the number of copies of that array in the final result (so the ∞ atom grows by ≤ ~``tail_mass``·log₂T);
   * FFT convolution (Koskela et al. 2020; composition by repeated squaring, O(log T) FFTs): the computed convolution
     differs from the exact one by ‖e‖₂ ≤ (3η + 6u)(‖a‖₂‖b‖₁ + ‖a‖₁‖b‖₂) with η = 10·u·⌈log₂ n⌉ the relative L2
     error of one FFT of length n (Higham 2002, Thm. 24.2, constant rounded up); negative values are clipped (which
     moves each entry towards the exact one) and ‖e‖₁ ≤ √m‖e‖₂ (m kept entries) is added to the atom at ∞;
   * the atom at ∞ of a convolution is bounded by i_a·M_b + i_b·M_a (total masses M), and the final sum for δ(ε) is
     inflated by (1 + 1e-12) for summation error.
3. *Bounded work.* The grid Δ is the requested ``value_discretization`` unless the estimated width of the composed
   loss (single-step range, or 24 standard deviations of the T-fold sum) needs more than ``max_points`` points;
   then Δ is enlarged, and if a composed array still outgrows ``max_points`` it is coarsened pessimistically
   (rounding indices up). The Δ actually used and the number of coarsenings are reported.

ε(δ) is the smallest ε ≥ 0 whose bounded δ(ε) (max of the directions) is ≤ δ, solved exactly between grid points
(the profile of a discrete PLD is A − e^ε·B there) and then checked; if the atom at ∞ is already ≥ δ, no finite ε
is certified and :class:`ParameterError` on ``delta`` is raised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypedDict, Unpack

import numpy as np
from scipy import special

from .. import validation as check
from ..errors import ParameterError
from . import discrete_pld as pld_ops

DEFAULT_VALUE_DISCRETIZATION = 1e-4
DEFAULT_MAX_POINTS = 1 << 20
DEFAULT_TAIL_MASS = 1e-15
_U = pld_ops.U
_RHO = 1e-12
"""Assumed relative accuracy of each Gaussian tail value (scipy ``ndtr``), argument rounding included."""


# -- step 1: one step, connect-the-dots ------------------------------------------------------------------------------


def _min_tail(x: np.ndarray) -> np.ndarray:
    return np.asarray(special.ndtr(-np.abs(x)))


def _std_mass(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """N(0, 1) mass of [lo, hi] (lo ≤ hi, ±∞ allowed) without cancelling tails, and a bound on its error."""
    both_right = lo >= 0.0
    both_left = hi <= 0.0
    with np.errstate(invalid="ignore"):
        right = special.ndtr(-lo) - special.ndtr(-hi)
        left = special.ndtr(hi) - special.ndtr(lo)
        middle = 1.0 - special.ndtr(lo) - special.ndtr(-hi)
    mass = np.where(both_right, right, np.where(both_left, left, middle))
    mass = np.maximum(mass, 0.0)
    err = _RHO * (_min_tail(lo) + _min_tail(hi)) + 2.0 * _U * np.where(both_right | both_left, mass, 1.0)
    return mass, err


def _times_w(log_abs_w: np.ndarray, sign_w: np.ndarray, m: np.ndarray) -> np.ndarray:
    """w·m for m ≥ 0 without overflow of w (0 where m = 0)."""
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(m > 0.0, sign_w * np.exp(log_abs_w + np.log(np.where(m > 0.0, m, 1.0))), 0.0)


def _single_step(q: float, z: float, grid: float, first: int, last: int, remove: bool) -> pld_ops.DiscretePld:
    """Pessimistic connect-the-dots PLD of one step on knots first·Δ … last·Δ (see the module docstring, step 1)."""
    eps = np.arange(first, last + 1, dtype=float) * grid
    # w(ε) = e^{(2x−1)/(2z²)} at the outcome x whose loss is ε, i.e. w = (e^{±ε} − (1 − q))/q, kept as sign and
    # log|w| (it overflows for tiny z); x = z² log w + ½, and x = −∞ where w ≤ 0 (no outcome has that loss)
    signed = eps if remove else -eps
    big = signed > 700.0
    with np.errstate(divide="ignore", over="ignore"):
        direct = np.expm1(np.where(big, 0.0, signed)) + q
        log_abs_w = np.where(
            big, signed + np.log1p(-(1.0 - q) * np.exp(-np.where(big, signed, 0.0))), np.log(np.abs(direct))
        )
        log_abs_w = log_abs_w - math.log(q)
    sign_w = np.where(big, 1.0, np.sign(direct))
    x = np.where(sign_w > 0.0, z * z * log_abs_w + 0.5, -np.inf)
    x0, x1 = x / z, (x - 1.0) / z
    if remove:  # L increasing in x; P = (1−q)μ₀ + qμ₁; {L ≥ ε} = {x ≥ x(ε)}
        survival = (1.0 - q) * special.ndtr(-x0) + q * special.ndtr(-x1)
        m0, e0 = _std_mass(x0[:-1], x0[1:])
        m1, e1 = _std_mass(x1[:-1], x1[1:])
        w_m0, w_e0 = _times_w(log_abs_w[:-1], sign_w[:-1], m0), _times_w(log_abs_w[:-1], sign_w[:-1], e0)
        log_kappa = np.zeros(m0.size)
        numerator = m1 - w_m0  # N_j / (qκ): E_P[(1 − e^{ε_j − L}) 1_bin] = q (ΔΦ₁ − w ΔΦ₀)
    else:  # L decreasing in x; P = μ₀; {L ≥ ε} = {x ≤ x(ε)}
        survival = special.ndtr(x0)
        m0, e0 = _std_mass(x0[1:], x0[:-1])
        m1, e1 = _std_mass(x1[1:], x1[:-1])
        w_m0, w_e0 = _times_w(log_abs_w[:-1], sign_w[:-1], m0), _times_w(log_abs_w[:-1], sign_w[:-1], e0)
        log_kappa = eps[:-1]
        numerator = w_m0 - m1  # N_j = q e^{ε_j} (w ΔΦ₀ − ΔΦ₁)
    # a w·ΔΦ₀ that underflows to 0 against an inf w only makes b larger (b is capped by the bin mass below)
    num_err = e1 + np.abs(w_e0) + (_RHO + 4.0 * _U) * np.abs(w_m0) + 4.0 * _U * m1
    with np.errstate(over="ignore"):
        scale = q * np.exp(log_kappa) / -math.expm1(-grid)
    b_hat = scale * numerator
    b_err = scale * num_err * (1.0 + 8.0 * _U) + 4.0 * _U * np.abs(b_hat)
    # survival upper bounds: exact 1 at the lowest knot (everything below is moved up to it), monotone
    upper = np.minimum(survival * (1.0 + 2.0 * _RHO) + 2.0 * _U, 1.0)
    upper[0] = 1.0
    upper = np.maximum.accumulate(upper[::-1])[::-1]
    bin_mass = upper[:-1] - upper[1:]
    b = np.clip(b_hat + b_err, 0.0, bin_mass)
    probs = np.zeros(eps.size)
    probs[:-1] += bin_mass - b
    probs[1:] += b
    # 4u: rounding of the masses themselves (each is within 2u of its share, relative)
    return pld_ops.DiscretePld(first, probs, float(upper[-1]) + 4.0 * _U)


def _knot_range(q: float, z: float, grid: float, remove: bool, tail: float) -> tuple[float, float]:
    """Loss range [lo, hi] outside of which the outcome mass is ≤ ``tail`` (below: moved up; above: to ∞)."""
    k = float(-special.ndtri(tail)) + 0.5

    def loss(x: float) -> float:  # log(1 − q + q e^{(2x−1)/(2z²)}), the remove-direction loss
        u = (2.0 * x - 1.0) / (2.0 * z * z)
        return u if q == 1.0 else float(np.logaddexp(math.log1p(-q), math.log(q) + u))

    if remove:
        hi = loss(1.0 + k * z)
        lo = math.log1p(-q) if q < 1.0 else loss(-k * z)
    else:
        lo = -loss(k * z)
        hi = -math.log1p(-q)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ParameterError.single("noise_multiplier", "is too small for the PLD accountant (loss overflows)")
    return lo, hi


# -- step 2: pessimistic operations on discrete PLDs -----------------------------------------------------------------


# -- step 3: composition and the accountant --------------------------------------------------------------------------


@dataclass(frozen=True)
class PoissonGaussianPld:
    """The composed, pessimistic PLDs of T Poisson-subsampled Gaussian steps (both add/remove directions).

    Build once with :meth:`build`, then query :meth:`delta` / :meth:`epsilon` as often as needed.
    """

    sampling_rate: float
    noise_multiplier: float
    steps: int
    value_discretization: float
    """The grid Δ actually used (≥ the one requested; enlarged to respect ``max_points``)."""
    coarsenings: int
    """How many times a composed array was regridded (pessimistically) to 2Δ; 0 in the usual case."""
    remove: pld_ops.DiscretePld
    add: pld_ops.DiscretePld | None
    """None for q = 1 (the two directions coincide)."""

    @classmethod
    def build(
        cls,
        sampling_rate: float,
        noise_multiplier: float,
        steps: int,
        *,
        value_discretization: float = DEFAULT_VALUE_DISCRETIZATION,
        max_points: int = DEFAULT_MAX_POINTS,
        tail_mass: float = DEFAULT_TAIL_MASS,
    ) -> PoissonGaussianPld:
        q = check.probability("sampling_rate", sampling_rate)
        z = check.noise_multiplier("noise_multiplier", noise_multiplier)
        t = check.positive_int("steps", steps)
        grid = check.positive("value_discretization", value_discretization)
        points = check.positive_int("max_points", max_points)
        if points < 1024:
            raise ParameterError.single("max_points", "must be >= 1024", ">= 1024", max_points)
        tail = check.positive("tail_mass", tail_mass)
        if tail >= 1e-3:
            raise ParameterError.single("tail_mass", "must be < 1e-3", "in (0, 1e-3)", tail_mass)
        directions = (True,) if q == 1.0 else (True, False)
        single_tail = max(tail / t, 1e-300)
        ranges = [_knot_range(q, z, grid, remove, single_tail) for remove in directions]
        width = max(hi - lo for lo, hi in ranges)
        # estimate the composed width from a coarse single step: single range, or ~24 std of the T-fold sum
        probe = max(width / 4096.0, grid)
        spread = 0.0
        for remove, (lo, hi) in zip(directions, ranges, strict=True):
            pld = _single_step(q, z, probe, math.floor(lo / probe), math.ceil(hi / probe), remove)
            spread = max(spread, math.sqrt(t * pld_ops.loss_variance(pld, probe)))
        composed = min(t * width, 2.0 * width + 24.0 * spread)
        grid = max(grid, width / (points / 2), composed / (points / 2))
        plds = []
        factor = 1
        for remove, (lo, hi) in zip(directions, ranges, strict=True):
            single = _single_step(q, z, grid, math.floor(lo / grid), math.ceil(hi / grid), remove)
            plds.append(pld_ops.compose(single, t, tail, points))
        factor = max(f for _, f in plds)
        # bring both directions to the same (coarsest) grid
        aligned = [p if f == factor else pld_ops.coarsen(p, factor // f) for p, f in plds]
        return cls(
            sampling_rate=q,
            noise_multiplier=z,
            steps=t,
            value_discretization=grid * factor,
            coarsenings=factor.bit_length() - 1,
            remove=aligned[0],
            add=aligned[1] if len(aligned) > 1 else None,
        )

    def _directions(self) -> list[pld_ops.DiscretePld]:
        return [self.remove] if self.add is None else [self.remove, self.add]

    @property
    def infinity_mass(self) -> float:
        """δ can never be certified below this (mass at +∞, truncation and rounding margins included)."""
        return max(p.infinity for p in self._directions())

    def delta(self, epsilon: float) -> float:
        """Upper bound on δ(ε) of the composition (max over remove and add)."""
        e = check.non_negative("epsilon", epsilon)
        return min(1.0, max(pld_ops.delta_at(p, self.value_discretization, e) for p in self._directions()))

    def epsilon(self, delta: float) -> float:
        """Upper bound on the smallest ε with δ(ε) ≤ ``delta``; ParameterError if no finite ε is certified."""
        d = check.delta("delta", delta)
        eps = max(pld_ops.epsilon_at(p, self.value_discretization, d) for p in self._directions())
        if not math.isfinite(eps):
            raise pld_ops.uncertified(self.infinity_mass, delta)
        return eps


class PldAccuracy(TypedDict, total=False):
    """How finely the PLD is built (:meth:`PoissonGaussianPld.build`)."""

    value_discretization: float
    max_points: int
    tail_mass: float


def poisson_gaussian_pld(
    sampling_rate: float, noise_multiplier: float, steps: int, **accuracy: Unpack[PldAccuracy]
) -> PoissonGaussianPld:
    """Build the composed PLD (see :class:`PoissonGaussianPld`)."""
    return PoissonGaussianPld.build(sampling_rate, noise_multiplier, steps, **accuracy)


def poisson_gaussian_pld_delta(
    sampling_rate: float, noise_multiplier: float, steps: int, epsilon: float, **accuracy: Unpack[PldAccuracy]
) -> float:
    """Upper bound on δ(ε) of ``steps`` Poisson-subsampled Gaussian steps (add/remove-one, max of both directions)."""
    check.non_negative("epsilon", epsilon)
    return poisson_gaussian_pld(sampling_rate, noise_multiplier, steps, **accuracy).delta(epsilon)


def poisson_gaussian_pld_epsilon(
    sampling_rate: float, noise_multiplier: float, steps: int, delta: float, **accuracy: Unpack[PldAccuracy]
) -> float:
    """Upper bound on the smallest ε with δ(ε) ≤ ``delta`` (never below it); ParameterError on ``delta`` if none."""
    check.delta("delta", delta)
    return poisson_gaussian_pld(sampling_rate, noise_multiplier, steps, **accuracy).epsilon(delta)
