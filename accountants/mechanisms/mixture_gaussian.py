"""A mixture of Gaussians (a Gaussian release with a random sensitivity), add/remove neighbours: a certified Rényi
curve.

In noise units the release without the record is Q = N(0, 1) and with it P = Σᵢ wᵢ N(μᵢ, 1), μᵢ ≥ 0
(:class:`~accountants.events.MixtureOfGaussiansEvent`). The likelihood ratio is Y(x) = Σᵢ wᵢ e^{μᵢx − μᵢ²/2} and
R = log Y is convex and increasing. Both directions count: ε(α) = max(log A_α, log B_α)/(α − 1) with

    A_α = E_Q Y^α = ∫ φ(x) Y(x)^α dx          (remove: D_α(P‖Q)),
    B_α = E_Q (Q/P)^α = ∫ φ(x) Y(x)^{1−α} dx  (add: D_α(Q‖P); E_Q (Q/P)^α = E_P... written over Q's density φ
                                                and the ratio Y, as (Q/P)^α·P = Y^{1−α}·φ).

No closed form exists (dp_accounting has no Rényi curve for this event), so each is bounded from above on a grid of
x, every piece in closed form — ∫_a^b φ(x) e^{cx} dx = e^{c²/2}(Φ(b − c) − Φ(a − c)):

* **remove**: on a cell [a, b], R lies below its chord (convexity), so Y^α ≤ e^{α·chord}. Right of the grid,
  Y = Σᵢ λᵢ(wᵢaᵢ/λᵢ) with aᵢ = e^{μᵢx − μᵢ²/2} and any weights λ on the components, and t ↦ t^α is convex, so
  Y^α ≤ Σᵢ λᵢ^{1−α} wᵢ^α aᵢ^α (Jensen), each term a tilted normal tail (λ: the components' shares of Y at the
  grid's end, where the bound is exact). Left of it, Y ≤ Y(a₀) (Y increases).
* **add**: R lies above its tangents (convexity), so Y^{1−α} ≤ e^{−(α−1)·tangent} on the whole line: each cell
  takes the tangent at its middle, the two tails the tangents at the grid's ends.

The moments are computed at the orders :data:`ANCHORS` (and at requested orders above them), then at the middles of
the intervals whose chord may be loose (:func:`_loose_middles`, a few rounds); log A_α and log B_α are convex in α
(Hölder's inequality) and 0 at α = 1, so the chords of the larger one between anchors are upper bounds there too.

The grid for each order is found in two passes: a coarse one over [−c, αμ_max + c] (remove) or [−(α − 1)μ_max − c, c]
(add), c = :data:`REACH`, then :data:`FINE_CELLS` cells over the coarse cells within e^{−40} of the largest; the
coarse cells outside it are kept as they are (each one an upper bound too). The gap between a chord (or tangent)
and R on a cell of width h is at most h²·R″/8 with R″ the tilted variance of the μᵢ, so the value is above the
exact one by about α·h²·R″/8 where the mass lies.

**Cap.** Both moments are at most Σᵢ wᵢ e^{α(α−1)μᵢ²/2}: E_Q (P/Q)^α is convex in P (remove), and ∫P^αQ^{1−α} is
jointly convex in (P, Q) (add, writing N(0, 1) as the mixture Σᵢ wᵢ N(0, 1)) — each component's Gaussian divergence,
averaged. The curve is the smaller of the bound and the cap at every order.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np
from scipy import special

from .._numerics import log1mexp

REACH = 12.0
"""How far (in noise standard deviations) the coarse grid reaches beyond the integrands' centres."""
COARSE_CELLS = 96
FINE_CELLS = 1024
KEPT = 40.0
ANCHORS = 1.0 + 0.01 * 1.2 ** np.arange(65)
"""Orders at which the moments are computed first (α − 1 from 0.01 to ~1.4·10³, ratio 1.2); between them, and from
α = 1 where both moments are 1, their chords (the log-moments are convex in α: Hölder)."""
REFINEMENTS = 3
"""Rounds of halving the anchor intervals (holding a requested order) whose chord may be loose."""
CHORD_RTOL = 2e-2
"""An interval is halved while its chord may exceed the log-moment by more than this share."""
"""Coarse cells within e^{−KEPT} of the largest are refined."""


def rdp_kernel(shifts: tuple[float, ...], weights: tuple[float, ...], alphas: np.ndarray) -> np.ndarray:
    """ε(α) of the mixture Σᵢ wᵢ N(μᵢ, 1) against N(0, 1), both directions, certified from above."""
    alphas = np.asarray(alphas, dtype=float)
    return _remembered(shifts, weights, alphas.tobytes()).copy()


@lru_cache(maxsize=64)
def _remembered(shifts: tuple[float, ...], weights: tuple[float, ...], orders: bytes) -> np.ndarray:
    alphas = np.frombuffer(orders)
    mixture = _Mixture(np.array(shifts), np.log(np.array(weights)))
    with np.errstate(over="ignore"):
        cap = special.logsumexp(mixture.log_w + np.multiply.outer(alphas * (alphas - 1.0) / 2.0, mixture.mu**2), axis=1)
    top = np.searchsorted(ANCHORS, alphas.max(initial=1.0))
    anchors = np.concatenate(([1.0], np.union1d(ANCHORS[: top + 1], alphas[alphas > ANCHORS[-1]])))
    moment = np.concatenate(([0.0], mixture.log_moment(anchors[1:])))
    for _ in range(REFINEMENTS):
        middles = _loose_middles(anchors, moment, alphas)
        if middles.size == 0:
            break
        anchors, order = np.unique(np.concatenate((anchors, middles)), return_index=True)
        moment = np.concatenate((moment, mixture.log_moment(middles)))[order]
    with np.errstate(invalid="ignore"):  # a chord to an infinite bound is infinite (or NaN at its end): the cap holds
        chords = np.interp(alphas, anchors, moment)
    return np.asarray(np.minimum(np.nan_to_num(chords, nan=np.inf), cap) / (alphas - 1.0))


def _loose_middles(anchors: np.ndarray, moment: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """The middles of the anchor intervals holding a requested order where the chord may exceed the convex log-moment
    by more than :data:`CHORD_RTOL` of it: between anchors i and i + 1 the function is above the lines through its ends
    with the neighbouring secants' slopes (they bracket its derivative there), so the chord's excess is at most the gap
    between the chord and the larger of those lines at their crossing."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        slopes = np.diff(moment) / np.diff(anchors)
        # the secant before each interval (before the first, 0: the log-moments are non-decreasing from α = 1) and
        # after it (after the last, none: the line's crossing is then the interval's end)
        left = np.concatenate(([0.0], slopes[:-1]))
        right = np.concatenate((slopes[1:], [np.inf]))
        lo, hi, f_lo, f_hi = anchors[:-1], anchors[1:], moment[:-1], moment[1:]
        crossing = (f_hi - f_lo + left * lo - right * hi) / (left - right)
        cross = np.where(np.isinf(right), hi, np.clip(crossing, lo, hi))
        floor = f_lo + left * (cross - lo)
        chord = f_lo + slopes * (cross - lo)
        excess = np.nan_to_num(chord - floor, nan=np.inf)
    wanted = np.isin(np.arange(lo.size), np.searchsorted(anchors, alphas, side="left") - 1)
    loose = wanted & (excess > CHORD_RTOL * np.maximum(np.abs(floor), 1e-300)) & np.isfinite(f_hi)
    return np.asarray(0.5 * (lo[loose] + hi[loose]))


class _Mixture:
    """R(x) = log Σᵢ wᵢ e^{μᵢx − μᵢ²/2} and the two moments' bounds (module docstring)."""

    def __init__(self, mu: np.ndarray, log_w: np.ndarray) -> None:
        self.mu, self.log_w = mu, log_w
        self.offsets = log_w - 0.5 * mu * mu
        self.top = float(mu[-1])

    def ratio(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(R(x), R′(x)) at every point of ``x`` (any shape)."""
        exponents = np.multiply.outer(x, self.mu) + self.offsets
        peak = exponents.max(axis=-1, keepdims=True)
        scaled = np.exp(exponents - peak)
        total = scaled.sum(axis=-1)
        return peak[..., 0] + np.log(total), (scaled @ self.mu) / total

    def log_moment(self, alphas: np.ndarray) -> np.ndarray:
        """The larger of the two log-moments' bounds at each order."""
        return np.asarray(np.maximum(self.log_remove(alphas), self.log_add(alphas)))

    def log_remove(self, alphas: np.ndarray) -> np.ndarray:
        """log A_α from above: chords on the grid, Jensen right of it, Y(a₀) left of it."""

        def cells(edges: np.ndarray) -> np.ndarray:
            r, _ = self.ratio(edges)
            a = alphas[:, None]
            slope = np.diff(r, axis=1) / np.diff(edges, axis=1)
            c = a * slope
            return np.asarray(
                a * (r[:, :-1] - slope * edges[:, :-1]) + 0.5 * c * c + _log_mass(edges[:, :-1] - c, edges[:, 1:] - c)
            )

        lo = np.full(alphas.shape, -REACH)
        hi = alphas * self.top + REACH
        inside = _refined(cells, lo, hi)
        r_lo, _ = self.ratio(lo)
        left = alphas * r_lo + special.log_ndtr(lo)
        return np.asarray(np.logaddexp(np.logaddexp(inside, left), self._right_tail(alphas, hi)))

    def _right_tail(self, alphas: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """log ∫_hi^∞ φ Y^α ≤ log Σᵢ λᵢ^{1−α} wᵢ^α e^{α(α−1)μᵢ²/2} Φ̄(hi − αμᵢ), λᵢ = wᵢaᵢ(hi)/Y(hi)."""
        r_hi, _ = self.ratio(hi)
        a = alphas[:, None]
        log_share = self.offsets + np.multiply.outer(hi, self.mu) - r_hi[:, None]
        with np.errstate(over="ignore"):
            terms = (1.0 - a) * log_share + a * self.log_w + a * (a - 1.0) * self.mu**2 / 2.0
        return np.asarray(special.logsumexp(terms + special.log_ndtr(a * self.mu - hi[:, None]), axis=1))

    def log_add(self, alphas: np.ndarray) -> np.ndarray:
        """log B_α from above: tangents at the cells' middles and at the grid's ends."""
        beta = alphas - 1.0

        def tangent(points: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
            r, slope = self.ratio(points)
            c = -beta[:, None] * slope if points.ndim == 2 else -beta * slope
            b = beta[:, None] if points.ndim == 2 else beta
            return np.asarray(-b * (r - slope * points) + 0.5 * c * c + _log_mass(lo - c, hi - c))

        def cells(edges: np.ndarray) -> np.ndarray:
            return tangent(0.5 * (edges[:, :-1] + edges[:, 1:]), edges[:, :-1], edges[:, 1:])

        lo = -beta * self.top - REACH
        hi = np.full(alphas.shape, REACH)
        inside = _refined(cells, lo, hi)
        left = tangent(lo, np.full(lo.shape, -np.inf), lo)
        right = tangent(hi, hi, np.full(hi.shape, np.inf))
        return np.asarray(np.logaddexp(inside, np.logaddexp(left, right)))


def _refined(cells: Callable[[np.ndarray], np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """log Σ over [lo, hi] (per order) of the cell bounds ``cells(edges)``: a coarse pass, then :data:`FINE_CELLS`
    over the hull of the coarse cells within e^{−KEPT} of the largest; coarse cells outside it as they are."""
    steps = np.linspace(0.0, 1.0, COARSE_CELLS + 1)
    coarse_edges = lo[:, None] + np.multiply.outer(hi - lo, steps)
    coarse = cells(coarse_edges)
    kept = coarse >= coarse.max(axis=1, keepdims=True) - KEPT
    first = np.argmax(kept, axis=1)
    last = COARSE_CELLS - 1 - np.argmax(kept[:, ::-1], axis=1)
    rows = np.arange(lo.size)
    start, end = coarse_edges[rows, first], coarse_edges[rows, last + 1]
    fine = cells(start[:, None] + np.multiply.outer(end - start, np.linspace(0.0, 1.0, FINE_CELLS + 1)))
    index = np.arange(COARSE_CELLS)
    outside = np.where((index < first[:, None]) | (index > last[:, None]), coarse, -np.inf)
    return np.asarray(np.logaddexp(special.logsumexp(fine, axis=1), special.logsumexp(outside, axis=1)))


def _log_mass(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """log(Φ(hi) − Φ(lo)) for lo ≤ hi, from the side of the smaller tail (no cancellation)."""
    flip = lo > 0.0
    a, b = np.where(flip, -hi, lo), np.where(flip, -lo, hi)
    upper, lower = special.log_ndtr(b), special.log_ndtr(a)
    return np.asarray(upper + log1mexp(np.minimum(lower - upper, 0.0)))
