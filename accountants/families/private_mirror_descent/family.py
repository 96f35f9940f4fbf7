"""The ``private-mirror-descent`` family: parameters, plan, privacy, calibration and utility behind the registry's
protocol."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import CalibrationError
from ...family import AlgorithmFamily, CalibrationQuery, Card, Cost, Operation, PrivacyQuery
from ...params import ParamsModel
from ...plans import MechanismPlan
from ...registry import register
from ...reports import Accounted, CalibrationReport, PrivacyReport, UtilityReport, choose_accountant
from .params import ALGORITHM_ID, SOURCE, PrivateMirrorDescentParams
from .plan import schedule
from .privacy import account, calibrations, finite_order, mechanism_plan, paper_calibration
from .text import (
    accountant_results,
    bound_results,
    given_stepsize,
    stated_conventions,
    stated_curve,
    stated_releases,
    stated_warnings,
)
from .utility import recommendations_for, utility_report

# -- the family -------------------------------------------------------------------------------------------------------


@register
class PrivateMirrorDescent(AlgorithmFamily[PrivateMirrorDescentParams]):
    id = ALGORITHM_ID
    card = Card.load(__file__, ALGORITHM_ID, SOURCE=SOURCE)
    params_model = PrivateMirrorDescentParams
    accountants = ("rdp", "tight", "paper")
    calibrated_parameter = "stepsize"
    noise_fields = ("stepsize",)

    def cost(
        self,
        operation: Operation,
        params: Mapping[str, Any] | ParamsModel,
        accountant: str = "best",
    ) -> Cost:
        """Heavy for privacy and calibration with the tight accountant (``tight``, or ``best``, which needs its
        value): the PLD accountant composes blocks of the optimal bounded-range recursion (~0.1 s), and calibration
        searches over it. ``rdp`` and utility are cheap."""
        self.parse(params)
        asks_tight = operation is not Operation.UTILITY and accountant != "rdp"
        return Cost.HEAVY if asks_tight else Cost.CHEAP

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """k vertex samples, each ε₀-DP with bounded range (range ratio)·ε₀, adaptively composed (replace-one
        neighbours of fixed size n, González, Guzmán & Paquette 2024, §1.3); with k = 0 nothing depends on the data."""
        p = self.parse(params)
        return mechanism_plan(schedule(p), given_stepsize(p))

    # -- privacy ------------------------------------------------------------------------------------------------------

    def _privacy(self, query: PrivacyQuery[PrivateMirrorDescentParams]) -> PrivacyReport:
        p, d, grid, accountant, refine = query.params, query.delta, query.grid, query.accountant, query.refine
        eta = given_stepsize(p)
        sched = schedule(p)
        acc = account(sched, eta, d, grid, refine, tight=accountant != "rdp")
        results = accountant_results(sched, acc, d)
        chosen = choose_accountant(results, accountant, supported=self.supported_accountants())
        accounted = Accounted(tuple(results), chosen, d, finite_order(acc.rdp), stated_curve(sched, eta, acc.rdp))
        return accounted.privacy(
            self.id,
            None,
            stated_conventions(sched),
            warnings=tuple(stated_warnings(p, sched, acc, d)),
            bounds=tuple(bound_results(sched, eta, d, acc, chosen.name)),
            releases=tuple(stated_releases(sched, eta)),
        )

    # -- calibration --------------------------------------------------------------------------------------------------

    def _calibrate(self, query: CalibrationQuery[PrivateMirrorDescentParams]) -> CalibrationReport:
        p, target, d, grid, accountant = query.params, query.target_epsilon, query.delta, query.grid, query.accountant
        notes: list[str] = []
        sched = schedule(p)
        if sched.count == 0 and accountant != "paper":
            raise CalibrationError(
                "the target does not constrain the stepsize: with steps = 1 no released vertex depends on the data "
                "(the first samples come from the uniform start), so every stepsize gives ε = 0; use steps ≥ 2"
            )
        with_tight = accountant != "rdp"
        results = calibrations(sched, target, d, grid, with_tight)
        chosen = choose_accountant(
            results, accountant, key="calibrated_value", largest=True, supported=self.supported_accountants()
        )
        eta = chosen.calibrated_value
        assert eta is not None
        acc = account(sched, eta, d, grid, True, with_tight)
        recommended = recommendations_for(p, sched, eta, target, d)
        accounted = Accounted(tuple(results), chosen, d, finite_order(acc.rdp), stated_curve(sched, eta, acc.rdp))
        return accounted.calibration(
            self.id,
            None,
            stated_conventions(sched),
            target,
            eta,
            calibrated_parameter="stepsize",
            noise_std=None,
            utility=utility_report(p, sched, eta, target, d, recommended),
            paper=paper_calibration(sched, target, d, grid, with_tight),
            recommended=tuple(recommended),
            warnings=tuple(notes + stated_warnings(p, sched, acc, d)),
            bounds=tuple(bound_results(sched, eta, d, acc, chosen.name)),
            releases=tuple(stated_releases(sched, eta)),
        )

    # -- utility ------------------------------------------------------------------------------------------------------

    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        p = self.parse(params)
        return utility_report(p, schedule(p), p.stepsize, None, None, [])
