"""Calibrating knobs other than the noise: which direction is more private, and the integer search.

:data:`KNOBS` says, for every field name a calibration may point at, whether a larger value is more private
(noise multipliers, the Laplace scale, randomized response's noise parameter, a dataset size) or less private (step
and epoch counts, repeat counts, sampling rates, batch and sample sizes, ε, ρ, a stepsize), and whether it is an
integer. :func:`integer_boundary` finds the largest (or smallest) integer meeting a target for an ε that is monotone
in it, and shows the value one step beyond exceeding it; :func:`calibrate_integer` runs it for an accountant (from
the rdp answer where a tighter one is asked for), for families and compositions alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .errors import CalibrationError, ParameterError
from .reports import Beyond


@dataclass(frozen=True)
class KnobRule:
    """How a calibrated field behaves: more private when larger (the smallest value meeting the target is the
    answer) or when smaller (the largest); an integer or a real; its largest meaningful value."""

    larger_is_more_private: bool
    integer: bool
    maximum: float = math.inf


KNOBS: dict[str, KnobRule] = {
    "noise_multiplier": KnobRule(True, False),
    "noise_std": KnobRule(True, False),
    "noise_parameter": KnobRule(True, False, 1.0),
    "dataset_size": KnobRule(True, True, 1e12),
    "count": KnobRule(False, True, 1e9),
    "steps": KnobRule(False, True, 1e9),
    "epochs": KnobRule(False, True, 1e6),
    "batch_size": KnobRule(False, True, 1e12),
    "sample_size": KnobRule(False, True, 1e12),
    "sampling_rate": KnobRule(False, False, 1.0),
    "epsilon": KnobRule(False, False),
    "rho": KnobRule(False, False),
    "stepsize": KnobRule(False, False),
}
"""Every field a calibration can point at, by name."""


@dataclass(frozen=True)
class IntegerAnswer:
    """The boundary integer, its ε, and the value one step beyond with its ε (None where the bound was reached)."""

    value: int
    epsilon: float
    beyond: int | None
    beyond_epsilon: float | None

    def shown_beyond(self, accountant: str) -> Beyond | None:
        """The value one step beyond with its (finite) ε, as the answer shows it; None at the range's end."""
        if self.beyond is None or self.beyond_epsilon is None or not math.isfinite(self.beyond_epsilon):
            return None
        return Beyond(self.beyond, self.beyond_epsilon, accountant)


def calibrate_integer(
    epsilon_at: Callable[[str, int], float],
    target: float,
    low: int,
    high: int,
    rule: KnobRule,
    accountant: str,
    parameter: str,
) -> IntegerAnswer:
    """The boundary integer of a knob following ``rule`` for ``accountant`` (:func:`integer_boundary`).

    ``epsilon_at(accountant, value)`` is ε at that value; a :class:`ParameterError` there (a value outside the
    field's valid range, e.g. a sample larger than the dataset) counts as exceeding the target. Where a tighter
    accountant than ``rdp`` is asked for, the rdp answer is found first: it is never above a tighter one's, so it
    is a value known to meet the target, where the search starts."""

    def under(name: str) -> Callable[[int], float]:
        def epsilon(value: int) -> float:
            try:
                return epsilon_at(name, value)
            except ParameterError:
                return math.inf

        return epsilon

    more_private = rule.larger_is_more_private
    start = None
    if accountant != "rdp":
        try:
            start = integer_boundary(under("rdp"), target, low, high, more_private, None, parameter).value
        except CalibrationError:
            start = None
    return integer_boundary(under(accountant), target, low, high, more_private, start, parameter)


def integer_boundary(
    epsilon_at: Callable[[int], float],
    target: float,
    low: int,
    high: int,
    larger_is_more_private: bool,
    start: int | None = None,
    parameter: str = "count",
) -> IntegerAnswer:
    """The largest integer in [low, high] whose ε ≤ ``target`` (the smallest, for a knob where larger is more
    private), for ε monotone in it: an exponential search from ``start`` (a value known to meet the target, e.g.
    the Rényi answer, which is never below a tighter accountant's) and bisection; the answer and its neighbour one
    step beyond are both evaluated. Raises :class:`CalibrationError` where no value in the range meets the target."""
    sign = -1 if larger_is_more_private else 1  # search over k = sign·value, for the largest k that meets the target
    lo_k, hi_k = sorted((sign * low, sign * high))
    seen: dict[int, float] = {}

    def eps(k: int) -> float:
        if k not in seen:
            seen[k] = epsilon_at(sign * k)
        return seen[k]

    good = sign * start if start is not None else lo_k
    if eps(good) > target:
        good = lo_k
        if eps(lo_k) > target:
            raise CalibrationError(
                f"no {parameter} in range meets target_epsilon={target:g}: ε = {eps(lo_k):.6g} at "
                f"{parameter}={sign * lo_k}, the most private value in the range; raise the target or δ, or add noise"
            )
    step = max(1, abs(good) // 8)
    bad: int | None = None
    while bad is None:
        trial = min(good + step, hi_k)
        if trial == good:
            break
        if eps(trial) <= target:
            good, step = trial, step * 2
        else:
            bad = trial
    if bad is None:  # the whole range meets the target
        return IntegerAnswer(sign * good, eps(good), None, None)
    while bad - good > 1:
        middle = (good + bad) // 2
        if eps(middle) <= target:
            good = middle
        else:
            bad = middle
    return IntegerAnswer(sign * good, eps(good), sign * (good + 1), eps(good + 1))
