"""Privacy and calibration of any composition (``/v1/compose``), written with the spine's accountants.

:func:`privacy` reads the JSON tree (:mod:`~accountants.pipeline.grammar`) and answers it like a family answers its
plan (:func:`~accountants.plan_accounting.account_plan`): ``rdp`` on the tree, ``tight`` (exact GDP for Gaussian
trees, the certified PLD accountant where it reads the tree), ``best`` the smaller. :func:`calibrate` moves one
number of the tree, named by a JSON Pointer: the smallest noise, or the largest count, rate or ε, meeting a target
(:data:`~accountants.knobs.KNOBS`).

``paper`` is not an accountant of event trees but an algorithm's own statement (its paper's theorem): a composition
answers it where the tree is one ``algorithm`` node whose family has one, and then answers exactly as the family
does (``/v1/privacy``, ``/v1/calibrate`` on one of the family's knobs); any other tree is refused with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..checkpoints import CurveQuery, checkpoint_steps, epsilon_curve
from ..errors import CalibrationError, ParameterError, UnsupportedAccountantError
from ..events import (
    PoissonSampledEvent,
    SampledWithoutReplacementEvent,
    TruncatedPoissonSampledEvent,
    leaves,
    prefix,
)
from ..family import AlgorithmFamily, Cost, Operation
from ..knobs import KNOBS, KnobRule, calibrate_integer
from ..plan_accounting import PLAN_ACCOUNTANTS, account_plan, calibrate_plan, costly, spine_accountants
from ..plans import Knob, MechanismPlan
from ..rdp import Neighbouring
from ..reports import (
    Accounted,
    CalibrationReport,
    Conventions,
    PrivacyReport,
    calibration_of,
    choose_accountant,
)
from ..statement import privacy_statement
from .grammar import Tree, read_tree
from .pointer import number_at, tokens, with_number

COMPOSE = "compose"
"""The ``algorithm`` of a composition's answer."""
PAPER = "paper"
"""An algorithm's own statement, answered for a tree that is one algorithm node (its family's answer)."""
ACCOUNTANTS = ("best", *PLAN_ACCOUNTANTS, PAPER)
PAPER_TREE_RULE = (
    "paper is an algorithm's own statement, not an accountant of event trees: the mechanism must be one algorithm "
    "node (type: algorithm) whose family has a paper statement"
)
NOISE_DEFINITION = (
    "each node's noise_multiplier is its noise over its sensitivity under the neighbouring relation in force: the "
    "Gaussian's std over the L2 sensitivity, the Laplace scale over the L1 sensitivity; inside poisson-sampled, over "
    "the add/remove sensitivity of the summed contributions (the clip norm C, also under replace-one); inside "
    "sampled-without-replacement, over the replace-one sensitivity (2C)"
)
STEP_RULE = (
    "steps = releases in the tree = {releases}: a repeated node counts its mechanism's releases count times, a "
    "sequence adds its parts', an algorithm node adds its plan's; checkpoints count releases in execution order"
)
NO_REASON = "a composition has no utility theorem nor a paper calibration"


@dataclass(frozen=True)
class Composition:
    """A composition request: the JSON tree, δ, the accountant, the relation, the order grid and the extras asked
    for (checkpoints, a statement)."""

    mechanism: Any
    delta: float
    accountant: str = "best"
    neighbouring: Neighbouring = "add-remove"
    orders: tuple[float, ...] | None = None
    refine: bool = True
    checkpoints: Any = None
    statement: bool = False

    def read(self, mechanism: Any = None) -> Tree:
        return read_tree(self.mechanism if mechanism is None else mechanism, self.delta, self.neighbouring)

    @property
    def grid(self) -> np.ndarray | None:
        return None if self.orders is None else np.array(self.orders, dtype=float)


def cost(c: Composition, operation: Operation = Operation.PRIVACY) -> Cost:
    """Heavy where an accountant the request asks for computes on the tree (:func:`~accountants.plan_accounting.
    costly`: the PLD accountant on a tree it reads that is not all Gaussian); for ``paper``, the family's cost."""
    if c.accountant == PAPER:
        family, params = _paper_node(c)
        return family.cost(operation, params, PAPER)
    tree = c.read()
    return Cost.HEAVY if costly(MechanismPlan(tree.event, c.neighbouring), c.accountant) else Cost.CHEAP


def privacy(c: Composition) -> PrivacyReport:
    """ε at δ of the composition from every accountant, with the checkpoints and the statement where asked for."""
    _check_accountant(c.accountant)
    if c.accountant == PAPER:
        family, params = _paper_node(c)
        return family.privacy(params, c.delta, PAPER, c.orders, c.refine, c.checkpoints, c.statement)
    return _answer(c, c.read())


def _paper_node(c: Composition) -> tuple[AlgorithmFamily[Any], dict[str, Any]]:
    """The family and parameters of the one algorithm node that is the whole tree, where ``paper`` is asked (the
    tree read first, so its own errors come first; a family without a paper statement refuses it with its reason)."""
    from ..registry import get  # the registry imports every family

    tree = c.read()
    if not (isinstance(c.mechanism, dict) and c.mechanism.get("type") == "algorithm"):
        raise ParameterError.single("accountant", PAPER_TREE_RULE, "best, rdp or tight for this tree", PAPER)
    (node,) = tree.algorithms
    family = get(node.algorithm)
    family.check_accountant(PAPER)
    return family, dict(node.params)


def _answer(c: Composition, tree: Tree) -> PrivacyReport:
    plan = MechanismPlan(tree.event, c.neighbouring, tree.reserved_delta)
    curve = None
    if c.checkpoints is not None:  # first: its last checkpoint is usually the whole tree, whose answer it computes
        query = CurveQuery(
            lambda t: _prefix(tree, t), c.neighbouring, plan.accounted_delta(c.delta), c.accountant, c.grid, c.refine
        )
        try:
            curve = epsilon_curve(query, checkpoint_steps(c.checkpoints, tree.releases))
        except ParameterError:
            _answer(replace(c, checkpoints=None), tree)  # the whole tree's own error first, where it has one
            raise
    known = (None, {}) if curve is None else (curve.rdp.get(tree.releases), curve.known_at(tree.releases))
    answer = account_plan(plan, c.delta, c.accountant, c.grid, c.refine, known=known)
    if answer.conversion is not None and not any(r.applicable for r in answer.results):  # rdp gave ∞
        raise ParameterError.single("mechanism", "gives no finite ε bound at this δ", "more noise or a larger δ")
    chosen = choose_accountant(answer.results, c.accountant, supported=spine_accountants())
    accounted = Accounted(answer.results, chosen, c.delta, answer.optimal_order, answer.curve)
    report = accounted.privacy(
        COMPOSE, None, conventions(tree, c.neighbouring), warnings=(*answer.warnings, *_warnings(tree))
    )
    if curve is not None:
        report = replace(report, curve=curve.points)
    if c.statement:
        report = replace(report, statement=privacy_statement(report, "this composition of mechanisms"))
    return report


def _prefix(tree: Tree, steps: int) -> Any:
    event = prefix(tree.event, steps)
    assert event is not None  # checkpoints are >= 1
    return event


def conventions(tree: Tree, neighbouring: Neighbouring) -> Conventions:
    """The conventions of a composition: its relation, releases, the sampling in its nodes, the multipliers'
    definition."""
    sampling: list[str] = []
    for _, leaf in leaves(tree.event):
        if isinstance(leaf, PoissonSampledEvent):
            sampling.append(f"Poisson sampling with rate q = {leaf.sampling_rate:g}")
        elif isinstance(leaf, SampledWithoutReplacementEvent):
            sampling.append(f"sampling without replacement of {leaf.sample_size} of {leaf.dataset_size}")
        elif isinstance(leaf, TruncatedPoissonSampledEvent):
            sampling.append(
                f"truncated Poisson sampling with rate q = {leaf.sampling_rate:g} from {leaf.dataset_size} records, "
                f"batches cut to {leaf.max_batch_size}"
            )
    described = "; ".join(dict.fromkeys(sampling)) or "none: every release sees the whole dataset"
    return Conventions(
        neighbouring=neighbouring,
        steps=tree.releases,
        step_rule=STEP_RULE.format(releases=tree.releases),
        sampling=described,
        noise_multiplier_definition=NOISE_DEFINITION,
        released="every release of the tree (adaptively composed)",
    )


def _warnings(tree: Tree) -> list[str]:
    notes = [
        f"{node.algorithm} at {'/'.join(str(p) for p in node.path)}: {node.releases} releases"
        + (f", δ = {node.reserved_delta:g} spent outside them (taken from δ)" if node.reserved_delta else "")
        for node in tree.algorithms
    ]
    notes.extend(tree.notes)
    return notes


def _check_accountant(accountant: str) -> None:
    names = (*spine_accountants(), PAPER)
    if accountant not in names:
        raise ParameterError.single("accountant", "unknown for a composition", "one of: " + ", ".join(names))


# -- calibration ---------------------------------------------------------------------------------------------------


def calibrate(
    c: Composition, target_epsilon: float, pointer: str, bounds: Sequence[float] | None = None
) -> CalibrationReport:
    """The value at ``pointer`` (into ``mechanism``) meeting ``target_epsilon``: the smallest for a noise, the
    largest for a count, a rate or an ε (:data:`~accountants.knobs.KNOBS`), within ``bounds``."""
    _check_accountant(c.accountant)
    if not (isinstance(target_epsilon, int | float) and 0 < target_epsilon < math.inf):
        raise ParameterError.single("target_epsilon", "must be > 0 and finite", "> 0", target_epsilon)
    number_at(c.mechanism, pointer)
    if c.accountant == PAPER:
        return _paper_calibration(c, target_epsilon, pointer, bounds)
    name = tokens(pointer)[-1]
    rule = KNOBS.get(name)
    if rule is None:
        raise ParameterError.single(
            "calibrate", f"points to {name!r}, which is not a calibratable field", "a pointer to: " + ", ".join(KNOBS)
        )
    c.read()  # every other problem of the tree is reported before the search
    low, high = _range(rule, bounds)
    if rule.integer:
        return _integer(c, target_epsilon, pointer, rule, low, high)
    return _continuous(c, target_epsilon, pointer, rule, low, high)


def _paper_calibration(
    c: Composition, target: float, pointer: str, bounds: Sequence[float] | None
) -> CalibrationReport:
    """The family's own calibration of the knob at ``pointer`` (``/params/<knob>``), as ``/v1/calibrate`` answers it."""
    family, params = _paper_node(c)
    knobs = (family.calibrated_parameter, *family.integer_knobs)
    path = tokens(pointer)
    if len(path) != 2 or path[0] != "params" or path[1] not in knobs:
        allowed = "a pointer to one of: " + ", ".join(f"/params/{k}" for k in knobs)
        raise ParameterError.single("calibrate", f"a paper calibration moves one of {family.id}'s knobs", allowed)
    if bounds is not None:
        raise ParameterError.single("bounds", "a paper calibration searches its family's own range", "left out")
    if c.checkpoints is not None:
        raise ParameterError.single("checkpoints", "a paper calibration answers the whole run only", "left out")
    field = path[1]
    noise = field == family.calibrated_parameter
    given = {k: v for k, v in params.items() if not (noise and k in {*family.noise_fields, field})}
    report = family.calibrate(given, target, c.delta, PAPER, c.orders, None if noise else field, statement=c.statement)
    return replace(report, calibrated_parameter=pointer)


def _range(rule: KnobRule, bounds: Sequence[float] | None) -> tuple[float, float]:
    low, high = (0.0, rule.maximum) if bounds is None else (float(bounds[0]), float(bounds[1]))
    if not (0.0 <= low < high) or math.isnan(high):
        raise ParameterError.single("bounds", "must be [lo, hi] with 0 <= lo < hi", "0 <= lo < hi", list(bounds or ()))
    return max(low, 1.0 if rule.integer else 0.0), min(high, rule.maximum)


def _integer(c: Composition, target: float, pointer: str, rule: KnobRule, low: float, high: float) -> CalibrationReport:
    plain = replace(c, checkpoints=None, statement=False)

    def epsilon_at(accountant: str, value: int) -> float:
        tree = c.read(with_number(c.mechanism, pointer, value))
        return _answer(replace(plain, accountant=accountant), tree).epsilon

    found = calibrate_integer(epsilon_at, target, math.ceil(low), math.floor(high), rule, c.accountant, pointer)
    report = _answer(c, c.read(with_number(c.mechanism, pointer, found.value)))
    beyond = found.shown_beyond(c.accountant)
    return calibration_of(report, target, pointer, found.value, beyond=beyond, reason=NO_REASON)


def _continuous(
    c: Composition, target: float, pointer: str, rule: KnobRule, low: float, high: float
) -> CalibrationReport:
    """The calibration of a continuous knob within [low, high] (the tree's value is clamped there, so past an end ε
    is the end's). The ends are evaluated only where the search does not land inside the range: the least private
    end answers where it meets the target, the most private one says by how much a bounded range misses it."""
    knob = Knob(pointer, pointer, rule.larger_is_more_private)

    def plan_at(noise: float) -> MechanismPlan:
        value = min(max(knob.from_noise(noise), low), high)
        tree = c.read(with_number(c.mechanism, pointer, value))
        return MechanismPlan(tree.event, c.neighbouring, tree.reserved_delta)

    least_private = low if rule.larger_is_more_private else high
    if c.accountant == "rdp" or _meets(c, target, pointer, least_private, "rdp"):  # cheap: then it likely meets it
        edge = _least_private_answer(c, target, pointer, least_private)
        if edge is not None:
            return edge
    try:
        results = calibrate_plan(plan_at, c.delta, target, knob, c.accountant, c.grid)
        chosen = choose_accountant(
            results, c.accountant, key="calibrated_value", largest=not rule.larger_is_more_private
        )
    except (CalibrationError, UnsupportedAccountantError) as error:
        return _at_an_end(c, target, pointer, rule, (low, high), error)
    value = chosen.calibrated_value
    assert value is not None  # set on every applicable calibration result
    if not low <= value <= high:
        return _at_an_end(c, target, pointer, rule, (low, high), None)
    report = _answer(c, c.read(with_number(c.mechanism, pointer, value)))
    return calibration_of(report, target, pointer, value, chosen=chosen, accountants=results, reason=NO_REASON)


def _at_an_end(
    c: Composition,
    target: float,
    pointer: str,
    rule: KnobRule,
    ends: tuple[float, float],
    error: CalibrationError | UnsupportedAccountantError | None,
) -> CalibrationReport:
    """Where the search leaves [low, high] or fails: an error naming the most private end's ε where the range is
    narrower than the knob's own and misses the target there; else the least private end where it meets the target
    (the whole range does); the search's error otherwise."""
    low, high = ends
    least, most = (low, high) if rule.larger_is_more_private else (high, low)
    if (low, high) != _range(rule, None) and 0.0 < most < math.inf:  # first: ε at the least private end is dearer
        at_most = _epsilon_at(c, pointer, most, c.accountant)
        if at_most > target:
            raise CalibrationError(
                f"no value of {pointer} within [{low:g}, {high:g}] meets target_epsilon={target:g}: even "
                f"{pointer}={most:g} gives ε={at_most:.6g}; widen bounds or raise the target"
            )
    edge = _least_private_answer(c, target, pointer, least)
    if edge is not None:
        return edge
    if error is not None:
        raise error
    raise CalibrationError(f"no value of {pointer} within [{low:g}, {high:g}] meets target_epsilon={target:g}")


def _epsilon_at(c: Composition, pointer: str, value: float, accountant: str) -> float:
    """ε of the tree with ``value`` at ``pointer`` by ``accountant`` (∞ where it certifies none)."""
    plain = replace(c, checkpoints=None, statement=False, accountant=accountant)
    try:
        return _answer(plain, c.read(with_number(c.mechanism, pointer, value))).epsilon
    except ParameterError:
        return math.inf


def _meets(c: Composition, target: float, pointer: str, value: float, accountant: str) -> bool:
    return 0.0 < value < math.inf and _epsilon_at(c, pointer, value, accountant) <= target


def _least_private_answer(c: Composition, target: float, pointer: str, least: float) -> CalibrationReport | None:
    """The answer at the range's least private end where the request's accountant meets the target there (the
    plain answer is the report unless the request asks for checkpoints or a statement)."""
    if not 0.0 < least < math.inf:
        return None
    plain = replace(c, checkpoints=None, statement=False)
    tree = c.read(with_number(c.mechanism, pointer, least))
    try:
        at_end = _answer(plain, tree)
    except ParameterError:
        return None
    if at_end.epsilon > target:
        return None
    report = at_end if plain == c else _answer(c, tree)
    return calibration_of(report, target, pointer, least, reason=NO_REASON)
