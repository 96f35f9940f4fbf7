"""The ``private-mirror-descent`` family on the spine: its plan is k vertex samples, each ε₀-DP with bounded range,
adaptively composed, so rdp, tight, best and the calibration of the stepsize (the knob; smaller is more private)
come from :class:`~accountants.planned.PlannedFamily`. What only this family adds: the paper's statement and
stepsize rule (Corollary 3.6, an accountant in its regime), every bound with its curve, the releases, and the
utility theorems and recommended parameters at the calibrated stepsize."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...family import Card
from ...params import ParamsModel
from ...plan_accounting import asks
from ...planned import Answered, CalibrationDetails, Details, PlannedFamily
from ...plans import MechanismPlan
from ...registry import register
from ...reports import AccountantResult, Conventions, UtilityReport
from .params import ALGORITHM_ID, SOURCE, PrivateMirrorDescentParams
from .plan import schedule
from .privacy import (
    STEPSIZE,
    Reading,
    mechanism_plan,
    paper_calibration,
    paper_calibration_row,
    paper_epsilon,
    paper_row,
    paper_stepsize,
    rdp_labels,
)
from .text import bound_results, stated_conventions, stated_releases, stated_warnings
from .utility import recommendations_for, utility_report


@register
class PrivateMirrorDescent(PlannedFamily[PrivateMirrorDescentParams]):
    id = ALGORITHM_ID
    card = Card.load(__file__, ALGORITHM_ID, SOURCE=SOURCE)
    params_model = PrivateMirrorDescentParams
    knob = STEPSIZE
    accountants = ("paper",)

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """k vertex samples, each ε₀-DP with bounded range (range ratio)·ε₀, adaptively composed (replace-one
        neighbours of fixed size n, González, Guzmán & Paquette 2024, §1.3); with k = 0 nothing depends on the
        data."""
        p = self.parse(params)
        return mechanism_plan(schedule(p), p.stepsize if p.stepsize is not None else 1.0)

    def conventions(self, params: PrivateMirrorDescentParams, plan: MechanismPlan) -> Conventions:
        return stated_conventions(schedule(params))

    def curve_bounds(
        self, params: PrivateMirrorDescentParams, plan: MechanismPlan, orders: np.ndarray
    ) -> tuple[str, ...]:
        """Bounded-range zCDP or the exact RDP of ε₀-DP, whichever is smaller at each order."""
        return rdp_labels(schedule(params), _stepsize(params), orders)

    def extra_results(
        self, params: PrivateMirrorDescentParams, plan: MechanismPlan, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        return [paper_row(schedule(params), _stepsize(params), delta)]

    def extra_calibrations(
        self, params: PrivateMirrorDescentParams, target: float, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        return [paper_calibration_row(schedule(params), target, delta)]

    def details(self, params: PrivateMirrorDescentParams, plan: MechanismPlan, answered: Answered) -> Details:
        """Every bound with its curve, the releases and the warnings, at the stepsize answered (in a calibration,
        the accountants again at the calibrated stepsize, as the request asked)."""
        sched, eta, delta = schedule(params), _stepsize(params), answered.delta
        rows = {r.name: r for r in answered.results}
        if answered.target is not None:
            rows = self.spine_answers(params, delta, _spine_request(answered.accountant))
        assert answered.curve is not None  # the rdp accountant reads every plan of this family
        reading = Reading.of(rows, answered.curve, paper_epsilon(sched, eta, delta), delta)
        return Details(
            stated_warnings(params, sched, reading, delta),
            bound_results(sched, eta, delta, reading, answered.chosen.name),
            stated_releases(sched, eta),
        )

    def calibration_details(
        self, at: PrivateMirrorDescentParams, plan: MechanismPlan, answered: Answered
    ) -> CalibrationDetails:
        """The utility theorems and recommended parameters at the calibrated stepsize, and the paper's rule with
        what the accountants certify at the stepsize it prescribes."""
        assert answered.target is not None  # a calibration's
        sched, eta, target, delta = schedule(at), _stepsize(at), answered.target, answered.delta
        prescribed = at.model_copy(update={"stepsize": paper_stepsize(sched, target, delta)})
        rows = self.spine_answers(prescribed, delta, _spine_request(answered.accountant))
        recommended = recommendations_for(at, sched, eta, target, delta)
        return CalibrationDetails(
            utility_report(at, sched, eta, target, delta, recommended),
            paper_calibration(sched, target, delta, rows),
            recommended,
        )

    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        p = self.parse(params)
        return utility_report(p, schedule(p), p.stepsize, None, None, [])


def _stepsize(params: PrivateMirrorDescentParams) -> float:
    assert params.stepsize is not None  # the spine checks the knob before any answer
    return params.stepsize


def _spine_request(accountant: str) -> str:
    """What the spine computes for a request for ``accountant``: the tight accountant where it was asked (by name or
    by best), rdp always."""
    return "best" if asks(accountant, "tight") else "rdp"
