"""Noise calibration: the smallest noise whose ε meets a target.

:func:`calibrate` is the generic root finder (as scipy.optimize: explicit bracket, explicit tolerance). Given
any ε(noise) that is non-increasing in the noise, it expands a bracket geometrically in log-noise, runs Brent's
method on log σ (relative tolerance ``rtol``, default 1e-6), and finishes with a one-sided check: the noise returned
always satisfies ε(noise) ≤ target, never the other way round.

:func:`calibrate_rdp` is the same problem for a Rényi curve, exploiting that ε(σ) = min_α ε_α(σ): the answer is the
minimum over α of the per-order roots σ_α. It locates the optimal order on a cheap sub-grid, solves on a window of
the grid around it, optionally refines α continuously, and verifies the result against the full grid (falling back to
:func:`calibrate` on the full conversion if the verification fails). Same guarantee, about 100× fewer curve
evaluations than bracketing the full conversion.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from . import validation as check
from .conversions import (
    DEFAULT_ORDERS,
    MIN_CONVERSION_ORDER,
    Conversion,
    epsilon_by_order,
    epsilon_from_rdp,
    refine_order,
    upward_extension,
)
from .errors import CalibrationError, ParameterError

DEFAULT_RTOL = 1e-6
NOISE_SEARCH_RANGE = (1e-4, 1e8)


@dataclass(frozen=True)
class Calibration:
    """The calibrated noise, the ε it achieves (≤ target), and how many ε evaluations it took."""

    noise: float
    epsilon: float
    evaluations: int


def calibrate(
    epsilon_of: Callable[[float], float],
    target_epsilon: float,
    *,
    initial: float = 1.0,
    rtol: float = DEFAULT_RTOL,
    initial_step: float = 2.0,
    search_range: tuple[float, float] = NOISE_SEARCH_RANGE,
    parameter: str = "noise_multiplier",
) -> Calibration:
    """Smallest noise σ (to relative tolerance ``rtol``) with ``epsilon_of(σ) <= target_epsilon``.

    ``epsilon_of`` must be non-increasing in σ. The bracket starts at ``initial`` and grows geometrically (factor
    ``initial_step``, then its square, …, in σ) inside ``search_range``; Brent's method then works on log σ with
    ``xtol = rtol``; the final check moves to the feasible side if the root estimate is on the wrong one.

    Raises :class:`CalibrationError` if the target is not met at the top of the range (infeasible) or is already met
    at its bottom (no noise needed: the target does not constrain the noise).
    """
    target = check.positive("target_epsilon", target_epsilon)
    if not 0 < rtol < 0.1:
        raise ParameterError.single("rtol", "must be in (0, 0.1)", "(0, 0.1)", rtol)
    if not initial_step > 1.0:
        raise ParameterError.single("initial_step", "must be > 1", "> 1", initial_step)
    low_end, high_end = (math.log(v) for v in search_range)
    start = min(max(math.log(check.positive("initial", initial)), low_end), high_end)
    excess = _Excess(epsilon_of, target, parameter)
    lo, hi = _bracket(excess, start, math.log(initial_step), (low_end, high_end))
    # Brent needs finite values: where no finite ε is certified (∞), a large finite excess keeps its steps defined
    root = optimize.brentq(lambda x: min(excess(x), 1e300), lo, hi, xtol=rtol, rtol=4 * np.finfo(float).eps)
    excess(root)
    # one-sided: the answer is the smallest feasible point evaluated, bisected against the largest infeasible one
    # below it until they are rtol apart (Brent's last steps normally leave them closer than that already)
    hi = min(x for x, e in excess.cache.items() if e <= 0.0)
    lo = max((x for x, e in excess.cache.items() if e > 0.0 and x < hi), default=lo)
    while hi - lo > rtol:
        mid = 0.5 * (lo + hi)
        if excess(mid) <= 0.0:
            hi = mid
        else:
            lo = mid
    return Calibration(noise=math.exp(hi), epsilon=excess(hi) + target, evaluations=len(excess.cache))


class _Excess:
    """ε(e^x) − target at log noise x, each x computed once (a NaN ε is a :class:`CalibrationError`)."""

    def __init__(self, epsilon_of: Callable[[float], float], target: float, parameter: str) -> None:
        self.epsilon_of, self.target, self.parameter = epsilon_of, target, parameter
        self.cache: dict[float, float] = {}

    def __call__(self, log_noise: float) -> float:
        if log_noise not in self.cache:
            eps = float(self.epsilon_of(math.exp(log_noise)))
            if math.isnan(eps):
                raise CalibrationError(f"ε is undefined at {self.parameter}={math.exp(log_noise):.6g}")
            self.cache[log_noise] = eps - self.target
        return self.cache[log_noise]


def _bracket(excess: _Excess, start: float, step: float, ends: tuple[float, float]) -> tuple[float, float]:
    """(lo, hi) in log noise with the target missed at lo and met at hi: from ``start``, up by ``step``, then its
    double, … until met (infeasible at the top of the range), then down likewise until missed (unconstrained at the
    bottom)."""
    low_end, high_end = ends
    lo = hi = start
    grow = step
    while excess(hi) > 0.0:
        if hi >= high_end:
            raise _infeasible(excess, hi)
        lo, hi, grow = hi, min(hi + grow, high_end), grow * 2.0
    grow = step
    while lo == hi or excess(lo) <= 0.0:
        if lo <= low_end:
            raise CalibrationError(
                f"target_epsilon={excess.target:g} is met even at {excess.parameter}={math.exp(lo):.4g}, the bottom "
                "of the search range: the target does not constrain the noise (check δ and the other parameters)"
            )
        hi, lo, grow = lo, max(lo - grow, low_end), grow * 2.0
    return lo, hi


def _infeasible(excess: _Excess, top: float) -> CalibrationError:
    """The target is not met at the top of the search range (log noise ``top``): why, and what is reachable."""
    target, parameter = excess.target, excess.parameter
    reached = excess(top) + target
    if math.isinf(reached):
        return CalibrationError(
            f"target_epsilon={target:g} cannot be met: this accountant certifies no finite ε at this δ for "
            f"any {parameter} up to {math.exp(top):.4g} (δ is below its error margin); raise δ, or ask for "
            "another accountant"
        )
    return CalibrationError(
        f"target_epsilon={target:g} cannot be met: even {parameter}={math.exp(top):.4g} gives "
        f"ε={reached:.6g}, so the reachable targets are ε ≥ {reached:.6g}; raise the target or δ, or reduce the "
        "number of steps"
    )


# -- Rényi curves -------------------------------------------------------------------------------------------------

CurveOf = Callable[[float], Callable[[np.ndarray], np.ndarray]]

_LOCATOR_ORDERS = np.array(
    [1.1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 96, 128, 256, 512, 1024], dtype=float
)


_WINDOW = 3
_ENVELOPE_STEPS = 3


@dataclass(frozen=True)
class RdpCalibration:
    """A calibrated noise multiplier with the conversion at that noise (ε ≤ target, optimal order, curve, warnings)."""

    noise: float
    conversion: Conversion
    evaluations: int


def calibrate_rdp(
    curve_of: CurveOf,
    delta: float,
    target_epsilon: float,
    *,
    orders: np.ndarray | None = None,
    refine: bool = True,
    rtol: float = DEFAULT_RTOL,
    initial: float = 1.0,
    parameter: str = "noise_multiplier",
) -> RdpCalibration:
    """Smallest noise σ whose Rényi curve ``curve_of(σ)`` converts to ε ≤ target at δ (to relative tolerance rtol).

    Same answer as ``calibrate(lambda σ: epsilon_from_rdp(curve_of(σ), δ, orders, refine).value, …)``, computed in
    phases: (1) a sub-grid of 24 orders brackets σ and the optimal order to 1 %; (2) Brent's method on the grid
    orders next to the best grid order at that σ (three either side) gives the grid answer to ``rtol``; (3) with
    ``refine``, envelope steps (σ re-solved for the continuous optimum order), checked against exactly what the
    conversion computes near that window, with Brent's method on that local computation if they do not settle; (4)
    the conversion itself is computed at the answer and checked: if it exceeds the target, disagrees with the local
    computation, or an order outside the window meets the target, the generic path on the full conversion is used
    instead.
    """
    d = check.delta("delta", delta)
    target = check.positive("target_epsilon", target_epsilon)
    grid = np.unique(DEFAULT_ORDERS if orders is None else check.orders("orders", orders))
    search = _RdpSearch(curve_of, d, target, grid, refine, rtol, parameter)
    try:
        window, noise = search.locate(initial)
    except CalibrationError:  # the locator's orders may miss the optimum: decide (and word a refusal) on the truth
        return search.generic(initial)
    noise = search.on_window(window, noise)
    if refine:
        noise = search.envelope(window, noise)
    noise, conversion = search.verified(window, noise)
    return RdpCalibration(noise=noise, conversion=conversion, evaluations=search.evaluations)


class _RdpSearch:
    """The phases of :func:`calibrate_rdp` over one family of curves, sharing a memo of curve evaluations."""

    def __init__(
        self,
        curve_of: CurveOf,
        delta: float,
        target: float,
        grid: np.ndarray,
        refine: bool,
        rtol: float,
        parameter: str,
    ) -> None:
        self.curve_of, self.delta, self.target, self.grid = curve_of, delta, target, grid
        self.refine, self.rtol, self.parameter = refine, rtol, parameter
        # with refinement the conversion extends the grid upwards when its optimum is the largest order: search the same
        self.search = np.concatenate((grid, upward_extension(grid))) if refine else grid
        self.evaluations = 0
        self.memo: dict[tuple[float, bytes], np.ndarray] = {}

    def rdp_at(self, noise: float, alphas: np.ndarray) -> np.ndarray:
        """The curve at these orders, computed once per (σ, orders): the final conversion reuses the zooms."""
        alphas = np.asarray(alphas, dtype=float)
        key = (noise, alphas.tobytes())
        if key not in self.memo:
            self.evaluations += 1
            self.memo[key] = self.curve_of(noise)(alphas)
        return self.memo[key]

    def epsilon_at(self, noise: float, alphas: np.ndarray) -> np.ndarray:
        return epsilon_by_order(alphas, self.rdp_at(noise, alphas), self.delta)

    def min_over(self, alphas: np.ndarray) -> Callable[[float], float]:
        return lambda noise: float(self.epsilon_at(noise, alphas).min())

    def _calibrate(self, epsilon_of: Callable[[float], float], initial: float, rtol: float, step: float = 2.0) -> float:
        return calibrate(
            epsilon_of, self.target, initial=initial, rtol=rtol, initial_step=step, parameter=self.parameter
        ).noise

    def locate(self, initial: float) -> tuple[np.ndarray, float]:
        """(1) σ and the optimal order on a sub-grid of the requested grid (the extension too, only if the optimum is
        the largest order and the conversion would extend the grid): the window of grid orders around it, and σ."""
        grid, search = self.grid, self.search
        locator = _LOCATOR_ORDERS[(_LOCATOR_ORDERS >= grid[0]) & (_LOCATOR_ORDERS <= grid[-1])]
        locator = np.unique(np.concatenate((locator, grid[[0, -1]])))
        coarse = self._calibrate(self.min_over(locator), initial, 1e-2)
        k = int(np.argmin(self.epsilon_at(coarse, locator)))
        if k == locator.size - 1 and search.size > grid.size:
            locator = np.concatenate((locator, search[grid.size :]))
            coarse = self._calibrate(self.min_over(locator), coarse, 1e-2)
            k = int(np.argmin(self.epsilon_at(coarse, locator)))
        span = search[(search >= locator[max(k - 1, 0)]) & (search <= locator[min(k + 1, locator.size - 1)])]
        # the optimal order moves by about as much as σ (1 % here): keep 3 grid neighbours either side of the best
        centre = int(np.searchsorted(search, span[int(np.argmin(self.epsilon_at(coarse, span)))]))
        return search[max(centre - _WINDOW, 0) : centre + _WINDOW + 1], coarse

    def on_window(self, window: np.ndarray, noise: float) -> float:
        """(2) The grid answer on the window, bracketed around the coarse answer."""
        return self._calibrate(self.min_over(window), noise, self.rtol, 1.02)

    def local(self, window: np.ndarray, s: float) -> tuple[float, float]:
        """(3) What the conversion computes near the window at σ = s: the window's grid values and the continuous
        minimum between the search-grid neighbours of the best of them; (ε, order)."""
        search = self.search
        values = self.epsilon_at(s, window)
        best = int(np.argmin(values))
        position = int(np.searchsorted(search, window[best]))
        lo = float(search[position - 1]) if position > 0 else MIN_CONVERSION_ORDER * (1 + 1e-9)
        hi = float(search[position + 1]) if position + 1 < search.size else float(window[best])
        value, order = float(values[best]), float(window[best])
        if self.refine and hi > lo and value > 0.0:
            continuous, alpha = refine_order(lambda a: self.epsilon_at(s, a), lo, hi)
            if continuous < value:
                value, order = continuous, alpha
        return value, order

    def envelope(self, window: np.ndarray, noise: float) -> float:
        """(3) Envelope steps: σ for the continuous optimum α* at the current σ, until at that σ the local minimum no
        longer beats the target (α* settled) or beats it by less than half the tolerance in σ (:meth:`_within_rtol`).
        If it does not settle (the optimum follows a kink of ε(α), e.g. the blow-up of a subsampled Gaussian's
        moments), Brent's method on the local minimum itself."""
        value, alpha = self.local(window, noise)
        for _ in range(_ENVELOPE_STEPS):
            step = self._calibrate(self.min_over(np.array([alpha])), noise, self.rtol * 1e-2, 1.001)
            before = (noise, value)
            noise = min(noise, step)
            value, alpha = self.local(window, noise)
            if value >= self.target * (1 - 1e-9) or self._within_rtol(before, (noise, value)):
                return noise
        return self._calibrate(lambda s: self.local(window, s)[0], noise, self.rtol, 1.0005)

    def _within_rtol(self, before: tuple[float, float], now: tuple[float, float]) -> bool:
        """Whether the noise ``now`` (feasible: its ε is below the target) is within half the tolerance of the root:
        the ε it falls short by, over the slope of log ε in log σ measured between the two points (the envelope
        steps' σ moves the local minimum along that slope)."""
        (s0, e0), (s1, e1) = before, now
        if not (s0 != s1 and 0.0 < e1 <= self.target and 0.0 < e0 < math.inf):
            return False
        slope = abs(math.log(e1 / e0) / math.log(s1 / s0))
        return math.log(self.target / e1) <= 0.5 * self.rtol * slope

    def memo_curve(self, s: float) -> Callable[[np.ndarray], np.ndarray]:
        return lambda a: self.rdp_at(s, a)

    def generic(self, initial: float) -> RdpCalibration:
        """The generic root finder on the conversion itself (every order of the grid, refined and extended): what a
        refusal states is then the conversion's own ε at the end of the search range."""
        found = calibrate(
            lambda s: epsilon_from_rdp(self.memo_curve(s), self.delta, self.grid, self.refine).value,
            self.target,
            initial=initial,
            rtol=self.rtol,
            parameter=self.parameter,
        )
        conversion = epsilon_from_rdp(self.memo_curve(found.noise), self.delta, self.grid, self.refine)
        return RdpCalibration(noise=found.noise, conversion=conversion, evaluations=self.evaluations)

    def verified(self, window: np.ndarray, noise: float) -> tuple[float, Conversion]:
        """(4) The conversion itself at σ (its zooms come from the memo when they match the local ones): it must meet
        the target, agree with the local computation (else its optimum lies outside the window), and no grid order
        outside the window may meet the target at σ (ε_α decreases in σ, so none meets it below σ; inside the window
        phases (2)-(3) established that). Otherwise the generic path on the full conversion."""
        d, grid, target = self.delta, self.grid, self.target
        conversion = epsilon_from_rdp(self.memo_curve(noise), d, grid, self.refine)
        outside = (grid < window[0]) | (grid > window[-1])
        missed = (epsilon_by_order(grid, conversion.rdp, d)[outside] <= target).any()
        if conversion.value > target or missed or conversion.value < self.local(window, noise)[0] * (1 - 1e-9):
            noise = calibrate(
                lambda s: epsilon_from_rdp(self.memo_curve(s), d, grid, self.refine).value,
                target,
                initial=noise,
                rtol=self.rtol,
                parameter=self.parameter,
            ).noise
            conversion = epsilon_from_rdp(self.memo_curve(noise), d, grid, self.refine)
        return noise, conversion
