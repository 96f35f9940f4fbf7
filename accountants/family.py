"""The one protocol: a family that compiles its hyperparameters to a mechanism plan gets privacy and calibration
from the spine.

A :class:`PlannedFamily` declares its privacy :class:`~accountants.plans.Knob` and implements :meth:`plan`: the
releases about one record as a :class:`~accountants.events.DpEvent` tree. The spine answers the rest:

* ``rdp``: :class:`~accountants.rdp.RdpAccountant` on the plan (improved conversion, order refined);
* ``tight``: exact where the plan is a tree of Gaussian releases (:mod:`accountants.gdp`); otherwise the family's
  :meth:`PlannedFamily.tight_reason`;
* ``best``: the smallest applicable answer (:func:`~accountants.reports.choose_accountant`);
* calibration: :func:`~accountants.calibration.calibrate_rdp` over the knob for ``rdp``, the generic one-sided root
  finder :func:`~accountants.calibration.calibrate` for ``tight``.

What only the family knows stays with it: :meth:`plan`, :meth:`conventions` (its wording), :meth:`noise` (units),
:meth:`utility`. A new algorithm is one such class decorated with :func:`~accountants.registry.register`.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from . import gdp
from . import validation as check
from .calibration import calibrate, calibrate_rdp
from .conversions import Conversion, order_grid
from .errors import CalibrationError, ParameterError
from .params import ParamsModel
from .plans import NOISE_MULTIPLIER, Knob, MechanismPlan
from .rdp import RdpAccountant
from .registry import AlgorithmFamily, Cost, Operation
from .reports import (
    AccountantResult,
    CalibrationReport,
    Conventions,
    Noise,
    PrivacyReport,
    RdpCurve,
    UtilityReport,
    choose_accountant,
    not_asked,
)

RDP_METHOD = "Rényi curve of the mechanism plan (generic RDP accountant), improved conversion (Balle et al. 2020)"
TIGHT_METHOD = "Gaussian DP of the plan's Gaussian releases, μ = (Σ z⁻²)^½, exact conversion (Balle & Wang 2018)"


class PlannedFamily(AlgorithmFamily):
    """A family whose privacy is that of its :meth:`plan`; subclasses add wording and utility."""

    knob: ClassVar[Knob] = NOISE_MULTIPLIER
    accountants: ClassVar[tuple[str, ...]] = ("rdp", "tight")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.noise_fields = (cls.knob.field,)
        cls.calibrated_parameter = cls.knob.field

    # -- what the family supplies ------------------------------------------------------------------------------

    @abstractmethod
    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """The releases about one record at these hyperparameters (the knob included) and δ."""

    @abstractmethod
    def conventions(self, params: ParamsModel, plan: MechanismPlan) -> Conventions:
        """Neighbouring relation, step count, sampling and the knob's definition, in the family's words."""

    def noise(self, params: ParamsModel, value: float) -> Noise | None:
        """The noise in both units at knob ``value`` (None where the knob is not a noise scale)."""
        return None

    def tight_reason(self, plan: MechanismPlan) -> str:
        """Why ``tight`` does not apply to a plan that is not a tree of Gaussian releases."""
        return "the plan is not a composition of Gaussian releases; no tight accountant reads it: rdp applies"

    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        self.parse(params)
        return UtilityReport(self.id, (), f"{self.id} states no utility theorem")

    # -- what the spine answers --------------------------------------------------------------------------------

    def cost(self, operation: Operation, params: Mapping[str, Any] | ParamsModel, accountant: str = "best") -> Cost:
        """Cheap: Rényi curves and Gaussian-DP closed forms."""
        self.parse(params)
        return Cost.CHEAP

    def _privacy(
        self,
        params: Mapping[str, Any] | ParamsModel,
        delta: float,
        accountant: str,
        orders: Sequence[float] | np.ndarray | None,
        refine: bool,
    ) -> PrivacyReport:
        p = self.parse(params)
        self.check_accountant(accountant)
        d = check.delta("delta", delta)
        value = self._knob_value(p)
        plan = self.plan(p, d)
        accounted = plan.accounted_delta(d)
        conversion = RdpAccountant(plan.neighbouring).epsilon(plan.event, accounted, order_grid(orders), refine)
        if not math.isfinite(conversion.value):
            raise ParameterError.single(self.knob.field, "gives no finite ε bound at this δ", "more privacy")
        results = [self._rdp_result(conversion), self._tight(plan, accounted, accountant)]
        chosen = choose_accountant(results, accountant, supported=self.supported_accountants())
        return PrivacyReport(
            algorithm=self.id,
            epsilon=float(chosen.epsilon),  # type: ignore[arg-type]  # chosen results are applicable: ε is set
            delta=d,
            accountant=chosen.name,
            optimal_order=conversion.optimal_order,
            rdp=_curve(conversion),
            accountants=tuple(results),
            noise=self.noise(p, value),
            conventions=self.conventions(p, plan),
            warnings=conversion.warnings,
        )

    def _calibrate(
        self,
        params: Mapping[str, Any] | ParamsModel,
        target_epsilon: float,
        delta: float,
        accountant: str,
        orders: Sequence[float] | np.ndarray | None,
    ) -> CalibrationReport:
        p = self.parse(params)
        self.check_accountant(accountant)
        target = check.positive("target_epsilon", target_epsilon)
        d = check.delta("delta", delta)
        grid = order_grid(orders)
        plan_at = self._plan_at(p, d)
        accounted = plan_at(1.0).accounted_delta(d)
        found = calibrate_rdp(
            lambda noise: RdpAccountant(plan_at(noise).neighbouring).curve(plan_at(noise).event),
            accounted,
            target,
            orders=grid,
            parameter=self.knob.field,
        )
        rdp = self._rdp_result(found.conversion, self.knob.from_noise(found.noise))
        tight = not_asked() if accountant == "rdp" else self._tight_calibration(plan_at, accounted, target)
        chosen = choose_accountant(
            [rdp, tight], accountant, key="calibrated_value", largest=not self.knob.larger_is_more_private
        )
        value = float(chosen.calibrated_value)  # type: ignore[arg-type]  # set on every applicable result
        plan = plan_at(self.knob.as_noise(value))
        conversion = RdpAccountant(plan.neighbouring).epsilon(plan.event, accounted, grid)
        noise = self.noise(p, value)
        return CalibrationReport(
            algorithm=self.id,
            target_epsilon=target,
            delta=d,
            noise_multiplier=value if self.knob.field == "noise_multiplier" else None,
            noise_std=None if noise is None else noise.noise_std,
            epsilon=float(chosen.epsilon),  # type: ignore[arg-type]  # set on every applicable result
            accountant=chosen.name,
            optimal_order=conversion.optimal_order,
            rdp=_curve(conversion),
            accountants=(rdp, tight),
            noise=noise,
            conventions=self.conventions(p, plan),
            utility=None,
            utility_reason=f"{self.id} states no utility theorem",
            paper=None,
            paper_reason=f"{self.id} has no paper calibration of its own",
            calibrated_parameter=self.knob.field,
            calibrated_value=value,
            warnings=conversion.warnings,
        )

    # -- helpers -----------------------------------------------------------------------------------------------

    def _knob_value(self, p: ParamsModel) -> float:
        value = getattr(p, self.knob.field)
        if value is None:
            raise ParameterError.single(
                self.knob.field,
                "is required for privacy accounting: it is the privacy knob; /v1/calibrate computes it",
                "a positive number",
            )
        return float(value)

    def _plan_at(self, p: ParamsModel, delta: float) -> Any:
        """The plan as a function of the knob on its noise scale (larger is more private)."""

        def plan_at(noise: float) -> MechanismPlan:
            return self.plan(p.model_copy(update={self.knob.field: self.knob.from_noise(noise)}), delta)

        return plan_at

    def _rdp_result(self, conversion: Conversion, calibrated: float | None = None) -> AccountantResult:
        return AccountantResult(
            "rdp",
            True,
            conversion.value,
            "certified upper bound",
            RDP_METHOD,
            optimal_order=conversion.optimal_order,
            calibrated_value=calibrated,
        )

    def _tight(self, plan: MechanismPlan, delta: float, accountant: str) -> AccountantResult:
        if accountant == "rdp":
            return not_asked()
        if not gdp.is_gaussian(plan.event):
            return AccountantResult("tight", False, reason=self.tight_reason(plan))
        return AccountantResult("tight", True, gdp.epsilon(plan.event, delta), "exact", TIGHT_METHOD)

    def _tight_calibration(self, plan_at: Any, delta: float, target: float) -> AccountantResult:
        if not gdp.is_gaussian(plan_at(1.0).event):
            return AccountantResult("tight", False, reason=self.tight_reason(plan_at(1.0)))
        try:
            found = calibrate(lambda noise: gdp.epsilon(plan_at(noise).event, delta), target, parameter=self.knob.field)
        except CalibrationError as error:
            return AccountantResult("tight", False, reason=str(error))
        value = self.knob.from_noise(found.noise)
        return AccountantResult("tight", True, found.epsilon, "exact", TIGHT_METHOD, calibrated_value=value)


def _curve(conversion: Conversion) -> RdpCurve:
    eps = tuple(float(e) if math.isfinite(e) else None for e in conversion.rdp)
    return RdpCurve(tuple(float(a) for a in conversion.orders), eps)  # type: ignore[arg-type]  # None: infinite
