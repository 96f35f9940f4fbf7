"""The dp-sgd family on the spine: its plan is the event tree of its steps (:func:`.privacy.mechanism`); rdp, tight,
best, calibration and ε over training come from :class:`~accountants.planned.PlannedFamily`. What only dp-sgd adds:
its wording, the ``paper`` row (no paper calibration of its own) and, for loaders without amplification, the Poisson
answer shown beside the certified one and marked not valid."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ...events import DpEvent
from ...family import Card
from ...params import ParamsModel
from ...planned import Answered, Details, EarlyStops, PlannedFamily
from ...plans import MechanismPlan
from ...registry import register
from ...reports import AccountantResult, Conventions, Noise
from . import text
from .params import (
    ALGORITHM_ID,
    WITHOUT_AMPLIFICATION,
    DpSgdParams,
    as_poisson,
    epochs_round_down,
    steps_and_rule,
)
from .privacy import (
    PAPER_REASON,
    UTILITY_REASON,
    mechanism,
    poisson_assumed,
    poisson_assumed_calibration,
    rdp_method,
)


@register
class DpSgd(PlannedFamily[DpSgdParams]):
    id = ALGORITHM_ID
    card = Card.load(__file__, ALGORITHM_ID)
    params_model = DpSgdParams
    noise_fields = ("noise_multiplier", "noise_std")
    example_target_epsilon = 3.0  # MNIST at ε = 3, the figure dp_accounting's and opacus' users compare with
    integer_knobs = MappingProxyType({"steps": ("epochs",), "epochs": ("steps",), "batch_size": ()})
    utility_reason = UTILITY_REASON
    paper_reason = PAPER_REASON

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """T subsampled Gaussian releases (Poisson or fixed-size batches) under the chosen neighbouring relation."""
        p = self.parse(params)
        steps, _ = steps_and_rule(p)
        return MechanismPlan(mechanism(p, text.noise_multiplier(p), steps), p.neighbouring, description=rdp_method(p))

    def knob_value(self, params: DpSgdParams) -> float | None:
        """noise_multiplier, or noise_std over the relation's sensitivity."""
        if params.noise_multiplier is None and params.noise_std is None:
            return None
        return text.noise_multiplier(params)

    def conventions(self, params: DpSgdParams, plan: MechanismPlan) -> Conventions:
        steps, rule = steps_and_rule(params)
        return text.conventions(params, steps, rule)

    def noise(self, params: DpSgdParams, value: float) -> Noise:
        return text.noise(params, value)

    def method(self, accountant: str, params: DpSgdParams, plan: MechanismPlan) -> str | None:
        return rdp_method(params) if accountant == "rdp" else None

    def extra_results(
        self, params: DpSgdParams, plan: MechanismPlan, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        """The paper row (no paper calibration of its own) and, for a loader without amplification, the Poisson ε
        it is often reported with (not valid for it)."""
        rows = [AccountantResult.not_applicable("paper", PAPER_REASON)]
        if params.sampling in WITHOUT_AMPLIFICATION:
            steps, _ = steps_and_rule(params)
            rows.append(poisson_assumed(params, text.noise_multiplier(params), delta, steps))
        return rows

    def extra_calibrations(
        self, params: DpSgdParams, target: float, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        """The paper row and, for a loader without amplification, the noise Poisson sampling would need (rdp; not
        valid for it), which the answer's note compares with."""
        rows = [AccountantResult.not_applicable("paper", PAPER_REASON)]
        if params.sampling in WITHOUT_AMPLIFICATION:
            poisson = as_poisson(params)
            rows.append(poisson_assumed_calibration(params, self.calibrated_by("rdp", poisson, target, delta)))
        return rows

    def details(self, params: DpSgdParams, plan: MechanismPlan, answered: Answered) -> Details:
        return Details(warnings=text.notes(params))

    def early_stops(self, params: DpSgdParams, plan: MechanismPlan) -> EarlyStops:
        """The run stopped after t steps is T = t (a prefix of the step tree; without amplification the release is
        per epoch begun, not per step, so the tree of t steps itself)."""
        steps, _ = steps_and_rule(params)
        per_epoch = float(params.steps_per_epoch)

        def epoch_steps() -> list[int]:
            rounding = math.floor if epochs_round_down(params) else math.ceil
            ends = [rounding(e * per_epoch) for e in range(1, math.ceil(steps / per_epoch) + 1)]
            return [t for t in ends if 1 <= t < steps] + [steps]

        def tree_of(t: int) -> DpEvent:
            return mechanism(params, text.noise_multiplier(params), t)

        without = params.sampling in WITHOUT_AMPLIFICATION  # releases per epoch begun (a cut epoch: the whole one)
        return EarlyStops(steps, tree_of if without else None, epoch_steps, lambda t: t / per_epoch)
