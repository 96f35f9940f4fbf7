"""ε over training: the certified ε after each of several step counts (checkpoints), in one pass.

A run stopped after t steps releases a prefix of its event tree (:func:`~accountants.events.prefix`), and ε is
non-decreasing in t, so the ε at a checkpoint covers every iterate released up to it.

* ``rdp``: every prefix is a sum of the same leaves' Rényi curves with other counts. Each distinct leaf's curve is
  evaluated once on the order grid (:class:`LeafCurves`); a checkpoint adds them with its counts and converts
  (improved conversion, refined) exactly as a separate request would.
* ``tight``: each checkpoint's prefix through :func:`~accountants.tight.tight_epsilon` (exact GDP where the tree is
  all Gaussian; the PLD accountant otherwise), or a family's own tight answer at that step count.
* ``best``: at each checkpoint the smaller certified value.

Checkpoints are given as a list of step counts, ``{"every": k}``, or ``"epochs"`` (the step counts at which each
epoch ends, for families with epochs); at most :data:`MAX_CHECKPOINTS`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .conversions import epsilon_from_rdp
from .errors import ParameterError
from .events import DpEvent, leaves
from .rdp import Neighbouring, RdpAccountant
from .reports import AccountantResult, CurvePoint

MAX_CHECKPOINTS = 1000
"""Most checkpoints in one request."""


def checkpoint_steps(
    spec: object, total: int, epoch_steps: Callable[[], list[int]] | None = None, field: str = "checkpoints"
) -> list[int]:
    """The step counts a checkpoint specification names (sorted, unique, each in [1, ``total``]).

    ``epoch_steps``: the step counts at which each epoch ends (None where the algorithm has no epochs)."""
    if spec == "epochs":
        if epoch_steps is None:
            raise ParameterError.single(field, "'epochs' is offered where the algorithm has epochs", "a list of steps")
        steps = epoch_steps()
    elif isinstance(spec, Mapping):
        every = spec.get("every")
        if set(spec) != {"every"} or isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ParameterError.single(f"{field}.every", "must be a positive integer", "an integer >= 1", every)
        steps = list(range(every, total + 1, every))
        if not steps or steps[-1] != total:
            steps.append(total)
    elif isinstance(spec, Sequence) and not isinstance(spec, str) and spec:
        steps = []
        for k, value in enumerate(spec):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= total:
                raise ParameterError.single(
                    f"{field}.{k}", f"must be a step count between 1 and the run's {total} steps", f"1..{total}", value
                )
            steps.append(value)
    else:
        raise ParameterError.single(
            field, "must be a non-empty list of step counts, {'every': k} or 'epochs'", "list | {every} | 'epochs'"
        )
    steps = sorted(set(steps))
    if len(steps) > MAX_CHECKPOINTS:
        raise ParameterError.single(
            field, f"names {len(steps)} checkpoints, more than the limit of {MAX_CHECKPOINTS}", f"<= {MAX_CHECKPOINTS}"
        )
    return steps


class LeafCurves:
    """The Rényi curves of a set of prefixes, each leaf's evaluated once per set of orders."""

    def __init__(self, neighbouring: Neighbouring) -> None:
        self.accountant = RdpAccountant(neighbouring)
        self._curves: dict[DpEvent, Callable[[np.ndarray], np.ndarray]] = {}
        self._on_grid: dict[tuple[DpEvent, bytes], np.ndarray] = {}

    def _leaf(self, leaf: DpEvent, orders: np.ndarray) -> np.ndarray:
        key = (leaf, orders.tobytes())
        if key not in self._on_grid:
            if leaf not in self._curves:
                self._curves[leaf] = self.accountant.curve(leaf)
            values = self._curves[leaf](orders)
            if orders.size > 64:  # a grid (refinement points are not met again)
                self._on_grid[key] = values
            return values
        return self._on_grid[key]

    def curve(self, event: DpEvent) -> Callable[[np.ndarray], np.ndarray]:
        """The Rényi curve of ``event`` as the sum of its leaves' curves (leaves evaluated once per grid)."""
        counts = Counter[DpEvent]()
        for count, leaf in leaves(event):
            counts[leaf] += count

        def total(orders: np.ndarray) -> np.ndarray:
            alphas = np.asarray(orders, dtype=float)
            out = np.zeros_like(alphas)
            for leaf, count in counts.items():
                out += count * self._leaf(leaf, alphas)
            return out

        return total


@dataclass(frozen=True)
class CurveQuery:
    """What a checkpoint curve needs: the prefix at each step count, the relation, δ left for the tree, the
    accountant asked for, and the order grid."""

    prefix_at: Callable[[int], DpEvent]
    neighbouring: Neighbouring
    delta: float
    accountant: str
    orders: np.ndarray | None = None
    refine: bool = True
    epochs_at: Callable[[int], float] | None = None


def epsilon_curve(
    query: CurveQuery, steps: Sequence[int], tight_at: Callable[[int], AccountantResult]
) -> tuple[CurvePoint, ...]:
    """ε after each step count: the accountant asked for (``best``: the smaller certified one at each point).

    ``tight_at(t)``: the tight accountant's answer for the prefix of t steps (called only where it is asked for)."""
    curves = LeafCurves(query.neighbouring)
    points: list[CurvePoint] = []
    for t in steps:
        event = query.prefix_at(t)
        rdp = epsilon_from_rdp(curves.curve(event), query.delta, query.orders, query.refine).value
        candidates = [("rdp", rdp)]
        if query.accountant != "rdp":
            tight = tight_at(t)
            if tight.applicable and tight.epsilon is not None:
                candidates.append(("tight", tight.epsilon))
            elif query.accountant == "tight":
                raise ParameterError.single(
                    "checkpoints", f"the tight accountant does not apply at {t} steps: {tight.reason}", "accountant"
                )
        if query.accountant != "best":
            candidates = [c for c in candidates if c[0] == query.accountant]
        name, epsilon = min(candidates, key=lambda c: c[1])
        if not math.isfinite(epsilon):
            raise ParameterError.single(
                "checkpoints", f"no finite ε at {t} steps at this δ", "more noise or a larger δ"
            )
        epochs = query.epochs_at(t) if query.epochs_at is not None else None
        points.append(CurvePoint(t, epochs, epsilon, name))
    return tuple(points)
