"""The phased-output-perturbation family behind the registry's protocol."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...conversions import epsilon_for_linear_rdp
from ...errors import CalibrationError, FieldIssue, ParameterError
from ...events import GaussianEvent, SelfComposedEvent
from ...family import AlgorithmFamily, CalibrationQuery, Card, PrivacyQuery
from ...mechanisms.gaussian import gaussian_noise_multiplier, gdp_epsilon
from ...params import NOISE_MULTIPLIER_RANGE, ParamsModel, resolve_noise_multiplier
from ...plans import MechanismPlan
from ...registry import register
from ...reports import (
    AccountantResult,
    Accounted,
    CalibrationReport,
    PaperCalibration,
    PrivacyReport,
    RdpCurve,
    Recommendation,
    UtilityReport,
    choose_accountant,
)
from .params import ALGORITHM, ALGORITHM_ID, PHASED, SOURCE, SPLIT, PhasedOutputPerturbationParams
from .plan import Mechanism, mechanism
from .privacy import (
    _RDP_METHOD,
    _TIGHT_METHOD,
    _check_target_delta,
    _order,
    _paper_result,
    _rdp_calibration,
    gdp_parameter,
    paper_epsilon_limit,
    paper_failure_probability,
    paper_noise_multiplier,
    releases_per_record,
    solver_failure,
)
from .text import _conventions, _noise, _release_objects, _warnings
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
        probability δ_fail spent outside them (spec §3.4)."""
        p: PhasedOutputPerturbationParams = self.parse(params)
        z = resolve_noise_multiplier(p.noise_multiplier, None, 1.0)
        _, delta_fail, _ = solver_failure(p, delta)
        event = SelfComposedEvent(GaussianEvent(z), releases_per_record(p.problem_class))
        return MechanismPlan(event, "replace-one", reserved_delta=delta_fail)

    def _privacy(self, query: PrivacyQuery[PhasedOutputPerturbationParams]) -> PrivacyReport:
        p, d, grid, accountant = query.params, query.delta, query.grid, query.accountant
        _check_target_delta(p, d)
        z = resolve_noise_multiplier(p.noise_multiplier, None, 1.0)
        probability, delta_fail, default = solver_failure(p, d)
        cls = p.problem_class
        count = releases_per_record(cls)
        gaussian_delta = d - delta_fail
        tight = gdp_epsilon(gdp_parameter(cls, z), gaussian_delta)
        rho = count / (2.0 * z * z)
        rdp, alpha = epsilon_for_linear_rdp(rho, gaussian_delta)
        results = [
            AccountantResult.certified("rdp", rdp, _RDP_METHOD, optimal_order=_order(alpha)),
            AccountantResult(
                "tight", True, tight, "exact for the Gaussian part; upper bound with δ_fail", _TIGHT_METHOD
            ),
            _paper_result(p, z, d, probability),
        ]
        chosen = choose_accountant(results, accountant)
        mech = mechanism(p, z)
        warnings = _warnings(p, mech, d, probability, default)
        paper = results[2]
        if not paper.applicable:
            warnings.append(f"paper accountant not applicable: {paper.reason}")
        accounted = Accounted(
            tuple(results), chosen, d, _order(alpha), RdpCurve(tuple(grid.tolist()), tuple((rho * grid).tolist()))
        )
        return accounted.privacy(
            self.id,
            _noise(mech),
            _conventions(mech),
            warnings=tuple(warnings),
            releases=_release_objects(mech, probability, paper_failure_probability(cls, d)),
        )

    # -- calibration ---------------------------------------------------------------------------------------------

    def _calibrate(self, query: CalibrationQuery[PhasedOutputPerturbationParams]) -> CalibrationReport:
        p, target, d, grid, accountant = query.params, query.target_epsilon, query.delta, query.grid, query.accountant
        _check_target_delta(p, d)
        notes: list[str] = []
        probability, delta_fail, default = solver_failure(p, d)
        cls = p.problem_class
        count = releases_per_record(cls)
        gaussian_delta = d - delta_fail

        z_tight = gaussian_noise_multiplier(target, gaussian_delta, count)
        if z_tight > NOISE_MULTIPLIER_RANGE[1]:  # every other accountant needs at least as much noise
            raise CalibrationError(
                f"target_epsilon={target:g} needs noise_multiplier {z_tight:.4g} > {NOISE_MULTIPLIER_RANGE[1]:g} even "
                "with the tight accountant, above the range dpcal accepts: raise the target or δ"
            )
        z_paper = paper_noise_multiplier(cls, target, d)
        results = [_rdp_calibration(target, gaussian_delta, count)]
        results += [
            AccountantResult(
                "tight",
                True,
                gdp_epsilon(gdp_parameter(cls, z_tight), gaussian_delta),
                "exact for the Gaussian part; upper bound with δ_fail",
                _TIGHT_METHOD,
                noise_multiplier=z_tight,
            ),
            _paper_result(p, z_paper, d, probability, target),
        ]
        chosen = choose_accountant(results, accountant, key="noise_multiplier")
        z = float(chosen.noise_multiplier)  # type: ignore[arg-type]
        if z > NOISE_MULTIPLIER_RANGE[1]:
            raise CalibrationError(
                f"target_epsilon={target:g} needs noise_multiplier {z:.4g} > {NOISE_MULTIPLIER_RANGE[1]:g}, above "
                "the range dpcal accepts: raise the target or δ"
            )
        rho = count / (2.0 * z * z)
        _, alpha = epsilon_for_linear_rdp(rho, gaussian_delta)
        mech = mechanism(p, z)
        fixed = p.model_copy(update={"noise_multiplier": z})
        utility = UtilityReport(self.id, utility_bounds(fixed, mech, d), None, _applied(p, mech))
        paper = self._paper_calibration(p, target, d, z_paper, z_tight, gaussian_delta)
        warnings = notes + _warnings(p, mech, d, probability, default)
        if not results[2].applicable:
            warnings.append(f"paper accountant not applicable: {results[2].reason}")
        if paper.epsilon_certified is not None and paper.epsilon_certified > target:
            warnings.append(
                f"the paper's calibration under-noises: its noise certifies ε = {paper.epsilon_certified:.6g} > "
                f"{target:g}"
            )
        recommended = (
            *_applied(p, mech),
            Recommendation(
                "noise_multiplier",
                z_paper,
                f"the paper's σ_k = z·Δ_k with z = {'2√(2 ln(5/δ))/ε' if cls in SPLIT else '√(2 ln(2.5/δ))/ε'} "
                f"({ALGORITHM[cls]}); the tight accountant needs {z_tight:.6g}",
                chosen.name == "paper",
            ),
        )
        if default:
            recommended += (
                Recommendation(
                    "solver_failure_probability",
                    probability,
                    f"the paper's p = {'δ/8' if cls in SPLIT else 'δ/4'} per solver run (spec §2); 0 with a "
                    "deterministic accuracy certificate",
                    True,
                ),
            )
        accounted = Accounted(
            tuple(results), chosen, d, _order(alpha), RdpCurve(tuple(grid.tolist()), tuple((rho * grid).tolist()))
        )
        return accounted.calibration(
            self.id,
            _noise(mech),
            _conventions(mech),
            target,
            z,
            noise_std=_noise(mech).noise_std,
            utility=utility,
            paper=paper,
            recommended=recommended,
            warnings=tuple(warnings),
            releases=_release_objects(mech, probability, paper_failure_probability(cls, d)),
        )

    def _paper_calibration(
        self,
        p: PhasedOutputPerturbationParams,
        target: float,
        delta: float,
        z_paper: float,
        z_tight: float,
        gaussian_delta: float,
    ) -> PaperCalibration:
        cls = p.problem_class
        certified = gdp_epsilon(gdp_parameter(cls, z_paper), gaussian_delta)
        limit = paper_epsilon_limit(cls)
        mech = mechanism(p, z_paper)
        first, last = mech.releases[0], mech.releases[-1]
        sigma_text = (
            f"σ = {first.noise_std:.6g}"
            if len(mech.releases) == 1
            else f"σ of {first.name} = {first.noise_std:.6g}, of {last.name} = {last.noise_std:.6g}"
        )
        regime = (
            f"in the paper's regime (ε {'≤ 2, ε/2 per release' if cls in SPLIT else '≤ 1'})"
            if target <= limit
            else f"outside the paper's regime: Def. 2 needs ε' ≤ 1, here ε' = {target / (2 if cls in SPLIT else 1):g}"
        )
        note = (
            f"{ALGORITHM[cls]}: z = {z_paper:.6g} ({sigma_text}); {regime}. The tight accountant certifies "
            f"ε = {certified:.6g} for it (with this run's δ_fail) and needs only z = {z_tight:.6g} "
            f"({z_paper / z_tight:.3g}× less noise)."
        )
        return PaperCalibration(
            f"{SOURCE}, {ALGORITHM[cls]} (printed σ, Def. 2)",
            z_paper,
            target,
            certified,
            "tight",
            bool(certified <= target),
            note,
        )

    # -- utility -------------------------------------------------------------------------------------------------

    def utility(self, params: Mapping[str, Any] | PhasedOutputPerturbationParams) -> UtilityReport:
        p: PhasedOutputPerturbationParams = self.parse(params)
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
        mech = mechanism(p, float(p.noise_multiplier))  # type: ignore[arg-type]
        return UtilityReport(self.id, utility_bounds(p, mech, float(p.target_delta)), None, _applied(p, mech))  # type: ignore[arg-type]


def _applied(p: PhasedOutputPerturbationParams, mech: Mechanism) -> tuple[Recommendation, ...]:
    out: list[Recommendation] = []
    if p.problem_class in PHASED:
        if p.phases is None:
            out.append(Recommendation("phases", mech.phases, "K = ⌈log₂ n⌉ (the paper's log n, spec §6.1)", True))
        if p.regularization is None:
            rule = {
                "convex": "μ = (L/D)·max{1/√n, 14K√(d ln(2.5/δ))/(nε)} (Theorem 3.7)",
                "c-c": "μ = (L/D)·max{2/√n, 13K√(d ln(5/δ))/(nε)}, d = max{d_x, d_y} (Theorem 4.8)",
                "c-sc": "μ = 3(L/D)·max{1/√n, 4K√(d_x ln(2.5/δ))/(nε)} (Corollary 4.9)",
            }[p.problem_class]
            out.append(
                Recommendation(
                    "regularization",
                    float(mech.regularization),  # type: ignore[arg-type]
                    f"{rule}, at the ε the paper attaches to this noise multiplier",
                    True,
                )
            )
    return tuple(out)
