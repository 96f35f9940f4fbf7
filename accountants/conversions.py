"""Conversions from a Rényi curve to (ε, δ), in one place.

* RDP → (ε, δ): the improved conversion of Balle et al. 2020 (Thm. 21) ≡ Canonne, Kamath & Steinke 2020 (Prop. 12)
  ≡ Asoodeh et al. 2020:  ε = r(α) + log((α − 1)/α) − (log δ + log α)/(α − 1), used only for α > 1.01 where it is
  numerically stable (as dp_accounting does; tensorflow/privacy #166). Also the Bretagnolle–Huber bound
  δ ≤ √(1 − e^{−KL}) with KL ≤ r(α): where δ² > 1 − e^{−r}, ε = 0.
* The reverse δ(ε) = min_α exp((α − 1)(r − ε + log(1 − 1/α)) − log α), and the same TV bound.

Both minimise over a grid of orders and then, by default, refine continuously between the grid neighbours of the
grid optimum: where the grid is itself a fine lattice around a smooth minimum, by the vertex of the polynomial
through its own values (:func:`_settle_on_grid`), otherwise by vectorised zooms with a checked parabolic step
(:func:`refine_order`); if the optimum is the largest order, the grid is first extended geometrically. Every
candidate order gives a valid bound, so the refined value is valid and never above the grid value.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import overload

import numpy as np
from scipy import optimize

from . import validation as check
from .errors import CalibrationError

MIN_CONVERSION_ORDER = 1.01
"""Orders at or below this are not used by the improved conversion (unstable as α → 1)."""

MAX_AUTO_ORDER = float(2**16)
"""The grid is extended up to this order when the optimum sits on its upper edge."""


def _default_orders() -> np.ndarray:
    dp_accounting_grid = [1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512, 1024]
    extra = [1 + x / 100.0 for x in range(11, 30, 2)] + list(range(64, 128, 8)) + [160, 192, 384, 768]
    orders = np.unique(np.array(dp_accounting_grid + extra, dtype=float))
    orders.setflags(write=False)  # shared by every conversion that asks for the default orders
    return orders


DEFAULT_ORDERS: np.ndarray = _default_orders()
"""A superset of dp_accounting's 156 default orders (1.1…10.9 step 0.1, 11…63, 128, 256, 512, 1024), with extra
orders between 1.1 and 1.3 and between 64 and 1024. Where the optimum is the largest order the grid is extended
geometrically up to MAX_AUTO_ORDER."""


@overload
def order_grid(orders: object) -> np.ndarray: ...
@overload
def order_grid(orders: object, default: np.ndarray) -> np.ndarray: ...
@overload
def order_grid(orders: object, default: None) -> np.ndarray | None: ...


def order_grid(orders: object, default: np.ndarray | None = DEFAULT_ORDERS) -> np.ndarray | None:
    """The requested Rényi orders, validated (field ``orders``), sorted and deduplicated; ``default`` when omitted."""
    return default if orders is None else np.unique(check.orders("orders", orders))


RdpCurve = Callable[[np.ndarray], np.ndarray]


def rows_share_orders(orders: np.ndarray) -> bool:
    """Whether every row of a 2-D array of orders is one row broadcast (the grid given to every curve at once)."""
    return orders.ndim == 2 and orders.strides[0] == 0


def epsilon_by_order(orders: np.ndarray, rdp: np.ndarray, delta: float) -> np.ndarray:
    """ε at each order by the improved conversion (∞ where α ≤ 1.01 or the curve is ∞), 0 where the TV bound applies."""
    a = np.asarray(orders, dtype=float)
    r = np.asarray(rdp, dtype=float)
    if rows_share_orders(a):
        a = a[:1]  # its terms once
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        offset = np.log1p(-1.0 / a) - (math.log(delta) + np.log(a)) / (a - 1.0)
    eps = r + np.where(a > MIN_CONVERSION_ORDER, offset, np.inf)
    eps = np.where(np.isfinite(r), eps, np.inf)
    tv_applies = delta * delta + np.expm1(-np.minimum(r, 745.0)) > 0.0
    return np.where(tv_applies | (r <= 0.0), 0.0, np.maximum(eps, 0.0))


def log_delta_by_order(orders: np.ndarray, rdp: np.ndarray, epsilon: float) -> np.ndarray:
    """log δ at each order: min of the improved conversion (α > 1.01) and the TV bound ½ log(1 − e^{−r})."""
    a = np.asarray(orders, dtype=float)
    r = np.asarray(rdp, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tv = np.where(r > 0.0, 0.5 * np.log(-np.expm1(-r)), -np.inf)
        improved = (a - 1.0) * (r - epsilon + np.log1p(-1.0 / a)) - np.log(a)
    improved = np.where((a > MIN_CONVERSION_ORDER) & np.isfinite(r), improved, np.inf)
    return np.minimum(np.minimum(tv, improved), 0.0)


@dataclass(frozen=True)
class Conversion:
    """The result of converting a Rényi curve: the bound, the order that gives it, and the curve on the grid."""

    value: float
    """ε (for :func:`epsilon_from_rdp`) or δ (for :func:`delta_from_rdp`)."""
    optimal_order: float
    orders: np.ndarray
    rdp: np.ndarray
    warnings: tuple[str, ...] = field(default=())
    route: str | None = None
    """Where the value comes from when not from the orders (a closed-form bound of the whole tree), in words."""

    @property
    def reported_order(self) -> float | None:
        """The optimal order where it is a number (None for α → ∞, the pure-DP limit, or at ε = 0)."""
        return self.optimal_order if math.isfinite(self.optimal_order) and self.value > 0.0 else None


def _grid(orders: np.ndarray | None) -> np.ndarray:
    """The requested orders, validated, sorted and deduplicated (:data:`DEFAULT_ORDERS` when omitted)."""
    return DEFAULT_ORDERS if orders is None else np.unique(check.orders("orders", orders))


def epsilon_from_rdp(
    curve: RdpCurve,
    delta: float,
    orders: np.ndarray | None = None,
    refine: bool = True,
) -> Conversion:
    """Smallest ε over the orders (and, with ``refine``, over α continuously near the grid optimum) for this δ."""
    objective = functools.partial(epsilon_by_order, delta=check.delta("delta", delta))
    return _optimise(curve, objective, _grid(orders), refine, floor=0.0)


def delta_from_rdp(
    curve: RdpCurve, epsilon: float, orders: np.ndarray | None = None, refine: bool = True
) -> Conversion:
    """Smallest δ over the orders (refined as in :func:`epsilon_from_rdp`) for this ε."""
    objective = functools.partial(log_delta_by_order, epsilon=check.non_negative("epsilon", epsilon))
    result = _optimise(curve, objective, _grid(orders), refine, floor=-math.inf)
    return Conversion(
        value=min(1.0, math.exp(result.value)),
        optimal_order=result.optimal_order,
        orders=result.orders,
        rdp=result.rdp,
        warnings=result.warnings,
    )


Objective = Callable[[np.ndarray, np.ndarray], np.ndarray]


def upward_extension(grid: np.ndarray) -> np.ndarray:
    """Orders 2, 4, 8, … times the largest order of ``grid``, up to :data:`MAX_AUTO_ORDER`."""
    extension = grid[-1] * 2.0 ** np.arange(1, 20)
    return np.asarray(extension[extension <= MAX_AUTO_ORDER])


_ZOOM_POINTS = 9
_ZOOM_MIN_ROUNDS = 1
_ZOOM_MAX_ROUNDS = 20
_ORDER_RTOL = 1e-10

RowsObjective = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``objective(rows, orders)``: the objective of each row of ``rows`` at the orders in the same row of ``orders``."""


def refine_order(objective: Callable[[np.ndarray], np.ndarray], lo: float, hi: float) -> tuple[float, float]:
    """Minimise a function of the order on [lo, hi] (:func:`refine_orders` for one function).

    Returns (value, order); the value is the objective at that order, so it is a valid bound whatever the accuracy
    of the minimisation."""
    values, orders = refine_orders(
        lambda _rows, a: objective(a.ravel()).reshape(a.shape), np.array([lo]), np.array([hi])
    )
    return float(values[0]), float(orders[0])


def refine_orders(objective: RowsObjective, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimise several functions of the order, function j on [lo[j], hi[j]], by vectorised zooms (all functions'
    points in one call per round, on a lattice shared where brackets overlap: :func:`_lattice`, :func:`_intervals`).

    After each round, the polynomial through the seven (or five) lattice points nearest the best predicts the
    minimum (:func:`_local_polynomial_model`); when the value at its vertex matches the prediction to 1e-3 of the
    predicted gain or 1e-10 relative (the function is locally that polynomial), or the gain itself is below 1e-10
    relative, the search stops: in the smooth case after one round and one vertex, within ~1e-10 relative of the true
    minimum (tested against scipy's bounded Brent search). Otherwise successive parabolic interpolation continues
    from the bracket around the best (up to :data:`_PARABOLA_ATTEMPTS` vertices), and where that does not converge
    either (a kink) the zoom continues down to a spacing of 1e-10·α. Each function's search is the same as if it
    were alone.

    Returns (values, orders); each value is its objective at that order."""
    lo, hi = np.array(lo, dtype=float), np.array(hi, dtype=float)
    best_value, best_order = np.full(lo.size, np.inf), lo.copy()
    active = np.arange(lo.size)
    for round_ in range(1, _ZOOM_MAX_ROUNDS + 1):
        if not active.size:
            break
        intervals = _intervals(lo[active], hi[active]) if round_ == 1 else np.full(active.size, _ZOOM_POINTS - 1)
        points = _lattice(lo[active], hi[active], intervals)
        values = objective(active, points)
        k = np.argmin(values, axis=1)
        at = np.arange(active.size)
        improved = values[at, k] < best_value[active]
        best_value[active[improved]] = values[at, k][improved]
        best_order[active[improved]] = points[improved, k[improved]]
        spacing = points[:, 1] - points[:, 0]
        done = np.zeros(active.size, dtype=bool)
        if round_ >= _ZOOM_MIN_ROUNDS:
            done |= _parabola_step(objective, active, points, values, k, intervals, best_value, best_order)
        done |= spacing <= _ORDER_RTOL * points[at, k]
        lo[active] = points[at, np.maximum(k - 1, 0)]
        hi[active] = points[at, np.minimum(k + 1, intervals)]
        active = active[~done]
    return best_value, best_order


_FIRST_SPACING = 1.0 / 32.0
"""The first round's spacing is at most this (the subsampled Gaussian's curve bends sharply within an order), with
at most 64 intervals."""
_NARROW_BRACKET = 0.25
"""Brackets at most this wide (two steps of the default grid's 0.1 below order 11) are split in 4: the quartic
through their five points predicts the minimum to ~1e-12 there."""


def _intervals(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Intervals of the first round: 4 across a narrow bracket (:data:`_NARROW_BRACKET`), else 8, or more (up to
    64) where 8 leave a spacing above :data:`_FIRST_SPACING`."""
    wanted = _clamp(np.ceil((hi - lo) / _FIRST_SPACING), _ZOOM_POINTS - 1, 8 * (_ZOOM_POINTS - 1))
    return np.asarray(np.where(hi - lo <= _NARROW_BRACKET, 4, wanted), dtype=int)


def _lattice(lo: np.ndarray, hi: np.ndarray, intervals: np.ndarray) -> np.ndarray:
    """``intervals[j] + 1`` equally spaced points from lo[j] to hi[j] (rows padded with their last point to one
    width); points within rounding of a multiple of the spacing are put exactly on it, so that overlapping brackets
    of one spacing (neighbouring checkpoints' orders between the same grid orders) share their points bit for bit,
    and a curve evaluated at the distinct orders is evaluated once at each."""
    # the spacing to 10 significant digits: brackets of one width anywhere (grid orders 0.1 apart) get the same
    # float, so their multiples of it are the same floats
    spacing = np.asarray([float(f"{s:.10g}") for s in ((hi - lo) / intervals).tolist()])[:, None]
    steps = np.minimum(np.arange(int(intervals.max()) + 1)[None, :], intervals[:, None])
    points = np.where(steps == intervals[:, None], hi[:, None], lo[:, None] + steps * spacing)
    with np.errstate(invalid="ignore", divide="ignore"):
        snapped = np.round(points / spacing) * spacing
    close = np.isfinite(snapped) & (np.abs(snapped - points) <= 1e-9 * spacing)
    return np.asarray(np.where(close, snapped, points))


def _parabola_step(
    objective: RowsObjective,
    active: np.ndarray,
    points: np.ndarray,
    values: np.ndarray,
    k: np.ndarray,
    last: np.ndarray,
    best_value: np.ndarray,
    best_order: np.ndarray,
) -> np.ndarray:
    """Where the best point is interior (neither 0 nor ``last``, the row's last real point), successive parabolic
    interpolation from it and its neighbours: evaluate the parabola's vertex, keep the bracket of the three points
    around the best, and repeat where the parabola was not yet a good model (at most :data:`_PARABOLA_ATTEMPTS`
    vertices; best values updated in place); True where the search may stop (see :func:`refine_orders`)."""
    done = np.zeros(active.size, dtype=bool)
    interior = np.flatnonzero((k > 0) & (k < last))
    if not interior.size:
        return done
    kk = k[interior]
    around = kk[:, None] + np.arange(-1, 2)
    x = np.take_along_axis(points[interior], around, axis=1)
    y = np.take_along_axis(values[interior], around, axis=1)
    model = _local_polynomial_model(points[interior], values[interior], kk, last[interior])
    for attempt in range(_PARABOLA_ATTEMPTS):
        vertex, predicted, usable = _vertex(x, y)
        if attempt == 0:  # first the polynomial through seven or five points where there are (else the parabola)
            vertex, predicted = np.where(model[2], model[0], vertex), np.where(model[2], model[1], predicted)
            usable = usable | model[2]
        rows, vertex, predicted, x, y = interior[usable], vertex[usable], predicted[usable], x[usable], y[usable]
        if not rows.size:
            return done
        value = objective(active[rows], vertex[:, None])[:, 0]
        better = value < best_value[active[rows]]
        best_value[active[rows[better]]] = value[better]
        best_order[active[rows[better]]] = vertex[better]
        good = _predicted_well(y[:, 1], predicted, value)
        done[rows] = good
        if good.all():
            return done
        x, y = _bracket(x, y, vertex, value)
        interior, x, y = rows[~good], x[~good], y[~good]
    return done


_PARABOLA_ATTEMPTS = 6
"""Most parabola vertices per zoom round (each one evaluation per row still searching)."""


def _local_polynomial_model(
    points: np.ndarray, values: np.ndarray, k: np.ndarray, last: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row, the minimiser within [x_{k−1}, x_{k+1}] of the polynomial through the seven (else five) points
    nearest its best point k (a zoom round's lattice: equally spaced), its predicted value, and where it is usable:
    enough real points, y_k the least of them, the polynomial convex at its minimiser and predicting no more than
    y_k. Its prediction errs by O(h⁷) (O(h⁵)) against a parabola's O(h³), so in the smooth case one vertex suffices
    (:func:`_parabola_step` checks it as it checks a parabola's)."""
    vertex, predicted = points[np.arange(k.size), k].copy(), np.full(k.size, np.inf)
    usable = np.zeros(k.size, dtype=bool)
    for size in (7, 5):
        rows = np.flatnonzero(~usable & (last >= size - 1))
        if rows.size:
            vertex[rows], predicted[rows], usable[rows] = _polynomial_vertex(
                points[rows], values[rows], k[rows], last[rows], size
            )
    return vertex, predicted, usable


@functools.lru_cache(maxsize=4)
def _interpolation(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes −m … m (size = 2m + 1) and the inverse of their Vandermonde matrix (values → coefficients)."""
    nodes = np.arange(size, dtype=float) - size // 2
    return nodes, np.linalg.inv(nodes[:, None] ** np.arange(float(size)))


_SUBGRID = np.linspace(0.0, 2.0, 33)
"""Where the local polynomial is first evaluated across a bracket [x_{k−1}, x_{k+1}], in lattice spacings."""


def _polynomial_vertex(
    points: np.ndarray, values: np.ndarray, k: np.ndarray, last: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_local_polynomial_model` with ``size`` points (every row has at least that many): the polynomial's
    least value on 33 points across the bracket, then the vertex of the parabola through it and its neighbours
    (1/16 of a lattice spacing apart: the polynomial is a parabola there to rounding)."""
    nodes, inverse = _interpolation(size)
    half = size // 2
    rows = np.arange(k.size)
    centre = _clamp(k, half, last - half)
    at = centre[:, None] + nodes.astype(int)[None, :]
    x, y = np.take_along_axis(points, at, axis=1), np.take_along_axis(values, at, axis=1)
    h = x[:, half + 1] - x[:, half]
    best = values[rows, k]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        spaced = np.all(np.abs((x - x[:, half : half + 1]) / h[:, None] - nodes) <= 1e-6, axis=1)
        usable = spaced & np.all(np.isfinite(y), axis=1) & (best <= y.min(axis=1))
        coefficients = ((y - y[:, half : half + 1]) @ inverse.T).T  # p(t) = Σ c_m t^m, t = (x − x_c)/h
        t = (k - 1 - centre)[:, None] + _SUBGRID[None, :]
        on_grid = _horner(coefficients[:, :, None], t)
        j = _clamp(np.argmin(on_grid, axis=1), 1, _SUBGRID.size - 2)
        left, middle, right = on_grid[rows, j - 1], on_grid[rows, j], on_grid[rows, j + 1]
        curvature = left - 2.0 * middle + right
        step = _clamp(0.5 * (left - right) / curvature, -1.0, 1.0) * (_SUBGRID[1] - _SUBGRID[0])
        vertex = t[rows, j] + step
        predicted = y[:, half] + _horner(coefficients, vertex)
    usable &= (curvature > 0.0) & np.isfinite(vertex) & np.isfinite(predicted) & (predicted <= best)
    return np.where(usable, x[:, half] + vertex * h, points[rows, k]), predicted, usable


def _clamp(x: np.ndarray, lo: np.ndarray | float, hi: np.ndarray | float) -> np.ndarray:
    """``np.clip`` (min(max(x, lo), hi)) at a third of its cost on the small arrays of a search."""
    return np.asarray(np.minimum(np.maximum(x, lo), hi))


def _horner(coefficients: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Σ_m coefficients[m]·t^m, row by row (coefficients: one row per power, lowest first)."""
    out = np.asarray(coefficients[-1] * np.ones_like(t))
    for row in coefficients[-2::-1]:
        out *= t
        out += row
    return out


def _bracket(x: np.ndarray, y: np.ndarray, vertex: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The three points around the best after evaluating ``vertex`` inside the bracket (x₀, x₁, x₂): of the four
    points in order, the best and its two neighbours (the vertex wins a tie with x₁)."""
    right, wins = vertex > x[:, 1], value <= y[:, 1]
    four_x = np.where(
        right[:, None], np.column_stack((x[:, :2], vertex, x[:, 2])), np.column_stack((x[:, 0], vertex, x[:, 1:]))
    )
    four_y = np.where(
        right[:, None], np.column_stack((y[:, :2], value, y[:, 2])), np.column_stack((y[:, 0], value, y[:, 1:]))
    )
    best = np.where(wins, 1 + right, 2 - right)  # where the vertex or x₁ sits among the four
    window = (best - 1)[:, None] + np.arange(3)
    return np.take_along_axis(four_x, window, axis=1), np.take_along_axis(four_y, window, axis=1)


def _vertex(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The vertex of the parabola through three points per row (x sorted along axis 1), its predicted value, and
    where it is usable: a convex parabola whose middle value is the smallest, so its vertex lies between the ends."""
    d0, d2 = x[:, 0] - x[:, 1], x[:, 2] - x[:, 1]
    s0, s2 = (y[:, 0] - y[:, 1]) / d0, (y[:, 2] - y[:, 1]) / d2  # secant slopes from the middle point
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        curvature = (s2 - s0) / (d2 - d0)  # half the second derivative: y = y1 + b(x − x1) + c(x − x1)²
        slope = s0 - curvature * d0
        offset = -slope / (2.0 * curvature)
        predicted = y[:, 1] - slope * slope / (4.0 * curvature)
    usable = np.isfinite(curvature) & (curvature > 0.0) & np.isfinite(predicted) & (y[:, 1] <= y.min(axis=1))
    offset = np.where(usable, _clamp(offset, d0, d2), 0.0)
    return x[:, 1] + offset, predicted, usable


RowsCurve = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``curve(rows, orders)``: the Rényi curve of each row of ``rows`` at the orders in the same row of ``orders``."""


def epsilon_from_rdp_rows(
    curve: RowsCurve, count: int, delta: float, orders: np.ndarray | None = None, refine: bool = True
) -> list[Conversion]:
    """:func:`epsilon_from_rdp` for ``count`` curves at once (e.g. one run's prefixes): each answer is the one its
    curve would get alone; the curves are evaluated together (one call per zoom round)."""
    objective = functools.partial(epsilon_by_order, delta=check.delta("delta", delta))
    return _optimise_rows(curve, count, objective, _grid(orders), refine, floor=0.0)


def _optimise(
    curve: RdpCurve,
    objective: Objective,
    grid: np.ndarray,
    refine: bool,
    floor: float = 0.0,
) -> Conversion:
    """Minimise ``objective`` (ε, or log δ) over the grid and, with ``refine``, continuously; ``floor`` is the
    objective's least possible value (ε = 0), where there is nothing left to refine or warn about."""
    return _optimise_rows(lambda _rows, a: curve(a.ravel()).reshape(a.shape), 1, objective, grid, refine, floor)[0]


def _optimise_rows(
    curve: RowsCurve, count: int, objective: Objective, grid: np.ndarray, refine: bool, floor: float
) -> list[Conversion]:
    """:func:`_optimise` for ``count`` curves, their grid values, extensions and zooms evaluated together."""
    every = np.arange(count)
    rdp = curve(every, np.broadcast_to(grid, (count, grid.size)))
    values = objective(grid, rdp)
    # candidate orders: the grid, extended geometrically where the optimum sits on its upper edge
    candidates, scores = np.broadcast_to(grid, (count, grid.size)), values
    extension = upward_extension(grid)
    extend = np.flatnonzero(np.argmin(values, axis=1) == grid.size - 1) if refine and extension.size else every[:0]
    if extend.size:
        wide = np.full((count, extension.size), np.inf)
        orders = np.broadcast_to(extension, (extend.size, extension.size))
        wide[extend] = objective(orders, curve(extend, orders))
        candidates = np.concatenate((candidates, np.broadcast_to(extension, (count, extension.size))), axis=1)
        scores = np.concatenate((scores, wide), axis=1)
    best = np.argmin(scores, axis=1)
    best_value, best_order = scores[every, best], candidates[every, best]
    size = np.where(np.isin(every, extend), candidates.shape[1], grid.size)  # each curve's own candidates
    highest = candidates[every, size - 1]

    zoom = np.flatnonzero(np.isfinite(best_value) & (best_value > floor)) if refine else every[:0]
    lo = np.where(best > 0, candidates[every, np.maximum(best - 1, 0)], MIN_CONVERSION_ORDER * (1 + 1e-9))
    hi = np.where(best + 1 < size, candidates[every, np.minimum(best + 1, candidates.shape[1] - 1)], best_order)
    zoom = zoom[hi[zoom] > lo[zoom]]
    if zoom.size:
        # first the grid's own lattice (no zoom where it already pins the minimum down)
        vertex_value, vertex, settled = _settle_on_grid(
            lambda rows, a: objective(a, curve(zoom[rows], a)),
            np.asarray(candidates[zoom]),
            np.asarray(scores[zoom]),
            best[zoom],
            size[zoom] - 1,
        )
        better = vertex_value < best_value[zoom]
        best_value[zoom[better]], best_order[zoom[better]] = vertex_value[better], vertex[better]
        zoom = zoom[~settled]
    if zoom.size:
        refined, at = refine_orders(lambda rows, a: objective(a, curve(zoom[rows], a)), lo[zoom], hi[zoom])
        better = refined < best_value[zoom]
        best_value[zoom[better]], best_order[zoom[better]] = refined[better], at[better]

    lowest = MIN_CONVERSION_ORDER if refine else float(grid[0])
    finite = np.asarray(np.isfinite(values).any(axis=1)).tolist()
    return [
        Conversion(v, a, grid, rdp[j], _edge_warnings(v, a, floor, lowest, h))
        if finite[j]
        else Conversion(math.inf, float(grid[0]), grid, rdp[j], ("no finite bound at any order",))
        for j, (v, a, h) in enumerate(zip(best_value.tolist(), best_order.tolist(), highest.tolist(), strict=True))
    ]


_SETTLE_EXCESS = 1e-10
""":func:`_settle_on_grid` evaluates the grid polynomial's vertex only where its estimated excess over the minimum is
at most this, relative: ½·f''·d², with d the distance from the five-point polynomial's vertex (the lower-order
model's distance taken as the higher one's error, a heuristic: the vertex is then checked as a zoom round's is) and
f'' the grid's second difference."""


def _settle_on_grid(
    objective: RowsObjective, points: np.ndarray, values: np.ndarray, k: np.ndarray, last: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the grid is itself a fine enough lattice around the best order k (equally spaced, e.g. the default
    grid's 0.1 below order 11), the zoom's first round is not needed: the polynomial through the seven grid orders
    around k predicts the minimum (:func:`_polynomial_vertex`); where the five-point one places it close enough
    that the vertex's estimated excess is negligible (:data:`_SETTLE_EXCESS`: the function is locally smooth, not
    at a knee of the curve), the vertex is evaluated and accepted by :func:`_predicted_well` (as a zoom round's).
    On 443 subsampled-Gaussian compositions (q from 1e-5 to 0.5, up to 2·10⁶ steps, δ from 1e-12 to 1e-2) the
    settled answers are within 2e-11 relative of the zoom's.

    Returns (value, order, settled) per row: the vertex's value (∞ where none was evaluated), its order, and where
    the search may stop; the other rows zoom as before."""
    value, order = np.full(k.size, np.inf), points[np.arange(k.size), k]
    settled = np.zeros(k.size, dtype=bool)
    rows = np.flatnonzero((k >= 2) & (k <= last - 2) & (last >= 6))
    rows = rows[_smooth_at(values[rows], k[rows])] if rows.size else rows
    if not rows.size:
        return value, order, settled
    seven = _polynomial_vertex(points[rows], values[rows], k[rows], last[rows], 7)
    five = _polynomial_vertex(points[rows], values[rows], k[rows], last[rows], 5)
    at = k[rows]
    y = values[rows, at]
    with np.errstate(invalid="ignore", over="ignore"):
        curvature = (values[rows, at - 1] - 2.0 * y + values[rows, at + 1]) / (
            points[rows, at] - points[rows, at - 1]
        ) ** 2
        excess = 0.5 * curvature * (seven[0] - five[0]) ** 2
    near = seven[2] & five[2] & (excess <= _SETTLE_EXCESS * np.abs(y))
    rows, vertex, predicted, y = rows[near], seven[0][near], seven[1][near], y[near]
    if rows.size:
        value[rows] = objective(rows, vertex[:, None])[:, 0]
        order[rows] = vertex
        settled[rows] = _predicted_well(y, predicted, value[rows])
    return value, order, settled


_SMOOTH_GRID = 0.15
"""Where the grid's fourth difference at the best order exceeds this fraction of its second difference, the curve is
not locally a low-degree polynomial on the grid's scale (a knee): :func:`_settle_on_grid` leaves the row to the zoom
without fitting it (on the compositions it was tuned on, every settled row had a ratio below 0.08, and the rows
whose polynomials disagreed mostly above 0.1)."""


def _smooth_at(values: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Whether |Δ⁴y| ≤ :data:`_SMOOTH_GRID`·Δ²y at k in each row (k − 2 … k + 2 exist), both finite."""
    y = values[np.arange(k.size)[:, None], k[:, None] + _STENCIL]
    with np.errstate(invalid="ignore", over="ignore"):  # values near the float range: not smooth (∞ or NaN below)
        second = y[:, 1] - 2.0 * y[:, 2] + y[:, 3]
        fourth = y[:, 0] - 4.0 * y[:, 1] + 6.0 * y[:, 2] - 4.0 * y[:, 3] + y[:, 4]
        finite = np.isfinite(second) & np.isfinite(fourth)
        return np.asarray(finite & (second > 0.0) & (np.abs(fourth) <= _SMOOTH_GRID * second))


_STENCIL = np.arange(-2, 3)


def _predicted_well(y: np.ndarray, predicted: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Where a model's vertex may end the search: the value there as predicted, to 1e-3 of the promised gain over
    the best point y or 1e-10 relative; or it promises no more than the values' own noise (the fractional-order
    series: ~1e-10 relative)."""
    gain = y - predicted
    return np.asarray(
        (gain <= 1e-10 * np.abs(y)) | (np.abs(value - predicted) <= np.maximum(1e-3 * gain, 1e-10 * np.abs(value)))
    )


def _edge_warnings(value: float, order: float, floor: float, lowest: float, highest: float) -> tuple[str, ...]:
    """A warning where the optimal order sits at the lower or upper edge of the usable orders."""
    if value > floor and order <= lowest * (1 + 1e-3):
        return (
            f"optimal order {order:.6g} is at the lower edge of the usable orders ({lowest:g}); "
            "the bound is loose in this regime (very large ε): add smaller orders or use a tight accountant",
        )
    if value > floor and order >= highest * (1 - 1e-3):
        return (
            f"optimal order {order:.6g} is at the upper edge of the order grid ({highest:g}); "
            "extend the orders upwards for a tighter bound",
        )
    return ()


# -- curves linear in the order: ε(α) = ρα (zCDP-like), solved exactly ------------------------------------------------


def _improved(alpha: float, rho: float, log_delta: float) -> float:
    return rho * alpha + math.log1p(-1.0 / alpha) - (log_delta + math.log(alpha)) / (alpha - 1.0)


def epsilon_for_linear_rdp(rho: float, delta: float) -> tuple[float, float]:
    """(ε, α*) for the Rényi curve ε(α) = ρα at δ: the improved conversion minimised over real α > 1.01.

    No grid: the optimum is the root of the derivative, found by Brent's method to machine precision (the objective
    decreases then increases in α). The TV bound gives ε = 0 when δ² > 1 − e^{−ρ}. Returns α* = 1.01 when the
    optimum sits on the guard (very large ρ).
    """
    r = check.non_negative("rho", rho)
    d = check.delta("delta", delta)
    if r == 0.0 or d * d + math.expm1(-min(r, 745.0)) > 0.0:
        return 0.0, math.inf
    log_delta = math.log(d)

    def slope(a: float) -> float:
        return r + 1.0 / (a * (a - 1.0)) - ((a - 1.0) / a - log_delta - math.log(a)) / (a - 1.0) ** 2

    lo = MIN_CONVERSION_ORDER
    if slope(lo) >= 0.0:
        return max(0.0, _improved(lo, r, log_delta)), lo
    hi = 1.0 + math.sqrt(-log_delta / r) + 1.0  # Mironov's optimum, a little further out
    while slope(hi) < 0.0:
        hi = 2.0 * hi
    alpha = optimize.brentq(slope, lo, hi, xtol=1e-14, rtol=1e-15)
    return max(0.0, _improved(alpha, r, log_delta)), alpha


def linear_rdp_for_epsilon(epsilon: float, delta: float) -> float:
    """Largest ρ whose curve ε(α) = ρα converts to at most ``epsilon`` at ``delta`` (never above the true value)."""
    e = check.positive("epsilon", epsilon)
    d = check.delta("delta", delta)

    def excess(log_rho: float) -> float:
        return epsilon_for_linear_rdp(math.exp(log_rho), d)[0] - e

    lo, hi = math.log(e) - 2.0, math.log(e) + 2.0
    floor, ceiling = math.log(1e-300), math.log(1e300)
    while excess(lo) > 0.0:
        lo -= 4.0
        if lo < floor:
            raise CalibrationError(
                f"target ε = {e:.6g} is below what a curve ρα certifies at δ = {d:.6g} with ρ ≥ 1e-300 (the ε of "
                "ρ = 1e-300 is larger): raise the target or δ"
            )
    while excess(hi) <= 0.0:
        hi += 4.0
        if hi > ceiling:
            return math.exp(ceiling)
    root = optimize.brentq(excess, lo, hi, xtol=1e-15, rtol=1e-15)
    while excess(root) > 0.0:
        root = math.nextafter(root, -math.inf)
    return math.exp(root)


def noise_for_linear_rdp(coefficient: float, epsilon: float, delta: float) -> float:
    """Smallest multiplier z whose curve ε(α) = (coefficient/z²)·α converts to at most ``epsilon`` at ``delta``.

    z = √(coefficient/ρ) for the largest admissible ρ (:func:`linear_rdp_for_epsilon`), then moved up ulp by ulp
    until the rounded z itself meets the target (one-sided, like every calibration)."""
    z = math.sqrt(coefficient / linear_rdp_for_epsilon(epsilon, delta))
    while epsilon_for_linear_rdp(coefficient / (z * z), delta)[0] > epsilon:
        z = math.nextafter(z, math.inf)
    return z
