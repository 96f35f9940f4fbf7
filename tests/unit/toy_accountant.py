"""An accountant written the way a new one is: a module with its three functions and one row in
:data:`accountants.plan_accounting.EVENT_ACCOUNTANTS`.

The pure-DP sum: a tree whose every release is ε₀-DP (pure, randomized response, Laplace: 1/b) is (Σε₀, 0)-DP by
basic composition (Dwork & Roth 2014, Thm. 3.16), at any δ; any other release it cannot read. Sound, and loose: the
worked example of docs/architecture.md, registered only inside its tests by :func:`registered`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from accountants import plan_accounting
from accountants.calibration import calibrate
from accountants.errors import CalibrationError
from accountants.events import DpEvent, LaplaceEvent, PureDpEvent, RandomizedResponseEvent, leaves
from accountants.plan_accounting import EventAccountant
from accountants.rdp import Neighbouring
from accountants.reports import AccountantResult

NAME = "pure-sum"
METHOD = "basic composition of the releases' pure ε₀ (Dwork & Roth 2014, Thm. 3.16), δ = 0"


def _pure(leaf: DpEvent) -> float | None:
    if isinstance(leaf, PureDpEvent | RandomizedResponseEvent):
        return leaf.epsilon
    if isinstance(leaf, LaplaceEvent):
        return 1.0 / leaf.noise_multiplier
    return None


def epsilon(event: DpEvent, neighbouring: Neighbouring, delta: float) -> AccountantResult:
    total = 0.0
    for count, leaf in leaves(event):
        pure = _pure(leaf)
        if pure is None:
            return AccountantResult.not_applicable(NAME, f"{type(leaf).__name__} is not a pure-DP release")
        total += count * pure
    return AccountantResult.certified(NAME, total, METHOD)


def calibration(
    event_at: Callable[[float], DpEvent],
    neighbouring: Neighbouring,
    delta: float,
    target: float,
    initial: float,
    parameter: str,
) -> tuple[float, AccountantResult]:
    first = epsilon(event_at(initial), neighbouring, delta)
    if not first.applicable:
        raise CalibrationError(first.reason or "not a pure-DP tree")
    found = calibrate(lambda x: epsilon(event_at(x), neighbouring, delta).epsilon or 0.0, target, parameter=parameter)
    return found.noise, epsilon(event_at(found.noise), neighbouring, delta)


def along(events: Sequence[DpEvent], neighbouring: Neighbouring, delta: float) -> list[AccountantResult]:
    return [epsilon(event, neighbouring, delta) for event in events]


@contextmanager
def registered() -> Iterator[EventAccountant]:
    """The pure-sum accountant in the table for the duration of the block."""
    row = EventAccountant(NAME, epsilon, calibration, along)
    plan_accounting.EVENT_ACCOUNTANTS.append(row)
    try:
        yield row
    finally:
        plan_accounting.EVENT_ACCOUNTANTS.remove(row)
