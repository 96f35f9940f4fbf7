"""``nseg``: noisy stochastic extragradient for DP monotone variational inequalities and saddle points.

Boob & Guzmán, "Optimal algorithms for differentially private stochastic monotone variational inequalities and
saddle-point problems" (2023, arXiv:2104.02988), Algorithm 1 (its pseudocode box reconstructed from the prose and
proofs).
Each step t evaluates the batch operator twice, each time on a fresh batch and with fresh noise,
F_{i,t} = F_{B_t^i} + N(0, σ²I), and takes w_t = Π_W(u_{t−1} − γF_{1,t}(u_{t−1})), u_t = Π_W(u_{t−1} − γF_{2,t}(w_t));
the output is the γ-weighted average of the w_t. An evaluation's replace-one sensitivity is Δ = 2M/B (M bounds ‖F_β‖
on W), and ``noise_multiplier`` z = σ/Δ.

* ``passes="single"`` (Theorem 2, Prop. 5, Corollary 1): all 2T batches disjoint, 2TB ≤ n; default T = ⌊n/(2B)⌋.
  Privacy: one Gaussian per record (:mod:`.family`, on the spine), exact. Utility: Theorem 2 for the user's γ, T, B
  with the proofs' M² (cV = 1; the statement's M²/2 is not what Corollary 1 and Theorem 4 use),
  default γ = Corollary 1's min{D/(M√(7T(1 + dσ²/M²))), 1/(√3L)} (the cap is required by Theorem 2 and omitted in
  the paper).
* ``passes="multi"`` (eq. 4.16, Prop. 7, Theorems 3–4): batches sampled at every evaluation, K = 2T releases (the
  paper counts T); default T = n². Utility: Theorem 4's weak gaps, EmpGap + M·UAS (VI) and
  EmpGap + √2·M·UAS (SP, δ_x + δ_y ≤ √2δ), with Theorem 3's UAS as corrected (2M/n, not 2ML/n: an erratum);
  default γ = min{D/M, 1/L}/(n·max{√n, √(d ln(1/η))/ε}) with √(d ln(1/η))/ε = √d·σ/(2√2M), its value at the
  paper's σ.

Paper statements: Prop. 5 (single; z = √(2 ln(1/η))/ε) and Prop. 7 via Theorem 1 (multi; z = √2·q·√(T ln(1/η))/ε,
the paper's K = T).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np

from ...errors import FieldIssue, ParameterError
from ...params import MAX_COUNT, ParamsModel, noise_multiplier_param, param
from ...registry import register
from ...reports import Assumption, Conventions, Noise, Recommendation, Release, UtilityBound, UtilityReport
from ...synthetic.bilinear import BilinearProblem
from ...verification import JobPlan, register_simulator
from .answers import finite_bounds, resolve_multiplier
from .family import CalibratedUtility, NoisyViFamily, Wording
from .params import MAX_STEPS, SOURCE, BilinearProblemSettings, NoisyViParams, common_issues, sampling_notes
from .releases import NoisyReleases, PaperStatement, gaussian_mechanism_statement, moments_statement
from .simulate import BatchSource, BilinearSimulator
from .utility import OPERATOR_CLASS, weak_gaps


class NsegParams(NoisyViParams):
    """Hyperparameters of NSEG (Boob & Guzmán 2023, Algorithm 1)."""

    batch_size: int = param(symbol="B", unit="records", example=10, ge=1, le=MAX_COUNT)
    """Records per operator evaluation (the expected number under Poisson sampling)."""
    passes: Literal["single", "multi"] = param(example="single", default="single")
    """single: all 2T batches disjoint, each record used once (n ≥ 2TB; Theorem 2, Prop. 5). multi: a fresh random batch
    at every evaluation (the paper's T = n² with B = 1; Prop. 7, Theorem 4)."""
    steps: int | None = param(symbol="T", unit="steps", example=500, default=None, ge=1, le=MAX_STEPS)
    """Iterations T, each with two noisy operator evaluations. Default: ⌊n/(2B)⌋ (single pass), n² (multi pass)."""
    stepsize: float | None = param(
        symbol="γ", unit="parameter units per operator unit", example=0.0062, gt=0, le=1e12, default=None
    )
    """Step size γ. Default: Corollary 1's (single pass) or Theorem 4's (multi pass) recommendation."""
    noise_multiplier: float | None = noise_multiplier_param(
        symbol="z = σB/(2M)", unit="multiples of Δ = 2M/B", example=3.73
    )
    """Noise std over the sensitivity Δ = 2M/B of one operator evaluation: σ = z·2M/B is added to every evaluation.
    Required for privacy accounting and utility (or give noise_std); computed by calibration."""
    noise_std: float | None = param(symbol="σ", unit="operator units", example=1.8, gt=0, le=1e18, default=None)
    """Per-coordinate std σ of the noise added to every operator evaluation; an alternative to noise_multiplier."""

    def check(self) -> list[FieldIssue]:
        issues = common_issues(self)
        n, b = self.dataset_size, self.batch_size
        if self.passes == "single" and b <= n:
            if self.steps is None and 2 * b > n:
                issues.append(
                    FieldIssue(
                        ("batch_size",),
                        "single pass needs 2·batch_size ≤ dataset_size (each step uses two disjoint batches)",
                        f"an integer in [1, {n // 2}]",
                        b,
                    )
                )
            elif self.steps is not None and 2 * self.steps * b > n:
                issues.append(
                    FieldIssue(
                        ("steps",),
                        "single pass uses 2·steps·batch_size distinct records: 2TB must not exceed dataset_size",
                        f"an integer in [1, {n // (2 * b)}]" if n >= 2 * b else "none: reduce batch_size",
                        self.steps,
                    )
                )
        if not 2.0 * self.lipschitz / self.batch_size > 1e-300:
            issues.append(
                FieldIssue(
                    ("lipschitz",),
                    "the sensitivity 2M/B underflows the floating-point range",
                    f"a finite number > {0.5e-300 * self.batch_size:.3g}",
                    self.lipschitz,
                )
            )
        return issues

    @property
    def sensitivity(self) -> float:
        """Δ = 2M/B: replacing one record moves one batch-mean operator value by at most 2M/B."""
        return 2.0 * self.lipschitz / self.batch_size

    def steps_and_rule(self) -> tuple[int, str, bool]:
        """(T, how it was obtained, whether it is the default)."""
        if self.steps is not None:
            return self.steps, f"steps as given: T = {self.steps}", False
        if self.passes == "single":
            t = self.dataset_size // (2 * self.batch_size)
            return t, f"default T = ⌊n/(2B)⌋ = ⌊{self.dataset_size}/(2·{self.batch_size})⌋ = {t}", True
        t = self.dataset_size**2
        return t, f"default T = n² = {t} (Theorem 4)", True

    def releases(self) -> NoisyReleases:
        steps = self.steps_and_rule()[0]
        return NoisyReleases(self.passes, self.sampling, 2 * steps, self.dataset_size, self.batch_size)


def paper_statement(p: NsegParams) -> PaperStatement:
    """Prop. 5 (single pass) or Prop. 7 through Theorem 1 with the paper's K = T (multi pass), in z units."""
    if p.passes == "single":
        return gaussian_mechanism_statement(f"{SOURCE}, Proposition 5 (Prop. 3 + parallel composition)")
    steps, q = p.steps_and_rule()[0], p.batch_size / p.dataset_size
    return moments_statement(
        f"{SOURCE}, Proposition 7 (Theorem 1 with K = T = {steps})",
        "z = √2·q·√(T ln(1/η))/ε (Theorem 1, K = T)",
        lambda d: math.sqrt(2.0) * q * math.sqrt(steps * (-math.log(d))),
    )


# -- utility (Section 4) ---------------------------------------------------------------------------------------------


def default_stepsize(p: NsegParams, sigma: float) -> tuple[float, str]:
    """Corollary 1's γ (single pass, capped by 1/(√3L)) or Theorem 4's (multi pass), with the rule."""
    M, L, D, d, n = p.lipschitz, p.smoothness, p.diameter, p.dimension, p.dataset_size
    steps = p.steps_and_rule()[0]
    if p.passes == "single":
        x = d * (sigma / M) ** 2
        gamma = D / (M * math.sqrt(7.0 * steps * (1.0 + x)))
        cap = math.inf if L == 0 else 1.0 / (math.sqrt(3.0) * L)
        return min(gamma, cap), (
            "γ = min{D/(M√(7T(1 + dσ²/M²))), 1/(√3L)} (Corollary 1; the 1/(√3L) cap is Theorem 2's condition, "
            "omitted in the paper)"
        )
    base = D / M if L == 0 else min(D / M, 1.0 / L)
    scale = max(math.sqrt(n), math.sqrt(d) * sigma / (2.0 * math.sqrt(2.0) * M))
    return base / (n * scale), (
        "γ = min{D/M, 1/L}/(n·max{√n, √d·σ/(2√2M)}) (Theorem 4; √d·σ/(2√2M) = √(d ln(1/η))/ε at the paper's σ)"
    )


def theorem2_bound(steps: float, gamma: float, sigma: float, M: float, D: float, d: float) -> float:
    """(D² + 7Tγ²(M² + dσ²))/(γT): Theorem 2 with constant γ and the proofs' M² (cV = 1)."""
    return D * D / (gamma * steps) + 7.0 * gamma * (M * M + d * sigma * sigma)


def theorem3_uas(steps: float, gamma: float, sigma: float, n: int, M: float, L: float, D: float, d: float) -> float:
    """Theorem 3's UAS for constant γ, with the last term (2M/n + 2LD)γ as the proof gives (erratum)."""
    per_step = (4.0 * M + 2.0 * L * D + 4.0 * math.sqrt(d) * sigma) * L * gamma**2
    per_step += (2.0 * M * L / n) * gamma**2 + (2.0 * M / n) * gamma
    return steps * per_step + (2.0 * M / n + 2.0 * L * D) * gamma


def utility_bounds(p: NsegParams, sigma: float, gamma: float) -> list[UtilityBound]:
    M, L, D, d, n = p.lipschitz, p.smoothness, p.diameter, p.dimension, p.dataset_size
    steps = p.steps_and_rule()[0]
    cap = math.inf if L == 0 else 1.0 / (math.sqrt(3.0) * L)
    class_assumption = OPERATOR_CLASS
    small = Assumption(f"γ ≤ 1/(√3L) = {cap:.6g} (Theorem 2)", gamma <= cap * (1 + 1e-12), f"γ = {gamma:.6g}")
    emp = theorem2_bound(steps, gamma, sigma, M, D, d)
    if p.passes == "single":
        return [
            UtilityBound.explicit(
                "expected strong VI gap (= expected SP gap for saddle points) of the averaged extrapolation points",
                emp,
                f"{SOURCE}, Theorem 2 (constant γ, M² as in the proofs of Corollary 1/Theorem 4)",
                (class_assumption, small, Assumption("disjoint batches, each record used once", True)),
                bool(small.holds),
            )
        ]
    stable = Assumption(f"γ ≤ 1/L = {math.inf if L == 0 else 1.0 / L:.6g} (Theorem 3)", L == 0 or gamma * L <= 1.0)
    uas = theorem3_uas(steps, gamma, sigma, n, M, L, D, d)
    ok = bool(small.holds and stable.holds)
    conditions = (class_assumption, small, stable)
    return weak_gaps(
        (emp, f"{SOURCE}, Theorem 2 on the empirical operator (proof of Theorem 4)"),
        (uas, f"{SOURCE}, Theorem 3 (last term 2M/n, erratum)"),
        M,
        "Theorem 4",
        conditions,
        ok,
    )


def rate_bounds(p: NsegParams, epsilon: float, delta: float) -> list[UtilityBound]:
    """The O-rates of Corollary 1 / Theorem 4 at (ε, δ), every constant set to 1."""
    M, L, D, d, n = p.lipschitz, p.smoothness, p.diameter, p.dimension, p.dataset_size
    ln = -math.log(delta)
    if p.passes == "single":
        value = M * D * max((d * ln) ** 0.25 / math.sqrt(n * epsilon), math.sqrt(d * ln) / (n * epsilon))
        return [
            UtilityBound.rate(
                "strong gap rate MD·max{(d ln(1/δ))^{1/4}/√(nε), √(d ln(1/δ))/(nε)}", value, f"{SOURCE}, Corollary 1"
            )
        ]
    value = (M * D + L * D * D) * max(1.0 / math.sqrt(n), math.sqrt(d * ln) / (n * epsilon))
    return [UtilityBound.rate("weak gap rate (MD + LD²)·max{1/√n, √(d ln(1/δ))/(nε)}", value, f"{SOURCE}, Theorem 4")]


# -- the family ----------------------------------------------------------------------------------------------------


@register
class Nseg(NoisyViFamily[NsegParams]):
    id = "nseg"
    params_model = NsegParams

    def wording(self, p: NsegParams, noise_multiplier: float | None = None) -> Wording:
        z = noise_multiplier
        if z is None:
            z = resolve_multiplier(p.noise_multiplier, p.noise_std, p.sensitivity)
        return Wording(z, _noise(p, z), _conventions(p), _releases(p, z), tuple(_notes(p)))

    def paper(self, p: NsegParams) -> PaperStatement:
        return paper_statement(p)

    def calibrated_utility(
        self, p: NsegParams, noise_multiplier: float, target: float, delta: float
    ) -> CalibratedUtility:
        sigma = noise_multiplier * p.sensitivity
        applied: list[Recommendation] = []
        try:
            gamma, applied = _stepsize(p, sigma)
            bounds = finite_bounds(lambda: utility_bounds(p, sigma, gamma) + rate_bounds(p, target, delta), _SCALES)
        except ParameterError as error:
            return CalibratedUtility(None, str(error), tuple(applied))
        return CalibratedUtility(UtilityReport(self.id, tuple(bounds), None, tuple(applied)), None, tuple(applied))

    def advice(self, p: NsegParams, epsilon: float, delta: float) -> list[Recommendation]:
        return _advice(p, epsilon, delta)

    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        p = self.parse(params)
        z = resolve_multiplier(p.noise_multiplier, p.noise_std, p.sensitivity)
        sigma = z * p.sensitivity
        gamma, recommended = _stepsize(p, sigma)
        bounds = finite_bounds(lambda: utility_bounds(p, sigma, gamma), _SCALES)
        return UtilityReport(self.id, tuple(bounds), None, tuple(recommended))


_SCALES = "lipschitz, diameter, stepsize and the noise"


def _stepsize(p: NsegParams, sigma: float) -> tuple[float, list[Recommendation]]:
    recommended = []
    steps, rule, default_steps = p.steps_and_rule()
    if default_steps:
        recommended.append(Recommendation("steps", steps, rule, True))
    if p.stepsize is not None:
        return p.stepsize, recommended
    gamma, rule = default_stepsize(p, sigma)
    if not 0.0 < gamma < math.inf:
        raise ParameterError.single(
            "stepsize",
            f"the default step size ({rule}) is not a finite positive number at these scales: give stepsize",
            "a finite number > 0",
        )
    recommended.append(Recommendation("stepsize", gamma, rule, True))
    return gamma, recommended


def _advice(p: NsegParams, epsilon: float, delta: float) -> list[Recommendation]:
    """The paper's batch size and step count for the target (advice: they change the accounting if adopted)."""
    n, d = p.dataset_size, p.dimension
    ln = -math.log(delta)
    if p.passes == "single":
        b = max(1, int(min(math.sqrt(d * ln) / epsilon, n // 2)))  # a tiny ε: ⌊n/2⌋ (the quotient may be ∞)
        return [
            Recommendation(
                "batch_size", b, "B = max{1, min{⌊√(d ln(1/δ))/ε⌋, ⌊n/2⌋}} (Corollary 1, integerised)", False
            ),
            Recommendation("steps", n // (2 * b), "T = ⌊n/(2B)⌋ at that B (Corollary 1)", False),
        ]
    return [
        Recommendation("batch_size", 1, "B = 1 (eq. 4.16)", False),
        Recommendation("steps", n * n, "T = n² (Theorem 4)", False),
    ]


def _noise(p: NsegParams, z: float) -> Noise:
    return Noise.scaled(
        z,
        p.sensitivity,
        f"Δ = 2M/B = 2·{p.lipschitz:g}/{p.batch_size} = {p.sensitivity:.6g}: replacing one record moves one "
        "batch-mean operator value by at most 2M/B",
        "noise_std is per coordinate, in operator units, added to every operator evaluation",
    )


def _conventions(p: NsegParams) -> Conventions:
    steps, rule, _ = p.steps_and_rule()
    releases = p.releases()
    return Conventions(
        neighbouring="replace-one",
        steps=steps,
        step_rule=f"{rule}; two noisy operator evaluations per step: {2 * steps} releases",
        sampling=releases.sampling_text(),
        noise_multiplier_definition="noise_multiplier z = σ/Δ with Δ = 2M/B: σ = z·2M/B per coordinate",
        released="every noisy operator evaluation (the whole transcript); the output is the average of the w_t",
    )


def _releases(p: NsegParams, z: float) -> tuple[Release, ...]:
    name = "noisy batch operator evaluation F_B(·) + N(0, σ²I) (extrapolation and update)"
    return p.releases().release(name, p.sensitivity, z, {"batch_size": p.batch_size, "evaluations_per_step": 2})


def _notes(p: NsegParams) -> list[str]:
    return sampling_notes(p.releases(), "uniform indices")


# -- simulation ----------------------------------------------------------------------------------------------------


class NsegSimulator(BilinearSimulator[NsegParams]):
    """NSEG run for real on the bilinear instance; audit of one operator evaluation with a constant-operator canary.

    Utility: the strong gap (= SP gap) of the output at the population mean, against Theorem 2 (single pass) or
    Theorem 4's weak VI bound (multi pass; the strong gap dominates the weak one, so the check is conservative).
    Multi pass runs on one dataset of n records per trial, sampled as ``sampling`` says.
    """

    problem_model = BilinearProblemSettings
    seconds_per_operation: ClassVar[Mapping[str, float]] = {"utility": 1.2e-08, "privacy-audit": 3e-09}
    """Measured by ``python benchmarks/jobs.py --calibrate`` (the example job, one process)."""
    algorithm = "nseg"

    def resolve(self, p: NsegParams, sigma: float) -> dict[str, Any]:
        return {"stepsize": p.stepsize if p.stepsize is not None else default_stepsize(p, sigma)[0]}

    def prediction(self, p: NsegParams, sigma: float, resolved: Mapping[str, Any]) -> tuple[float, str]:
        bounds = utility_bounds(p, sigma, resolved["stepsize"])
        bound = bounds[0] if p.passes == "single" else bounds[2]
        return bound.value, f"{bound.source} ({bound.measure})"

    def canary_units(self, p: NsegParams, sigma: float) -> float:
        """The canary F ≡ ±M·v shifts its evaluation by ±M/B: noise in those units is σB/M = 2z."""
        return sigma * p.batch_size / p.lipschitz

    def run(self, plan: JobPlan, problem: BilinearProblem, rng: np.random.Generator, trials: int) -> np.ndarray:
        p, resolved = plan.params, plan.problem
        steps, gamma, sigma = resolved["steps"], resolved["stepsize"], resolved["noise_std"]
        d = problem.dimension
        data = BatchSource(problem, p, rng, trials)
        u = np.zeros((trials, d))
        total = np.zeros((trials, d))
        for _ in range(steps):
            w = problem.project(u - gamma * (problem.skew(u) + data.next() + sigma * rng.standard_normal((trials, d))))
            u = problem.project(u - gamma * (problem.skew(w) + data.next() + sigma * rng.standard_normal((trials, d))))
            total += w
        return problem.gap(total / steps)

    def work(self, p: NsegParams, steps: int, trials: int, checks: tuple[str, ...]) -> float:
        """Per trial and evaluation about 35 + 5d (+ n·d/20 to draw a multi-pass batch) operations (priced in
        seconds by ``seconds_per_operation``): the d × d products run in BLAS, the elementwise work grows like d
        (measured from d = 2 to 64, within 1.3×; the d²/2 this replaced overstated d = 64 six times)."""
        d, n = p.dimension, p.dataset_size
        per_evaluation = 35.0 + 5.0 * d + (n * d / 20.0 if p.passes == "multi" else 0.0)
        utility = trials * 2.0 * steps * per_evaluation if "utility" in checks else 0.0
        audit = trials * 20.0 * (1 if p.passes == "single" else 2 * steps) if "privacy-audit" in checks else 0.0
        return utility + audit


register_simulator(Nseg.id, NsegSimulator())
