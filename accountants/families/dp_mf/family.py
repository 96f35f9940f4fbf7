"""The dp-mf family on the spine: its plan is the release of C·G + Z about one record (:mod:`.privacy`); rdp, tight,
best, calibration of the noise multiplier come from :class:`~accountants.planned.PlannedFamily`. What only dp-mf
adds: the strategy's sensitivity under the participation pattern and its wording."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...family import Card, Cost, Operation
from ...params import ParamsModel
from ...planned import Answered, Details, PlannedFamily
from ...plans import MechanismPlan
from ...registry import register
from ...reports import AccountantResult, Conventions, Noise
from . import text
from .params import ALGORITHM_ID, DpMfParams
from .privacy import mechanism_plan, release_of, spine_relation

CHEAP_DENSE_STEPS = 64
"""Up to this T a dense sensitivity takes well under a millisecond (T²·k element operations); beyond, the request
is heavy (its own process, with the time budget)."""
PAPER_REASON = (
    "dp-mf has no paper calibration of its own: the reductions it cites are accounted by the spine's accountants"
)
UTILITY_REASON = (
    "the error of the prefix sums depends on the decoder B (‖B‖ terms), which dp-mf does not take yet; a "
    "verification job measures it for the least-squares decoder against its exact expectation σ²‖B‖²_F/T"
)


@register
class DpMf(PlannedFamily[DpMfParams]):
    id = ALGORITHM_ID
    card = Card.load(__file__, ALGORITHM_ID)
    params_model = DpMfParams
    noise_fields = ("noise_multiplier", "noise_std")
    example_target_epsilon = 3.0
    utility_reason = UTILITY_REASON
    paper_reason = PAPER_REASON

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """The releases of C·G + Z about one record (:mod:`.privacy`), read under add-remove for zero-out."""
        p = self.parse(params)
        release = release_of(p)
        z = text.noise_multiplier(p, release)
        event, reserved = mechanism_plan(p, release, z, delta)
        return MechanismPlan(event, spine_relation(p), reserved, description=text.method(p, release))

    def cost(self, operation: Operation, params: Mapping[str, Any] | ParamsModel, accountant: str = "best") -> Cost:
        """Heavy wherever C's sensitivity needs its dense Gram matrix beyond a small T (:data:`CHEAP_DENSE_STEPS`):
        the service asks for the cost before it dispatches, so the cost must not compute it."""
        p = self.parse(params)
        if operation is not Operation.UTILITY and not p.structured and p.steps > CHEAP_DENSE_STEPS:
            return Cost.HEAVY
        return super().cost(operation, p, accountant)

    def knob_value(self, params: DpMfParams) -> float | None:
        """noise_multiplier, or noise_std over the sensitivity."""
        if params.noise_multiplier is None and params.noise_std is None:
            return None
        return text.noise_multiplier(params, release_of(params))

    def conventions(self, params: DpMfParams, plan: MechanismPlan) -> Conventions:
        return text.conventions(params, release_of(params))

    def noise(self, params: DpMfParams, value: float) -> Noise:
        return text.noise(params, release_of(params), value)

    def method(self, accountant: str, params: DpMfParams, plan: MechanismPlan) -> str | None:
        return text.method(params, release_of(params)) if accountant == "rdp" else None

    def extra_results(
        self, params: DpMfParams, plan: MechanismPlan, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        return [AccountantResult.not_applicable("paper", PAPER_REASON)]

    def extra_calibrations(
        self, params: DpMfParams, target: float, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        return [AccountantResult.not_applicable("paper", PAPER_REASON)]

    def details(self, params: DpMfParams, plan: MechanismPlan, answered: Answered) -> Details:
        return Details(warnings=text.notes(params, release_of(params)))
