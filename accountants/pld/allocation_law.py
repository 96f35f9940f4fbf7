"""The likelihood ratio of a random allocation, bracketed in the convex order on a geometric grid.

**The mechanism.** A Gaussian (multiplier z, μ = 1/(2z²)) is released in each of t steps; a record takes part in
exactly one step, chosen uniformly (Feldman & Shenfeld 2025, "Privacy amplification by random allocation",
arXiv 2502.08202). With the record (P) step J has mean 1 in the record's direction, without it (Q) none: per step
ℓ_j = y_j/z² − μ is the Gaussian's own log-likelihood ratio, N(−μ, 2μ) under Q and, at step J, N(μ, 2μ) under P. The
likelihood ratio of the whole release is

    X = dP/dQ = (1/t) Σ_j e^{ℓ_j},    under Q the mean of t independent log-normals Z_j = e^{ℓ_j} with E Z = 1,

and everything about the pair is a functional of the law of X under Q: removing the record, H_s(P ‖ Q) =
E_Q (X − s)₊ (the loss log X under P = the law under Q tilted by X: one base term N(μ, 2μ) and t − 1 dual terms
N(−μ, 2μ)); adding it, H_s(Q ‖ P) = E_Q (1 − sX)₊ (the loss −log X under P′ = Q, all t terms dual).

**Bracketing in the convex order.** Both integrands, x ↦ (x − s)₊ and x ↦ (1 − sx)₊, are convex and non-negative.
So a law X⁺ with X ≤_cx X⁺ bounds both directions' profiles from above at every s, and a sub-probability law X⁻
with E f(X⁻) ≤ E f(X) for every non-negative convex f bounds both from below. Both relations are kept by sums of
independent terms (E f(A′ + B′) ≤ E f(A′ + B) ≤ E f(A + B), each step for a fixed other term) and by scaling, so:

* *upper*: each value between two grid points is split between them keeping its mean (a mean-preserving spread);
* *lower*: the values are grouped (by the grid bin their grid values' mean falls in) and each group merged into its
  conditional mean, kept as an atom off the grid (a conditional expectation: a contraction, whatever the grouping);

applied to Z, then to every mean of two laws on the way to the mean of t terms (doubling, and adding one term where
t's binary digit says so). The grid is geometric, e^{kΔ} with Δ = log 2/N, so halving a value is a shift of N
points; the mean of two grid values v_i, v_j (i ≥ j) is v_i·(α + βe^{(j−i)Δ}), a shift of i that depends only on
j − i, and for each shift the masses and first moments landing on it are window sums of the other law (prefix or
suffix sums of non-negative terms, whichever is smaller: relative error ≤ n·u).

**Tails.** Mass cut from the ends of a law Y (a mean of c terms, used in `copies` independent copies in X, c·copies ≤
t) changes the upper profiles by at most E_Q[Y; cut]·(c·copies/t) + copies·Q(cut) (removing: (X − s)₊ ≤ X, whose
other terms have mean ≤ 1) and copies·Q(cut) (adding: (1 − sX)₊ ≤ 1); these go to an atom at +∞ of each direction's
P-law (:attr:`AllocationLaw.infinity_remove`, :attr:`AllocationLaw.infinity_add`). The lower law simply drops them.
Rounding: each bin's split (upper) or kept mass (lower) is raised or lowered by a bound on its floating-point error
(window sums of n non-negative terms: n·u relative, and the split's ratio, :func:`_rounding_share`), compounded over
the stages (the upper law's total mass stays within ~1e-7 of 1 at t = 10⁵). A value within an ulp of a grid point
may be placed in the bin on either side of it, and a merged group's mean equals its grid point to a few ulps: both
move a loss by ~1e-16, the same allowance the accountant gives atoms (:data:`~accountants.pld.pairs.ATOM_SNAP`).

**Why a bracket of X is enough.** The composition's δ is multilinear in the releases' P-laws and, one release at a
time, an integral of that release's profile F(s) = E_P(1 − s·e^{−L})₊ against the others' (Zhu, Dong & Wang 2022;
:mod:`accountants.pld.lower`, point 1): a release's measure whose F is at least (at most) the mechanism's at every
s > 0 bounds δ from above (below), whether or not it is a probability pair. Here F(s) = E_Q(X − s)₊ for removing and
E_Q(1 − sX)₊ for adding, so X⁺ and X⁻ (with the +∞ atoms for X⁺) are such measures in both directions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import special

U = float(np.finfo(float).eps) / 2.0
TAIL = 1e-18
"""Q-mass (and P-mass) cut from the ends of each law on the way, at most, per cut: the +∞ atoms stay ≪ 1e-13."""


@dataclass(frozen=True, eq=False)
class GeometricLaw:
    """Masses ``masses[i]`` (Q-probabilities) at the values e^{(offset + i)Δ}, Δ = log 2/``per_octave``."""

    per_octave: int
    offset: int
    masses: np.ndarray
    binned_moments: np.ndarray | None = None
    """For a lower law: each point stands for an atom at its own mean, ``binned_moments[i]/masses[i]`` (near, not
    necessarily on, its grid value); None: the atoms sit on the grid values."""

    @property
    def grid(self) -> float:
        return math.log(2.0) / self.per_octave

    @property
    def values(self) -> np.ndarray:
        return np.asarray(np.exp((self.offset + np.arange(self.masses.size)) * self.grid))

    @property
    def moments(self) -> np.ndarray:
        """Each atom's mass times its value."""
        return self.masses * self.values if self.binned_moments is None else self.binned_moments

    @property
    def atoms(self) -> np.ndarray:
        """Each atom's value (its grid value where its mass is 0)."""
        if self.binned_moments is None:
            return self.values
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.masses > 0.0, self.binned_moments / self.masses, self.values)


@dataclass(frozen=True, eq=False)
class AllocationLaw:
    """X⁺ (``upper``) and X⁻ (``lower``, where computed) for one Gaussian allocated to one of ``steps`` steps, with the
    P-mass each direction's upper pair puts at +∞ (module docstring)."""

    mu: float
    steps: int
    upper: GeometricLaw
    lower: GeometricLaw | None
    infinity_remove: float
    infinity_add: float


# -- the base term Z = e^ℓ, ℓ ~ N(−μ, 2μ) ------------------------------------------------------------------------


def _interval_mass(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """P(lo ≤ N(0,1) < hi), accurate in both tails (differences of the nearer tail)."""
    upper_side = lo > 0.0
    left = special.ndtr(hi) - special.ndtr(lo)
    right = special.ndtr(-lo) - special.ndtr(-hi)
    return np.asarray(np.maximum(np.where(upper_side, right, left), 0.0))


def _base_range(mu: float, per_octave: int, steps: int) -> tuple[float, float]:
    """Z's loss range on the coarsest grid (so on every finer one): beyond it, Q-mass and P-mass ≤ TAIL/(4t)."""
    grid = math.log(2.0) / per_octave
    scale = math.sqrt(2.0 * mu)
    k = -float(special.ndtri(TAIL / (4.0 * steps)))
    return math.floor((-mu - k * scale) / grid) * grid, math.ceil((mu + k * scale) / grid) * grid


def _base_bins(mu: float, per_octave: int, span: tuple[float, float]) -> tuple[int, np.ndarray, np.ndarray]:
    """Z's bins on the grid (bin i = [e^{(offset+i)Δ}, e^{(offset+i+1)Δ})) across ``span``: Q-mass and first
    moment."""
    grid = math.log(2.0) / per_octave
    scale = math.sqrt(2.0 * mu)
    offset, top = round(span[0] / grid), round(span[1] / grid)
    edges = (offset + np.arange(top - offset + 1)) * grid
    q_mass = _interval_mass((edges[:-1] + mu) / scale, (edges[1:] + mu) / scale)
    moment = _interval_mass((edges[:-1] - mu) / scale, (edges[1:] - mu) / scale)  # E_Q[Z; bin] = P_P(ℓ ∈ bin)
    return offset, q_mass, moment


def _base_cut(mu: float, span: tuple[float, float], steps: int) -> tuple[float, float]:
    """The cut tails' shares of the two +∞ atoms (module docstring, c = 1, copies = t)."""
    scale = math.sqrt(2.0 * mu)
    q_cut = float(special.ndtr((span[0] + mu) / scale) + special.ndtr(-(span[1] + mu) / scale))
    p_cut = float(special.ndtr((span[0] - mu) / scale) + special.ndtr(-(span[1] - mu) / scale))
    return p_cut + steps * q_cut, steps * q_cut


# -- from bins (mass, first moment) to grid laws -----------------------------------------------------------------


def _spread(offset: int, mass: np.ndarray, moment: np.ndarray, grid: float) -> GeometricLaw:
    """Each bin's mass split between its two ends keeping its mean (bin i spans points i and i + 1)."""
    low = np.exp((offset + np.arange(mass.size)) * grid)
    up = np.clip((moment - mass * low) / (low * math.expm1(grid)), 0.0, mass)
    masses = np.zeros(mass.size + 1)
    masses[:-1] += mass - up
    masses[1:] += up
    return GeometricLaw(round(math.log(2.0) / grid), offset, masses)


# -- the mean of two independent laws ------------------------------------------------------------------------------


class _Windows:
    """Window sums of a non-negative array x: Σ x[a + lo : a + hi] for every a of a run of consecutive windows, from
    prefix and suffix sums, each from whichever side sums less (the difference then carries a relative error of at
    most n·u of the window's own sum)."""

    def __init__(self, x: np.ndarray, pad: int) -> None:
        n = x.size
        self.pad = pad
        prefix = np.concatenate((np.zeros(pad + 1), np.cumsum(x), np.full(pad, 0.0)))
        prefix[pad + n + 1 :] = prefix[pad + n]
        suffix = np.concatenate((np.full(pad, 0.0), np.cumsum(x[::-1])[::-1], np.zeros(pad + 1)))
        suffix[:pad] = suffix[pad]
        self.prefix, self.suffix = prefix, suffix

    def crossovers(self, lows: np.ndarray, highs: np.ndarray, width: int) -> np.ndarray:
        """For each window run (lo, hi), the first a < width where the prefix side sums more than the suffix side,
        prefix[a + hi] > suffix[a + lo] (width where none): one side is non-decreasing in a, the other non-increasing,
        so a bisection, all runs at once."""
        lows, highs = lows + self.pad, highs + self.pad
        first, last = np.zeros(lows.size, dtype=np.int64), np.full(lows.size, width, dtype=np.int64)
        while True:
            open_ = first < last
            if not open_.any():
                return first
            middle = (first + last) // 2
            larger = self.prefix[middle + highs] > self.suffix[middle + lows]
            last = np.where(open_ & larger, middle, last)
            first = np.where(open_ & ~larger, middle + 1, first)

    def run(self, lo: int, hi: int, width: int, crossover: int, out: np.ndarray) -> np.ndarray:
        """Σ x[a + lo : a + hi] for a = 0 … width − 1 into ``out`` (indices clipped to the array; views, no gathers):
        from the prefix sums before ``crossover`` (:meth:`crossovers`), from the suffix sums after it."""
        lo, hi = lo + self.pad, hi + self.pad
        prefix, suffix, first = self.prefix, self.suffix, crossover
        np.subtract(prefix[hi : hi + first], prefix[lo : lo + first], out=out[:first])
        np.subtract(suffix[lo + first : lo + width], suffix[hi + first : hi + width], out=out[first:width])
        return out  # ≥ 0 exactly: differences of monotone cumulative sums, hi ≥ lo


def _anchored(
    anchor: GeometricLaw,
    other: GeometricLaw,
    weights: tuple[float, float],
    d_range: tuple[int, int],
) -> tuple[int, np.ndarray, np.ndarray]:
    """The bins (offset, masses, first moments) of the pairs of an anchor value v_a and an other value v_b with
    d = b − a in ``d_range`` (inclusive): w_a·v_a + w_b·v_b = v_a·e^{f(d)Δ} lands in bin a + ⌊f(d)⌋, f(d) =
    log(w_a + w_b·e^{dΔ})/Δ; for each shift, the other law's masses and moments over its d-window are window sums.
    f is increasing, so the shifts are few where it is flat: anchor on the law with the larger weight, or split the
    pairs at d = 0 where the weights are equal."""
    w_a, w_b = weights
    grid = anchor.grid
    n_a, n_b = anchor.masses.size, other.masses.size
    d_min = max(d_range[0], other.offset - (anchor.offset + n_a - 1))
    d_max = min(d_range[1], other.offset + n_b - 1 - anchor.offset)
    if d_min > d_max:
        return anchor.offset, np.zeros(0), np.zeros(0)
    d = np.arange(d_min, d_max + 1)
    shift = np.floor(np.logaddexp(math.log(w_a), math.log(w_b) + d * grid) / grid).astype(np.int64)
    starts = np.flatnonzero(np.diff(shift, prepend=shift[0] - 1))  # shift is non-decreasing in d
    ends = np.append(starts[1:], d.size) - 1
    out_offset = anchor.offset + int(shift[0])
    size = n_a + int(shift[-1] - shift[0]) + 1
    mass, moment = np.zeros(size), np.zeros(size)
    base = anchor.offset - other.offset  # the other law's local index of anchor point a at d = 0
    lows, highs = np.clip(base + d[starts], -n_a, n_b), np.clip(base + d[ends] + 1, -n_a, n_b)
    pad = n_a + 1
    masses, moments = _Windows(other.masses, pad), _Windows(other.moments, pad)
    a_masses, a_moments = anchor.masses, w_a * anchor.moments
    b_weighted = w_b * a_masses
    window_mass, window_moment, product = np.empty(n_a), np.empty(n_a), np.empty(n_a)
    runs = zip(
        lows.tolist(),
        highs.tolist(),
        (shift[starts] - shift[0]).tolist(),
        masses.crossovers(lows, highs, n_a).tolist(),
        moments.crossovers(lows, highs, n_a).tolist(),
        strict=True,
    )
    for lo, hi, at, mass_crossover, moment_crossover in runs:
        masses.run(lo, hi, n_a, mass_crossover, window_mass)
        moments.run(lo, hi, n_a, moment_crossover, window_moment)
        mass[at : at + n_a] += np.multiply(a_masses, window_mass, out=product)
        np.multiply(b_weighted, window_moment, out=window_moment)
        window_moment += np.multiply(a_moments, window_mass, out=product)
        moment[at : at + n_a] += window_moment
    return out_offset, mass, moment


def _added(parts: list[tuple[int, np.ndarray, np.ndarray]]) -> tuple[int, np.ndarray, np.ndarray]:
    """Bins of several parts on one grid, added."""
    parts = [part for part in parts if part[1].size]
    offset = min(part[0] for part in parts)
    size = max(part[0] + part[1].size for part in parts) - offset
    mass, moment = np.zeros(size), np.zeros(size)
    for start, m, v in parts:
        mass[start - offset : start - offset + m.size] += m
        moment[start - offset : start - offset + v.size] += v
    return offset, mass, moment


def _mean_bins(a: GeometricLaw, b: GeometricLaw, share: float) -> tuple[int, np.ndarray, np.ndarray]:
    """The bins (offset, masses, first moments) of share·A + (1 − share)·B for independent A, B on one grid: the pairs
    with d = b − a ≤ D anchored on A, the others on B, with D where the two sides' work is least (equal weights and
    sizes: D = 0, at most N shifts a side; one term added to a mean of many: D where B's larger values begin to
    dominate, n_b/n_a = (w_b/w_a)·e^{DΔ}, so that neither side walks through the other's long tail shift by shift)."""
    weights, flipped = (share, 1.0 - share), (1.0 - share, share)
    balance = math.log(max(b.masses.size, 1) / max(a.masses.size, 1) * weights[0] / weights[1]) / a.grid
    candidates = {0, max(-FAR + 1, min(FAR - 1, round(balance))), FAR - 1, -FAR}

    def work(split: int) -> int:
        return _work(a, b, weights, (-FAR, split)) + _work(b, a, flipped, (-FAR, -split - 1))

    split = min(sorted(candidates), key=work)
    return _added([_anchored(a, b, weights, (-FAR, split)), _anchored(b, a, flipped, (-FAR, -split - 1))])


FAR = 1 << 62


def _work(anchor: GeometricLaw, other: GeometricLaw, weights: tuple[float, float], d_range: tuple[int, int]) -> int:
    """The shifts :func:`_anchored` would handle, times the anchor's size."""
    d_min = max(d_range[0], other.offset - (anchor.offset + anchor.masses.size - 1))
    d_max = min(d_range[1], other.offset + other.masses.size - 1 - anchor.offset)
    if d_min > d_max:
        return 0
    ends = np.array([d_min, d_max]) * anchor.grid
    shifts = np.floor(np.logaddexp(math.log(weights[0]), math.log(weights[1]) + ends) / anchor.grid)
    return int(min(shifts[1] - shifts[0] + 1, d_max - d_min + 1)) * anchor.masses.size


# -- the mean of t terms -------------------------------------------------------------------------------------------


def _rounding_share(size: int, grid: float) -> float:
    """A bound on the relative floating-point error of a bin's mass and of its split between its two ends: window sums
    of at most ``size`` non-negative terms (size·u each for mass and moment), whose ratio fixes the split to within
    about 2·size·u/Δ."""
    return (4.0 * size + 16.0) * U / grid


def _upper(offset: int, mass: np.ndarray, moment: np.ndarray, grid: float, share: float) -> GeometricLaw:
    """:func:`_spread`, each end of each bin raised by ``share`` of the bin's mass (covering rounding)."""
    law = _spread(offset, mass, moment, grid)
    slack = share * mass
    law.masses[:-1] += slack
    law.masses[1:] += slack
    return law


def _lower(offset: int, mass: np.ndarray, moment: np.ndarray, grid: float, share: float) -> GeometricLaw:
    """Each bin's mass at its own mean (its conditional expectation), lowered by ``share`` (covering rounding)."""
    keep = max(0.0, 1.0 - share)
    return GeometricLaw(round(math.log(2.0) / grid), offset, mass * keep, moment * keep)


def _trimmed(law: GeometricLaw, share: float) -> tuple[GeometricLaw, float, float]:
    """The law without its ends of Q-mass ≤ :data:`TAIL`/``share`` each (and zeros), with the Q-mass and the first
    moment cut."""
    masses = law.masses
    limit = TAIL / max(share, 1.0)
    head = np.cumsum(masses)
    tail = np.cumsum(masses[::-1])[::-1]
    moments = law.moments
    moment_tail = np.cumsum(moments[::-1])[::-1]
    first = int(np.searchsorted(head, limit, side="right"))
    keep_top = (tail > limit) | (moment_tail > limit)
    last = int(np.flatnonzero(keep_top)[-1]) if keep_top.any() else masses.size - 1
    first = min(first, last)
    cut_q = float(head[first - 1]) if first > 0 else 0.0
    cut_moment = float(np.sum(moments[:first]))
    if last + 1 < masses.size:
        cut_q += float(tail[last + 1])
        cut_moment += float(moment_tail[last + 1])
    binned = None if law.binned_moments is None else law.binned_moments[first : last + 1].copy()
    kept = GeometricLaw(law.per_octave, law.offset + first, masses[first : last + 1].copy(), binned)
    return kept, cut_q, cut_moment


POINTS_PER_SD = 64
"""Each mean is computed on a grid with at least this many points per standard deviation of its log (the grid
halves as the mean of more terms concentrates), up to :data:`MAX_PER_OCTAVE`."""
MAX_PER_OCTAVE = 1 << 15


def _log_sd(law: GeometricLaw) -> float:
    weights = law.masses / law.masses.sum()
    logs = np.log(law.atoms)
    centre = float(weights @ logs)
    return math.sqrt(max(float(weights @ (logs - centre) ** 2), 0.0))


def _refined(law: GeometricLaw) -> GeometricLaw:
    """The law on the grid twice as fine: grid points stay points; a lower law's atoms go to their own fine bins."""
    if law.binned_moments is None:
        masses = np.zeros(2 * law.masses.size - 1)
        masses[::2] = law.masses
        return GeometricLaw(2 * law.per_octave, 2 * law.offset, masses)
    grid = law.grid / 2.0
    index = np.clip(
        np.floor(np.log(law.atoms) / grid).astype(np.int64), 2 * law.offset, 2 * (law.offset + law.masses.size - 1)
    )
    offset = int(index.min())
    size = int(index.max()) - offset + 1
    fine_masses = np.bincount(index - offset, law.masses, minlength=size)
    fine_moments = np.bincount(index - offset, law.binned_moments, minlength=size)
    return GeometricLaw(2 * law.per_octave, offset, fine_masses, fine_moments)


MAX_POINTS = 1 << 14
"""A mean's grid is not refined where the refined law would have more points than this (the work of a mean grows
with the product of its laws' sizes and its shifts)."""


MAX_BASE_POINTS = 1 << 13
"""Z's grid is coarsened (by halves) until Z has at most this many points: a small multiplier's log-normal spans
hundreds of octaves (its answer is then close to the Gaussian's without amplification, and coarser)."""


def _base_octave(mu: float, per_octave: int, steps: int) -> int:
    """The grid Z starts on: ``per_octave``, halved while Z would have more than :data:`MAX_BASE_POINTS` points."""
    while per_octave > 3:
        lo, hi = _base_range(mu, per_octave, steps)
        if (hi - lo) * per_octave / math.log(2.0) <= MAX_BASE_POINTS:
            break
        per_octave //= 2
    return per_octave


def _horner(
    law: GeometricLaw,
    steps: int,
    base: Callable[[int], GeometricLaw],
    stage: Callable[[int, int, int, GeometricLaw], GeometricLaw],
    lower: bool,
) -> GeometricLaw:
    """The mean of ``steps`` terms from the law of one (``law``): Horner over t's binary digits after the leading 1
    (double, then add one term where the digit is 1; ``base(N)`` is one term's law on the grid N). Before each
    doubling ``stage(position, copies, count, law)`` prepares the law (trimmed, on its grid): it is then a mean of
    ``count`` terms used ``copies`` times in X."""
    digits = bin(steps)[3:]
    count = 1
    for position, digit in enumerate(digits):
        law = stage(position, 2 ** (len(digits) - position), count, law)
        law, count = _combined(law, law, 0.5, lower), 2 * count
        if digit == "1":
            law, count = _combined(law, base(law.per_octave), count / (count + 1), lower), count + 1
    return law


@lru_cache(maxsize=32)
def _upper_chain(mu: float, steps: int, per_octave: int) -> tuple[GeometricLaw, float, float, tuple[int, ...]]:
    """X⁺, the P-mass of its two +∞ atoms (remove, add), and the grid (points per octave) of each Horner stage (the
    lower chain runs on them): each stage's law trimmed, its cut added to the atoms (module docstring), and its grid
    refined while coarser than its log's standard deviation over :data:`POINTS_PER_SD`."""
    per_octave = _base_octave(mu, per_octave, steps)
    span = _base_range(mu, per_octave, steps)
    infinity = list(_base_cut(mu, span, steps))
    bases = _Bases(mu, span)
    grids: list[int] = []

    def stage(position: int, copies: int, count: int, law: GeometricLaw) -> GeometricLaw:
        law, cut_q, cut_moment = _trimmed(law, copies)
        infinity[0] += cut_moment * count * copies / steps + copies * cut_q
        infinity[1] += copies * cut_q
        while (
            law.grid > _log_sd(law) / POINTS_PER_SD
            and law.per_octave < MAX_PER_OCTAVE
            and 2 * law.masses.size <= MAX_POINTS
        ):
            law = _refined(law)
        grids.append(law.per_octave)
        return law

    law = _horner(bases.get(per_octave)[0], steps, lambda n: bases.get(n)[0], stage, lower=False)
    law, cut_q, cut_moment = _trimmed(law, 1.0)
    return law, infinity[0] + cut_moment + cut_q, infinity[1] + cut_q, tuple(grids)


LOWER_REFINEMENT = 2
"""The lower chain runs on grids this many times finer than the upper's (its grouping loses more than the upper's
spreading adds, at the same grid)."""
LAST_LOWER_REFINEMENT = 4
"""Its last stage (before the final doubling) on grids this many times finer than the upper's: the finest stage
carries most of the contraction (one more octave there narrowed the seeded brackets by up to a half, for a fifth to a
half more time). The pair then merges the law's atoms onto the knots' spacing, twice finer than the upper law's
(:func:`on_grid` with that spacing: a further contraction), so that they sit on the accountant's knots."""


@lru_cache(maxsize=32)
def _lower_chain(mu: float, steps: int, per_octave: int) -> GeometricLaw:
    """X⁻: the upper chain's stages on grids :data:`LOWER_REFINEMENT` times finer (the last
    :data:`LAST_LOWER_REFINEMENT` times), what is cut dropped."""
    grids = _upper_chain(mu, steps, per_octave)[3]
    per_octave = _base_octave(mu, per_octave, steps)
    bases = _Bases(mu, _base_range(mu, per_octave, steps))

    def stage(position: int, copies: int, count: int, law: GeometricLaw) -> GeometricLaw:
        law = _trimmed(law, copies)[0]
        refinement = LAST_LOWER_REFINEMENT if position == len(grids) - 1 else LOWER_REFINEMENT
        while law.per_octave < grids[position] * refinement:
            law = _refined(law)
        return law

    law = _horner(bases.get(per_octave * LOWER_REFINEMENT)[1], steps, lambda n: bases.get(n)[1], stage, lower=True)
    return _trimmed(law, 1.0)[0]


def allocation_law(mu: float, steps: int, per_octave: int, lower: bool = False) -> AllocationLaw:
    """X⁺ (and X⁻ where ``lower``) for a Gaussian with μ = 1/(2z²) allocated to one of ``steps`` steps, starting on the
    grid Δ = log 2/N (module docstring): Z's bins, then Horner over t's binary digits, each mean spread (upper) or
    contracted (lower), trimmed, and the grid refined as the mean concentrates (the lower chain on the upper's
    grids)."""
    upper, infinity_remove, infinity_add, _ = _upper_chain(mu, steps, per_octave)
    below = _lower_chain(mu, steps, per_octave) if lower else None
    return AllocationLaw(mu, steps, upper, below, infinity_remove, infinity_add)


class _Bases:
    """Z's upper and lower laws on each grid asked for (the same span: its cut is counted once)."""

    def __init__(self, mu: float, span: tuple[float, float]) -> None:
        self.mu, self.span = mu, span
        self.laws: dict[int, tuple[GeometricLaw, GeometricLaw]] = {}

    def get(self, per_octave: int) -> tuple[GeometricLaw, GeometricLaw]:
        if per_octave not in self.laws:
            grid = math.log(2.0) / per_octave
            offset, mass, moment = _base_bins(self.mu, per_octave, self.span)
            share = _rounding_share(1, grid)
            self.laws[per_octave] = (
                _upper(offset, mass, moment, grid, share),
                _lower(offset, mass, moment, grid, share),
            )
        return self.laws[per_octave]


def _combined(a: GeometricLaw, b: GeometricLaw, share: float, lower: bool) -> GeometricLaw:
    grid = a.grid
    offset, mass, moment = _mean_bins(a, b, share)
    rounding = _rounding_share(max(a.masses.size, b.masses.size), grid)
    return (_lower if lower else _upper)(offset, mass, moment, grid, rounding)


# -- the lower law's atoms moved onto grid points ------------------------------------------------------------------


def on_grid(law: GeometricLaw, per_octave: int | None = None) -> GeometricLaw:
    """A lower law whose atoms sit on grid points (``per_octave`` points per octave, by default its own), still below
    X (a further contraction and a sub-measure): the atoms, swept upwards by their means, are merged into groups whose
    mean is exactly a grid point; what is left at the top (where the bins fall faster than the sweep can balance: the
    far tail) is dropped."""
    per_octave = per_octave or law.per_octave
    if law.binned_moments is None and per_octave == law.per_octave:
        return law
    keep = law.masses > 0.0
    atoms, masses = law.atoms[keep], law.masses[keep]
    order = np.argsort(atoms, kind="stable")
    atoms, masses = atoms[order], masses[order]
    grid = math.log(2.0) / per_octave
    # the grid point at or above each atom (an atom's mean may lie outside its nominal bin)
    above = np.ceil(np.log(atoms) / grid - 1e-9).astype(np.int64)
    offset = int(above.min())
    size = int(above.max()) - offset + 1
    out = np.zeros(size)
    values = np.exp((offset + np.arange(size)) * grid)
    _sweep(atoms, masses, above - offset, values, out)
    return GeometricLaw(per_octave, offset, out)


def _sweep(atoms: np.ndarray, masses: np.ndarray, targets: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
    """Merge atoms (ascending means, each with the index of the grid point at or above it) into groups whose mean is a
    grid point: a carry heads for the point at or above its mean, takes the share of the next atom (at or beyond the
    point) that brings its mean to the point, or all of it (its mean then stays below the point) and heads on."""
    carry, mean, target = 0.0, 0.0, 0
    for x, m, own in zip(atoms.tolist(), masses.tolist(), targets.tolist(), strict=True):
        if carry == 0.0:
            carry, mean, target = m, x, own
            continue
        goal = float(values[target])
        need = carry * (goal - mean)  # ≥ 0: the carry's mean is at or below its point
        excess = x - goal
        if excess > 0.0 and need <= excess * m:
            taken = need / excess
            out[target] += carry + taken
            carry, mean, target = m - taken, x, own
        else:
            carry, mean = carry + m, min((carry * mean + m * x) / (carry + m), goal)
