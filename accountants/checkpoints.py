"""ε over training: the certified ε after each of several step counts (checkpoints), in one pass.

A run stopped after t steps releases a prefix of its event tree (:func:`~accountants.events.prefix`), and ε is
non-decreasing in t, so the ε at a checkpoint covers every iterate released up to it.

* ``rdp``: every prefix is a sum of the same leaves' Rényi curves with other counts (:class:`LeafCurves`). All
  checkpoints are converted together (:func:`~accountants.conversions.epsilon_from_rdp_rows`: the grid, and each
  zoom round of the order refinement, is one evaluation per leaf for every checkpoint), each exactly as a separate
  request would be; the conversion at the whole run is the answer's own (:class:`CurveAnswer`: a family converts
  it once per request).
* ``tight``: the prefixes through :func:`~accountants.tight.tight_epsilons` (exact GDP where the tree is all
  Gaussian; otherwise the PLD accountant: the whole run is queried on its own and the other checkpoints are read
  off its tilted spectrum, :mod:`accountants.pld.curve`, or queried on their own where it does not suit them), or a
  family's own tight answers at those step counts.
* ``best``: at each checkpoint the smaller certified value.

Checkpoints are given as a list of step counts, ``{"every": k}``, or ``"epochs"`` (the step counts at which each
epoch ends, for families with epochs); at most :data:`MAX_CHECKPOINTS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .conversions import Conversion, epsilon_from_rdp_rows, rows_share_orders
from .errors import ParameterError
from .events import DpEvent, leaves
from .plan_accounting import EVENT_ACCOUNTANTS, asks
from .rdp import Neighbouring, RdpAccountant, UnsupportedEventError
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
    """The Rényi curves of several prefixes of one run as one function of (row, order): each distinct leaf's curve
    is evaluated once per call, at the distinct orders asked for, and each prefix adds them with its counts."""

    def __init__(self, events: Sequence[DpEvent], neighbouring: Neighbouring) -> None:
        accountant = RdpAccountant(neighbouring)
        columns: dict[DpEvent, int] = {}  # each distinct leaf's column
        # the same by object: prefixes share their leaves' objects (hashing a leaf walks its fields); ``events``
        # keeps every leaf alive while its id is a key
        by_identity: dict[int, int] = {}
        rows: list[dict[int, int]] = []
        for event in events:
            row: dict[int, int] = {}
            for count, leaf in leaves(event):
                column = by_identity.get(id(leaf))
                if column is None:
                    column = by_identity[id(leaf)] = columns.setdefault(leaf, len(columns))
                row[column] = row.get(column, 0) + count
            rows.append(row)
        self._curves = [accountant.curve(leaf) for leaf in columns]
        self._counts = np.zeros((len(rows), len(columns)))
        for j, row in enumerate(rows):
            for column, count in row.items():
                self._counts[j, column] = count

    def __call__(self, rows: np.ndarray, orders: np.ndarray) -> np.ndarray:
        """The Rényi curve of prefix ``rows[j]`` at the orders ``orders[j]`` (one evaluation per leaf at each
        distinct order; rows broadcast from one row of orders, e.g. the grid, are evaluated once)."""
        if rows_share_orders(orders):
            distinct, where = orders[0], np.arange(orders.shape[1])[None, :]
        else:
            distinct, inverse = np.unique(orders, return_inverse=True)
            where = inverse.reshape(orders.shape)
        out = np.zeros(orders.shape)
        for column, curve in enumerate(self._curves):
            out += self._counts[rows, column][:, None] * curve(distinct)[where]
        return out


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


@dataclass(frozen=True)
class CurveAnswer:
    """ε after each checkpoint, and the Rényi conversion (and tight answer, where asked) at each, by step count: the
    ones at the whole run are the answer's own, which the request need not compute again."""

    points: tuple[CurvePoint, ...]
    rdp: Mapping[int, Conversion]
    others: Mapping[str, Mapping[int, AccountantResult]]
    """Each other accountant's answer at each checkpoint where it was asked for, by name (the last one as a query on
    its own would get it, e.g. :func:`~accountants.tight.tight_epsilons`)."""

    def known_at(self, steps: int) -> dict[str, AccountantResult]:
        return answers_at(self.others, steps)


def answers_at(others: Mapping[str, Mapping[int, AccountantResult]], steps: int) -> dict[str, AccountantResult]:
    """The other accountants' answers at ``steps`` (what :func:`~accountants.plan_accounting.account_plan` need not
    compute again)."""
    return {name: answers[steps] for name, answers in others.items() if steps in answers}


def epsilon_curve(query: CurveQuery, steps: Sequence[int]) -> CurveAnswer:
    """ε after each step count: the accountant asked for (``best``: the smallest certified one at each point); an
    accountant beside rdp (:data:`~accountants.plan_accounting.EVENT_ACCOUNTANTS`) is run only where it is asked for."""
    events = [query.prefix_at(t) for t in steps]
    rdp_answers = _rdp_answers(query, events)
    others = {
        other.name: other.along(events, query.neighbouring, query.delta)
        for other in EVENT_ACCOUNTANTS
        if asks(query.accountant, other.name)
    }
    points = [
        _point(query, t, conversion, {name: answers[k] for name, answers in others.items()})
        for k, (t, conversion) in enumerate(zip(steps, rdp_answers, strict=True))
    ]
    converted = {t: c for t, c in zip(steps, rdp_answers, strict=True) if c is not None}
    asked = {name: dict(zip(steps, answers, strict=True)) for name, answers in others.items()}
    return CurveAnswer(tuple(points), converted, asked)


def _point(
    query: CurveQuery, t: int, conversion: Conversion | None, others: Mapping[str, AccountantResult]
) -> CurvePoint:
    """The checkpoint at ``t`` steps from each accountant's answer there (an error naming the one asked for where it
    does not apply)."""
    if conversion is None and query.accountant == "rdp":
        raise ParameterError.single("checkpoints", f"the rdp accountant does not apply at {t} steps", "accountant")
    candidates = [] if conversion is None else [("rdp", conversion.value)]
    for name, result in others.items():
        if result.applicable and result.epsilon is not None:
            candidates.append((name, result.epsilon))
        elif query.accountant == name:
            raise ParameterError.single(
                "checkpoints", f"the {name} accountant does not apply at {t} steps: {result.reason}", "accountant"
            )
    if query.accountant != "best":
        candidates = [c for c in candidates if c[0] == query.accountant]
    if not candidates:
        raise ParameterError.single("checkpoints", f"no accountant applies at {t} steps", "accountant")
    name, epsilon = min(candidates, key=lambda c: c[1])
    if not math.isfinite(epsilon):
        raise ParameterError.single("checkpoints", f"no finite ε at {t} steps at this δ", "more noise or a larger δ")
    epochs = query.epochs_at(t) if query.epochs_at is not None else None
    return CurvePoint(t, epochs, epsilon, name)


def _rdp_answers(query: CurveQuery, events: Sequence[DpEvent]) -> list[Conversion | None]:
    """Each prefix's Rényi conversion, every one as :meth:`RdpAccountant.epsilon` would give it alone (the curves
    converted together, then each prefix's own closed-form bounds); None for every prefix where the RDP accountant
    cannot read the run."""
    accountant = RdpAccountant(query.neighbouring)
    try:
        rows = epsilon_from_rdp_rows(
            LeafCurves(events, query.neighbouring), len(events), query.delta, query.orders, query.refine
        )
    except UnsupportedEventError:
        return [None] * len(events)
    if not query.refine:
        return list(rows)
    return [accountant.bounded(event, row, query.delta) for event, row in zip(events, rows, strict=True)]
