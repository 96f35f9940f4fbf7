"""The phased-output-perturbation family on the spine: its plan is the c Gaussian releases one record influences
(replace-one, z = σ_k/Δ_k) with the solver's failure probability spent outside them, so rdp (exact over real
orders), tight (exact Gaussian DP) and their calibrations come from :class:`~accountants.planned.PlannedFamily`. What
only this family adds: the paper's printed calibration (an accountant, ``paper``, in its regime), the releases with
their solver accuracies, the utility theorems at the calibrated noise and the recommended hyperparameters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import FieldIssue, ParameterError
from ...events import GaussianEvent, SelfComposedEvent
from ...family import Card
from ...params import NOISE_MULTIPLIER_RANGE, ParamsModel
from ...planned import Answered, CalibrationDetails, Details, PlannedFamily
from ...plans import MechanismPlan
from ...registry import register
from ...reports import AccountantResult, Conventions, Noise, UtilityReport
from .calibration import Target, applied, paper_calibration, paper_row, recommendations, under_noised
from .params import ALGORITHM_ID, SOURCE, PhasedOutputPerturbationParams
from .plan import mechanism
from .privacy import (
    RDP_METHOD,
    TIGHT_METHOD,
    check_target_delta,
    paper_failure_probability,
    paper_result,
    releases_per_record,
    solver_failure,
)
from .text import release_objects, stated_conventions, stated_noise, stated_warnings
from .utility import utility_bounds

_METHODS = {"rdp": RDP_METHOD, "tight": TIGHT_METHOD}


@register
class PhasedOutputPerturbation(PlannedFamily[PhasedOutputPerturbationParams]):
    id = ALGORITHM_ID
    card = Card.load(__file__, ALGORITHM_ID, SOURCE=SOURCE)
    params_model = PhasedOutputPerturbationParams
    accountants = ("paper",)

    # -- privacy -------------------------------------------------------------------------------------------------

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """The c Gaussian releases one record influences (replace-one, z = σ_k/Δ_k), with the solver's failure
        probability δ_fail spent outside them (union bound over the solver runs); ``target_delta``, where given,
        must be δ."""
        p = self.parse(params)
        check_target_delta(p, delta)
        z = p.noise_multiplier if p.noise_multiplier is not None else 1.0
        _, delta_fail, _ = solver_failure(p, delta)
        event = SelfComposedEvent(GaussianEvent(z), releases_per_record(p.problem_class))
        return MechanismPlan(event, "replace-one", reserved_delta=delta_fail)

    def conventions(self, params: PhasedOutputPerturbationParams, plan: MechanismPlan) -> Conventions:
        return stated_conventions(mechanism(params, params.given_noise_multiplier))

    def noise(self, params: PhasedOutputPerturbationParams, value: float) -> Noise:
        return stated_noise(mechanism(params, value))

    def method(self, accountant: str, params: PhasedOutputPerturbationParams, plan: MechanismPlan) -> str | None:
        return _METHODS.get(accountant)

    def extra_results(
        self,
        params: PhasedOutputPerturbationParams,
        plan: MechanismPlan,
        delta: float,
        spine: Sequence[AccountantResult],
    ) -> Sequence[AccountantResult]:
        """The paper's statement at this noise, in its regime."""
        probability, _, _ = solver_failure(params, delta)
        return [paper_result(params, params.given_noise_multiplier, delta, probability)]

    def extra_calibrations(
        self, params: PhasedOutputPerturbationParams, target: float, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        """The paper's printed noise for the target, in its regime."""
        return [paper_row(Target(params, target, delta))]

    def details(self, params: PhasedOutputPerturbationParams, plan: MechanismPlan, answered: Answered) -> Details:
        """The releases with their solver accuracies, and the warnings (δ_fail, the paper's regime)."""
        delta = answered.delta
        probability, _, default = solver_failure(params, delta)
        mech = mechanism(params, params.given_noise_multiplier)
        warnings = stated_warnings(params, mech, delta, probability, default)
        paper = answered.row("paper")
        if paper is not None and not paper.applicable:
            warnings.append(f"paper accountant not applicable: {paper.reason}")
        releases = release_objects(mech, probability, paper_failure_probability(params.problem_class, delta))
        return Details(warnings, releases=releases)

    def calibration_details(
        self, at: PhasedOutputPerturbationParams, plan: MechanismPlan, answered: Answered
    ) -> CalibrationDetails:
        """The utility theorems at the calibrated noise, the paper's printed calibration beside the tight one, and
        the hyperparameters the answer used or recommends."""
        assert answered.target is not None  # a calibration's
        target, delta = answered.target, answered.delta
        aim = Target(at, target, delta)
        tight = answered.row("tight")  # computed where the request asked for it; else on its own
        if tight is None or not tight.applicable:
            tight = self.calibrated_by("tight", at, target, delta)
        z_tight = tight.calibrated_value if tight.calibrated_value is not None else at.given_noise_multiplier
        mech = mechanism(at, at.given_noise_multiplier)
        utility = UtilityReport(self.id, utility_bounds(at, mech, delta), None, applied(at, mech))
        paper = paper_calibration(aim, z_tight, self._certified_for_paper(aim))
        recommended = recommendations(aim, mech, z_tight, answered.chosen.name == "paper")
        return CalibrationDetails(utility, paper, recommended, under_noised(paper, target))

    def _certified_for_paper(self, aim: Target) -> float | None:
        """What the tight accountant certifies at the paper's printed noise (None where it prints none)."""
        z = aim.paper_noise
        if z is None:
            return None
        return self.spine_answers(aim.params.model_copy(update={"noise_multiplier": z}), aim.delta)["tight"].epsilon

    # -- utility -------------------------------------------------------------------------------------------------

    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        p = self.parse(params)
        issues = []
        if p.noise_multiplier is None:
            issues.append(
                FieldIssue(
                    ("noise_multiplier",),
                    "is required for the utility bounds (σ_k = z·Δ_k); /v1/calibrate computes it",
                    f"a finite number in [{NOISE_MULTIPLIER_RANGE[0]:g}, {NOISE_MULTIPLIER_RANGE[1]:g}]",
                )
            )
        if p.target_delta is None:
            issues.append(
                FieldIssue(
                    ("target_delta",),
                    "is required for the utility bounds (the theorems and the paper's solver accuracy depend on δ)",
                    "a probability in (0, 1)",
                )
            )
        if issues:
            raise ParameterError(issues)
        mech = mechanism(p, p.given_noise_multiplier)
        assert p.target_delta is not None  # checked above
        return UtilityReport(self.id, utility_bounds(p, mech, p.target_delta), None, applied(p, mech))
