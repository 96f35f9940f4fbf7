"""A family that compiles its hyperparameters to a mechanism plan gets privacy and calibration from the spine.

A :class:`PlannedFamily` declares its privacy :class:`~accountants.plans.Knob` and implements :meth:`plan`: the
releases about one record as a :class:`~accountants.events.DpEvent` tree. The spine answers the rest:

* ``rdp``: :class:`~accountants.rdp.RdpAccountant` on the plan (improved conversion, order refined);
* ``tight``: :mod:`accountants.tight`, exact where the plan is a tree of Gaussian releases, the certified PLD
  accountant where it reads the tree; otherwise not applicable with the family's :meth:`PlannedFamily.unread_reason`;
* ``best``: the smallest applicable answer (:func:`~accountants.reports.choose_accountant`);
* calibration: :func:`~accountants.plan_accounting.calibrate_plan` over the knob, each accountant on its own (rdp
  exactly where the curve is ρα, else by its order search; tight exactly for Gaussian trees, else the PLD search);
  ``best`` takes the spine's accountants first, and a value outside the knob's accepted range is no answer;
* ε over training, where the family says how its run stops early (:meth:`PlannedFamily.early_stops`);
* the cost of a request (:func:`~accountants.plan_accounting.costly`).

What only the family knows stays with it, as hooks with empty defaults: :meth:`plan`, :meth:`conventions` and
:meth:`noise` (its wording and units), :meth:`method` (its words for an accountant's method on its plan),
:meth:`unread_reason`, :meth:`curve_bounds`, :meth:`extra_results` and :meth:`extra_calibrations` (rows shown
beside the spine's: a paper's own claim or calibration, or an answer under another assumption; never chosen by
``best`` unless certified), :meth:`details` (warnings, the paper's bounds, the releases), :meth:`calibration_details`
(utility at the calibrated knob, the paper's own calibration, advice), :meth:`check_target`,
:meth:`calibrated_params`, :meth:`early_stops`, :meth:`utility`. Hooks read one :class:`Answered` record; where one
needs the spine at other hyperparameters it asks :meth:`spine_answers` or :meth:`calibrated_by`, never an accountant.
A new algorithm is one such class decorated with :func:`~accountants.registry.register`.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .checkpoints import CurveAnswer, CurveQuery, answers_at, checkpoint_steps, epsilon_curve
from .errors import CalibrationError, ParameterError
from .events import DpEvent, prefix
from .family import AlgorithmFamily, CalibrationQuery, Cost, Operation, P, PrivacyQuery
from .params import ParamsModel
from .plan_accounting import (
    account_plan,
    calibrate_plan,
    costly,
    none_meets_the_target,
    plan_accountants,
    spine_accountants,
)
from .plans import NOISE_MULTIPLIER, Knob, MechanismPlan
from .reports import (
    AccountantResult,
    Accounted,
    BoundResult,
    CalibrationReport,
    Conventions,
    Noise,
    PaperCalibration,
    PrivacyReport,
    RdpCurve,
    Recommendation,
    Release,
    UtilityReport,
    choose_accountant,
)

COST_DELTA = 1e-5
"""δ at which the plan's shape is read to price a request (the shape does not depend on δ)."""


@dataclass(frozen=True)
class Answered:
    """What the spine answered, for a family's :meth:`PlannedFamily.details`: the request's δ and accountant, the
    rows (a calibration's: each accountant at its own calibrated value), the one answering, the Rényi curve (at the
    calibrated value in a calibration) with the orders asked for, and the target (None for a privacy answer)."""

    delta: float
    accountant: str
    results: tuple[AccountantResult, ...]
    chosen: AccountantResult
    orders: np.ndarray
    curve: RdpCurve | None
    target: float | None = None
    refine: bool = True
    """Whether the request refined the orders continuously (a calibration always does)."""
    requested: ParamsModel | None = None
    """A calibration's hyperparameters as the request gave them (the knob removed)."""

    def row(self, name: str) -> AccountantResult | None:
        return next((r for r in self.results if r.name == name), None)


@dataclass(frozen=True)
class Details:
    """What an answer shows beside the accountants' rows, from the family: warnings, the paper's own bounds (each
    with its conditions and curve) and the releases of its plan, as data."""

    warnings: Sequence[str] = ()
    bounds: Sequence[BoundResult] = ()
    releases: Sequence[Release] = ()


@dataclass(frozen=True)
class CalibrationDetails:
    """What a calibration answer adds at the calibrated knob, from the family: its utility there, the paper's own
    calibration (with what the accountants certify for it), advice on other hyperparameters, and warnings."""

    utility: UtilityReport | None = None
    paper: PaperCalibration | None = None
    recommended: Sequence[Recommendation] = ()
    warnings: Sequence[str] = ()
    utility_reason: str | None = None
    """Why there are no utility bounds at the calibrated knob (default: the family's :attr:`utility_reason`)."""
    paper_reason: str | None = None
    """Why there is no paper calibration for this target (default: the family's :attr:`paper_reason`)."""


@dataclass(frozen=True)
class EarlyStops:
    """How a run stops early, for ε over training: the releases of the run stopped after t steps (default: the
    plan's prefix of t releases), its step count, the step counts at which its epochs end (None: no epochs) and the
    epochs at t steps."""

    total: int
    event_at: Callable[[int], DpEvent] | None = None
    epoch_steps: Callable[[], list[int]] | None = None
    epochs_at: Callable[[int], float] | None = None


class PlannedFamily(AlgorithmFamily[P]):
    """A family whose privacy is that of its :meth:`plan`; subclasses add wording, extra rows and utility."""

    knob: ClassVar[Knob] = NOISE_MULTIPLIER
    accountants: ClassVar[tuple[str, ...]] = ()
    """Accountants of the family's own beside the spine's (``paper``, where its statement has a regime in which it
    answers: then :meth:`extra_results` and :meth:`extra_calibrations` give the row)."""
    never_read: ClassVar[tuple[str, ...]] = ()
    """Spine accountants that read none of the family's plans (a request naming one is refused with its
    :attr:`accountant_notes` reason; its row still says why)."""
    utility_reason: ClassVar[str | None] = None
    """Why the family states no utility theorem (default: says so)."""
    paper_reason: ClassVar[str | None] = None
    """Why the family has no paper calibration of its own (default: says so)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        below = cls.__mro__[: cls.__mro__.index(PlannedFamily)]  # the subclass and its bases under PlannedFamily
        if not any("noise_fields" in vars(k) for k in below):
            cls.noise_fields = (cls.knob.field,)
        cls.calibrated_parameter = cls.knob.field

    # -- what the family supplies ------------------------------------------------------------------------------

    @abstractmethod
    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """The releases about one record at these hyperparameters (the knob included) and δ (checks of the
        hyperparameters against δ belong here: every answer compiles the plan first)."""

    @abstractmethod
    def conventions(self, params: P, plan: MechanismPlan) -> Conventions:
        """Neighbouring relation, step count, sampling and the knob's definition, in the family's words."""

    def noise(self, params: P, value: float) -> Noise | None:
        """The noise in both units at knob ``value`` (None where the knob is not a noise scale)."""
        return None

    def knob_value(self, params: P) -> float | None:
        """The knob as given (None where it is not): the knob's field, unless the family resolves it from others."""
        value = getattr(params, self.knob.field, None)
        return None if value is None else float(value)

    def unread_reason(self, plan: MechanismPlan) -> str | None:
        """The family's words for why an accountant may not read its plan, put before the spine's reason where one
        does not (None: the spine's reason alone)."""
        return None

    def check_target(self, params: P, target: float, delta: float) -> None:
        """Refuse a calibration target these hyperparameters cannot serve (a :class:`ParameterError` naming the
        field), before any accountant runs."""

    def calibrated_params(self, params: P, chosen: AccountantResult, target: float, delta: float) -> P:
        """The hyperparameters a calibration for (``target``, ``delta``) answers with: the knob at the chosen row's
        value (a family's own row may set others with it)."""
        return params.model_copy(update={self.knob.field: chosen.calibrated_value})

    def method(self, accountant: str, params: P, plan: MechanismPlan) -> str | None:
        """The family's words for how ``accountant`` reads its plan (None: the spine's); rdp's keeps the route its
        conversion took."""
        return None

    def curve_bounds(self, params: P, plan: MechanismPlan, orders: np.ndarray) -> tuple[str, ...] | None:
        """The paper's bound behind the Rényi curve at each order, where the family names them (None: the plan's)."""
        return None

    def extra_results(
        self, params: P, plan: MechanismPlan, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        """Rows shown after the spine's (``spine``) in a privacy answer (the paper's own, or one under another
        assumption)."""
        return ()

    def extra_calibrations(
        self, params: P, target: float, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        """Rows shown after the spine's (``spine``: each accountant's calibration) in a calibration answer (each
        applicable one with its ``calibrated_value``)."""
        return ()

    def details(self, params: P, plan: MechanismPlan, answered: Answered) -> Details:
        """Warnings, bounds and releases shown with an answer at these hyperparameters (the calibrated ones in a
        calibration answer)."""
        return Details()

    def calibration_details(self, at: P, plan: MechanismPlan, answered: Answered) -> CalibrationDetails:
        """What a calibration answer adds at the calibrated hyperparameters ``at``."""
        return CalibrationDetails()

    def early_stops(self, params: P, plan: MechanismPlan) -> EarlyStops | None:
        """How the run stops early (None: ε over training is not offered)."""
        return None

    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        self.parse(params)
        return UtilityReport(self.id, (), self.utility_reason or f"{self.id} states no utility theorem")

    # -- what the spine answers --------------------------------------------------------------------------------

    def cost(self, operation: Operation, params: Mapping[str, Any] | ParamsModel, accountant: str = "best") -> Cost:
        """Cheap for Rényi curves, closed forms and plans no numerical accountant reads; heavy where one the request
        asks for computes (:func:`~accountants.plan_accounting.costly`)."""
        p = self.parse(params)
        if operation is Operation.UTILITY:
            return Cost.CHEAP
        if self.knob_value(p) is None:
            p = p.model_copy(update={self.knob.field: self.knob.from_noise(1.0)})
        try:
            plan = self.plan(p, COST_DELTA)
        except ParameterError:  # a check against δ, which is not known here: the answer itself says why
            return Cost.HEAVY
        return Cost.HEAVY if costly(plan, accountant) else Cost.CHEAP

    def supported_accountants(self) -> tuple[str, ...]:
        """``best``, the spine's accountants that read the family's plans, and the family's own."""
        return (*(a for a in spine_accountants() if a not in self.never_read), *self.accountants)

    @property
    def offers_checkpoints(self) -> bool:
        return type(self).early_stops is not PlannedFamily.early_stops

    def _privacy(self, query: PrivacyQuery[P]) -> PrivacyReport:
        p, d = query.params, query.delta
        value = self._knob_value(p)
        plan = self.plan(p, d)
        conventions = self.conventions(p, plan)
        known = (query.known_rdp.get(conventions.steps), answers_at(query.known_others, conventions.steps))
        reason, method = self.unread_reason(plan), self.method("rdp", p, plan)
        answer = account_plan(plan, d, query.accountant, query.grid, query.refine, reason, known, method)
        if answer.conversion is not None and not any(r.applicable for r in answer.results):  # rdp gave ∞
            raise ParameterError.single(self.knob.field, "gives no finite ε bound at this δ", "more privacy")
        spine = self._worded(answer.results, p, plan)
        results = (*spine, *self.extra_results(p, plan, d, spine))
        chosen = choose_accountant(results, query.accountant, supported=self.supported_accountants())
        accounted = Accounted(results, chosen, d, answer.optimal_order, self._labelled(answer.curve, p, plan))
        shown = self.details(
            p, plan, Answered(d, query.accountant, results, chosen, query.grid, answer.curve, refine=query.refine)
        )
        return accounted.privacy(
            self.id,
            self.noise(p, value),
            conventions,
            warnings=(*answer.warnings, *shown.warnings),
            bounds=shown.bounds,
            releases=shown.releases,
        )

    def _calibrate(self, query: CalibrationQuery[P]) -> CalibrationReport:
        p, d, target, grid = query.params, query.delta, query.target_epsilon, query.grid
        self.check_target(p, target, d)
        results, chosen = self._calibrations(query)
        value = chosen.calibrated_value
        assert value is not None  # set on every applicable calibration result
        at = self.calibrated_params(p, chosen, target, d)
        plan = self.plan(at, d)
        curve = account_plan(plan, d, "rdp", grid, rdp_method=self.method("rdp", at, plan))
        accounted = Accounted(results, chosen, d, curve.optimal_order, self._labelled(curve.curve, at, plan))
        answered = Answered(d, query.accountant, results, chosen, grid, curve.curve, target, requested=p)
        shown, added = self.details(at, plan, answered), self.calibration_details(at, plan, answered)
        return accounted.calibration(
            self.id,
            self.noise(at, value),
            self.conventions(at, plan),
            target,
            value,
            calibrated_parameter=self.knob.field,
            warnings=(*curve.warnings, *shown.warnings, *added.warnings),
            bounds=shown.bounds,
            releases=shown.releases,
            utility=added.utility,
            utility_reason=added.utility_reason if added.utility else self._utility_reason(added),
            paper=added.paper,
            paper_reason=None
            if added.paper
            else added.paper_reason or self.paper_reason or f"{self.id} has no paper calibration of its own",
            recommended=added.recommended,
        )

    def _calibrations(self, query: CalibrationQuery[P]) -> tuple[tuple[AccountantResult, ...], AccountantResult]:
        """Every accountant's calibration of the knob (the spine's, then the family's rows) and the one answering;
        a value outside the knob's accepted range is no answer (:class:`CalibrationError` where none is left)."""
        p, d, target = query.params, query.delta, query.target_epsilon
        plan_at = self._plans(p, d)
        reference = plan_at(1.0)
        reason, method = self.unread_reason(reference), self.method("rdp", p, reference)
        if reference.event == plan_at(2.0).event:  # the knob changes no release: the target cannot set it
            free = f"the target does not constrain {self.knob.field}: {reference.description or 'no release uses it'}"
            if query.accountant in spine_accountants():
                raise CalibrationError(free)
            spine: tuple[AccountantResult, ...] = tuple(
                AccountantResult.not_applicable(n, free) for n in plan_accountants()
            )
        else:
            spine = calibrate_plan(plan_at, d, target, self.knob, query.accountant, query.grid, reason, method)
        on_knob = (self._in_range(self._on_knob(r), target) for r in spine)
        calibrated = self._worded(tuple(on_knob), p, reference)
        results = (*calibrated, *self.extra_calibrations(p, target, d, calibrated))
        if query.accountant == "best" and not any(r.counts_for_best for r in results):
            raise none_meets_the_target(results)
        # best calibrates with the spine's accountants; a family's own row only where none of them can
        spine_met = any(r.counts_for_best for r in calibrated)
        chosen = choose_accountant(
            calibrated if query.accountant == "best" and spine_met else results,
            query.accountant,
            key="calibrated_value",
            largest=not self.knob.larger_is_more_private,
            supported=self.supported_accountants(),
        )
        return results, chosen

    def spine_answers(self, params: P, delta: float, accountant: str = "best") -> dict[str, AccountantResult]:
        """The spine's rows at these hyperparameters for a request for ``accountant`` (by name), for a hook that
        needs them elsewhere than the answer's own knob (a paper's prescription, the calibrated value)."""
        plan = self.plan(params, delta)
        answer = account_plan(plan, delta, accountant, rdp_method=self.method("rdp", params, plan))
        return {r.name: r for r in self._worded(answer.results, params, plan)}

    def calibrated_by(self, accountant: str, params: P, target: float, delta: float) -> AccountantResult:
        """One plan accountant's calibration of the knob (for a hook comparing a paper's prescription); not
        applicable with the reason where it cannot meet the target."""
        try:
            found = calibrate_plan(self._plans(params, delta), delta, target, self.knob, accountant)
        except CalibrationError as error:
            return AccountantResult.not_applicable(accountant, str(error))
        return next(self._on_knob(r) for r in found if r.name == accountant)

    def _plans(self, params: P, delta: float) -> Callable[[float], MechanismPlan]:
        """The plans at these hyperparameters indexed by the knob on its noise scale."""

        def plan_at(noise: float) -> MechanismPlan:
            return self.plan(params.model_copy(update={self.knob.field: self.knob.from_noise(noise)}), delta)

        return plan_at

    def _in_range(self, result: AccountantResult, target: float) -> AccountantResult:
        """A calibration result, not applicable where its value is outside what a request may give the knob."""
        value = result.calibrated_value
        if value is None or self.knob.accepts(value):
            return result
        assert self.knob.accepted is not None  # accepts() is true without a range
        low, high = self.knob.accepted
        return AccountantResult.not_applicable(
            result.name,
            f"target_epsilon={target:g} needs {self.knob.field} {value:.4g}, outside the range dpcal accepts "
            f"[{low:g}, {high:g}]: {'raise' if value > high else 'lower'} the target or δ",
        )

    def _worded(
        self, results: tuple[AccountantResult, ...], params: P, plan: MechanismPlan
    ) -> tuple[AccountantResult, ...]:
        """The spine's rows with the family's words for how each accountant beside rdp read its plan."""
        out = []
        for r in results:
            words = self.method(r.name, params, plan) if r.applicable and r.name != "rdp" else None
            out.append(r if words is None else dataclasses.replace(r, method=words))
        return tuple(out)

    def _labelled(self, curve: RdpCurve | None, params: P, plan: MechanismPlan) -> RdpCurve | None:
        """The Rényi curve with the paper's bound behind it at each order, where the family names them."""
        if curve is None:
            return curve
        bounds = self.curve_bounds(params, plan, np.asarray(curve.orders, dtype=float))
        return curve if bounds is None else dataclasses.replace(curve, bounds=bounds)

    def _utility_reason(self, added: CalibrationDetails) -> str:
        return added.utility_reason or self.utility_reason or f"{self.id} states no utility theorem"

    def _on_knob(self, result: AccountantResult) -> AccountantResult:
        """A calibration result with its value also as the noise multiplier, where that is the knob."""
        if self.knob.field != "noise_multiplier" or result.calibrated_value is None:
            return result
        return dataclasses.replace(result, noise_multiplier=result.calibrated_value)

    def _curve(self, query: PrivacyQuery[P], checkpoints: object) -> CurveAnswer:
        """ε after each checkpoint: the releases of the run stopped there (:meth:`early_stops`), every accountant
        on each."""
        p, d = query.params, query.delta
        self._knob_value(p)
        plan = self.plan(p, d)
        stops = self.early_stops(p, plan)
        if stops is None:
            return super()._curve(query, checkpoints)
        whole = plan.event

        def event_at(t: int) -> DpEvent:
            event = prefix(whole, t)
            assert event is not None  # checkpoints are >= 1
            return event

        curve = CurveQuery(
            stops.event_at or event_at,
            plan.neighbouring,
            plan.accounted_delta(d),
            query.accountant,
            query.orders,
            query.refine,
            epochs_at=stops.epochs_at,
        )
        return epsilon_curve(curve, checkpoint_steps(checkpoints, stops.total, stops.epoch_steps))

    def _knob_value(self, p: P) -> float:
        value = self.knob_value(p)
        if value is None:
            raise ParameterError.single(
                self.knob.field,
                f"is required for privacy accounting: it is the privacy knob, {self.knob.symbol}; /v1/calibrate "
                "computes it",
                "a positive number",
            )
        return value
