"""A family that compiles its hyperparameters to a mechanism plan gets privacy and calibration from the spine.

A :class:`PlannedFamily` declares its privacy :class:`~accountants.plans.Knob` and implements :meth:`plan`: the
releases about one record as a :class:`~accountants.events.DpEvent` tree. The spine answers the rest:

* ``rdp``: :class:`~accountants.rdp.RdpAccountant` on the plan (improved conversion, order refined);
* ``tight``: :mod:`accountants.tight`, exact where the plan is a tree of Gaussian releases, the certified PLD
  accountant where it reads the tree; otherwise not applicable with the family's :meth:`PlannedFamily.tight_reason`;
* ``best``: the smallest applicable answer (:func:`~accountants.reports.choose_accountant`);
* calibration: :func:`~accountants.calibration.calibrate_rdp` over the knob for ``rdp``, the generic one-sided root
  finder (GDP) or :func:`~accountants.pld.calibration.calibrate_pld` for ``tight``;
* ε over training, where the family says how its run stops early (:meth:`PlannedFamily.checkpoints_of`).

What only the family knows stays with it, as hooks with empty defaults: :meth:`plan`, :meth:`conventions` and
:meth:`noise` (its wording and units), :meth:`rdp_method` (its words for the Rényi bound), :meth:`extra_results`
(rows shown beside the spine's, e.g. a paper's own claim or an answer under another assumption, never chosen by
``best`` unless valid), :meth:`notes` (warnings), :meth:`utility`. A new algorithm is one such class decorated with
:func:`~accountants.registry.register`.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from . import gdp
from .checkpoints import CurveAnswer, CurveQuery, answers_at, checkpoint_steps, epsilon_curve
from .errors import ParameterError
from .events import DpEvent, prefix
from .family import AlgorithmFamily, CalibrationQuery, Cost, Operation, P, PrivacyQuery
from .params import ParamsModel
from .plan_accounting import account_plan, calibrate_plan, spine_accountants
from .plans import NOISE_MULTIPLIER, Knob, MechanismPlan
from .reports import (
    AccountantResult,
    Accounted,
    CalibrationReport,
    Conventions,
    Noise,
    PrivacyReport,
    UtilityReport,
    choose_accountant,
)

COST_DELTA = 1e-5
"""δ at which the plan's shape is read to price a request (the shape does not depend on δ)."""


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
    utility_reason: ClassVar[str | None] = None
    """Why the family states no utility theorem (default: says so)."""
    paper_reason: ClassVar[str | None] = None
    """Why the family has no paper calibration of its own (default: says so)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "noise_fields" not in cls.__dict__:
            cls.noise_fields = (cls.knob.field,)
        cls.calibrated_parameter = cls.knob.field

    # -- what the family supplies ------------------------------------------------------------------------------

    @abstractmethod
    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """The releases about one record at these hyperparameters (the knob included) and δ."""

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

    def tight_reason(self, plan: MechanismPlan) -> str | None:
        """The family's words for why ``tight`` may not apply to its plan, put before the spine's reason where it
        does not (None: the spine's reason alone)."""
        return None

    def rdp_method(self, params: P, plan: MechanismPlan) -> str | None:
        """The family's words for the Rényi bound of its plan (None: the spine's)."""
        return None

    def extra_results(self, params: P, plan: MechanismPlan, delta: float) -> Sequence[AccountantResult]:
        """Rows shown after the spine's in a privacy answer (the paper's own, or one under another assumption)."""
        return ()

    def extra_calibrations(self, params: P, target: float, delta: float) -> Sequence[AccountantResult]:
        """Rows shown after the spine's in a calibration answer."""
        return ()

    def notes(self, params: P, plan: MechanismPlan) -> Sequence[str]:
        """Warnings the family adds to every answer at these hyperparameters."""
        return ()

    def early_stops(self, params: P, plan: MechanismPlan) -> EarlyStops | None:
        """How the run stops early (None: ε over training is not offered)."""
        return None

    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        self.parse(params)
        return UtilityReport(self.id, (), self.utility_reason or f"{self.id} states no utility theorem")

    # -- what the spine answers --------------------------------------------------------------------------------

    def cost(self, operation: Operation, params: Mapping[str, Any] | ParamsModel, accountant: str = "best") -> Cost:
        """Cheap for Rényi curves and Gaussian-DP closed forms; heavy where ``tight`` (asked for, or needed by
        ``best``) reads a plan that is not all Gaussian with the PLD accountant."""
        p = self.parse(params)
        if operation is Operation.UTILITY or accountant not in ("best", "tight"):
            return Cost.CHEAP
        if self.knob_value(p) is None:
            p = p.model_copy(update={self.knob.field: self.knob.from_noise(1.0)})
        return Cost.CHEAP if gdp.is_gaussian(self.plan(p, COST_DELTA).event) else Cost.HEAVY

    def supported_accountants(self) -> tuple[str, ...]:
        return spine_accountants()

    @property
    def offers_checkpoints(self) -> bool:
        return type(self).early_stops is not PlannedFamily.early_stops

    def _privacy(self, query: PrivacyQuery[P]) -> PrivacyReport:
        p, d = query.params, query.delta
        value = self._knob_value(p)
        plan = self.plan(p, d)
        conventions = self.conventions(p, plan)
        known = (query.known_rdp.get(conventions.steps), answers_at(query.known_others, conventions.steps))
        reason, method = self.tight_reason(plan), self.rdp_method(p, plan)
        answer = account_plan(plan, d, query.accountant, query.grid, query.refine, reason, known, method)
        if answer.conversion is not None and not any(r.applicable for r in answer.results):  # rdp gave ∞
            raise ParameterError.single(self.knob.field, "gives no finite ε bound at this δ", "more privacy")
        results = (*answer.results, *self.extra_results(p, plan, d))
        chosen = choose_accountant(results, query.accountant, supported=self.supported_accountants())
        accounted = Accounted(results, chosen, d, answer.optimal_order, answer.curve)
        warnings = (*answer.warnings, *self.notes(p, plan))
        return accounted.privacy(self.id, self.noise(p, value), conventions, warnings=warnings)

    def _calibrate(self, query: CalibrationQuery[P]) -> CalibrationReport:
        p, d, target, grid = query.params, query.delta, query.target_epsilon, query.grid

        def plan_at(noise: float) -> MechanismPlan:
            return self.plan(p.model_copy(update={self.knob.field: self.knob.from_noise(noise)}), d)

        reference = plan_at(1.0)
        reason, method = self.tight_reason(reference), self.rdp_method(p, reference)
        spine = calibrate_plan(plan_at, d, target, self.knob, query.accountant, grid, reason, method)
        results = (*(self._on_knob(r) for r in spine), *self.extra_calibrations(p, target, d))
        chosen = choose_accountant(
            results,
            query.accountant,
            key="calibrated_value",
            largest=not self.knob.larger_is_more_private,
            supported=self.supported_accountants(),
        )
        value = chosen.calibrated_value
        assert value is not None  # set on every applicable calibration result
        at = p.model_copy(update={self.knob.field: value})
        plan = self.plan(at, d)
        shown = account_plan(plan, d, "rdp", grid, rdp_method=self.rdp_method(at, plan))
        accounted = Accounted(results, chosen, d, shown.optimal_order, shown.curve)
        return accounted.calibration(
            self.id,
            self.noise(p, value),
            self.conventions(at, plan),
            target,
            value,
            calibrated_parameter=self.knob.field,
            warnings=(*shown.warnings, *self.notes(at, plan)),
            utility_reason=self.utility_reason or f"{self.id} states no utility theorem",
            paper_reason=self.paper_reason or f"{self.id} has no paper calibration of its own",
        )

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
                "is required for privacy accounting: it is the privacy knob; /v1/calibrate computes it",
                "a positive number",
            )
        return value
