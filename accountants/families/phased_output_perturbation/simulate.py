"""Verification jobs for phased output perturbation (synthetic problems E1–E5): quadratic problems solved exactly, the
releases simulated, utility measured against the prediction and the releases audited."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Literal

import numpy as np

from ...errors import FieldIssue, ParameterError
from ...mechanisms.gaussian import gdp_epsilon
from ...params import ParamsModel, param
from ...verification import BlockResult, Job, JobPlan, Simulator, register_simulator
from .params import ALGORITHM_ID, CONSTANT_RANGE, PHASED, PhasedOutputPerturbationParams
from .plan import Mechanism, certified_accuracy, mechanism
from .privacy import gdp_parameter, paper_failure_probability, releases_per_record
from .utility import predicted_bound

# -- simulation (verification jobs, problems E1–E5) --------------------------------------------------------------------

MAX_SIM_RECORDS = 100_000
MAX_SIM_DIMENSION = 50
AUDIT_SETUP_BUDGET = 5e7
"""Work the plan may spend on the audit's exact phase-1 solutions (the plan must stay cheap)."""
ITERATION_OVERHEAD = 2500.0
"""Work units per vectorised solver iteration per block of trials (the fixed cost of its numpy calls)."""


class PhasedOutputPerturbationProblem(ParamsModel):
    """The synthetic problem of a phased-output-perturbation verification job (built from the declared constants)."""

    audit_solver: Literal["worst-case", "exact"] = param(example="worst-case", default="worst-case")
    """Base solver of the privacy audit. worst-case (default): a compliant solver that returns the exact solution moved
    by the full accuracy the privacy proof allows, away from the neighbour's output (the guarantee must hold for
    every compliant solver; this one makes the audit strongest). exact: the exact solution."""


_MEASURED = MappingProxyType(
    {
        "strongly-convex": "excess population risk F(x̃) − F(x*) = (μ/2)‖x̃‖² (E1)",
        "convex": "excess population risk of Π_𝒳(x̃_K): ½(Π_𝒳(x̃_K) − θ)ᵀΣ(Π_𝒳(x̃_K) − θ) (E2; least squares is "
        "L-Lipschitz on 𝒳 only, so the projected output, a post-processing, is measured)",
        "sc-sc": "population strong duality gap of (x̃, ỹ), unconstrained max/min (E3)",
        "c-c": "population strong duality gap of (x̃_K, ỹ_K) over the balls (E4; ≥ the weak gap bounded)",
        "c-sc": "primal excess Φ(x̃_K) − Φ(x*), Φ(x) = max_y F(x, y) (E5; ≥ the primal gap bounded)",
    }
)


def _simulable(p: PhasedOutputPerturbationParams) -> None:
    """The limits of the synthetic problems (each a 422 naming the field)."""
    issues = []
    if p.dataset_size > MAX_SIM_RECORDS:
        issues.append(
            FieldIssue(
                ("dataset_size",),
                f"verification jobs simulate at most {MAX_SIM_RECORDS} records",
                f"an integer in [1, {MAX_SIM_RECORDS}]",
                p.dataset_size,
            )
        )
    for name in ("dimension", "dimension_x", "dimension_y"):
        value = getattr(p, name)
        if value is not None and value > MAX_SIM_DIMENSION:
            issues.append(
                FieldIssue(
                    (name,),
                    f"verification jobs simulate at most {MAX_SIM_DIMENSION} coordinates",
                    f"an integer in [1, {MAX_SIM_DIMENSION}]",
                    value,
                )
            )
    cls = p.problem_class
    if cls in ("convex", "c-c") and p.smoothness == 0.0:
        issues.append(
            FieldIssue(
                ("smoothness",),
                f"the synthetic {cls} problem has curvature (least squares / bilinear coupling): it needs ℓ > 0",
                f"a finite number in (0, {CONSTANT_RANGE[1]:g}], or omit it",
                p.smoothness,
            )
        )
    if cls == "c-sc":
        from ...synthetic.output_perturbation import csc_scale_exists

        if not csc_scale_exists(p.lipschitz, p.mu_y, p.given_diameter):
            issues.append(
                FieldIssue(
                    ("lipschitz",),
                    "the synthetic c-sc problem needs L > μ_y·D: on a ball of radius D the −(μ_y/2)‖y‖² term alone "
                    "has gradient up to μ_y·D",
                    f"> strong_convexity_y·diameter = {p.mu_y * p.given_diameter:.6g}",
                    p.lipschitz,
                )
            )
        if p.smoothness is not None and p.smoothness <= p.mu_y:
            issues.append(
                FieldIssue(
                    ("smoothness",),
                    "the synthetic c-sc problem couples x and y: it needs ℓ > μ_y",
                    f"> strong_convexity_y = {p.mu_y:g}, or omit it",
                    p.smoothness,
                )
            )
    if issues:
        raise ParameterError(issues)


class PhasedOutputPerturbationSimulator(Simulator[PhasedOutputPerturbationParams, PhasedOutputPerturbationProblem]):
    """Zhang, Thekumparampil, Oh & He 2022's algorithms on the synthetic problems E1–E5
    (:mod:`accountants.synthetic.output_perturbation`).

    Utility: fresh data sets from the population per trial, the exact (E1–E3) or certified (E4, E5: proximal
    extragradient stopped by the a-posteriori certificate at the paper's 2γ level) phase solutions, the noise σ_k of
    the plan, and the closed-form population measure. The prediction is the smallest applicable explicit bound on it
    (the proof's exact sum). Audit: a fixed pair D, D′ differing in the first record; the score is the log-likelihood
    ratio of the releases that see it (phase 1: every later phase is post-processing), the most powerful test, and the
    exact ε of the simulated pair is the analytic Gaussian's.
    """

    problem_model = PhasedOutputPerturbationProblem
    seconds_per_operation: ClassVar[Mapping[str, float]] = {"utility": 2.3e-09, "privacy-audit": 1e-09}
    """Measured by ``python benchmarks/jobs.py --calibrate`` (the example job, one process)."""

    def plan(self, job: Job[PhasedOutputPerturbationParams, PhasedOutputPerturbationProblem]) -> JobPlan:
        from ...synthetic import output_perturbation as synthetic

        p, pr, delta, trials, seed = job.params, job.problem, job.delta, job.trials, job.seed
        _simulable(p)
        report = job.privacy()
        z = report.required_noise.noise_multiplier
        cls = p.problem_class
        mech = mechanism(p, z)
        built = synthetic.build(cls, _constants(p), seed)
        ell_b = float(np.linalg.norm(np.array(built["a"]), 2)) if "a" in built else 0.0
        phases, iterations, clamped = _phases(p, mech, built, paper_failure_probability(cls, delta), ell_b)
        resolved: dict[str, Any] = built | {
            "problem_class": cls,
            "records": p.dataset_size,
            "dimension": p.d_x,
            "block": mech.block_size,
            "phases": phases,
            "regularization": mech.regularization,
            "mu_x": _constants(p)["mu_x"],
            "mu_y": _constants(p)["mu_y"],
            "audit_solver": pr.audit_solver,
        }
        work_utility, work_audit, setup = _work(cls, p, mech, resolved, trials, iterations, ell_b)
        work = {"utility": work_utility, "privacy-audit": work_audit + setup}

        exact, exact_note = None, None
        if job.audit:
            exact, found = _audit_setup(p, pr, mech, resolved, setup, ell_b, delta, seed)
            exact_note = (
                f"{found} (the accountant's μ = {gdp_parameter(cls, z):.6g}); deterministic solver, so no δ_fail; "
                f"{pr.audit_solver} base solver"
            )

        prediction = source = note = None
        if job.utility:
            prediction, source = predicted_bound(p, mech, delta)
            note = _prediction_note(cls, resolved, mech, clamped)
        return job.plan(
            report,
            params=p.model_dump() | {"noise_multiplier": z},
            problem=resolved,
            epsilon_exact=exact,
            exact_note=exact_note,
            utility_measure=_MEASURED[cls],
            predicted_bound=prediction,
            predicted_source=source,
            prediction_note=note,
            audit_method=(
                "distinguishing record: the first record (block 1), replaced by a compliant one; score: log-likelihood "
                "ratio of the phase-1 release(s) that see it (most powerful test for these Gaussians)"
            ),
            work=work,
        )

    def run_block(self, plan: JobPlan, rng: np.random.Generator, trials: int) -> BlockResult:
        from ...synthetic import output_perturbation as synthetic

        problem = plan.problem
        result: dict[str, np.ndarray] = {}
        if "privacy-audit" in plan.checks:
            result["score_in"], result["score_out"] = synthetic.audit_scores(problem["audit"], rng, trials)
        if "utility" in plan.checks:
            result["utility"] = synthetic.run_utility(problem["problem_class"], problem, problem["phases"], rng, trials)
        return BlockResult(**result)


def _phases(
    p: PhasedOutputPerturbationParams, mech: Mechanism, built: dict[str, Any], probability: float, ell_b: float
) -> tuple[list[dict[str, Any]], int, bool]:
    """Each phase's release as simulated (and, for the minimax phases, the extragradient tolerance and cap); the
    total iterations; whether a tolerance was clamped at floating-point resolution."""
    from ...synthetic import output_perturbation as synthetic

    cls = p.problem_class
    radius = float(built.get("radius", 1.0))
    phases, iterations, clamped = [], 0, False
    for r in mech.releases:
        phase: dict[str, Any] = {
            "algorithm": r.algorithm,
            "mu_k": r.mu_k,
            "sigma": r.noise_std,
            "accuracy": r.accuracy_required,
        }
        if cls in ("c-c", "c-sc"):
            other = mech.phased_regularization if cls == "c-c" else p.mu_y
            heavy, light = max(r.phase_mu, other), min(r.phase_mu, other)
            floor = 1e-13 * radius * synthetic.extragradient_constant(ell_b, light)
            tol = math.sqrt(certified_accuracy(r, probability) / heavy)
            clamped = clamped or tol < floor
            estimate = synthetic.extragradient_iterations(ell_b, light, radius, max(tol, floor))
            phase |= {"tol": max(tol, floor), "cap": synthetic.ITERATION_CAP_FACTOR * estimate + 100}
            iterations += estimate
        phases.append(phase)
    return phases, iterations, clamped


def _audit_setup(
    p: PhasedOutputPerturbationParams,
    pr: PhasedOutputPerturbationProblem,
    mech: Mechanism,
    resolved: dict[str, Any],
    setup: float,
    ell_b: float,
    delta: float,
    seed: int,
) -> tuple[float, str]:
    """The audit's exact phase-1 solutions (added to ``resolved``) and the simulated pair's exact ε, with the start
    of its note; refused (422) above the set-up budget."""
    from ...synthetic import output_perturbation as synthetic

    cls = p.problem_class
    if setup > AUDIT_SETUP_BUDGET:
        raise ParameterError.single(
            "regularization" if cls in PHASED else "dataset_size",
            f"the audit's exact phase-1 solutions would take about {setup:.3g} operations, above "
            f"{AUDIT_SETUP_BUDGET:.3g}: reduce dataset_size or the dimensions"
            + (", or raise regularization" if cls in ("c-c", "c-sc") else ""),
            "a configuration whose audit set-up is cheaper",
        )
    if cls in ("c-c", "c-sc"):
        radius = float(resolved.get("radius", 1.0))
        other = mech.phased_regularization if cls == "c-c" else p.mu_y
        light = min(mech.releases[0].phase_mu, other)
        tol = 1e-11 * radius * synthetic.extragradient_constant(ell_b, light)
        resolved |= {
            "audit_tol": tol,
            "audit_cap": synthetic.ITERATION_CAP_FACTOR * synthetic.extragradient_iterations(ell_b, light, radius, tol)
            + 100,
        }
    audit = synthetic.audit_releases(cls, resolved, resolved["phases"], pr.audit_solver == "worst-case", seed)
    resolved["audit"] = audit
    mu_sim = synthetic.audit_gdp(audit)
    exact = gdp_epsilon(mu_sim, delta) if mu_sim > 0 else 0.0
    return exact, f"analytic Gaussian (Balle & Wang 2018) of the simulated pair: μ = {mu_sim:.6g}"


def _work(
    cls: str,
    p: PhasedOutputPerturbationParams,
    mech: Mechanism,
    problem: Mapping[str, Any],
    trials: int,
    iterations: int,
    ell_b: float,
) -> tuple[float, float, float]:
    """(utility work, audit work, audit set-up work) in elementary operations, with the per-iteration overhead."""
    from ...synthetic import output_perturbation as synthetic

    blocks = -(-trials // 64)
    n, dx, dy, K, nbar = p.dataset_size, p.d_x, p.d_y, mech.phases, mech.block_size
    dims = sum(r.dimension for r in mech.releases[: releases_per_record(cls)])
    audit = trials * 8.0 * dims + blocks * 200.0
    if cls == "strongly-convex":
        return trials * 10.0 * n * dx + blocks * 100.0, audit, 10.0 * n * dx
    if cls == "convex":
        rank = int(problem["rank"])
        per_phase = nbar * (10.0 * rank + 2.0 * dx * dx) + 10.0 * dx**3 + 400.0 * dx
        return trials * K * per_phase + blocks * K * 120 * ITERATION_OVERHEAD, audit, nbar * 2.0 * dx * dx + 10 * dx**3
    if cls == "sc-sc":
        return trials * (10.0 * n * (dx + dy) + 4.0 * (dx + dy) ** 2) + blocks * 100.0, audit, 10.0 * n * (dx + dy)
    per_iteration = 8.0 * dx * dy + 20.0 * (dx + dy)
    data = 10.0 * K * nbar * (dx + dy)
    utility = trials * (data + iterations * per_iteration) + blocks * iterations * ITERATION_OVERHEAD
    runs = 2 if cls == "c-c" else 1
    other = mech.phased_regularization if cls == "c-c" else p.mu_y
    light = min(mech.releases[0].phase_mu, other)
    radius = float(problem.get("radius", 1.0))
    tol = 1e-11 * radius * synthetic.extragradient_constant(ell_b, light)
    exact_iterations = synthetic.extragradient_iterations(ell_b, light, radius, tol)
    setup = 10.0 * nbar * (dx + dy) + runs * exact_iterations * (2 * per_iteration + ITERATION_OVERHEAD)
    return utility, audit, setup


def _prediction_note(cls: str, problem: Mapping[str, Any], mech: Mechanism, clamped: bool) -> str:
    from ...synthetic import output_perturbation as synthetic

    if cls == "strongly-convex":
        r = mech.releases[0]
        mu, radius, n, d = problem["curvature"], problem["radius"], problem["records"], problem["dimension"]
        value = 0.5 * mu * (radius**2 / n + d * r.noise_std**2)
        return f"exact expectation of the simulated measure: (μ/2)(R²/n + dσ²) = {value:.6g}"
    if cls == "sc-sc":
        value = synthetic.sc_sc_expected_gap(problem, mech.releases[0].noise_std, mech.releases[1].noise_std)
        return f"exact expectation of the simulated measure: ½tr(HM⁻¹Cov M⁻ᵀ) + ½(σ_x²trH_Φ + σ_y²trH_Ψ) = {value:.6g}"
    if cls == "convex":
        return "the phase problems are solved exactly (ball-constrained quadratics); no closed-form expectation"
    text = (
        "the measured quantity upper-bounds the one the theorem bounds, so measured ≤ bound confirms it; phase "
        "problems solved by proximal extragradient to the certified 2γ level"
    )
    if clamped:
        text += " (the certificate was clamped at floating-point resolution in some phases)"
    return text


register_simulator(ALGORITHM_ID, PhasedOutputPerturbationSimulator())


def _constants(p: PhasedOutputPerturbationParams) -> dict[str, Any]:
    """The synthetic problem's constants: the declared ones, with the strong convexity its class has."""
    cls = p.problem_class
    return {
        "lipschitz": p.lipschitz,
        "smoothness": p.smoothness,
        "diameter": p.diameter,
        "d_x": p.d_x,
        "d_y": p.d_y,
        "mu_x": p.mu_x if cls in ("strongly-convex", "sc-sc") else None,
        "mu_y": p.mu_y if cls in ("sc-sc", "c-sc") else None,
    }
