"""Calibration on the PLD accountant: the smallest noise whose certified ε meets a target.

The certified ε(σ) is an upper bound computed on a grid that follows the answer, so it is non-increasing in σ only
up to its own accuracy. The search therefore never relies on monotonicity for its guarantee; it ends with two explicit
evaluations:

* σ⁺ with certified ε(σ⁺) ≤ target: the answer (every reported σ certifies the target);
* σ⁺·(1 − ``rtol``) with certified ε > target: no noise more than ``rtol`` below the answer certifies it at the
  point checked (the answer is within ``rtol`` of the smallest certifiable noise where ε(σ) crosses once).

Between them a safeguarded secant on (log σ, log ε) — ε(σ) is smooth and close to a power of σ — moves from the
starting noise (typically the RDP calibration, which is above the tight one) to the crossing in a few evaluations,
each starting from the previous answer's grid and window (:meth:`PldAccountant.epsilon`'s ``near``). A bracket that
the secant leaves is bisected (in log σ), so the search cannot stall. Where no finite ε is certified (at small σ, when
the error allowance exceeds δ) the search moves to more noise until a feasible one is known; after that, such a σ is
one more infeasible end of the bracket.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import CalibrationError, ParameterError
from ..events import DpEvent
from .accountant import PldAccountant, PldAnswer

CALIBRATION_RTOL = 1e-4
"""The answer σ⁺ certifies the target and σ⁺·(1 − 1e-4) does not."""
NOISE_RANGE = (1e-4, 1e8)
FRESH_WITHIN = 3e-3
"""After an evaluation this close to the target (relative), the next noise is evaluated as a query on its own."""
MAX_EVALUATIONS = 80
MAX_ROUNDS = 4 * MAX_EVALUATIONS
"""The search's rounds (an evaluated noise is remembered, so a round may evaluate nothing new); then it settles."""
FIRST_SLOPE = 1.5
"""−d log ε/d log σ assumed before two evaluations measure it, where the caller gives none (DP-SGD's tight ε: 1.2–3
from ε = 1 to 8)."""
NEAR_TARGET = 0.9
"""The first evaluation looks for ε around this fraction of the target (the tight ε at the RDP noise is below it)."""


@dataclass(frozen=True)
class PldCalibration:
    """The calibrated noise σ⁺, its certified answer, the certified ε just below (σ⁺·(1 − rtol)), and the work."""

    noise: float
    answer: PldAnswer
    epsilon_below: float
    evaluations: int
    lower: Callable[[], float | None] = lambda: None
    """The answer's certified lower bound, computed when asked (from the answer's own passes)."""
    fresh: bool = False
    """Whether the answer was computed as a query on its own would compute it (no start from a nearby answer): then it
    is the accountant's answer for that noise, on every endpoint."""


class _Search:
    """The evaluations of one calibration: certified ε by noise, the nearest feasible/infeasible noises so far."""

    def __init__(
        self,
        event_at: Callable[[float], DpEvent],
        accountant: PldAccountant,
        delta: float,
        target: float,
        slope: float = FIRST_SLOPE,
    ) -> None:
        self.event_at, self.accountant, self.delta, self.target = event_at, accountant, delta, target
        self.slope = slope
        """−d log ε/d log σ until two evaluations measure it."""
        self.values: dict[float, float] = {}
        self.answers: dict[float, PldAnswer] = {}
        self.lowers: dict[float, Callable[[], float | None]] = {}
        """The lower bound of the smallest feasible noise evaluated (only its passes are kept alive)."""
        self.near: PldAnswer | None = None
        self.events: dict[DpEvent, float] = {}
        """The noise each distinct event was first evaluated at."""
        self.fresh: set[float] = set()
        """The noises evaluated as a query on its own (no start from a nearby answer)."""

    def __call__(self, noise: float, fresh: bool = False) -> float:
        """The certified ε at ``noise``: from the latest answer's start, or, where ``fresh``, as a query on its own
        computes it (a probe first: the accountant's answer for that noise, which the calibration may then
        report as it is)."""
        if noise not in self.values:
            if len(self.values) >= MAX_EVALUATIONS:
                raise CalibrationError("the PLD calibration did not converge (please report this)")
            event = self.event_at(noise)
            if event in self.events:  # the same releases at another noise (a knob clamped to its range)
                self.values[noise] = self.values[self.events[event]]
                if self.events[event] in self.answers:
                    self.answers[noise] = self.answers[self.events[event]]
                return self.values[noise]
            self.events[event] = noise
            try:
                answer, lower = self.accountant.evaluate(
                    event, self.delta, near=None if fresh else self.near, ceiling=self.target
                )
            except ParameterError:  # no finite ε certified at this noise (δ below the error allowance)
                self.values[noise] = math.inf
                return math.inf
            self.values[noise], self.answers[noise] = answer.value, answer
            if fresh:
                self.fresh.add(noise)
            if answer.value <= self.target and all(noise < kept for kept in self.lowers):
                self.lowers = {noise: lower}
            if math.isfinite(answer.value):
                self.near = answer
        return self.values[noise]

    def latest(self, count: int) -> set[float]:
        """log σ of the ``count`` latest finite evaluations."""
        finite = [math.log(s) for s, e in self.values.items() if math.isfinite(e) and e > 0]
        return set(finite[-count:])

    def bracket(self, target: float) -> tuple[float | None, float | None]:
        """The smallest feasible noise evaluated so far, and the largest infeasible one below it (a certified ε is
        monotone in σ only up to its accuracy: an infeasible noise above a feasible one is not a bracket end)."""
        feasible = [s for s, e in self.values.items() if e <= target]
        hi = min(feasible) if feasible else None
        infeasible = [s for s, e in self.values.items() if e > target and (hi is None or s < hi)]
        return (max(infeasible) if infeasible else None), hi


def calibrate_pld(
    event_at: Callable[[float], DpEvent],
    accountant: PldAccountant,
    delta: float,
    target: float,
    initial: float,
    *,
    rtol: float = CALIBRATION_RTOL,
    parameter: str = "noise_multiplier",
    slope: float | None = None,
) -> PldCalibration:
    """Smallest noise σ (to relative ``rtol``) whose certified PLD ε at ``delta`` is ≤ ``target`` (module docstring).

    ``event_at(σ)`` is the mechanism at noise σ (ε non-increasing in σ); ``initial`` a starting noise near the answer
    (the first evaluation starts its window near the target instead of probing); ``slope`` an estimate of
    −d log ε/d log σ there (e.g. the Rényi ε's: the first step then lands near the crossing), else
    :data:`FIRST_SLOPE`. Raises :class:`CalibrationError`
    when no noise in :data:`NOISE_RANGE` certifies the target, or every one does."""
    known = slope if slope is not None and math.isfinite(slope) and slope > 0.0 else None
    search = _Search(event_at, accountant, delta, target, known or FIRST_SLOPE)
    start = math.log(initial)
    if known is not None:  # aim at the crossing, supposing the tight ε NEAR_TARGET of the initial's (near the target)
        start += math.log(NEAR_TARGET) / known
    search.near = _near_target(accountant, event_at(initial), target if known is not None else NEAR_TARGET * target)
    step = -math.log1p(-rtol)  # log σ⁺ − log σ⁺(1 − rtol)
    low_end, high_end = (math.log(v) for v in NOISE_RANGE)
    x, growth = min(max(start, low_end), high_end), math.log(2.0)
    for _ in range(MAX_ROUNDS):
        if math.exp(x) in search.values:
            x = _unvisited(search, target, x)  # the secant came back to a point already evaluated: bisect
        eps = search(math.exp(x), fresh=_close(search, target))
        if x >= high_end and eps > target:
            _infeasible(search, target, math.exp(x), parameter)
        if x <= low_end and eps <= target:
            raise CalibrationError(
                f"target_epsilon={target:g} is met even at {parameter}={math.exp(x):.4g}, the bottom of the search "
                "range: the target does not constrain the noise (check δ and the other parameters)"
            )
        if not math.isfinite(eps) and search.bracket(target)[1] is None:  # nothing certified yet: more noise
            x, growth = min(x + growth, high_end), growth * 2.0
            continue
        # (an infinite ε below a feasible noise is one more infeasible end: the bracket's secant or bisection goes on)
        if eps <= 0.0 and search.bracket(target)[0] is None:  # ε = 0 certified, no infeasible noise yet: less noise
            x, growth = max(x - growth, low_end), growth * 2.0
            continue
        root = _next_root(search, target, step)
        if eps <= target and -0.1 * step <= x - root <= 0.9 * step:  # feasible, just above the crossing: the end?
            below = math.exp(x) * (1.0 - rtol)
            if search(below) > target:
                noise = math.exp(x)
                return _found(search, noise, search.values[below])
            root = _next_root(search, target, step)
        x = min(max(root + 0.4 * step, low_end), high_end)  # aim just above the crossing
    return _settled(search, target)


def _unvisited(search: _Search, target: float, x: float) -> float:
    """The middle of the bracket (log σ) where it has room left, else ``x`` (the search then settles)."""
    lo, hi = search.bracket(target)
    if lo is None or hi is None:
        return x
    middle = 0.5 * (math.log(lo) + math.log(hi))
    return middle if math.exp(middle) not in search.values else x


def _settled(search: _Search, target: float) -> PldCalibration:
    """Where the certified ε is not monotone in σ within the calibration's tolerance (its rounding allowance at a
    tiny δ): the smallest noise found to certify the target, and the ε just below it as evaluated."""
    lo, hi = search.bracket(target)
    if hi is None:
        raise CalibrationError("the PLD calibration found no noise certifying the target (please report this)")
    below = search.values[lo] if lo is not None else math.inf
    return _found(search, hi, below)


def _found(search: _Search, noise: float, below: float) -> PldCalibration:
    lower = search.lowers.get(noise, lambda: None)
    return PldCalibration(noise, search.answers[noise], below, len(search.values), lower, noise in search.fresh)


def _close(search: _Search, target: float) -> bool:
    """Whether the latest evaluation is within :data:`FRESH_WITHIN` of the target (relative, in ε): the secant's
    next noise is then usually the answer, so it is evaluated as a query on its own (:class:`_Search`)."""
    latest = next(reversed(search.values.values()), math.inf)
    return math.isfinite(latest) and abs(latest - target) <= FRESH_WITHIN * target


def _near_target(accountant: PldAccountant, event: DpEvent, guess: float) -> PldAnswer:
    """A stand-in answer that starts each direction's window around ``guess`` (no probe pass)."""
    directions = len(accountant.directions(event))
    return PldAnswer(guess, 0.0, 0, 0.0, 0.0, directions, by_direction=(guess,) * directions)


def _next_root(search: _Search, target: float, step: float) -> float:
    """The next estimate of log σ at the crossing: the secant through the two latest finite evaluations (the search's
    first slope with one), inside the bracket (largest infeasible, smallest feasible) when one is known
    (its midpoint if the secant leaves it)."""
    finite = [(math.log(s), math.log(e / target)) for s, e in search.values.items() if math.isfinite(e) and e > 0]
    latest = [point for point in finite if point[0] in search.latest(2)]
    lo, hi = search.bracket(target)
    if len(latest) == 2 and latest[0][1] != latest[1][1]:
        (x0, f0), (x1, f1) = latest
        root = x1 - f1 * (x1 - x0) / (f1 - f0)
    elif finite:
        x1, f1 = latest[-1] if latest else finite[-1]
        root = x1 + f1 / search.slope  # ε ∝ σ^−slope
    else:  # only ε = 0 or ∞ so far: the bracket's middle (the caller moves out of one-sided cases)
        root = math.log(lo if lo is not None else hi if hi is not None else 1.0)
    if lo is not None and hi is not None:
        x_lo, x_hi = math.log(lo), math.log(hi)
        if not x_lo < root < x_hi:
            root = 0.5 * (x_lo + x_hi)
    return root


def _infeasible(search: _Search, target: float, noise: float, parameter: str) -> None:
    eps = search.values[noise]
    if math.isinf(eps):
        raise CalibrationError(
            f"target_epsilon={target:g} cannot be met: the PLD accountant certifies no finite ε at this δ for any "
            f"{parameter} up to {noise:.4g} (δ is below its error allowance); raise δ, or ask for another accountant"
        )
    raise CalibrationError(
        f"target_epsilon={target:g} cannot be met: even {parameter}={noise:.4g} gives ε={eps:.6g}, so the reachable "
        f"targets are ε ≥ {eps:.6g}; raise the target or δ, or reduce the number of steps"
    )
