"""The phased-output-perturbation family behind the registry's protocol."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ... import gdp
from ...conversions import epsilon_for_linear_rdp
from ...errors import FieldIssue, ParameterError
from ...events import GaussianEvent, SelfComposedEvent
from ...family import AlgorithmFamily, CalibrationQuery, Card, PrivacyQuery
from ...params import NOISE_MULTIPLIER_RANGE, ParamsModel, resolve_noise_multiplier
from ...plan_accounting import with_reserved_delta
from ...plans import MechanismPlan
from ...registry import register
from ...reports import (
    AccountantResult,
    Accounted,
    CalibrationReport,
    PrivacyReport,
    RdpCurve,
    UtilityReport,
    choose_accountant,
)
from .calibration import (
    Target,
    applied,
    calibration_results,
    check_noise,
    paper_calibration,
    recommendations,
    tight_noise,
)
from .params import ALGORITHM_ID, SOURCE, PhasedOutputPerturbationParams
from .plan import mechanism
from .privacy import (
    RDP_METHOD,
    TIGHT_GUARANTEE,
    TIGHT_METHOD,
    check_target_delta,
    gdp_parameter,
    order,
    paper_failure_probability,
    paper_result,
    releases_per_record,
    solver_failure,
)
from .text import release_objects, stated_conventions, stated_noise, stated_warnings
from .utility import utility_bounds


@register
class PhasedOutputPerturbation(AlgorithmFamily[PhasedOutputPerturbationParams]):
    id = ALGORITHM_ID
    card = Card.load(__file__, ALGORITHM_ID, SOURCE=SOURCE)
    params_model = PhasedOutputPerturbationParams
    accountants = ("rdp", "tight", "paper")

    # -- privacy -------------------------------------------------------------------------------------------------

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """The c Gaussian releases one record influences (replace-one, z = σ_k/Δ_k), with the solver's failure
        probability δ_fail spent outside them (union bound over the solver runs)."""
        p = self.parse(params)
        z = resolve_noise_multiplier(p.noise_multiplier, None, 1.0)
        _, delta_fail, _ = solver_failure(p, delta)
        event = SelfComposedEvent(GaussianEvent(z), releases_per_record(p.problem_class))
        return MechanismPlan(event, "replace-one", reserved_delta=delta_fail)

    def _privacy(self, query: PrivacyQuery[PhasedOutputPerturbationParams]) -> PrivacyReport:
        p, d, grid, accountant = query.params, query.delta, query.grid, query.accountant
        check_target_delta(p, d)
        z = resolve_noise_multiplier(p.noise_multiplier, None, 1.0)
        probability, delta_fail, default = solver_failure(p, d)
        cls = p.problem_class
        count = releases_per_record(cls)
        gaussian_delta = d - delta_fail
        rho = count / (2.0 * z * z)
        rdp, alpha = epsilon_for_linear_rdp(rho, gaussian_delta)
        results = [
            AccountantResult.certified("rdp", rdp, RDP_METHOD, optimal_order=order(alpha)),
            with_reserved_delta(
                gdp.exact_result(gdp_parameter(cls, z), gaussian_delta, TIGHT_METHOD, guarantee=TIGHT_GUARANTEE),
                delta_fail,
            ),
            paper_result(p, z, d, probability),
        ]
        chosen = choose_accountant(results, accountant)
        mech = mechanism(p, z)
        warnings = stated_warnings(p, mech, d, probability, default)
        paper = results[2]
        if not paper.applicable:
            warnings.append(f"paper accountant not applicable: {paper.reason}")
        accounted = Accounted(
            tuple(results), chosen, d, order(alpha), RdpCurve(tuple(grid.tolist()), tuple((rho * grid).tolist()))
        )
        return accounted.privacy(
            self.id,
            stated_noise(mech),
            stated_conventions(mech),
            warnings=tuple(warnings),
            releases=release_objects(mech, probability, paper_failure_probability(cls, d)),
        )

    # -- calibration ---------------------------------------------------------------------------------------------

    def _calibrate(self, query: CalibrationQuery[PhasedOutputPerturbationParams]) -> CalibrationReport:
        p, d, grid = query.params, query.delta, query.grid
        check_target_delta(p, d)
        target = Target(p, query.target_epsilon, d)
        z_tight = tight_noise(target)
        results = calibration_results(target, z_tight)
        chosen = choose_accountant(results, query.accountant, key="noise_multiplier")
        z = chosen.noise_multiplier
        assert z is not None  # every applicable calibration result has its multiplier
        check_noise(z, target.epsilon)
        rho = releases_per_record(p.problem_class) / (2.0 * z * z)
        _, alpha = epsilon_for_linear_rdp(rho, target.gaussian_delta)
        mech = mechanism(p, z)
        fixed = p.model_copy(update={"noise_multiplier": z})
        utility = UtilityReport(self.id, utility_bounds(fixed, mech, d), None, applied(p, mech))
        paper = paper_calibration(target, z_tight)
        probability, _, default = target.failure
        warnings = stated_warnings(p, mech, d, probability, default)
        if not results[2].applicable:
            warnings.append(f"paper accountant not applicable: {results[2].reason}")
        if paper.epsilon_certified is not None and paper.epsilon_certified > target.epsilon:
            warnings.append(
                f"the paper's calibration under-noises: its noise certifies ε = {paper.epsilon_certified:.6g} > "
                f"{target.epsilon:g}"
            )
        curve = RdpCurve(tuple(grid.tolist()), tuple((rho * grid).tolist()))
        accounted = Accounted(tuple(results), chosen, d, order(alpha), curve)
        return accounted.calibration(
            self.id,
            stated_noise(mech),
            stated_conventions(mech),
            target.epsilon,
            z,
            noise_std=stated_noise(mech).noise_std,
            utility=utility,
            paper=paper,
            recommended=recommendations(target, mech, z_tight, chosen.name == "paper"),
            warnings=warnings,
            releases=release_objects(mech, probability, paper_failure_probability(p.problem_class, d)),
        )

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
