"""The privacy of a run: the paper's calibration (Theorems 3.1–3.4 as printed), the Gaussian-DP composition of its
releases and the base solver's failure probability (a union bound over its runs)."""

from __future__ import annotations

import math

from ...errors import ParameterError
from ...reports import AccountantResult
from .params import SPLIT, PhasedOutputPerturbationParams

# -- the paper's calibration and the privacy of the run ----------------------------------------------------------------


def default_phases(n: int) -> int:
    """K = ⌈log₂ n⌉ (at least 1), the paper's K = log n with log base 2."""
    return max(1, (n - 1).bit_length())


def paper_noise_multiplier(problem_class: str, epsilon: float, delta: float) -> float:
    """z = σ/Δ of the printed calibrations (§3.3): √(2 ln(2.5/δ))/ε (Alg. 1, 2, C-SC: Def. 2 at (ε, δ/2) plus failure
    δ/2), or 2√(2 ln(5/δ))/ε (Alg. 3, 4, 5: each of two releases at (ε/2, δ/4) plus failure δ/4)."""
    if problem_class in SPLIT:
        return 2.0 * math.sqrt(2.0 * (math.log(5.0) - math.log(delta))) / epsilon
    return math.sqrt(2.0 * (math.log(2.5) - math.log(delta))) / epsilon


def paper_epsilon(problem_class: str, noise_multiplier: float, delta: float) -> float:
    """The ε the paper's calibration attaches to the multiplier z at δ (inverse of :func:`paper_noise_multiplier`)."""
    return paper_noise_multiplier(problem_class, 1.0, delta) / noise_multiplier


def paper_epsilon_limit(problem_class: str) -> float:
    """Def. 2 is the classical Gaussian mechanism, valid for ε' < 1 (and ε' = 1 by continuity in σ): ε ≤ 1, or ε ≤ 2
    where each release gets ε/2."""
    return 2.0 if problem_class in SPLIT else 1.0


def paper_failure_probability(problem_class: str, delta: float) -> float:
    """The paper's per-run solver failure probability: δ/4 (Alg. 1, 2, C-SC) or δ/8 (Alg. 3, 4, 5)."""
    return delta / (8.0 if problem_class in SPLIT else 4.0)


def failing_runs(problem_class: str) -> int:
    """Solver runs whose accuracy the sensitivity bound of one record needs: the run on S and on S′ (two), and for
    c-c that of Algorithm 4 and of Algorithm 5 (four). δ_fail = failing_runs·p (union bound)."""
    return 4 if problem_class == "c-c" else 2


def releases_per_record(problem_class: str) -> int:
    """Gaussian releases one record influences: 1 (a phase of one run), or 2 (x and y of Alg. 3; a phase of Alg. 4
    and one of Alg. 5), composed exactly in GDP: μ² = Σ μ_i² = c/z²."""
    return 2 if problem_class in SPLIT else 1


def gdp_parameter(problem_class: str, noise_multiplier: float) -> float:
    """μ = √c/z of the run, conditional on the solver meeting its accuracy."""
    return math.sqrt(releases_per_record(problem_class)) / noise_multiplier


def solver_failure(p: PhasedOutputPerturbationParams, delta: float) -> tuple[float, float, bool]:
    """(p, δ_fail, whether p is the paper's default) for the δ being accounted; δ_fail ≥ δ is a 422."""
    given = p.solver_failure_probability
    default = given is None
    prob = paper_failure_probability(p.problem_class, delta) if given is None else float(given)
    delta_fail = failing_runs(p.problem_class) * prob
    if delta_fail >= delta:
        runs = failing_runs(p.problem_class)
        raise ParameterError.single(
            "solver_failure_probability",
            f"gives δ_fail = {runs}p = {delta_fail:.6g} ≥ delta = {delta:.6g}: the base solver's failure probability "
            "alone exceeds the δ budget",
            f"a probability below delta/{runs} = {delta / runs:.6g} (0 if the solver's accuracy is certified)",
            p.solver_failure_probability,
        )
    return prob, delta_fail, default


TIGHT_METHOD = (
    "analytic Gaussian (Balle & Wang 2018, Thm. 8) of the run's Gaussian DP μ = √c/z (c = Gaussian releases a record "
    "influences: parallel composition across phases, Lemma A.1; exact GDP composition of x/y and of Algorithms 4/5), "
    "at δ − δ_fail, plus δ_fail = (solver runs)·p for the solver-failure event (union bound)"
)
RDP_METHOD = (
    "RDP α/(2z²) per release (Mironov 2017), ε(α) = cα/(2z²) for the run, improved conversion (Balle et al. 2020) "
    "at δ − δ_fail, plus δ_fail"
)
_PAPER_METHOD = (
    "the printed calibration (Def. 2, classical Gaussian mechanism, Dwork & Roth Thm. A.1, needs ε' < 1): "
    "ε = √(2 ln(2.5/δ))/z (Alg. 1, 2, C-SC), ε = 2√(2 ln(5/δ))/z (Alg. 3, 4 + 5: (ε/2, δ/4) per release)"
)


def paper_result(
    p: PhasedOutputPerturbationParams, z: float, delta: float, probability: float, target: float | None = None
) -> AccountantResult:
    cls = p.problem_class
    eps = paper_epsilon(cls, z, delta) if target is None else target
    limit = paper_epsilon_limit(cls)
    reasons = []
    if not eps <= limit:
        reasons.append(
            f"the paper's ε = {eps:.6g} exceeds {limit:g}: the classical Gaussian mechanism (Def. 2) it rests on "
            f"needs ε' ≤ 1{' per release (ε/2)' if cls in SPLIT else ''} (ε' < 1, and ε' = 1 by continuity)"
        )
    if probability > paper_failure_probability(cls, delta) * (1.0 + 1e-12):
        reasons.append(
            f"solver_failure_probability = {probability:.6g} exceeds the paper's "
            f"{'δ/8' if cls in SPLIT else 'δ/4'} = {paper_failure_probability(cls, delta):.6g}"
        )
    if reasons:
        return AccountantResult.not_applicable("paper", "; ".join(reasons))
    return AccountantResult(
        "paper",
        True,
        eps,
        "the paper's statement (valid in its regime)",
        _PAPER_METHOD,
        noise_multiplier=z if target is not None else None,
    )


def check_target_delta(p: PhasedOutputPerturbationParams, delta: float) -> None:
    if p.target_delta is not None and not math.isclose(p.target_delta, delta, rel_tol=1e-12, abs_tol=0.0):
        raise ParameterError.single(
            "target_delta",
            f"differs from the request's delta = {delta:g}; omit it or give the same value",
            f"omit, or exactly {delta!r}",
            p.target_delta,
        )
