"""A family that compiles its hyperparameters to a mechanism plan gets privacy and calibration from the spine.

A :class:`PlannedFamily` declares its privacy :class:`~accountants.plans.Knob` and implements :meth:`plan`: the
releases about one record as a :class:`~accountants.events.DpEvent` tree. The spine answers the rest:

* ``rdp``: :class:`~accountants.rdp.RdpAccountant` on the plan (improved conversion, order refined);
* ``tight``: :mod:`accountants.tight`, exact where the plan is a tree of Gaussian releases, the certified PLD
  accountant where it reads the tree; otherwise not applicable with the family's :meth:`PlannedFamily.tight_reason`;
* ``best``: the smallest applicable answer (:func:`~accountants.reports.choose_accountant`);
* calibration: :func:`~accountants.calibration.calibrate_rdp` over the knob for ``rdp``, the generic one-sided root
  finder (GDP) or :func:`~accountants.pld.calibration.calibrate_pld` for ``tight``.

What only the family knows stays with it: :meth:`plan`, :meth:`conventions` (its wording), :meth:`noise` (units),
:meth:`utility`. A new algorithm is one such class decorated with :func:`~accountants.registry.register`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from . import gdp
from .errors import ParameterError
from .family import AlgorithmFamily, CalibrationQuery, Cost, Operation, P, PrivacyQuery
from .params import ParamsModel
from .plan_accounting import account_plan, calibrate_plan
from .plans import NOISE_MULTIPLIER, Knob, MechanismPlan
from .reports import (
    PLAN_ACCOUNTANTS,
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


class PlannedFamily(AlgorithmFamily[P]):
    """A family whose privacy is that of its :meth:`plan`; subclasses add wording and utility."""

    knob: ClassVar[Knob] = NOISE_MULTIPLIER
    accountants: ClassVar[tuple[str, ...]] = PLAN_ACCOUNTANTS

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
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

    def tight_reason(self, plan: MechanismPlan) -> str | None:
        """The family's words for why ``tight`` may not apply to its plan, put before the spine's reason where it
        does not (None: the spine's reason alone)."""
        return None

    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        self.parse(params)
        return UtilityReport(self.id, (), f"{self.id} states no utility theorem")

    # -- what the spine answers --------------------------------------------------------------------------------

    def cost(self, operation: Operation, params: Mapping[str, Any] | ParamsModel, accountant: str = "best") -> Cost:
        """Cheap for Rényi curves and Gaussian-DP closed forms; heavy where ``tight`` (asked for, or needed by
        ``best``) reads a plan that is not all Gaussian with the PLD accountant."""
        p = self.parse(params)
        if operation is Operation.UTILITY or accountant not in ("best", "tight"):
            return Cost.CHEAP
        if getattr(p, self.knob.field, None) is None:
            p = p.model_copy(update={self.knob.field: self.knob.from_noise(1.0)})
        return Cost.CHEAP if gdp.is_gaussian(self.plan(p, COST_DELTA).event) else Cost.HEAVY

    def _privacy(self, query: PrivacyQuery[P]) -> PrivacyReport:
        p, d = query.params, query.delta
        value = self._knob_value(p)
        plan = self.plan(p, d)
        answer = account_plan(plan, d, query.accountant, query.grid, query.refine, self.tight_reason(plan))
        if answer.conversion is not None and not any(r.applicable for r in answer.results):  # rdp gave ∞
            raise ParameterError.single(self.knob.field, "gives no finite ε bound at this δ", "more privacy")
        chosen = choose_accountant(answer.results, query.accountant, supported=self.supported_accountants())
        accounted = Accounted(answer.results, chosen, d, answer.optimal_order, answer.curve)
        return accounted.privacy(self.id, self.noise(p, value), self.conventions(p, plan), warnings=answer.warnings)

    def _calibrate(self, query: CalibrationQuery[P]) -> CalibrationReport:
        p, d, target, grid = query.params, query.delta, query.target_epsilon, query.grid

        def plan_at(noise: float) -> MechanismPlan:
            return self.plan(p.model_copy(update={self.knob.field: self.knob.from_noise(noise)}), d)

        results = calibrate_plan(plan_at, d, target, self.knob, query.accountant, grid, self.tight_reason(plan_at(1.0)))
        chosen = choose_accountant(
            results, query.accountant, key="calibrated_value", largest=not self.knob.larger_is_more_private
        )
        value = chosen.calibrated_value
        assert value is not None  # set on every applicable calibration result
        plan = plan_at(self.knob.as_noise(value))
        shown = account_plan(plan, d, "rdp", grid)
        accounted = Accounted(results, chosen, d, shown.optimal_order, shown.curve)
        return accounted.calibration(
            self.id,
            self.noise(p, value),
            self.conventions(p, plan),
            target,
            value,
            calibrated_parameter=self.knob.field,
            warnings=shown.warnings,
            utility_reason=f"{self.id} states no utility theorem",
            paper_reason=f"{self.id} has no paper calibration of its own",
        )

    def _knob_value(self, p: P) -> float:
        value = getattr(p, self.knob.field)
        if value is None:
            raise ParameterError.single(
                self.knob.field,
                "is required for privacy accounting: it is the privacy knob; /v1/calibrate computes it",
                "a positive number",
            )
        return float(value)
