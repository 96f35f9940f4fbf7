"""ε over training from one composition: every prefix of a run read off the whole run's tilted spectrum.

A run's prefixes (ε after t steps, :mod:`accountants.checkpoints`) compose the same releases with smaller counts c_i.
The whole run is accounted first (:class:`~accountants.pld.accountant.PldAccountant`); its last pass leaves, per
direction, a :class:`CirclePlan`: the leaves on the run's grid Δ, the tilt θ and the circle of n points. Each prefix
is then read from those leaves, tilted by the same θ, on the same circle, without composing anything again:

    Φ_c(k) = Π_i φ_i(k)^{c_i}      (φ_i the real FFT of leaf i's tilted law x_i placed on the circle),

and with the kernel g(y) = e^{−θyΔ}(1 − e^{−yΔ}) for y = 0 … n − J − 1 (0 on the last J points of the circle), the
circular correlation D = x_c ⋆ g, whose spectrum is Φ_c·conj(Ĝ), gives at every knot ε_j = jΔ

    δ(ε_j) ≤ e^{K_c − θε_j}·D(j) + P(S_c ≥ ε_j + (n − J)Δ) + Σ c_i·(atom of leaf i),    K_c = Σ c_i log M_i(θ):

losses up to n − J knots above ε_j are weighted exactly, higher ones are bounded by the Chernoff bound (the leaves'
own K(θ′), tabulated), and whatever lands on the circle from elsewhere only adds (it is non-negative). D is read from
its spectrum on the fewest bins k < K₀ whose left-out share (bounded by the smallest prefix's Π a_ik^{c_i}) is within
:data:`TAIL_SHARE` of the error budget — tens to a few thousand bins of the circle's tens of thousands once a prefix
composes more than a few releases of a smooth loss (a Poisson-sampled Gaussian) — by direct sums at the knots
needed: blocks of :data:`BLOCK` knots at spacings 1, 63, 63², …, from a coarse block that brackets the answer down to
single knots. δ is exactly linear in e^ε between two knots (the same losses lie above every ε between them), so the
answer solves the linear interpolation of the two knots' certified values.

Every error is bounded and added to D, per knot: the leaves' FFTs err by η‖x_i‖₁ per bin (a_ik = |φ̂_ik| + that bounds
both |φ_ik| and |φ̂_ik|), their powers and products by the mean-value bound A_k Σ_i c_i η‖x_i‖₁/a_ik plus √5u per
complex product (Brent, Percival & Zimmermann 2007; a power by squaring has the rounding of at most 2c products), the
kernel's transform by η‖g‖₁ per bin, the bins left out by ‖g‖₁·Σ_{k≥K₀} A_k (a_ik ≤ 1 there, so the smallest
prefix's A bounds every prefix's), and the direct sums by 2√5u + (2K₀ + 24 + 22·:data:`BLOCK`)·u of the sum of their
terms' moduli (phases, matrix entries built as powers, products, the sums in any order); the tilt and the weights
carry their relative rounding as in :mod:`accountants.pld.composition`. Every answer is thus a certified upper bound,
whatever plan it reuses. The plan decides only the accuracy: a prefix whose answer would need a finer grid than the
run's, or whose error terms take more than :data:`ERROR_SHARE` of δ, or where mass from below the kernel's reach
could over-count more than :data:`OVERCOUNT_SHARE` of δ, gets ``None`` (a query of its own).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import fft

from .composition import SUM_MARGIN, Window, fft_rtol
from .discrete import LeafPld, U, wanted_grid
from .pairs import DominatingPair

BLOCK = 64
"""Knots evaluated at once; each finer block spans one step of the coarser (spacings 63^p)."""
TAIL_SHARE = 1e-3
"""The bins left out may take this share of :data:`ERROR_SHARE` (at weight e^{K − θε} = 1; their bound is added)."""
MAX_BINS = 1 << 13
"""Prefixes that would need more bins than this (a handful of releases) are left to a query of their own."""
ERROR_SHARE = 1e-4
"""The error terms (rounding, bins left out, the Chernoff tail) may take at most this share of δ at the answer."""
OVERCOUNT_SHARE = 1e-6
"""Mass from below the kernel's reach may over-count at most this share of δ (an estimate; it never under-counts)."""
KERNEL_REACH = 40.0
"""With θ·nΔ at least this, mass below ε wraps in at ≤ e^{−40} of its weight: the kernel starts at ε (J = 0)."""
SQRT5_U = math.sqrt(5.0) * U
_SPACING = BLOCK - 1
_MAX_MOVES = 64
_UPPER_TILTS = np.array([0.5, 0.8, 1.0, 1.25, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
"""Tilts θ′, times the run's own tail tilt, at which each leaf's K(θ′) is tabulated for the Chernoff bound of the mass
above the kernel's reach: the run's window was planned with the middle ones; a prefix, narrower, reaches as far above
a smaller ε and its best tilt is larger."""
_LOWER_TILTS = -np.geomspace(1e-1, 1e4, 20)
"""Tilts θ′ < 0 for the estimate of the mass below the kernel's reach (only where e^{−θnΔ} does not make it moot)."""


@dataclass(frozen=True, eq=False)
class CirclePlan:
    """What the whole run's query leaves for its prefixes, per direction: the pairs and their leaves on the run's
    grid, the tilt, the circle (window) and the run's ε in this direction."""

    pairs: tuple[DominatingPair, ...]
    leaves: tuple[LeafPld, ...]
    theta: float
    window: Window
    value: float

    @cached_property
    def _index(self) -> dict[DominatingPair, int]:
        return {pair: i for i, pair in enumerate(self.pairs)}

    def counts(self, leaves: Sequence[tuple[int, DominatingPair]]) -> np.ndarray | None:
        """A prefix's (count, pair) leaves as counts in the plan's order; None if it has a release the run has not."""
        counts = np.zeros(len(self.pairs), dtype=np.int64)
        for count, pair in leaves:
            i = self._index.get(pair)
            if i is None:
                return None
            counts[i] += count
        return counts

    @property
    def usable(self) -> bool:
        """Double precision, a finite positive answer and a non-negative tilt (else prefixes query on their own)."""
        return not self.window.extended and self.theta >= 0.0 and 0.0 < self.value < math.inf


@dataclass(frozen=True)
class PrefixValue:
    """One direction's certified ε for one prefix, with the error part of its δ."""

    value: float
    error_allowance: float


@dataclass
class _Row:
    """One prefix in one direction: its spectrum on the kept bins and the scalars of its bound."""

    spectrum: np.ndarray
    """D̂ on the kept bins: the prefix's Φ̂ times conj(Ĝ)."""
    error: float
    """Bound on |D − D_exact| at any knot (before the weight e^{K − θε})."""
    log_scale: float
    rounding: float
    atoms: float
    chernoff_up: np.ndarray
    chernoff_down: np.ndarray | None
    largest: float


class PrefixCircle:
    """One direction's leaves tilted and transformed once; :meth:`epsilons` reads prefixes (module docstring)."""

    def __init__(self, plan: CirclePlan, delta: float, relative: float = 1e-4, max_grid: float = 1e-4) -> None:
        self.plan, self.delta = plan, delta
        self.relative, self.max_grid = relative, max_grid
        self.grid, self.theta, self.size = plan.leaves[0].grid, plan.theta, plan.window.size
        n, eta = self.size, fft_rtol(plan.window.size)
        spectra, log_norms, roundings, masses = [], [], [], []
        for leaf in plan.leaves:
            x, log_norm, rnd = leaf.tilted(self.theta)
            circle = np.zeros(n)
            circle[(leaf.offset + np.arange(leaf.size)) % n] = x
            spectra.append(fft.rfft(circle))
            log_norms.append(log_norm)
            roundings.append(rnd)
            masses.append(float(np.sum(x)))
        self.spectra = np.array(spectra)
        errors = eta * np.array(masses) * (1.0 + 1e-12)  # a real FFT of x ≥ 0 errs by ≤ η‖x‖₁ in every bin
        bound = np.abs(self.spectra) * (1.0 + 4.0 * U) + errors[:, None]
        self.log_a = np.log(bound)
        self.error_over_a = errors[:, None] / bound
        self.log_norms, self.roundings = np.array(log_norms), np.array(roundings)
        self.infinities = np.array([leaf.infinity for leaf in plan.leaves])
        self.largest_losses = np.array([(leaf.offset + leaf.size - 1) * self.grid for leaf in plan.leaves])
        self._kernel(eta)
        self.up_tilts = _UPPER_TILTS * max(plan.window.tail_tilt, 1e-3)
        self.up_table = self._table(self.up_tilts)
        self.down_tilts: np.ndarray | None = None
        self.down_table: np.ndarray | None = None
        if math.exp(-self.theta * n * self.grid) > OVERCOUNT_SHARE * delta:
            self.down_tilts = _LOWER_TILTS
            self.down_table = self._table(self.down_tilts)
        self._matrices: dict[tuple[int, int], np.ndarray] = {}

    def _kernel(self, eta: float) -> None:
        """g on the circle, its transform, ‖g‖₁, its relative rounding and the reach J below each knot."""
        n, grid, theta = self.size, self.grid, self.theta
        if theta * n * grid >= KERNEL_REACH:
            reach = 0
        else:  # as far below the run's answer as the run's own window reached
            reach = min(max(round(self.plan.value / grid) - self.plan.window.bottom, 0), n - 1)
        y = np.arange(n - reach) * grid
        kernel = np.zeros(n)
        kernel[: n - reach] = np.exp(-theta * y) * -np.expm1(-y)
        self.reach = reach
        self.kernel_hat = np.conj(fft.rfft(kernel))
        self.kernel_norm = float(np.sum(kernel)) * (1.0 + 1e-12 + n * U)
        self.kernel_error = eta * self.kernel_norm
        self.kernel_rounding = 4.0 * U * (theta * n * grid + 2.0)

    def _table(self, tilts: np.ndarray) -> np.ndarray:
        """K_i(θ′) of each leaf at each tilt, rounded up (every use is a Chernoff bound); 1e300 for ∞, so that a
        prefix without that leaf (count 0) adds 0 and one with it a useless bound."""
        values = np.array([leaf.log_mgf(tilts) for leaf in self.plan.leaves])
        return np.where(np.isfinite(values), values * (1.0 + 1e-12) + 1e-12, 1e300)

    # -- prefixes ---------------------------------------------------------------------------------------------

    def epsilons(self, counts: np.ndarray, steps: Sequence[int]) -> list[PrefixValue | None]:
        """ε at δ for each prefix (a row of leaf counts, in order of the run); None where the plan does not suit."""
        out: list[PrefixValue | None] = [None] * len(counts)
        order = sorted(range(len(counts)), key=lambda r: float(np.sum(counts[r])))
        kept, first, tail = self._bins(counts, order)
        if kept == 0:
            return out
        rows = self._rows(counts, order[first:], kept, tail)
        start, span = 0, int(self.plan.value / self.grid)  # the first prefix's ε lies between 0 and the run's
        knots: list[int] = []
        for r, row in zip(order[first:], rows, strict=True):
            guess = 2 * knots[-1] - knots[-2] if len(knots) >= 2 else None  # prefixes' ε grow smoothly
            found = self._epsilon(row, start, span, guess)
            if found is not None and self._suits(row, found, steps[r]):
                out[r] = found
                knots.append(int(found.value / self.grid))
                start, span = max(knots[-1] - _SPACING, 0), 2 * max(knots[-1] - start, BLOCK)
        return out

    def _bins(self, counts: np.ndarray, order: list[int]) -> tuple[int, int, float]:
        """K₀, the first row served and the left-out bins' Σ A_k (full spectrum): the fewest bins whose left-out
        share, bounded at the smallest prefix served, is within :data:`TAIL_SHARE` of the error budget (at unit
        weight); the smallest prefixes are left to their own queries while they need more than :data:`MAX_BINS`."""
        above_one = np.flatnonzero(np.max(self.log_a, axis=0) > 0.0)
        floor = int(above_one[-1]) + 1 if above_one.size else 1
        budget = TAIL_SHARE * ERROR_SHARE * self.delta * self.size / self.kernel_norm
        for first in range(len(order)):
            smallest = np.min(counts[order[first:]], axis=0)
            with np.errstate(under="ignore"):
                bounds = np.exp(_combine(smallest, self.log_a))
            tails = 2.0 * np.cumsum(bounds[::-1])[::-1] * (1.0 + 1e-12 + 2.0 * bounds.size * U)  # ≥ Σ_{|k|≥K} A_k
            within = np.flatnonzero(tails <= budget)
            kept = max(int(within[0]) if within.size else bounds.size, floor)
            if kept <= MAX_BINS:
                tail = (float(tails[kept]) if kept < bounds.size else 0.0) + 1e-300 * self.size
                return kept, first, tail
        return 0, len(order), 0.0

    def _rows(self, counts: np.ndarray, order: list[int], kept: int, tail: float) -> list[_Row]:
        """Each prefix's spectrum on the kept bins (by powers and products), then all their bounds at once."""
        squares: list[list[np.ndarray]] = [[s] for s in self.spectra[:, :kept]]
        spectra, products = np.empty((len(order), kept), dtype=complex), np.zeros(len(order))
        previous, done, count = np.ones(kept, dtype=complex), np.zeros(len(squares), dtype=np.int64), 0
        for j, r in enumerate(order):
            row_counts = np.asarray(counts[r], dtype=np.int64)
            if np.any(row_counts < done):  # not a continuation of the previous prefix: from the start
                previous, done, count = np.ones(kept, dtype=complex), np.zeros_like(done), 0
            for i, extra in enumerate((row_counts - done).tolist()):
                if extra:
                    previous = previous * _power(squares[i], extra)
                    count += 2 * extra + 66
            done, spectra[j], products[j] = row_counts, previous, count
        return self._bounded(np.asarray(counts[order], dtype=float), spectra, products, tail)

    def _bounded(self, counts: np.ndarray, spectra: np.ndarray, products: np.ndarray, tail: float) -> list[_Row]:
        """The rows (one per prefix: its leaf counts, Φ̂ on the kept bins, its product count) with their bounds;
        ``tail`` bounds Σ A_k over the bins left out, for every row."""
        kept = spectra.shape[1]
        weights = np.full(kept, 2.0)
        weights[0] = 1.0
        with np.errstate(under="ignore"):
            bound = np.exp(_combine(counts, self.log_a[:, :kept]))
        product_error = 1.01 * SQRT5_U * products
        spread = _combine(counts, self.error_over_a[:, :kept]) + product_error[:, None]
        floor = 1e-290 * (products + 1)
        sum_bound = np.sum(weights * bound, axis=1) * (1.0 + 1e-12)
        sum_error = np.sum(weights * (bound * spread + floor[:, None]), axis=1) * (1.0 + 1e-12)
        sum_computed = sum_bound * (1.0 + product_error) + floor * 2 * kept
        g, dg = self.kernel_norm, self.kernel_error
        summing = 2.0 * SQRT5_U + 1.01 * U * (2 * kept + 24 + 22 * BLOCK)  # :meth:`_matrix`, :meth:`_bounds`
        errors = ((g + dg) * sum_error + dg * sum_bound + summing * (g + dg) * sum_computed + g * tail) / self.size
        rounding = _combine(counts, self.roundings) + self.kernel_rounding
        atoms = np.minimum(_combine(counts, self.infinities) * (1.0 + SUM_MARGIN), 1.0)
        up = _combine(counts, self.up_table)
        down = _combine(counts, self.down_table) if self.down_table is not None else None
        correlations = spectra * self.kernel_hat[:kept]  # D̂ = Φ̂·conj(Ĝ)
        columns = zip(
            correlations, errors.tolist(), _combine(counts, self.log_norms).tolist(), rounding.tolist(),
            atoms.tolist(), up, _combine(counts, self.largest_losses).tolist(), strict=True,
        )  # fmt: skip
        return [
            _Row(d_hat, error, log_scale, rnd, atom, chernoff, None if down is None else down[j], largest)
            for j, (d_hat, error, log_scale, rnd, atom, chernoff, largest) in enumerate(columns)
        ]

    # -- reading one prefix -------------------------------------------------------------------------------------

    def _matrix(self, level: int, kept: int) -> np.ndarray:
        """W[m, k] = w_k e^{2πi·k·m·63^level/n}/n for m < BLOCK, k < K₀ (w_0 = 1, else 2; the Nyquist bin 1): D at
        BLOCK knots 63^level apart, from the bins' values at the block's first knot. The rows are powers of the
        first: the base e^{2πi·step/n} is within 19u (its argument within 2.6u relative, ≤ 2π), each product adds
        √5u, so an entry is within 22·BLOCK·u relative (counted in the sums' bound, with the phase and the sum)."""
        if (level, kept) not in self._matrices:
            k = np.arange(kept, dtype=np.int64)
            step = (k * (_SPACING**level % self.size)) % self.size
            base = np.exp(2j * np.pi * step / self.size)
            powers = np.cumprod(np.vstack([np.ones(kept, dtype=complex), np.tile(base, (BLOCK - 1, 1))]), axis=0)
            weights = np.full(kept, 2.0 / self.size)
            weights[0] = 1.0 / self.size
            if kept == self.size // 2 + 1 and self.size % 2 == 0:
                weights[-1] = 1.0 / self.size
            matrix = powers * weights[None, :]
            self._matrices[level, kept] = np.hstack([matrix.real, -matrix.imag])  # Re(Wv) = [Re W, −Im W]·[Re v; Im v]
        return self._matrices[level, kept]

    def _bounds(self, row: _Row, first: int, level: int) -> tuple[np.ndarray, np.ndarray]:
        """Knots first + 63^level·m (m < BLOCK) and the certified δ at each."""
        kept = row.spectrum.size
        turns = (np.arange(kept, dtype=np.int64) * (first % self.size)) % self.size
        shifted = row.spectrum * np.exp(2j * np.pi * turns / self.size)  # each phase within 19u
        values = np.einsum("mk,k->m", self._matrix(level, kept), np.concatenate([shifted.real, shifted.imag]))
        knots = first + _SPACING**level * np.arange(BLOCK, dtype=np.int64)
        epsilons = knots * self.grid
        log_weight = row.log_scale - self.theta * epsilons
        rho = np.exp(1.01 * (row.rounding + 4.0 * U * (abs(row.log_scale) + self.theta * np.abs(epsilons) + 2.0)))
        with np.errstate(over="ignore"):
            main = np.maximum(values + row.error, 0.0) * np.exp(log_weight) * rho  # ∞ where it overflows: δ ≤ 1
        total = main * (1.0 + SUM_MARGIN) + self._lost(row, epsilons + (self.size - self.reach) * self.grid) + row.atoms
        return knots, np.where(np.isnan(total), 1.0, np.minimum(total, 1.0))

    def _lost(self, row: _Row, tops: np.ndarray) -> np.ndarray:
        """Chernoff bound on P(S ≥ top) at each top (0 above the largest finite loss)."""
        exponents = row.chernoff_up[None, :] - self.up_tilts[None, :] * tops[:, None]
        bound = np.exp(np.minimum(np.min(exponents, axis=1), 0.0))
        return np.where(tops > row.largest, 0.0, bound)

    def _epsilon(self, row: _Row, start: int, span: int, guess: int | None = None) -> PrefixValue | None:
        """The smallest certified ε at or above knot ``start`` (else below it): in the block of single knots around
        ``guess`` if it is there, else bracketed block by block from the coarsest level whose block spans ``span``
        knots down to single knots."""
        if guess is not None:
            knots, values = self._bounds(row, max(guess - BLOCK // 2, 0), 0)
            below = np.flatnonzero(values <= self.delta)
            if below.size and (below[0] > 0 or knots[0] == 0):
                return self._solve(row, knots, values, int(below[0]))
        level = 0
        while _SPACING ** (level + 1) < span + BLOCK:
            level += 1
        first = start
        ceiling = int(self.plan.value * 1.01 / self.grid) + BLOCK  # a prefix's ε is at most the run's
        for _ in range(_MAX_MOVES):
            knots, values = self._bounds(row, first, level)
            below = np.flatnonzero(values <= self.delta)
            if below.size == 0:
                first = int(knots[-1])  # the answer is above this block
                if first > ceiling:
                    return None
                continue
            m = int(below[0])
            if m == 0 and first > 0:
                first = max(first - _SPACING ** (level + 1), 0)  # the answer may lie below
                continue
            if level == 0 or m == 0:
                return self._solve(row, knots, values, m)
            first, level = int(knots[m - 1]), level - 1
        return None

    def _solve(self, row: _Row, knots: np.ndarray, values: np.ndarray, m: int) -> PrefixValue:
        """ε between knots m − 1 and m by the linear interpolation in e^ε of their certified values."""
        right = float(knots[m] * self.grid)
        if m == 0:
            return PrefixValue(right, self._error_part(row, right))
        left = float(knots[m - 1] * self.grid)  # level 0: the adjacent knot
        v_left, v_right = float(values[m - 1]), float(values[m])
        rise = math.expm1(right - left)  # e^ε relative to e^left: from 1 to 1 + rise

        def interpolated(eps: float) -> float:
            return v_left + math.expm1(eps - left) / rise * (v_right - v_left)

        share = (v_left - self.delta) / (v_left - v_right)
        eps = min(left + math.log1p(share * rise), right)
        step = 1e-12 * max(1.0, eps)
        while eps < right and interpolated(eps) * (1.0 + 1e-12) > self.delta:
            eps, step = min(eps + step, right), step * 2.0
        return PrefixValue(eps, self._error_part(row, eps))

    def _error_part(self, row: _Row, epsilon: float) -> float:
        weight = math.exp(min(row.log_scale - self.theta * epsilon, 700.0))
        lost = float(self._lost(row, np.array([epsilon + (self.size - self.reach) * self.grid]))[0])
        return min(row.error * weight * (1.0 + 1e-6) + lost + row.atoms, 1.0)

    def _suits(self, row: _Row, found: PrefixValue, steps: int) -> bool:
        """Whether the answer is as accurate as a query of its own would be (module docstring)."""
        if found.error_allowance - row.atoms > ERROR_SHARE * self.delta:
            return False
        if row.chernoff_down is not None and self.down_tilts is not None:
            bottom = found.value - self.reach * self.grid
            below = float(np.min(row.chernoff_down - self.down_tilts * bottom))
            if math.exp(min(below, 0.0) - self.theta * self.size * self.grid) > OVERCOUNT_SHARE * self.delta:
                return False
        return self.grid <= wanted_grid(self.relative, self.max_grid, found.value, steps)


def _combine(counts: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Σ_i c_i·table[i] for each row of counts (or for one), without BLAS (the PLD code makes no BLAS calls: threads
    on a busy host, benchmarks/blas.py)."""
    rows = "r" if counts.ndim == 2 else ""
    columns = "k" if table.ndim == 2 else ""
    return np.asarray(np.einsum(f"{rows}i,i{columns}->{rows}{columns}", np.asarray(counts, dtype=float), table))


def _power(squares: list[np.ndarray], exponent: int) -> np.ndarray:
    """φ^exponent by squaring (``squares[b]`` = φ^(2^b), extended as needed)."""
    result: np.ndarray | None = None
    bit = 0
    while exponent:
        if bit == len(squares):
            squares.append(squares[-1] * squares[-1])
        if exponent & 1:
            result = squares[bit] if result is None else result * squares[bit]
        exponent >>= 1
        bit += 1
    assert result is not None
    return result
