"""``nispp``: noisy inexact stochastic proximal point for DP monotone variational inequalities and saddle points.

Boob & Guzmán 2023 (arXiv:2104.02988), Algorithm 2 (its pseudocode box reconstructed from the prose and proofs).
Each iteration k draws a batch, computes u_{k+1}, a ν-approximate strong solution of the λ-strongly monotone
VI(F_B + λ(· − w_k), W) (eq. 5.1), and releases w_{k+1} = u_{k+1} + N(0, σ²I), unprojected; the output is Π_W of the
average of the w_{k+1}. K iterations (the paper's loop k = 0..K has K + 1, its corollaries use K = n/B).

Sensitivity (Prop. 9): ‖u − u′‖ ≤ M/(λB) + √(M²/(λB)² + 2ν/λ) ≤ 2M/(λB) + √(2ν/λ), which is at most 4M/(λB) when
ν ≤ 2M²/(λB²), the paper's Δ. By default (``sensitivity_form="simplified"``) Δ = 4M/(λB) under that condition and
2M/(λB) + √(2ν/λ) above it (said in the answer); ``"exact-root"`` uses the root itself, up to 2× smaller for small ν.
``noise_multiplier`` z = σ/Δ; the paper's statements, relative to 4M/(λB), are converted to this Δ.

* ``passes="single"`` (Theorem 5, Prop. 10, Corollary 2): disjoint batches, KB ≤ n; default K = ⌊n/B⌋. Privacy: one
  Gaussian per record (:mod:`.family`, on the spine). Utility: Theorem 5 with the re-derived noise constant 3 over all
  K releases (the printed 5/2 over K − 1 undercounts, erratum).
* ``passes="multi"`` (Theorems 6–7): K iterations on random batches; default K = n. Utility: Theorem 7's weak gaps,
  EmpGap + M·UAS (VI) and EmpGap + √2·M·UAS (SP) with UAS = K(4M/(nλ) + 2√(ν/λ)) (the 4M of Lemma 3, not the printed
  2M: erratum).

Defaults follow the paper's recommendations at its own calibration, written through z (which does not depend on λ):
λ = max{M/D, L}·max{n^{1/3}, z√(d/2)} (single; Corollary 2's √(d ln(1/η))/ε = z/√2·√d at z = √(2 ln(1/η))/ε) or
max{M/D, L}·max{√n, z√d/2} (multi; Theorem 7's z = 2√(ln(1/η))/ε), and ν = 2M²/(λB²) (single) or M²/(λn²) (multi).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ...errors import ParameterError
from ...params import ParamsModel
from ...registry import register
from ...reports import Assumption, Conventions, Noise, Recommendation, Release, UtilityBound, UtilityReport
from ...synthetic.bilinear import BilinearProblem
from ...verification import JobPlan, register_simulator
from .answers import finite_bounds
from .family import CalibratedUtility, NoisyViFamily, Wording
from .nispp_params import MAX_INNER_ITERATIONS, NisppParams, Setting, paper_statement, setting
from .params import SOURCE, BilinearProblemSettings, sampling_notes
from .releases import PaperStatement
from .simulate import BatchSource, BilinearSimulator
from .utility import OPERATOR_CLASS, weak_gaps

# -- utility (Theorems 5–6, Corollary 2) ---------------------------------------------------------------------------


def theorem5_bound(steps: float, lam: float, sigma: float, nu: float, M: float, L: float, D: float, d: float) -> float:
    """ν + 3λD²/(2K) + (4M² + 3L²D²)/λ + 3λdσ² + Mσ√(d/K): Theorem 5 with γ_k = 1 and the re-derived noise
    constant 3 (erratum; the printed 5/2 undercounts)."""
    return (
        nu
        + 1.5 * lam * D * D / steps
        + (4.0 * M * M + 3.0 * L * L * D * D) / lam
        + 3.0 * lam * d * sigma * sigma
        + M * sigma * math.sqrt(d / steps)
    )


def theorem6_uas(steps: float, lam: float, nu: float, n: int, M: float) -> float:
    """K(4M/(nλ) + 2√(ν/λ)): Theorem 6 with Lemma 3's 4M (the printed 2M undercounts, erratum)."""
    return steps * (4.0 * M / (n * lam) + 2.0 * math.sqrt(nu / lam))


def utility_bounds(p: NisppParams, s: Setting) -> list[UtilityBound]:
    M, L, D, d, n = p.lipschitz, p.smoothness, p.diameter, p.dimension, p.dataset_size
    steps = p.steps_and_rule()[0]
    sigma = s.noise_multiplier * s.sensitivity
    emp = theorem5_bound(steps, s.regularization, sigma, s.tolerance, M, L, D, d)
    class_assumption = OPERATOR_CLASS
    solver = Assumption(
        f"every subproblem solved to a strong ν-solution, ν = {s.tolerance:.6g} (eq. 5.1)",
        None,
        "the solver must certify it (e.g. the closed-form certificate on a product of balls)",
    )
    conditions = (class_assumption, solver, Assumption("γ_kλ_k constant: γ_k = 1, λ_k = λ (eq. 5.4)", True))
    if p.passes == "single":
        return [
            UtilityBound.explicit(
                "expected strong VI gap (= expected SP gap for saddle points) of Π_W of the averaged releases",
                emp,
                f"{SOURCE}, Theorem 5 (noise constant 3, erratum)",
                (*conditions, Assumption("disjoint batches, each record used once", True)),
                True,
            )
        ]
    uas = theorem6_uas(steps, s.regularization, s.tolerance, n, M)
    return weak_gaps(
        (emp, f"{SOURCE}, Theorem 5 on the empirical problem (proof of Theorem 7; constant 3, erratum)"),
        (uas, f"{SOURCE}, Theorem 6 with Lemma 3's 4M (erratum)"),
        M,
        "Theorem 7",
        conditions,
        True,
    )


def corollary2_explicit(n: int, M: float, L: float, D: float, d: int, epsilon: float, delta: float) -> float:
    """Corollary 2's term-by-term bound at its own parameters, with the corrected 80 (the paper prints 40)."""
    ln = -math.log(delta)
    root = math.sqrt(d * ln)
    return float(
        2.0 * M * D / n
        + 1.5 * (M + L * D) * D * (n ** (-1.0 / 3.0) + root / (epsilon * n ** (2.0 / 3.0)))
        + (4.0 * M * D + 3.0 * L * D * D) / n ** (1.0 / 3.0)
        + 80.0 * M * D * root / (epsilon * n ** (2.0 / 3.0))
        + 4.0 * math.sqrt(2.0) * M * D / n ** (2.0 / 3.0)
    )


def rate_bounds(p: NisppParams, epsilon: float, delta: float) -> list[UtilityBound]:
    M, L, D, d, n = p.lipschitz, p.smoothness, p.diameter, p.dimension, p.dataset_size
    root = math.sqrt(d * (-math.log(delta)))
    if p.passes == "single":
        return [
            UtilityBound.explicit(
                "strong gap at Corollary 2's own parameters (B = n^{1/3}, K = n/B, λ₀, ν = 2M²/(λ₀B²), the paper's σ)",
                corollary2_explicit(n, M, L, D, d, epsilon, delta),
                f"{SOURCE}, Corollary 2 (term-by-term, noise term 80 not 40: erratum)",
            ),
            UtilityBound.rate(
                "strong gap rate (M + LD)D·(n^{−1/3} + √(d ln(1/δ))/(εn^{2/3}))",
                (M + L * D) * D * (n ** (-1.0 / 3.0) + root / (epsilon * n ** (2.0 / 3.0))),
                f"{SOURCE}, Corollary 2",
            ),
        ]
    return [
        UtilityBound.rate(
            "weak gap rate (M + LD)D·(1/√n + √(d ln(1/δ))/(εn))",
            (M + L * D) * D * (1.0 / math.sqrt(n) + root / (epsilon * n)),
            f"{SOURCE}, Theorem 7",
        )
    ]


# -- the family ----------------------------------------------------------------------------------------------------


@register
class Nispp(NoisyViFamily[NisppParams]):
    id = "nispp"
    params_model = NisppParams

    def wording(self, p: NisppParams, noise_multiplier: float | None = None) -> Wording:
        s = setting(p, noise_multiplier)
        return Wording(s.noise_multiplier, _noise(p, s), _conventions(p), _releases(p, s), tuple(_notes(p, s)))

    def paper(self, p: NisppParams) -> PaperStatement:
        return paper_statement(p)

    def calibrated_utility(
        self, p: NisppParams, noise_multiplier: float, target: float, delta: float
    ) -> CalibratedUtility:
        s = setting(p, noise_multiplier)
        try:
            bounds = finite_bounds(lambda: utility_bounds(p, s) + rate_bounds(p, target, delta), _SCALES)
        except ParameterError as error:
            return CalibratedUtility(None, str(error), s.applied)
        return CalibratedUtility(UtilityReport(self.id, tuple(bounds), None, s.applied), None, s.applied)

    def advice(self, p: NisppParams, epsilon: float, delta: float) -> list[Recommendation]:
        return _advice(p, epsilon, delta)

    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        p = self.parse(params)
        s = setting(p)
        bounds = finite_bounds(lambda: utility_bounds(p, s), _SCALES)
        return UtilityReport(self.id, tuple(bounds), None, s.applied)


_SCALES = "lipschitz, smoothness, diameter, regularization and the noise"


def _advice(p: NisppParams, epsilon: float, delta: float) -> list[Recommendation]:
    """The paper's batch size and iteration count for the target (advice: adopting them changes the accounting)."""
    n = p.dataset_size
    if p.passes == "single":
        b = max(1, round(n ** (1.0 / 3.0)))
        return [
            Recommendation("batch_size", b, "B = n^{1/3}, rounded (Corollary 2)", False),
            Recommendation("steps", n // b, "K = ⌊n/B⌋ at that B (Corollary 2)", False),
        ]
    b = max(1, round(math.sqrt(n)))
    return [
        Recommendation("batch_size", b, "B = √n, rounded (Theorem 7)", False),
        Recommendation("steps", n, "K = n (Theorem 7)", False),
    ]


def _noise(p: NisppParams, s: Setting) -> Noise:
    four = 4.0 * p.lipschitz / (s.regularization * p.batch_size)
    if p.sensitivity_form == "exact-root":
        rule = f"Δ = M/(λB) + √(M²/(λB)² + 2ν/λ) = {s.sensitivity:.6g} (the root in Prop. 9's proof"
    elif s.general:
        rule = f"Δ = 2M/(λB) + √(2ν/λ) = {s.sensitivity:.6g} (Prop. 9, general ν"
    else:
        rule = f"Δ = 4M/(λB) = {s.sensitivity:.6g} (Prop. 9 with ν ≤ 2M²/(λB²)"
    rule += f", ν = {s.tolerance:.6g}"
    if s.general:
        rule += f"; above the paper's 4M/(λB) = {four:.6g} because ν exceeds 2M²/(λB²)"
    rule += "): replacing one record moves the prox point by at most Δ"
    return Noise.scaled(
        s.noise_multiplier,
        s.sensitivity,
        rule,
        "noise_std is per coordinate, in parameter units, added to every prox point u_{k+1}",
    )


def _conventions(p: NisppParams) -> Conventions:
    steps, rule, _ = p.steps_and_rule()
    return Conventions(
        neighbouring="replace-one",
        steps=steps,
        step_rule=f"{rule}; one noisy release per iteration (the paper's loop k = 0..K counts one more)",
        sampling=p.releases().sampling_text(),
        noise_multiplier_definition="noise_multiplier z = σ/Δ, Δ the sensitivity of a prox point (Prop. 9)",
        released="every noisy prox point w_{k+1} (the whole transcript); the output is Π_W of their average",
    )


def _releases(p: NisppParams, s: Setting) -> tuple[Release, ...]:
    details = {"batch_size": p.batch_size, "regularization": s.regularization, "inner_tolerance": s.tolerance}
    return p.releases().release(
        "noisy prox point w_{k+1} = u_{k+1} + N(0, σ²I)", s.sensitivity, s.noise_multiplier, details
    )


def _notes(p: NisppParams, s: Setting) -> list[str]:
    notes = []
    if s.general:
        notes.append(
            "inner_tolerance exceeds 2M²/(λB²): Prop. 9's sensitivity is then above the paper's 4M/(λB), and the "
            "noise grows with it"
        )
    notes += sampling_notes(p.releases(), "uniform subsets")
    return notes


# -- simulation ----------------------------------------------------------------------------------------------------


class NisppSimulator(BilinearSimulator[NisppParams]):
    """NISPP run for real on the bilinear instance, every subproblem solved by projected gradient until its
    closed-form certificate is at most ν; audit (single pass) of the canary's prox point.

    The canary's constant operator ±M·v, the other audited records zero, and w_0 = 0 give u_1 = Π_W(∓Mv/(λB)): the
    two prox points differ by 2·min{M/(λB), R} (Prop. 9's Δ = 4M/(λB) is twice that), so the exact ε of the audited
    release is the analytic Gaussian's at μ = 2·min{M/(λB), R}/σ.
    """

    problem_model = BilinearProblemSettings
    seconds_per_operation: ClassVar[Mapping[str, float]] = {"utility": 1.8e-08, "privacy-audit": 3e-09}
    """Measured by ``python benchmarks/jobs.py --calibrate`` (the example job, one process)."""
    algorithm = "nispp"

    def audit_support(self, p: NisppParams) -> str | None:
        if p.passes == "multi":
            return (
                "privacy-audit is offered for passes='single' only: in a multi pass the canary's prox points are "
                "projected and no longer add up along the transcript"
            )
        return None

    def resolve(self, p: NisppParams, sigma: float) -> dict[str, Any]:
        s = setting(p)
        return {"regularization": s.regularization, "inner_tolerance": s.tolerance}

    def prediction(self, p: NisppParams, sigma: float, resolved: Mapping[str, Any]) -> tuple[float, str]:
        bounds = utility_bounds(p, setting(p))
        bound = bounds[0] if p.passes == "single" else bounds[2]
        return bound.value, f"{bound.source} ({bound.measure})"

    def canary_units(self, p: NisppParams, sigma: float) -> float:
        radius = p.diameter / (2.0 * math.sqrt(2.0))
        return sigma / min(p.lipschitz / (setting(p).regularization * p.batch_size), radius)

    def run(self, plan: JobPlan, problem: BilinearProblem, rng: np.random.Generator, trials: int) -> np.ndarray:
        p, resolved = plan.params, plan.problem
        steps, sigma = resolved["steps"], resolved["noise_std"]
        lam, nu = resolved["regularization"], resolved["inner_tolerance"]
        d = problem.dimension
        data = BatchSource(problem, p, rng, trials)
        smoothness = float(np.linalg.norm(problem.coupling, 2)) if problem.coupling.size else 0.0
        tau = lam / (smoothness**2 + lam**2)
        w = np.zeros((trials, d))
        total = np.zeros((trials, d))
        for _ in range(steps):
            b = data.next()
            u = solve_prox(problem, w, b, lam, nu, tau)
            w = u + sigma * rng.standard_normal((trials, d))
            total += w
        return problem.gap(problem.project(total / steps))

    def work(self, p: NisppParams, steps: int, trials: int, checks: tuple[str, ...]) -> float:
        """Per trial and iteration about 40 + inner·(25 + d) (+ n·d/20 to draw a multi-pass batch) operations
        (priced in seconds by ``seconds_per_operation``), with the inner iterations of :func:`inner_iterations`: the
        d × d products run in BLAS, the elementwise work grows like d (measured from d = 2 to 64, within 1.4×; the
        d²/4 this replaced overstated d = 64 eleven times)."""
        d, n = p.dimension, p.dataset_size
        s = setting(p)
        inner = inner_iterations(p.smoothness, s.regularization, p.diameter, s.tolerance)
        per_iteration = 40.0 + inner * (25.0 + d) + (n * d / 20.0 if p.passes == "multi" else 0.0)
        utility = trials * steps * per_iteration if "utility" in checks else 0.0
        audit = trials * 20.0 if "privacy-audit" in checks else 0.0
        return utility + audit


def inner_iterations(smoothness: float, regularization: float, diameter: float, tolerance: float) -> float:
    """Projected-gradient iterations to certify ν from a start within D: 1 + ln(4λD²/ν)/ln(1/ρ), with the contraction
    ρ = L/√(L² + λ²) (capped at :data:`MAX_INNER_ITERATIONS`)."""
    if smoothness == 0.0:
        return 2.0
    log_ratio = math.log(max(4.0 * regularization * diameter**2 / max(tolerance, 1e-300), math.e))
    contraction = 0.5 * math.log1p((regularization / smoothness) ** 2)
    return min(float(MAX_INNER_ITERATIONS), 1.0 + log_ratio / contraction)


def solve_prox(
    problem: BilinearProblem, centre: np.ndarray, b: np.ndarray, lam: float, tolerance: float, tau: float
) -> np.ndarray:
    """A strong ν-solution of VI(Jw + b + λ(w − centre), W) for each row, by projected gradient from Π_W(centre)
    (contraction L/√(L² + λ²) per step for skew J), stopped by the closed-form certificate."""
    u = problem.project(centre)
    for _ in range(MAX_INNER_ITERATIONS):
        operator = problem.skew(u) + b + lam * (u - centre)
        open_rows = problem.subproblem_gap(u, operator) > tolerance
        if not open_rows.any():
            return u
        u = np.where(open_rows[:, None], problem.project(u - tau * operator), u)
    raise ParameterError.single(
        "params.inner_tolerance",
        f"the subproblems did not reach the certificate ν in {MAX_INNER_ITERATIONS} iterations",
        "a larger inner_tolerance",
    )


register_simulator(Nispp.id, NisppSimulator())
