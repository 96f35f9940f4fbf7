"""Where to look: the tilt and the window of a composition, from the leaves' moment generating function.

Both choices only affect accuracy and speed, never soundness (:mod:`accountants.pld.composition` bounds or refuses
whatever they leave out). The tilt is the Chernoff bound's at the ε of interest, θ = argmin K(θ) − θε, which makes
the tilted composition centred there. The window [B, B + nΔ) must start at or below the smallest ε that will be
asked for, and is made wide enough that wrapped-around mass adds at most :data:`CONTAMINATION`·δ to any δ(ε):

* mass from at or above the top lands at the bottom, where its tilted value is read as e^{θnΔ} times its own
  P-mass; the top is raised until the tilted tail above it, Chernoff-bounded with θ′ > θ, costs less than that;
* mass from below B lands nΔ higher, read as e^{−θnΔ} of its own: either nΔ ≥ (log P(S < B) − log budget)/θ, or B
  moves down to where P(S < B) is itself below the budget (Chernoff with θ′ < 0), or the circle holds the whole
  support (n ≥ its width: everything from below lands above the largest finite loss, where the composition sets the
  circle to 0 — the true law is 0 there); the cheapest is taken. (A window capped at the support above B alone,
  while mass below B still matters, would let that mass in at e^{−θnΔ} of its weight: sound, it only over-counts,
  but loose — 12 % on eight Laplace releases.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import fft

from .composition import Window
from .discrete import LeafPld

CONTAMINATION = 1e-7
"""Wrapped-around mass the window may let into δ, relative to δ (it only over-counts)."""
_TILTS = np.concatenate((-np.geomspace(1e3, 1e-3, 37), [0.0], np.geomspace(1e-3, 1e4, 85)))


class WindowTooWide(ValueError):
    """The window needs more knots than allowed at this grid; ``size`` says how many."""

    def __init__(self, size: int) -> None:
        super().__init__(f"the window needs {size} knots")
        self.size = size


class LogMgf:
    """K(θ) = Σ c_i log Σ_j p_ij e^{θL_ij} of a direction's leaves, tabulated on a fixed grid of tilts (scaled up
    for compositions whose standard deviation is below 1: the Chernoff tilts there are ~log(1/δ)/deviation)."""

    def __init__(self, built: Sequence[tuple[int, LeafPld]]) -> None:
        self.built = built
        spread = math.sqrt(sum(count * leaf.variance for count, leaf in built))
        width = sum(count * leaf.size for count, leaf in built) * built[0][1].grid
        self.thetas = _TILTS * max(1.0, 1.0 / max(spread, 1e-300), 1.0 / width)  # tilts up to 10⁴ standard deviations⁻¹
        self.values = self(self.thetas)
        self._cache: dict[float, float] = {}

    def __call__(self, thetas: np.ndarray) -> np.ndarray:
        """K at each θ; +∞ where it overflows (an upper bound: every use is a Chernoff bound or a minimum)."""
        with np.errstate(over="ignore", invalid="ignore"):
            values = np.asarray(sum(count * leaf.log_mgf(thetas) for count, leaf in self.built), dtype=float)
        return np.where(np.isnan(values), np.inf, values)

    def at(self, theta: float) -> float:
        if theta not in self._cache:
            self._cache[theta] = float(self(np.array([theta]))[0])
        return self._cache[theta]

    def chernoff_epsilon(self, delta: float) -> float:
        """min over θ > 0 of (K(θ) − log δ)/θ: an upper bound on the ε at δ (where the search starts)."""
        positive = self.thetas > 0
        values = (self.values[positive] - math.log(delta)) / self.thetas[positive]
        return max(float(np.min(values)), 0.0)

    def mean(self) -> float:
        """E[S] = K′(0), by a central difference on the table's smallest tilts."""
        h = float(self.thetas[self.thetas > 0][0])
        return float((self.at(h) - self.at(-h)) / (2 * h))

    def spread(self, theta: float) -> float:
        """The standard deviation of the θ-tilted composition, √K″(θ), by a central difference."""
        return float(self.spreads(np.array([theta]))[0])

    def spreads(self, thetas: np.ndarray) -> np.ndarray:
        """:meth:`spread` at each θ (one evaluation of K for all); ∞ where K is not finite nearby."""
        h = np.maximum(float(self.thetas[self.thetas > 0][0]), 1e-3 * thetas)
        k = self(np.column_stack((thetas - h, thetas, thetas + h)).ravel()).reshape(-1, 3)
        with np.errstate(over="ignore", invalid="ignore"):  # tilts near the float range: ∞ below
            second = np.maximum((k[:, 0] - 2.0 * k[:, 1] + k[:, 2]) / (h * h), 0.0)
        return np.where(np.all(np.isfinite(k), axis=1), np.sqrt(np.where(np.isfinite(second), second, 0.0)), np.inf)

    def saddle_tilt(self, epsilon: float) -> float:
        """The θ ≥ 0 minimising K(θ) − θε, refined between the table's neighbours of the best."""
        usable = self.thetas >= 0
        thetas = self.thetas[usable]
        values = self.values[usable] - thetas * epsilon
        best = int(np.argmin(values))
        fine = np.linspace(thetas[max(best - 1, 0)], thetas[min(best + 1, thetas.size - 1)], 33)
        return float(fine[int(np.argmin(self(fine) - fine * epsilon))])

    def log_mass_below(self, bottoms: np.ndarray) -> np.ndarray:
        """log bound on P(S < bottom) at each bottom: min_{θ′≤0} K(θ′) − θ′·bottom (at most 0)."""
        usable = self.thetas <= 0
        values, thetas = self.values[usable], self.thetas[usable]
        return np.asarray(np.minimum(0.0, np.min(values[None, :] - thetas[None, :] * bottoms[:, None], axis=1)))


def plan_window(
    log_mgf: LogMgf,
    theta: float,
    built: Sequence[tuple[int, LeafPld]],
    low: float,
    log_delta: float,
    max_points: int,
) -> Window:
    """The window for tilt θ whose bottom is at most ``low`` (module docstring); :class:`WindowTooWide` if it needs
    more than ``max_points`` knots."""
    grid = built[0][1].grid
    support_lo = sum(count * leaf.offset for count, leaf in built)
    support_hi = sum(count * (leaf.offset + leaf.size - 1) for count, leaf in built)
    widest = max(leaf.size for _, leaf in built)
    log_budget = math.log(CONTAMINATION) + log_delta
    start = min(max(low, support_lo * grid), support_hi * grid)
    quantile = _lower_quantile(log_mgf, start, support_lo * grid, log_budget)
    bottoms = np.maximum(np.floor(np.unique(np.linspace(start, quantile, 6)) / grid), support_lo)
    excesses = log_mgf.log_mass_below(bottoms * grid) - log_budget
    tops, tail_tilt = _tops(log_mgf, theta, bottoms * grid, log_budget)
    best: tuple[int, int, float] | None = None
    for b, excess, top in zip(bottoms.tolist(), excesses.tolist(), tops.tolist(), strict=True):
        b_index = int(b)
        if excess > 0.0:  # mass below the bottom matters: far enough up, or past the whole support (then zeroed)
            span_low = excess / theta if theta > 0.0 else math.inf
            cap = support_hi - support_lo + 1
        else:
            span_low, cap = 0.0, support_hi - b_index + 1
        span = max(top - b_index * grid, span_low) / grid + 2
        size = max(min(math.ceil(min(span, 1e18)), cap), widest)
        if best is None or size < best[1]:
            best = (b_index, size, tail_tilt)
    b_index, size, tail_tilt = best if best is not None else (support_lo, support_hi - support_lo + 1, 1.0)
    size = fft.next_fast_len(max(size, widest, 16) + size % 2, real=True)
    if size > max_points:
        raise WindowTooWide(size)
    return Window(b_index, size, tail_tilt)


def _lower_quantile(log_mgf: LogMgf, start: float, floor: float, log_budget: float) -> float:
    """The largest B ≤ start (not below ``floor``) with the Chernoff bound on P(S < B) within the budget:
    K(θ′) − θ′B ≤ log budget for some θ′ < 0, i.e. B ≤ max_{θ′<0} (log budget − K(θ′))/|θ′|."""
    below = log_mgf.thetas < 0
    reach = float(np.max((log_budget - log_mgf.values[below]) / -log_mgf.thetas[below]))
    return min(start, max(reach, floor))


def _tops(log_mgf: LogMgf, theta: float, bottoms: np.ndarray, log_budget: float) -> tuple[np.ndarray, float]:
    """For each bottom, the smallest top at which both the wrapped tilted tail, e^{K(θ)−θ·bottom}·P_θ(S ≥ top), and
    the lost mass P(S ≥ top) have Chernoff bounds within the budget (each solved for top in closed form, per tilt
    θ′); with the tilt θ′ that bounds the lost mass (the composition evaluates its bound there)."""
    thetas, values = log_mgf.thetas, log_mgf.values
    above = thetas > theta
    positive = thetas > 0
    if not above.any() or not positive.any():
        return np.full(bottoms.size, math.inf), 1.0
    shifted = values[above][None, :] - theta * bottoms[:, None] - log_budget
    wrapped = np.min(shifted / (thetas[above] - theta)[None, :], axis=1)
    needs = (values[positive] - log_budget) / thetas[positive]
    best = int(np.argmin(needs))
    return np.maximum(np.maximum(wrapped, float(needs[best])), bottoms), float(thetas[positive][best])
