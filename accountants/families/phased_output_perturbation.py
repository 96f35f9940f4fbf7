"""``phased-output-perturbation``: (phased) output perturbation for DP-SCO and DP minimax with any base solver.

Seed 002 (Zhang, Thekumparampil, Oh & He, "Bring your own algorithm for optimal differentially private stochastic
minimax optimization"); specification ``shared/spec/seed002-phased-output-perturbation.md``. Every algorithm solves a
(regularised) empirical problem with *any* base solver to a prescribed accuracy and adds isotropic Gaussian noise:

=================  ===============================================  =============================================
``problem_class``  algorithm                                        noisy releases (σ = z·Δ for each)
=================  ===============================================  =============================================
strongly-convex    Algorithm 1 (Theorem 3.4)                        x̃, Δ = 4L/(μn)
convex             Algorithm 2, K phases (Theorem 3.7)              x̃_k, Δ_k = 4L/(μ_k n̄), μ_k = μ·2^k
sc-sc              Algorithm 3 (Theorem 4.4)                        x̃, ỹ: Δ_x = 4L/(n√(μ_x μ)), Δ_y = 4L/(n√(μ_y μ))
c-c                Algorithms 4 + 5, K phases each (Theorem 4.8)    x̃_k, ỹ_k: Δ_k = 4L/(n̄√(μ_k μ))
c-sc               §4.3 variant of Algorithm 4 (Corollary 4.9)      x̃_k, Δ_k = 4L/(n̄√(μ_k m_k)), m_k = min{μ_k, μ_y}
=================  ===============================================  =============================================

Phases use disjoint contiguous blocks of n̄ = ⌊n/K⌋ records, K = ⌈log₂ n⌉ by default (spec §6.1: the paper's log n is
log₂ n), and compose in parallel (Lemma A.1): a record influences one phase of each phased run.

Conventions: replace-one neighbours (Def. 1). ``noise_multiplier`` z is σ_k/Δ_k, the same for every release, so the
privacy of the run depends on z alone: a record's releases form a Gaussian mechanism with GDP parameter μ = √c/z,
c = 1 (Alg. 1, 2, C-SC) or c = 2 (x and y of Alg. 3; Alg. 4 and Alg. 5 on the same records: exact GDP composition).
σ never depends on the base solver's step size, batch size or iterations: only on the solver meeting its accuracy
(the sensitivity bound holds only then). A solver that misses it with probability p per run adds δ_fail = 2p (4p for
c-c: two runs see the record) to δ, rigorously (spec §3.4): the Gaussian part is accounted at δ − δ_fail.

Accountants: ``tight`` (analytic Gaussian of μ-GDP, Balle & Wang 2018), ``rdp`` (ρα with ρ = c/(2z²), improved
conversion), ``paper`` (the printed classical calibration, Def. 2: σ = Δ√(2 ln(1.25/δ'))/ε', valid for ε' < 1, with
the paper's δ split: ε = √(2 ln(2.5/δ))/z, or 2√(2 ln(5/δ))/z for sc-sc and c-c where each release gets (ε/2, δ/4)).

Utility (spec §4): the theorems' closed forms are stated at the paper's σ for (ε, δ); they are evaluated at ε_z, the ε
the paper attaches to z, so that σ_k = z·Δ_k is the paper's σ. The proofs' exact sums hold for every noise level,
K ≥ 1 and μ > 0, so a closed form is reported as a bound where it is at least the exact sum (the paper's ε ≤ 1,
δ < 1/n are sufficient, not necessary). Solver terms use the paper's in-expectation accuracy (failure δ/4, δ/8).

Errata and resolutions (spec §6): K = ⌈log₂ n⌉, n̄ = ⌊n/K⌋; natural logs in the privacy terms; Corollary 4.9's last
term is reported as stated (65·d_x·log(2.5n/δ)) and corrected (65·(K−1)·d_x·log(2.5/δ)), with the proof's exact sum.
Found here: the proofs bound F(x̃) − F(x̂*) through L‖x̃ − x̂*‖ (or ℓ‖·‖²), which needs the constants where the noisy
x̃ lands, possibly outside 𝒳 where Assumption 3.1/4.1 is stated; the bounds hold as stated for Π_𝒳(x̃) (projection is
non-expansive post-processing), and every utility bound lists this assumption. Not used: Algorithm 3's x and y come
from one solver run whose error and stability are bounded in the weighted norm μ_x‖·‖² + μ_y‖·‖², which would make
(x̃, ỹ) a single Gaussian with μ = 1/z instead of the composition's √2/z; the spec composes, and so do we.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, ClassVar, Literal

import numpy as np

from .. import validation as check
from ..conversions import epsilon_for_linear_rdp, linear_rdp_for_epsilon, order_grid
from ..errors import CalibrationError, FieldIssue, ParameterError
from ..events import GaussianEvent, SelfComposedEvent
from ..mechanisms.gaussian import gaussian_noise_multiplier, gdp_epsilon
from ..params import NOISE_MULTIPLIER_RANGE, Count, ParamsModel, bounded_count, param, resolve_noise_multiplier
from ..plans import MechanismPlan
from ..registry import AlgorithmFamily, BoundInfo, register
from ..reports import (
    AccountantResult,
    Assumption,
    CalibrationReport,
    Conventions,
    Noise,
    PaperCalibration,
    PrivacyReport,
    RdpCurve,
    Recommendation,
    Release,
    UtilityBound,
    UtilityReport,
    choose_accountant,
)
from ..verification import BlockResult, Plan, Simulator

SOURCE = "seed 002 (Zhang, Thekumparampil, Oh & He, bring your own algorithm for DP stochastic minimax optimization)"
MAX_COUNT = 10**12
MAX_DIMENSION = 10**9
MAX_PHASES = 60
CONSTANT_RANGE = (1e-12, 1e12)
MAX_SOLVER_FAILURE = 0.1

ProblemClass = Literal["strongly-convex", "convex", "sc-sc", "c-c", "c-sc"]
PHASED = ("convex", "c-c", "c-sc")
MINIMAX = ("sc-sc", "c-c", "c-sc")
SPLIT = ("sc-sc", "c-c")
"""Classes whose paper calibration splits (ε, δ) over two releases of a record (ε/2 and δ/4 each)."""

ALGORITHM = MappingProxyType(
    {
        "strongly-convex": "Algorithm 1",
        "convex": "Algorithm 2",
        "sc-sc": "Algorithm 3",
        "c-c": "Algorithms 4 + 5",
        "c-sc": "Algorithm 4, C-SC variant (§4.3)",
    }
)


# -- parameters ------------------------------------------------------------------------------------------------------


def _constant(description: str, symbol: str, unit: str, example: float) -> Any:
    lo, hi = CONSTANT_RANGE
    return param(description, symbol=symbol, unit=unit, example=example, ge=lo, le=hi, default=None)


class PhasedOutputPerturbationParams(ParamsModel):
    """Hyperparameters of seed 002's output-perturbation algorithms (Algorithms 1–5 and the C-SC variant)."""

    problem_class: ProblemClass = param(
        "The setting, which selects the algorithm: strongly-convex (Algorithm 1), convex (Algorithm 2, phased), "
        "sc-sc (Algorithm 3, strongly-convex–strongly-concave minimax), c-c (Algorithms 4 + 5, phased, "
        "convex–concave minimax), c-sc (§4.3: convex–strongly-concave minimax, phased Algorithm 4 variant).",
        example="convex",
    )
    dataset_size: Count = param(
        "Number of records (the base solver sees one block of ⌊n/K⌋ records per phase).",
        symbol="n",
        unit="records",
        example=4096,
        ge=1,
        le=MAX_COUNT,
    )
    dimension: bounded_count(1, MAX_DIMENSION) | None = param(
        "Dimension d of x (strongly-convex, convex). For minimax classes: d_x = d_y = dimension (c-sc: d_x), "
        "unless dimension_x/dimension_y are given instead.",
        symbol="d",
        unit="coordinates",
        example=10,
        default=None,
    )
    dimension_x: bounded_count(1, MAX_DIMENSION) | None = param(
        "Dimension of the minimisation variable x (minimax classes; with dimension_y, instead of dimension).",
        symbol="d_x",
        unit="coordinates",
        example=5,
        default=None,
    )
    dimension_y: bounded_count(1, MAX_DIMENSION) | None = param(
        "Dimension of the maximisation variable y (sc-sc, c-c; optional for c-sc, where only the simulator uses "
        "it: default d_x).",
        symbol="d_y",
        unit="coordinates",
        example=5,
        default=None,
    )
    lipschitz: float = param(
        "Lipschitz constant of every loss f(·; ξ) on the domain (minimax: jointly in (x, y), "
        "|f(x₁,y₁) − f(x₂,y₂)|² ≤ L²(‖x₁−x₂‖² + ‖y₁−y₂‖²)).",
        symbol="L",
        unit="loss units per parameter unit",
        example=1.0,
        ge=CONSTANT_RANGE[0],
        le=CONSTANT_RANGE[1],
    )
    smoothness: float | None = param(
        "Gradient Lipschitz constant ℓ of every loss (jointly for minimax). Required for strongly-convex and sc-sc "
        "(κ = ℓ/μ enters their utility bounds); must be at least the strong convexity. Optional otherwise "
        "(used by the simulator's synthetic problem).",
        symbol="ℓ",
        unit="loss units per parameter unit²",
        example=1.0,
        ge=0,
        le=CONSTANT_RANGE[1],
        default=None,
    )
    strong_convexity: float | None = _constant(
        "Strong convexity μ of every loss (strongly-convex, Assumption 3.2); for sc-sc, μ_x = μ_y = this value "
        "unless strong_convexity_x/strong_convexity_y are given instead. Not a regulariser: see regularization.",
        "μ",
        "loss units per parameter unit²",
        0.1,
    )
    strong_convexity_x: float | None = _constant(
        "Strong convexity in x (sc-sc, Assumption 4.2; with strong_convexity_y).",
        "μ_x",
        "loss units per parameter unit²",
        0.1,
    )
    strong_convexity_y: float | None = _constant(
        "Strong concavity in y (sc-sc with strong_convexity_x; required for c-sc).",
        "μ_y",
        "loss units per parameter unit²",
        0.2,
    )
    diameter: float | None = _constant(
        "The paper's D (convex, c-c, c-sc; required there): a norm bound from the initial point x₀ = 0, "
        "‖x*‖ ≤ D (convex, Theorem 3.7) or max{‖x‖, ‖y‖} ≤ D on 𝒳×𝒴 (c-c, c-sc). A domain of diameter D "
        "containing x₀ = 0 (y₀ = 0) satisfies it.",
        "D",
        "parameter units",
        1.0,
    )
    phases: bounded_count(1, MAX_PHASES) | None = param(
        "Number of phases K of the phased classes (convex, c-c, c-sc); at most dataset_size. Default ⌈log₂ n⌉ "
        "(the paper's K = log n, spec §6.1).",
        symbol="K",
        unit="phases",
        example=12,
        default=None,
    )
    regularization: float | None = _constant(
        "Base regulariser μ of the phased classes (phase k adds (μ_k/2)‖x − x̃_{k−1}‖², μ_k = μ·2^k; c-c also "
        "(μ/2)‖y‖²). Default: the theorem's choice (Theorem 3.7, 4.8, Corollary 4.9) at the noise used, i.e. with "
        "√(log(c/δ))/ε replaced by its value at the paper's calibration for this noise multiplier.",
        "μ",
        "loss units per parameter unit²",
        0.46,
    )
    noise_multiplier: float | None = param(
        "Noise std over sensitivity, the same for every release: σ_k = z·Δ_k (the plan lists each Δ_k and σ_k). "
        "Required for privacy accounting and utility; computed by calibration.",
        symbol="z = σ_k/Δ_k",
        unit="multiples of each release's L2 sensitivity",
        example=4.9,
        ge=NOISE_MULTIPLIER_RANGE[0],
        le=NOISE_MULTIPLIER_RANGE[1],
        default=None,
    )
    solver_failure_probability: float | None = param(
        "Probability p that one base-solver run misses the accuracy the privacy proof requires (the plan's "
        "solver_accuracy_required). Adds δ_fail = 2p (4p for c-c) to δ. 0: the accuracy is certified "
        "deterministically (e.g. by the a-posteriori certificate of spec §2.x). Default: the paper's p = δ/4 "
        "(δ/8 for sc-sc and c-c), reached by running the solver to the in-expectation gap solver_expected_gap.",
        symbol="p",
        unit="probability",
        example=0.0,
        ge=0,
        le=MAX_SOLVER_FAILURE,
        default=None,
    )
    target_delta: float | None = param(
        "δ of the privacy guarantee the run targets. Required by /v1/utility (the theorems' constants and the "
        "paper's solver accuracy γ depend on δ); /v1/privacy, /v1/calibrate and verification jobs use the "
        "request's delta, and reject a different value here.",
        symbol="δ",
        unit="probability",
        example=1e-5,
        gt=0,
        lt=1,
        default=None,
    )

    def check(self) -> list[FieldIssue]:
        issues: list[FieldIssue] = []
        cls = self.problem_class

        def require(name: str, why: str) -> None:
            if getattr(self, name) is None:
                issues.append(FieldIssue((name,), f"is required for problem_class {cls!r} ({why})", _allowed(name)))

        def forbid(name: str, why: str) -> None:
            if getattr(self, name) is not None:
                issues.append(
                    FieldIssue((name,), f"is not used by problem_class {cls!r} ({why}); omit it", "omit it", None)
                )

        minimax = cls in MINIMAX
        if not minimax:
            require("dimension", "the dimension d of x")
            for name in ("dimension_x", "dimension_y"):
                forbid(name, "a minimisation problem has only x: give dimension")
        elif self.dimension is not None and (self.dimension_x is not None or self.dimension_y is not None):
            if self.dimension_x is not None or cls != "c-sc":
                issues.append(
                    FieldIssue(
                        ("dimension",),
                        "give dimension or dimension_x/dimension_y, not both",
                        "either dimension or dimension_x and dimension_y",
                    )
                )
        elif self.dimension is None:
            require("dimension_x", "give dimension_x and dimension_y, or dimension for both")
            if cls != "c-sc":
                require("dimension_y", "give dimension_x and dimension_y, or dimension for both")

        if cls == "strongly-convex":
            require("strong_convexity", "Assumption 3.2: μ-strongly convex losses")
            require("smoothness", "κ = ℓ/μ enters Theorem 3.4")
            for name in ("strong_convexity_x", "strong_convexity_y"):
                forbid(name, "a minimisation problem has one strong convexity: give strong_convexity")
        elif cls == "sc-sc":
            given_xy = self.strong_convexity_x is not None or self.strong_convexity_y is not None
            if self.strong_convexity is not None and given_xy:
                issues.append(
                    FieldIssue(
                        ("strong_convexity",),
                        "give strong_convexity or strong_convexity_x/strong_convexity_y, not both",
                        "either strong_convexity or strong_convexity_x and strong_convexity_y",
                    )
                )
            elif self.strong_convexity is None:
                for name in ("strong_convexity_x", "strong_convexity_y"):
                    require(name, "Assumption 4.2: give strong_convexity_x and _y, or strong_convexity for both")
            require("smoothness", "κ_x = ℓ/μ_x and κ_y = ℓ/μ_y enter Theorem 4.4")
        elif cls == "c-sc":
            require("strong_convexity_y", "§4.3: f(x, ·; ξ) is μ_y-strongly concave")
            forbid("strong_convexity", "x is only convex; the strong concavity in y is strong_convexity_y")
            forbid("strong_convexity_x", "x is only convex; use problem_class sc-sc if it is strongly convex")
        else:
            why = "the losses are only convex; the phases' regulariser is regularization"
            for name in ("strong_convexity", "strong_convexity_x", "strong_convexity_y"):
                forbid(name, why)

        if cls in PHASED:
            require("diameter", "the theorem's regulariser and utility bound use D")
        else:
            forbid("diameter", "the algorithm needs no domain bound")
            forbid("phases", "it is not phased")
            forbid("regularization", "it is not phased: the losses' own strong convexity is used")

        if self.phases is not None and self.phases > self.dataset_size:
            issues.append(
                FieldIssue(
                    ("phases",),
                    "must not exceed dataset_size (each phase needs a block of ⌊n/K⌋ ≥ 1 records)",
                    f"an integer in [1, {min(self.dataset_size, MAX_PHASES)}]",
                    self.phases,
                )
            )
        if not issues and self.smoothness is not None:
            strongest = max(
                [v for v in (self.strong_convexity, self.strong_convexity_x, self.strong_convexity_y) if v is not None],
                default=0.0,
            )
            if self.smoothness < strongest:
                issues.append(
                    FieldIssue(
                        ("smoothness",),
                        "must be at least the strong convexity (an ℓ-smooth μ-strongly convex function has ℓ ≥ μ)",
                        f"a finite number in [{strongest:g}, {CONSTANT_RANGE[1]:g}]",
                        self.smoothness,
                    )
                )
        return issues

    # resolved constants
    @property
    def d_x(self) -> int:
        return int(self.dimension_x if self.dimension_x is not None else self.dimension)  # type: ignore[arg-type]

    @property
    def d_y(self) -> int:
        if self.dimension_y is not None:
            return self.dimension_y
        return self.d_x

    @property
    def mu_x(self) -> float:
        return float(self.strong_convexity_x if self.strong_convexity_x is not None else self.strong_convexity)  # type: ignore[arg-type]

    @property
    def mu_y(self) -> float:
        return float(self.strong_convexity_y if self.strong_convexity_y is not None else self.strong_convexity)  # type: ignore[arg-type]


def _allowed(name: str) -> str:
    if name.startswith("dimension"):
        return f"an integer in [1, {MAX_DIMENSION}]"
    return f"a finite number in [{CONSTANT_RANGE[0]:g}, {CONSTANT_RANGE[1]:g}]"


# -- the paper's calibration and the privacy of the run ----------------------------------------------------------------


def default_phases(n: int) -> int:
    """K = ⌈log₂ n⌉ (at least 1), the paper's K = log n with log base 2 (spec §6.1)."""
    return max(1, (n - 1).bit_length())


def paper_noise_multiplier(problem_class: str, epsilon: float, delta: float) -> float:
    """z = σ/Δ of the printed calibrations (§3.3): √(2 ln(2.5/δ))/ε (Alg. 1, 2, C-SC: Def. 2 at (ε, δ/2) plus failure
    δ/2), or 2√(2 ln(5/δ))/ε (Alg. 3, 4, 5: each of two releases at (ε/2, δ/4) plus failure δ/4)."""
    if problem_class in SPLIT:
        return 2.0 * math.sqrt(2.0 * math.log(5.0 / delta)) / epsilon
    return math.sqrt(2.0 * math.log(2.5 / delta)) / epsilon


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
    c-c that of Algorithm 4 and of Algorithm 5 (four). δ_fail = failing_runs·p (spec §3.4)."""
    return 4 if problem_class == "c-c" else 2


def releases_per_record(problem_class: str) -> int:
    """Gaussian releases one record influences: 1 (a phase of one run), or 2 (x and y of Alg. 3; a phase of Alg. 4
    and one of Alg. 5), composed exactly in GDP: μ² = Σ μ_i² = c/z²."""
    return 2 if problem_class in SPLIT else 1


def gdp_parameter(problem_class: str, noise_multiplier: float) -> float:
    """μ = √c/z of the run, conditional on the solver meeting its accuracy (spec §3.4)."""
    return math.sqrt(releases_per_record(problem_class)) / noise_multiplier


def solver_failure(p: PhasedOutputPerturbationParams, delta: float) -> tuple[float, float, bool]:
    """(p, δ_fail, whether p is the paper's default) for the δ being accounted; δ_fail ≥ δ is a 422."""
    default = p.solver_failure_probability is None
    prob = paper_failure_probability(p.problem_class, delta) if default else float(p.solver_failure_probability)  # type: ignore[arg-type]
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


# -- the mechanism plan --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedRelease:
    """One noisy release: x̃_k (or ỹ_k), its sensitivity Δ, noise σ = zΔ and the accuracy its solver run needs."""

    name: str
    algorithm: str
    phase: int
    block: tuple[int, int]
    """Records (0-based, half-open) the solver run of this release sees."""
    variable: str
    dimension: int
    sensitivity: float
    noise_std: float
    accuracy_required: float
    accuracy_measure: str
    gap_per_failure: float
    """γ(p) = gap_per_failure·p^gap_power: the in-expectation accuracy giving failure probability p (Markov)."""
    gap_power: int
    problem: str
    mu_k: float | None = None
    m_k: float | None = None


@dataclass(frozen=True)
class Mechanism:
    """The run's plan: phases, blocks, regulariser and every release."""

    problem_class: str
    phases: int
    block_size: int
    unused: int
    regularization: float | None
    releases: tuple[PlannedRelease, ...]
    noise_multiplier: float

    def by_algorithm(self, algorithm: str) -> list[PlannedRelease]:
        return [r for r in self.releases if r.algorithm == algorithm]


def theorem_regularization(p: PhasedOutputPerturbationParams, noise_multiplier: float, phases: int) -> float:
    """The theorems' μ (Thm 3.7, 4.8, Cor. 4.9) at the paper's calibration for this z.

    Thm 3.7: μ = (L/D)·max{1/√n, 14K√(d ln(2.5/δ))/(nε)}; Thm 4.8: (L/D)·max{2/√n, 13K√(d ln(5/δ))/(nε)}, d = max;
    Cor. 4.9: 3(L/D)·max{1/√n, 4K√(d_x ln(2.5/δ))/(nε)}. At the paper's σ, √(ln(2.5/δ))/ε = z/√2 and
    √(ln(5/δ))/ε = z/(2√2), so μ depends on (ε, δ) only through z (K stands for log n, spec §6.1).
    """
    z, n, K = noise_multiplier, p.dataset_size, phases
    scale = p.lipschitz / p.diameter  # type: ignore[operator]
    if p.problem_class == "convex":
        return scale * max(1.0 / math.sqrt(n), 14.0 * K * math.sqrt(p.d_x) * z / (math.sqrt(2.0) * n))
    if p.problem_class == "c-c":
        d = max(p.d_x, p.d_y)
        return scale * max(2.0 / math.sqrt(n), 13.0 * K * math.sqrt(d) * z / (2.0 * math.sqrt(2.0) * n))
    return 3.0 * scale * max(1.0 / math.sqrt(n), 4.0 * K * math.sqrt(p.d_x) * z / (math.sqrt(2.0) * n))


def mechanism(p: PhasedOutputPerturbationParams, noise_multiplier: float) -> Mechanism:
    """Every release with its block, regulariser, Δ, σ = zΔ and required solver accuracy (spec §2, §3.2).

    ``accuracy_required`` is a distance for Alg. 1/2 (L/(μn), L/(μ_k n̄)) and a weighted squared distance for the
    minimax algorithms (L²/(μn²), L²/(μn̄²), L²/(n̄²m_k)); ``gap_per_failure``·p^power is the in-expectation gap γ(p)
    that meets it with probability ≥ 1 − p (Markov)."""
    z, L, n, cls = noise_multiplier, p.lipschitz, p.dataset_size, p.problem_class

    def release(name: str, algorithm: str, sensitivity: float, **kw: Any) -> PlannedRelease:
        defaults: dict[str, Any] = {"phase": 1, "block": (0, n), "variable": "x", "dimension": p.d_x}
        return PlannedRelease(
            name=name, algorithm=algorithm, sensitivity=sensitivity, noise_std=z * sensitivity, **(defaults | kw)
        )

    if cls == "strongly-convex":
        mu = p.mu_x
        only = release(
            "x̃ (Algorithm 1)",
            "Algorithm 1",
            4.0 * L / (mu * n),
            accuracy_required=L / (mu * n),
            accuracy_measure="‖𝒜(S) − x̂*_S‖",
            gap_per_failure=L * L / (2.0 * mu * n * n),
            gap_power=2,
            problem="min_{x∈𝒳} (1/n) Σ f(x; ξ_i)",
        )
        return Mechanism(cls, 1, n, 0, None, (only,), z)
    if cls == "sc-sc":
        mu = min(p.mu_x, p.mu_y)
        pair = tuple(
            release(
                f"{var}̃ (Algorithm 3)",
                "Algorithm 3",
                4.0 * L / (n * math.sqrt(mu_var * mu)),
                variable=var,
                dimension=dim,
                accuracy_required=L * L / (mu * n * n),
                accuracy_measure="μ_x‖𝒜_x(S) − x̂*_S‖² + μ_y‖𝒜_y(S) − ŷ*_S‖² (one run for x and y)",
                gap_per_failure=L * L / (2.0 * mu * n * n),
                gap_power=1,
                problem="min_{x∈𝒳} max_{y∈𝒴} (1/n) Σ f(x, y; ξ_i)",
            )
            for var, mu_var, dim in (("x", p.mu_x, p.d_x), ("y", p.mu_y, p.d_y))
        )
        return Mechanism(cls, 1, n, 0, None, pair, z)

    K = p.phases if p.phases is not None else default_phases(n)
    nbar = n // K
    mu = p.regularization if p.regularization is not None else theorem_regularization(p, z, K)
    out: list[PlannedRelease] = []
    for k in range(1, K + 1):
        mu_k = mu * 2.0**k
        phase: dict[str, Any] = {"phase": k, "block": ((k - 1) * nbar, k * nbar), "mu_k": mu_k}
        block = f"(1/n̄) Σ_{{i∈S_{k}}} f"
        if cls == "convex":
            out.append(
                release(
                    f"phase {k}: x̃_{k} (Algorithm 2)",
                    "Algorithm 2",
                    4.0 * L / (mu_k * nbar),
                    accuracy_required=L / (mu_k * nbar),
                    accuracy_measure="‖x_k − x̂*_k‖",
                    gap_per_failure=L * L / (2.0 * mu_k * nbar * nbar),
                    gap_power=2,
                    problem=f"min_{{x∈𝒳}} {block}(x; ξ_i) + (μ_{k}/2)‖x − x̃_{k - 1}‖²",
                    **phase,
                )
            )
        elif cls == "c-c":
            for algorithm, var, dim, regularisers, measure in (
                (
                    "Algorithm 4",
                    "x",
                    p.d_x,
                    f"(μ_{k}/2)‖x − x̃_{k - 1}‖² − (μ/2)‖y‖²",
                    "μ_k‖x_k − x̂*_k‖² + μ‖y_k − ŷ*_k‖²",
                ),
                (
                    "Algorithm 5",
                    "y",
                    p.d_y,
                    f"(μ/2)‖x‖² − (μ_{k}/2)‖y − ỹ_{k - 1}‖²",
                    "μ‖x_k − x̂*_k‖² + μ_k‖y_k − ŷ*_k‖²",
                ),
            ):
                out.append(
                    release(
                        f"phase {k}: {var}̃_{k} ({algorithm})",
                        algorithm,
                        4.0 * L / (nbar * math.sqrt(mu_k * mu)),
                        variable=var,
                        dimension=dim,
                        accuracy_required=L * L / (mu * nbar * nbar),
                        accuracy_measure=measure,
                        gap_per_failure=L * L / (2.0 * mu * nbar * nbar),
                        gap_power=1,
                        problem=f"min_{{x∈𝒳}} max_{{y∈𝒴}} {block} + {regularisers}",
                        **phase,
                    )
                )
        else:  # c-sc
            m_k = min(mu_k, p.mu_y)
            out.append(
                release(
                    f"phase {k}: x̃_{k} (Algorithm 4, C-SC variant)",
                    "Algorithm 4, C-SC variant",
                    4.0 * L / (nbar * math.sqrt(mu_k * m_k)),
                    m_k=m_k,
                    accuracy_required=L * L / (nbar * nbar * m_k),
                    accuracy_measure="μ_k‖x_k − x̂*_k‖² + μ_y‖y_k − ŷ*_k‖²",
                    gap_per_failure=L * L / (2.0 * m_k * nbar * nbar),
                    gap_power=1,
                    problem=f"min_{{x∈𝒳}} max_{{y∈𝒴}} {block} + (μ_{k}/2)‖x − x̃_{k - 1}‖²",
                    **phase,
                )
            )
    return Mechanism(cls, K, nbar, n - K * nbar, mu, tuple(out), z)


def expected_gap(release: PlannedRelease, probability: float) -> float:
    """γ(p): reaching E[suboptimality (or duality gap)] ≤ γ gives the accuracy w.p. ≥ 1 − p (Markov; spec §2).

    Alg. 1/2: E‖𝒜 − x̂‖ ≤ √(2γ/μ) ⇒ γ = p²L²/(2μn²); minimax: E[weighted] ≤ 2γ (Lemma B.1) ⇒ γ = p·need/2."""
    return release.gap_per_failure * probability**release.gap_power


def certified_accuracy(release: PlannedRelease, probability: float) -> float:
    """The "2γ level" p·need: certifying it deterministically gives privacy with p = 0 and the utility bounds."""
    return probability * release.accuracy_required


# -- utility (spec §4) ----------------------------------------------------------------------------------------------


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class UtilityValue:
    """A utility bound's value with the facts that decide whether it applies."""

    name: str
    measure: str
    value: float | None
    source: str
    assumptions: tuple[Assumption, ...] = ()
    role: str = "closed"
    """"closed" (a theorem as stated), "corrected" or "exact" (the proof's sum before simplification)."""
    valid: bool = True
    """Whether the value is a bound here: the exact sums always (they hold for every noise level, K ≥ 1 and μ > 0);
    a closed form when it is at least the exact sum (the paper's regime conditions are sufficient, not necessary)."""


def utility_values(p: PhasedOutputPerturbationParams, mech: Mechanism, delta: float) -> list[UtilityValue]:
    """Every bound with its validity (a closed form is valid where its last assumption, "implied by the proof's exact
    sum", holds)."""
    return [
        v if v.role == "exact" else replace(v, valid=bool(v.assumptions and v.assumptions[-1].holds))
        for v in _utility_values(p, mech, delta)
    ]


def _utility_values(p: PhasedOutputPerturbationParams, mech: Mechanism, delta: float) -> list[UtilityValue]:
    """Closed forms of Theorems 3.4, 3.7, 4.4, 4.8, Corollary 4.9 and the proofs' exact sums, at noise z and δ.

    The closed forms are stated at the paper's calibration; they are evaluated at ε_z, the ε the paper attaches to z
    (so that σ = zΔ is the paper's σ). The solver terms use the paper's in-expectation accuracy (failure p = δ/4 or
    δ/8 in the paper's Markov argument), which the proofs need whatever the privacy failure probability."""
    cls, z, L, n = p.problem_class, mech.noise_multiplier, p.lipschitz, p.dataset_size
    pu = paper_failure_probability(cls, delta)
    eps_z = paper_epsilon(cls, z, delta)
    K, nbar = mech.phases, mech.block_size
    regime = [
        Assumption(
            f"ε_z = {eps_z:.6g} ≤ {paper_epsilon_limit(cls):g}: the ε the paper attaches to z is in its range",
            eps_z <= paper_epsilon_limit(cls),
            "the paper's simplifications assume ε ∈ (0, 1] (ε/2 per release for sc-sc and c-c); informational: "
            "dpcal checks the closed form against the proof's exact sum instead",
        ),
        Assumption(
            f"δ = {delta:.6g} < 1/n = {1.0 / n:.6g}",
            delta < 1.0 / n,
            "used to simplify the constants; informational, as above",
        ),
    ]
    solver = Assumption(
        "the base solver reaches, in expectation, the paper's accuracy γ in every run (the plan's "
        "utility_expected_gap; or certifies the 2γ level, certified_accuracy_for_utility)",
        None,
        "a property of your solver; dpcal cannot check it",
    )
    outside = Assumption(
        "the loss has its constants (L-Lipschitz, ℓ-smooth) wherever the noisy output lands, which may be outside "
        "the domain; if they hold on the domain only, the bound is for the output projected onto it (post-processing)",
        None,
        "the proofs bound F(x̃) − F(x̂*) through ‖x̃ − x̂*‖; projecting onto the domain is non-expansive",
    )
    log25, log5 = math.log(2.5 / delta), math.log(5.0 / delta)
    out: list[UtilityValue] = []

    def closed_conditions(value: float, exact: float, extra: Sequence[Assumption] = ()) -> tuple[Assumption, ...]:
        implied = Assumption(
            f"implied by the proof's exact sum here (closed form {value:.6g} ≥ exact sum {exact:.6g}); this decides "
            "whether the closed form is a bound here",
            bool(value >= exact),
        )
        return (*problem_assumptions, solver, outside, *regime, *extra, implied)

    if cls == "strongly-convex":
        mu, ell, d = p.mu_x, float(p.smoothness), p.d_x  # type: ignore[arg-type]
        kappa = ell / mu
        r = mech.releases[0]
        noise = d * r.noise_std**2
        solv = (pu * r.accuracy_required) ** 2
        problem_assumptions = (
            Assumption("f(·; ξ) is L-Lipschitz, ℓ-smooth and μ-strongly convex on 𝒳 (Assumption 3.2)", None),
            Assumption("x* and x̂*_S are interior points of 𝒳", None),
        )
        emp_exact = ell * (noise + solv)
        pop_exact = 1.5 * ell * (noise + solv + 4.0 * L * L / (mu * mu * n))
        emp = 33.0 * L * L * kappa * d * log25 / (mu * n * n * eps_z * eps_z)
        pop = L * L * kappa * (7.0 / (mu * n) + 48.0 * d * log25 / (mu * n * n * eps_z * eps_z))
        src = f"{SOURCE}, Theorem 3.4"
        out += [
            UtilityValue("Theorem 3.4 (empirical)", _EMPIRICAL, emp, src, closed_conditions(emp, emp_exact)),
            UtilityValue("Theorem 3.4 (population)", _POPULATION, pop, src, closed_conditions(pop, pop_exact)),
            UtilityValue(
                "proof of Theorem 3.4, exact form (empirical)",
                _EMPIRICAL,
                emp_exact,
                f"{src} (proof, before simplification): ℓ(dσ² + E‖𝒜(S) − x̂*‖²)",
                (*problem_assumptions, solver, outside),
                "exact",
            ),
            UtilityValue(
                "proof of Theorem 3.4, exact form (population)",
                _POPULATION,
                pop_exact,
                f"{src} (proof): (3ℓ/2)(dσ² + E‖𝒜(S) − x̂*‖² + 4L²/(μ²n))",
                (*problem_assumptions, solver, outside),
                "exact",
            ),
        ]
        return out

    if cls == "sc-sc":
        mux, muy, ell = p.mu_x, p.mu_y, float(p.smoothness)  # type: ignore[arg-type]
        mu = min(mux, muy)
        d = max(p.d_x, p.d_y)
        c = (ell / mux) * (ell / muy) + ell / mu
        rx, ry = mech.releases
        noise = mux * p.d_x * rx.noise_std**2 + muy * p.d_y * ry.noise_std**2
        solv = pu * rx.accuracy_required
        problem_assumptions = (
            Assumption("f is L-Lipschitz, ℓ-smooth, μ_x-strongly convex in x, μ_y-strongly concave in y (4.2)", None),
            Assumption("the empirical and population saddle points are interior", None),
        )
        emp_exact = c * (noise + solv)
        pop_exact = 1.5 * c * (noise + solv + 4.0 * math.sqrt(2.0) * L * L / (mu * n))
        emp = 257.0 * L * L * c * d * log5 / (mu * n * n * eps_z * eps_z)
        pop = 3.0 * L * L * c * (3.0 / (mu * n) + 128.0 * d * log5 / (mu * n * n * eps_z * eps_z))
        src = f"{SOURCE}, Theorem 4.4"
        out += [
            UtilityValue("Theorem 4.4 (empirical)", _EMPIRICAL_GAP, emp, src, closed_conditions(emp, emp_exact)),
            UtilityValue("Theorem 4.4 (population)", _STRONG_GAP, pop, src, closed_conditions(pop, pop_exact)),
            UtilityValue(
                "proof of Theorem 4.4, exact form (empirical)",
                _EMPIRICAL_GAP,
                emp_exact,
                f"{src} (proof): (κ_xκ_y + κ)(μ_x d_x σ_x² + μ_y d_y σ_y² + 2γ)",
                (*problem_assumptions, solver, outside),
                "exact",
            ),
            UtilityValue(
                "proof of Theorem 4.4, exact form (population)",
                _STRONG_GAP,
                pop_exact,
                f"{src} (proof): (3/2)(κ_xκ_y + κ)(μ_x d_x σ_x² + μ_y d_y σ_y² + 2γ + 4√2L²/(μn))",
                (*problem_assumptions, solver, outside),
                "exact",
            ),
        ]
        return out

    D, mu = float(p.diameter), float(mech.regularization)  # type: ignore[arg-type]
    theorem_mu = p.regularization is None
    phases_ok = Assumption(f"2^K ≥ n (K = {K})", 2.0**K >= n, "the closed forms use μ_K = μ·2^K ≥ μn")
    mu_ok = Assumption(
        "regularization is the theorem's choice",
        theorem_mu,
        "the default" if theorem_mu else f"regularization = {mu:.6g} was given",
    )

    def phased_sum(releases: list[PlannedRelease], solver_sq: Sequence[float], dim: int) -> tuple[float, list[float]]:
        e = [2.0 * dim * r.noise_std**2 + s for r, s in zip(releases, solver_sq, strict=True)]
        mus = [r.mu_k for r in releases]
        head = L * math.sqrt(e[-1]) + sum(mus[k] / 2.0 * e[k - 1] for k in range(1, len(e)))  # type: ignore[operator]
        return head + mus[0] / 2.0 * D * D, e  # type: ignore[operator]

    if cls == "convex":
        rel = mech.releases
        d = p.d_x
        problem_assumptions = (
            Assumption("f(·; ξ) is convex, L-Lipschitz and ℓ-smooth on 𝒳 (Assumption 3.1)", None),
            Assumption(f"some minimiser x* has ‖x* − x₀‖ ≤ D = {D:g} (x₀ = 0)", None),
        )
        head, _ = phased_sum(list(rel), [2.0 * (pu * r.accuracy_required) ** 2 for r in rel], d)
        exact = head + sum(2.0 * L * L / (r.mu_k * nbar) for r in rel)  # type: ignore[operator]
        closed = 4.0 * L * D * K * (1.0 / math.sqrt(n) + 7.0 * math.sqrt(d * log25) / (n * eps_z))
        src = f"{SOURCE}, Theorem 3.7"
        out += [
            UtilityValue(
                "Theorem 3.7", _POPULATION_K, closed, src, closed_conditions(closed, exact, (mu_ok, phases_ok))
            ),
            UtilityValue(
                "proof of Theorem 3.7, exact sum",
                _POPULATION_K,
                exact,
                f"{src} (proof): L√E_K + Σ_{{k≥2}} (μ_k/2)E_{{k−1}} + Σ_k 2L²/(μ_k n̄) + (μ_1/2)D², "
                "E_k = 2dσ_k² + E‖x_k − x̂*_k‖²; any K ≥ 1 and μ > 0",
                (*problem_assumptions, solver, outside),
                "exact",
            ),
        ]
        return out

    if cls == "c-c":
        d = max(p.d_x, p.d_y)
        problem_assumptions = (
            Assumption("f is L-Lipschitz and ℓ-smooth, convex in x and concave in y (Assumption 4.1)", None),
            Assumption(f"max{{‖x‖, ‖y‖}} ≤ D = {D:g} on 𝒳×𝒴 (x₀ = y₀ = 0)", None),
        )
        total = 0.0
        for alg, dim in (("Algorithm 4", p.d_x), ("Algorithm 5", p.d_y)):
            rel = mech.by_algorithm(alg)
            head, _ = phased_sum(rel, [2.0 * pu * r.accuracy_required / r.mu_k for r in rel], dim)  # type: ignore[operator]
            total += head + 8.0 * K * L * L / (mu * nbar) + mu / 2.0 * D * D
        closed = 16.0 * L * D * K * K * (1.0 / math.sqrt(n) + 5.0 * math.sqrt(d * log5) / (n * eps_z))
        src = f"{SOURCE}, Theorem 4.8"
        out += [
            UtilityValue("Theorem 4.8", _WEAK_GAP, closed, src, closed_conditions(closed, total, (mu_ok, phases_ok))),
            UtilityValue(
                "proof of Theorem 4.8, exact sum",
                _WEAK_GAP,
                total,
                f"{src} (proof, eq. (4) for each half): Σ over Alg. 4 (d_x) and Alg. 5 (d_y) of L√E_K + "
                "Σ_{k≥2} (μ_k/2)E_{k−1} + 8KL²/(μn̄) + (μ_1/2)D² + (μ/2)D², E_k = 2dσ_k² + E‖x_k − x̂*_k‖²",
                (*problem_assumptions, solver, outside),
                "exact",
            ),
        ]
        return out

    # c-sc (Corollary 4.9)
    dx, muy = p.d_x, p.mu_y
    rel = list(mech.releases)
    problem_assumptions = (
        Assumption("f is L-Lipschitz, ℓ-smooth, convex in x and μ_y-strongly concave in y (§4.3)", None),
        Assumption(f"max{{‖x‖, ‖y‖}} ≤ D = {D:g} on 𝒳×𝒴 (x₀ = 0)", None),
    )
    valid = Assumption(
        f"μ_y ≥ L/(D√n) = {L / (D * math.sqrt(n)):.6g} (Corollary 4.9's condition)", muy >= L / (D * math.sqrt(n))
    )
    head, _ = phased_sum(rel, [2.0 * pu * r.accuracy_required / r.mu_k for r in rel], dx)  # type: ignore[operator]
    exact = head + sum(8.0 * L * L / (r.m_k * nbar) for r in rel)  # type: ignore[operator]
    part1 = 6.0 * L * D * K * (1.0 / math.sqrt(n) + 4.0 * math.sqrt(dx * log25) / (n * eps_z))
    stated = part1 + L * L * K * K * (
        8.0 / (muy * n) + 65.0 * dx * math.log(2.5 * n / delta) / (muy * n * n * eps_z * eps_z)
    )
    corrected = part1 + L * L * K * K * (8.0 / (muy * n) + 65.0 * (K - 1) * dx * log25 / (muy * n * n * eps_z * eps_z))
    src = f"{SOURCE}, Corollary 4.9"
    extra = (mu_ok, phases_ok, valid)
    out += [
        UtilityValue(
            "Corollary 4.9 (as stated)", _PRIMAL_GAP, stated, src, closed_conditions(stated, exact, extra), "closed"
        ),
        UtilityValue(
            "Corollary 4.9 (corrected: 65(K−1)·d_x·log(2.5/δ), spec §6.10)",
            _PRIMAL_GAP,
            corrected,
            f"{src}, last term re-derived from eq. (4) with μ → min{{μ_k, μ_y}} (spec §6.10)",
            closed_conditions(corrected, exact, extra),
            "corrected",
        ),
        UtilityValue(
            "proof of Corollary 4.9, exact sum",
            _PRIMAL_GAP,
            exact,
            f"{src} (eq. (4) with m_k = min{{μ_k, μ_y}}): L√E_K + Σ_{{k≥2}} (μ_k/2)E_{{k−1}} + Σ_k 8L²/(m_k n̄) + "
            "(μ_1/2)D², E_k = 2d_xσ_k² + E‖x_k − x̂*_k‖²",
            (*problem_assumptions, solver, outside),
            "exact",
        ),
    ]
    return out


_EMPIRICAL = "excess empirical risk E[F̂_S(x̃) − F̂_S(x̂*_S)]"
_POPULATION = "excess population risk E[F(x̃) − F(x*)]"
_POPULATION_K = "excess population risk E[F(x̃_K) − F(x*)]"
_EMPIRICAL_GAP = "empirical strong duality gap E[max_y F̂_S(x̃, y) − min_x F̂_S(x, ỹ)]"
_STRONG_GAP = "population strong duality gap E[max_y F(x̃, y) − min_x F(x, ỹ)]"
_WEAK_GAP = "population weak duality gap max_y E[F(x̃_K, y)] − min_x E[F(x, ỹ_K)]"
_PRIMAL_GAP = "primal gap max_y E[F(x̃_K, y)] − F(x*, y*) (claimed also for E[Φ(x̃_K) − Φ(x*)], spec §6.11)"

PREDICTED_MEASURE = MappingProxyType(
    {
        "strongly-convex": _POPULATION,
        "convex": _POPULATION_K,
        "sc-sc": _STRONG_GAP,
        "c-c": _WEAK_GAP,
        "c-sc": _PRIMAL_GAP,
    }
)


def utility_bounds(p: PhasedOutputPerturbationParams, mech: Mechanism, delta: float) -> tuple[UtilityBound, ...]:
    """The utility report's bounds; ``applicable`` says whether the value is a bound here (see UtilityValue.valid)."""
    out = []
    for v in utility_values(p, mech, delta):
        if v.value is None or not math.isfinite(v.value):
            continue
        out.append(UtilityBound(v.measure, v.value, "explicit bound", f"{v.name} — {v.source}", v.assumptions, v.valid))
    return tuple(out)


def predicted_bound(p: PhasedOutputPerturbationParams, mech: Mechanism, delta: float) -> tuple[float, str]:
    """The smallest applicable explicit bound on the measure the simulator reports, and its name."""
    measure = PREDICTED_MEASURE[p.problem_class]
    found = [
        v
        for v in utility_values(p, mech, delta)
        if v.measure == measure and v.value is not None and v.valid and math.isfinite(v.value)
    ]
    best = min(found, key=lambda v: v.value)  # type: ignore[arg-type, return-value]
    return float(best.value), f"{best.name}: {best.source}"  # type: ignore[arg-type]


# -- presentation ----------------------------------------------------------------------------------------------------

_INDEPENDENCE = (
    "σ_k = z·Δ_k does not depend on the base solver's step size, batch size or number of iterations: only on the "
    "solver meeting the accuracy the plan lists (releases[].details.solver_accuracy_required); privacy fails if it "
    "does not"
)


def _release_objects(mech: Mechanism, probability: float, utility_probability: float) -> tuple[Release, ...]:
    cls = mech.problem_class
    out = []
    for r in mech.releases:
        if cls in PHASED:
            if cls == "c-c":
                composition = (
                    f"parallel with the other phases of {r.algorithm} (disjoint blocks); composes with the same "
                    f"phase of {'Algorithm 5' if r.algorithm == 'Algorithm 4' else 'Algorithm 4'} (same records) "
                    "in Gaussian DP"
                )
            else:
                composition = "parallel: disjoint blocks, a record influences one phase (Lemma A.1)"
        elif cls == "sc-sc":
            composition = "sequential with the other variable's release (same records): Gaussian-DP composition"
        else:
            composition = "single release"
        details: dict[str, float | int | str] = {
            "algorithm": r.algorithm,
            "phase": r.phase,
            "records": f"{r.block[0] + 1}..{r.block[1]}",
            "block_size": r.block[1] - r.block[0],
            "variable": r.variable,
            "dimension": r.dimension,
            "solver_problem": r.problem,
            "solver_accuracy_measure": r.accuracy_measure,
            "solver_accuracy_required": r.accuracy_required,
            "solver_failure_probability": probability,
            "utility_expected_gap": expected_gap(r, utility_probability),
            "certified_accuracy_for_utility": certified_accuracy(r, utility_probability),
        }
        if probability > 0.0:
            details["solver_expected_gap"] = expected_gap(r, probability)
        if r.mu_k is not None:
            details["mu_k"] = r.mu_k
        if r.m_k is not None:
            details["m_k"] = r.m_k
        if mech.regularization is not None:
            details["regularization"] = mech.regularization
        noise_std = _finite(r.noise_std)
        out.append(
            Release(
                r.name,
                1,
                r.sensitivity,
                noise_std,
                mech.noise_multiplier,
                composition,
                MappingProxyType(details),
            )
        )
    return tuple(out)


def _noise(mech: Mechanism) -> Noise:
    single = len(mech.releases) == 1
    r = mech.releases[0]
    rules = {
        "strongly-convex": "Δ = 4L/(μn): solver error L/(μn) on S and S′ plus ERM stability 2L/(μn) (Lemma 3.3)",
        "convex": "Δ_k = 4L/(μ_k n̄), μ_k = μ·2^k (Lemma 3.5 plus the solver error on S and S′)",
        "sc-sc": "Δ_x = 4L/(n√(μ_x μ)), Δ_y = 4L/(n√(μ_y μ)), μ = min{μ_x, μ_y} (Lemma 4.3 plus the solver error)",
        "c-c": "Δ_k = 4L/(n̄√(μ_k μ)) for x̃_k (Alg. 4) and ỹ_k (Alg. 5) (Lemma 4.5 plus the solver error)",
        "c-sc": "Δ_k = 4L/(n̄√(μ_k m_k)), m_k = min{μ_k, μ_y} (Lemma 4.3 for the phase problem plus the solver error)",
    }
    return Noise(
        noise_multiplier=mech.noise_multiplier,
        noise_std=_finite(r.noise_std) if single else None,
        sensitivity=r.sensitivity if single else None,
        sensitivity_rule=rules[mech.problem_class]
        + ("" if single else "; each release's Δ and σ = zΔ are in releases"),
        units="noise_std is the per-coordinate std of the Gaussian added to the solver's output, in parameter units",
    )


def _conventions(mech: Mechanism) -> Conventions:
    cls = mech.problem_class
    count = len(mech.releases)
    if cls in PHASED:
        rule = (
            f"K = {mech.phases} phases on disjoint blocks of n̄ = {mech.block_size} records"
            + (f" ({mech.unused} records unused)" if mech.unused else "")
            + (", Algorithms 4 and 5 each" if cls == "c-c" else "")
            + f": {count} noisy releases, a record influences {releases_per_record(cls)} of them"
        )
        sampling = "none: phase k's solver sees the contiguous block of records (k−1)n̄+1..kn̄ (1-based)"
    else:
        rule = f"{count} noisy release{'s' if count > 1 else ''} of one solver run on all records"
        sampling = "none: the solver sees every record"
    return Conventions(
        neighbouring="replace-one (Def. 1)",
        steps=count,
        step_rule=rule,
        sampling=sampling,
        noise_multiplier_definition="noise_multiplier z = σ_k/Δ_k for every release (σ_k = z·Δ_k); " + _INDEPENDENCE,
        released="the last iterate only (x̃_K, ỹ_K), but every noisy iterate is accounted as released",
    )


def _warnings(
    p: PhasedOutputPerturbationParams, mech: Mechanism, delta: float, probability: float, default: bool
) -> list[str]:
    cls = p.problem_class
    runs = failing_runs(cls)
    notes = [_INDEPENDENCE]
    if default:
        share = "δ/4" if cls not in SPLIT else "δ/8"
        notes.append(
            f"δ includes δ_fail = {runs}p = {runs * probability:.6g} for the base solver missing its accuracy, "
            f"with the paper's p = {share} per run (solver_failure_probability); set it to 0 if your solver certifies "
            "the accuracy deterministically (spec §2.x), or to its real failure probability"
        )
    elif probability > 0.0:
        notes.append(f"δ includes δ_fail = {runs}p = {runs * probability:.6g} for the base solver missing its accuracy")
    else:
        notes.append(
            "solver_failure_probability = 0: you assert that every solver run certifies its accuracy (no δ added)"
        )
    if cls in PHASED and mech.unused:
        notes.append(f"{mech.unused} records (n − K·n̄) are not used by any phase")
    if cls == "c-sc":
        threshold = p.lipschitz / (float(p.diameter) * math.sqrt(p.dataset_size))  # type: ignore[arg-type]
        if p.mu_y < threshold:
            notes.append(
                f"μ_y = {p.mu_y:.6g} < L/(D√n) = {threshold:.6g}: Corollary 4.9's condition fails (privacy is "
                "unaffected); the paper advises Algorithms 4 + 5 (problem_class c-c) for weakly concave y"
            )
    if delta >= 1.0 / p.dataset_size:
        notes.append(f"δ = {delta:.3g} ≥ 1/n = {1.0 / p.dataset_size:.3g}: outside the paper's regime δ < 1/n")
    return notes


# -- the family ------------------------------------------------------------------------------------------------------

_TIGHT_METHOD = (
    "analytic Gaussian (Balle & Wang 2018, Thm. 8) of the run's Gaussian DP μ = √c/z (c = Gaussian releases a record "
    "influences: parallel composition across phases, Lemma A.1; exact GDP composition of x/y and of Algorithms 4/5), "
    "at δ − δ_fail, plus δ_fail = (solver runs)·p for the solver-failure event (spec §3.4)"
)
_RDP_METHOD = (
    "RDP α/(2z²) per release (Mironov 2017), ε(α) = cα/(2z²) for the run, improved conversion (Balle et al. 2020) "
    "at δ − δ_fail, plus δ_fail"
)
_PAPER_METHOD = (
    "the printed calibration (Def. 2, classical Gaussian mechanism, Dwork & Roth Thm. A.1, needs ε' < 1): "
    "ε = √(2 ln(2.5/δ))/z (Alg. 1, 2, C-SC), ε = 2√(2 ln(5/δ))/z (Alg. 3, 4 + 5: (ε/2, δ/4) per release)"
)


def _paper_result(
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
        return AccountantResult("paper", False, reason="; ".join(reasons))
    return AccountantResult(
        "paper",
        True,
        eps,
        "the paper's statement (valid in its regime)",
        _PAPER_METHOD,
        noise_multiplier=z if target is not None else None,
    )


def _rdp_calibration(target: float, gaussian_delta: float, releases: int) -> AccountantResult:
    """The smallest z whose curve ε(α) = cα/(2z²) converts to ≤ target at δ − δ_fail (exact inversion, one-sided)."""
    try:
        rho_target = linear_rdp_for_epsilon(target, gaussian_delta)
    except ValueError:  # the shared inversion fails for targets far below machine range (e.g. 1e-300)
        return AccountantResult("rdp", False, reason="the RDP conversion cannot be inverted at this target numerically")
    z = math.sqrt(releases / (2.0 * rho_target))
    while epsilon_for_linear_rdp(releases / (2.0 * z * z), gaussian_delta)[0] > target:
        z = math.nextafter(z, math.inf)
    eps, alpha = epsilon_for_linear_rdp(releases / (2.0 * z * z), gaussian_delta)
    return AccountantResult(
        "rdp", True, eps, "certified upper bound", _RDP_METHOD, optimal_order=_order(alpha), noise_multiplier=z
    )


def _check_target_delta(p: PhasedOutputPerturbationParams, delta: float) -> None:
    if p.target_delta is not None and not math.isclose(p.target_delta, delta, rel_tol=1e-12, abs_tol=0.0):
        raise ParameterError.single(
            "target_delta",
            f"differs from the request's delta = {delta:g}; omit it or give the same value",
            f"omit, or exactly {delta!r}",
            p.target_delta,
        )


def _order(alpha: float) -> float | None:
    return alpha if math.isfinite(alpha) else None


@register
class PhasedOutputPerturbation(AlgorithmFamily):
    id = "phased-output-perturbation"
    example: ClassVar[Mapping[str, Any]] = {
        "problem_class": "convex",
        "dataset_size": 4096,
        "dimension": 10,
        "lipschitz": 1.0,
        "diameter": 1.0,
        "noise_multiplier": 4.9,
    }
    utility_example_extra: ClassVar[Mapping[str, Any]] = {"target_delta": 1e-5}
    job_example: ClassVar[Mapping[str, Any] | None] = {
        "params": {
            "problem_class": "strongly-convex",
            "dataset_size": 500,
            "dimension": 6,
            "lipschitz": 1.0,
            "strong_convexity": 0.5,
            "smoothness": 0.5,
        },
        "delta": 1e-06,
        "target_epsilon": 1.0,
        "trials": 2000,
        "seed": 3,
    }
    title = "(Phased) output perturbation with any base solver: DP-SCO and DP minimax"
    summary = (
        "Solve the (regularised) empirical problem with any base solver to the accuracy the plan lists, then add "
        "Gaussian noise σ_k = z·Δ_k (seed 002, Algorithms 1–5 and the C-SC variant; phases on disjoint blocks with "
        "regulariser μ_k = μ·2^k). Rigorous accounting (analytic Gaussian, exact GDP composition, solver-failure δ) "
        "beside the paper's printed calibration, the mechanism plan, and the theorems' utility bounds with the proofs' "
        "exact sums."
    )
    source = f"{SOURCE}: Algorithms 1–5, Theorems 3.4, 3.7, 4.4, 4.8, Corollary 4.9"
    params_model = PhasedOutputPerturbationParams
    accountants = ("rdp", "tight", "paper")
    noise_fields = ("noise_multiplier",)
    assumptions = (
        "Every loss f(·; ξ) is L-Lipschitz (minimax: jointly in (x, y)) and ℓ-smooth, with the convexity of its "
        "problem_class (Assumptions 3.1, 3.2, 4.1, 4.2; §4.3 for c-sc).",
        "Each base-solver run meets the accuracy listed in the plan (solver_accuracy_required), except with "
        "probability solver_failure_probability; σ does not depend on the solver otherwise.",
        "Replace-one neighbours; phases use disjoint contiguous blocks (the data order must not depend on the data).",
        "Only the final iterate is output, but every noisy iterate is accounted as released.",
    )
    bounds = (
        BoundInfo(
            "Analytic Gaussian of the run (exact GDP composition) + solver-failure δ",
            "privacy",
            "Balle & Wang 2018, Thm. 8; seed 002 Lemma A.1 (parallel composition), spec §3.4",
            ("the solver meets its accuracy except with probability p per run",),
            "tight",
        ),
        BoundInfo(
            "RDP of the Gaussian releases + solver-failure δ",
            "privacy",
            "Mironov 2017; Balle et al. 2020 (conversion); spec §3.4",
            ("the solver meets its accuracy except with probability p per run",),
            "rdp",
        ),
        BoundInfo(
            "Printed calibration (classical Gaussian mechanism, Def. 2)",
            "privacy",
            f"{SOURCE}, Def. 2, Algorithms 1–5",
            ("ε < 1 (ε < 2 for sc-sc and c-c)", "solver failure probability ≤ δ/4 (δ/8)"),
            "paper",
        ),
        BoundInfo("Theorem 3.4 and its exact form", "utility", f"{SOURCE}, Theorem 3.4", ("strongly-convex",)),
        BoundInfo("Theorem 3.7 and the proof's exact sum", "utility", f"{SOURCE}, Theorem 3.7", ("convex",)),
        BoundInfo("Theorem 4.4 and its exact form", "utility", f"{SOURCE}, Theorem 4.4", ("sc-sc", "interior saddle")),
        BoundInfo("Theorem 4.8 and the proof's exact sum", "utility", f"{SOURCE}, Theorem 4.8", ("c-c",)),
        BoundInfo(
            "Corollary 4.9 as stated, corrected (spec §6.10), and the exact sum",
            "utility",
            f"{SOURCE}, Corollary 4.9",
            ("c-sc", "μ_y ≥ L/(D√n)"),
        ),
    )

    # -- privacy -------------------------------------------------------------------------------------------------

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """The c Gaussian releases one record influences (replace-one, z = σ_k/Δ_k), with the solver's failure
        probability δ_fail spent outside them (spec §3.4)."""
        p: PhasedOutputPerturbationParams = self.parse(params)
        z = resolve_noise_multiplier(p.noise_multiplier, None, 1.0)
        _, delta_fail, _ = solver_failure(p, delta)
        event = SelfComposedEvent(GaussianEvent(z), releases_per_record(p.problem_class))
        return MechanismPlan(event, "replace-one", reserved_delta=delta_fail)

    def _privacy(
        self,
        params: Mapping[str, Any] | PhasedOutputPerturbationParams,
        delta: float,
        accountant: str = "best",
        orders: Sequence[float] | np.ndarray | None = None,
        refine: bool = True,
    ) -> PrivacyReport:
        p: PhasedOutputPerturbationParams = self.parse(params)
        self.check_accountant(accountant)
        d = check.delta("delta", delta)
        grid = order_grid(orders)
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
            AccountantResult("rdp", True, rdp, "certified upper bound", _RDP_METHOD, optimal_order=_order(alpha)),
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
        return PrivacyReport(
            algorithm=self.id,
            epsilon=chosen.epsilon,  # type: ignore[arg-type]
            delta=d,
            accountant=chosen.name,
            optimal_order=_order(alpha),
            rdp=RdpCurve(tuple(grid.tolist()), tuple((rho * grid).tolist())),
            accountants=tuple(results),
            noise=_noise(mech),
            conventions=_conventions(mech),
            warnings=tuple(warnings),
            releases=_release_objects(mech, probability, paper_failure_probability(cls, d)),
        )

    # -- calibration ---------------------------------------------------------------------------------------------

    def _calibrate(
        self,
        params: Mapping[str, Any] | PhasedOutputPerturbationParams,
        target_epsilon: float,
        delta: float,
        accountant: str = "best",
        orders: Sequence[float] | np.ndarray | None = None,
    ) -> CalibrationReport:
        p: PhasedOutputPerturbationParams = self.parse(params)
        self.check_accountant(accountant)
        target = check.positive("target_epsilon", target_epsilon)
        d = check.delta("delta", delta)
        grid = order_grid(orders)
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
        return CalibrationReport(
            algorithm=self.id,
            target_epsilon=target,
            delta=d,
            noise_multiplier=z,
            noise_std=_noise(mech).noise_std,
            epsilon=chosen.epsilon,  # type: ignore[arg-type]
            accountant=chosen.name,
            optimal_order=_order(alpha),
            rdp=RdpCurve(tuple(grid.tolist()), tuple((rho * grid).tolist())),
            accountants=tuple(results),
            noise=_noise(mech),
            conventions=_conventions(mech),
            utility=utility,
            utility_reason=None,
            paper=paper,
            paper_reason=None,
            calibrated_parameter="noise_multiplier",
            calibrated_value=z,
            warnings=tuple(warnings),
            releases=_release_objects(mech, probability, paper_failure_probability(cls, d)),
            recommended=recommended,
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


__all__ = [
    "Mechanism",
    "PhasedOutputPerturbation",
    "PhasedOutputPerturbationParams",
    "default_phases",
    "mechanism",
    "paper_epsilon",
    "paper_noise_multiplier",
    "theorem_regularization",
    "utility_values",
]


# -- simulation (verification jobs, spec §5.2 E1–E5) ------------------------------------------------------------------

MAX_SIM_RECORDS = 100_000
MAX_SIM_DIMENSION = 50
AUDIT_SETUP_BUDGET = 5e7
"""Work the plan may spend on the audit's exact phase-1 solutions (the plan must stay cheap)."""
ITERATION_OVERHEAD = 2500.0
"""Work units per vectorised solver iteration per block of trials (the fixed cost of its numpy calls)."""


class PhasedOutputPerturbationProblem(ParamsModel):
    """The synthetic problem of a phased-output-perturbation verification job (built from the declared constants)."""

    audit_solver: Literal["worst-case", "exact"] = param(
        "Base solver of the privacy audit. worst-case (default): a compliant solver that returns the exact solution "
        "moved by the full accuracy the privacy proof allows, away from the neighbour's output (the guarantee must "
        "hold for every compliant solver; this one makes the audit strongest). exact: the exact solution.",
        example="worst-case",
        default="worst-case",
    )


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
        from ..synthetic.output_perturbation import csc_scale_exists

        if not csc_scale_exists(p.lipschitz, p.mu_y, float(p.diameter)):  # type: ignore[arg-type]
            issues.append(
                FieldIssue(
                    ("lipschitz",),
                    "the synthetic c-sc problem needs L > μ_y·D: on a ball of radius D the −(μ_y/2)‖y‖² term alone "
                    "has gradient up to μ_y·D",
                    f"> strong_convexity_y·diameter = {p.mu_y * float(p.diameter):.6g}",  # type: ignore[arg-type]
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


class PhasedOutputPerturbationSimulator(Simulator):
    """Seed 002's algorithms on the synthetic problems E1–E5 of spec §5.2
    (:mod:`accountants.synthetic.output_perturbation`).

    Utility: fresh data sets from the population per trial, the exact (E1–E3) or certified (E4, E5: proximal
    extragradient stopped by the a-posteriori certificate at the paper's 2γ level) phase solutions, the noise σ_k of
    the plan, and the closed-form population measure. The prediction is the smallest applicable explicit bound on it
    (the proof's exact sum). Audit: a fixed pair D, D′ differing in the first record; the score is the log-likelihood
    ratio of the releases that see it (phase 1: every later phase is post-processing), the most powerful test, and the
    exact ε of the simulated pair is the analytic Gaussian's.
    """

    problem_model = PhasedOutputPerturbationProblem

    def plan(
        self, params: ParamsModel, delta: float, checks: tuple[str, ...], trials: int, seed: int, problem: ParamsModel
    ) -> Plan:
        from ..synthetic import output_perturbation as synthetic

        p: PhasedOutputPerturbationParams = params  # type: ignore[assignment]
        pr: PhasedOutputPerturbationProblem = problem  # type: ignore[assignment]
        _simulable(p)
        report = PhasedOutputPerturbation().privacy(p, delta)
        z = report.noise.noise_multiplier  # type: ignore[union-attr]
        cls, n = p.problem_class, p.dataset_size
        mech = mechanism(p, z)
        strong = {"mu_x": p.mu_x if cls in ("strongly-convex", "sc-sc") else None}
        strong["mu_y"] = p.mu_y if cls in ("sc-sc", "c-sc") else None
        consts = {
            "lipschitz": p.lipschitz,
            "smoothness": p.smoothness,
            "diameter": p.diameter,
            "d_x": p.d_x,
            "d_y": p.d_y,
            **strong,
        }
        built = synthetic.build(cls, consts, seed)
        utility_probability = paper_failure_probability(cls, delta)
        radius = float(built.get("radius", 1.0))
        ell_b = float(np.linalg.norm(np.array(built["a"]), 2)) if "a" in built else 0.0
        phases, iterations, clamped = [], 0, False
        for r in mech.releases:
            phase: dict[str, Any] = {
                "algorithm": r.algorithm,
                "mu_k": r.mu_k,
                "sigma": r.noise_std,
                "accuracy": r.accuracy_required,
            }
            if cls in ("c-c", "c-sc"):
                other = mech.regularization if cls == "c-c" else p.mu_y
                heavy, light = max(r.mu_k, other), min(r.mu_k, other)  # type: ignore[type-var, arg-type]
                floor = 1e-13 * radius * synthetic.extragradient_constant(ell_b, light)
                tol = math.sqrt(certified_accuracy(r, utility_probability) / heavy)
                clamped = clamped or tol < floor
                estimate = synthetic.extragradient_iterations(ell_b, light, radius, max(tol, floor))
                phase |= {"tol": max(tol, floor), "cap": synthetic.ITERATION_CAP_FACTOR * estimate + 100}
                iterations += estimate
            phases.append(phase)
        resolved: dict[str, Any] = built | {
            "problem_class": cls,
            "records": n,
            "dimension": p.d_x,
            "block": mech.block_size,
            "phases": phases,
            "regularization": mech.regularization,
            "mu_x": strong["mu_x"],
            "mu_y": strong["mu_y"],
            "audit_solver": pr.audit_solver,
        }
        work_utility, work_audit, setup = _work(cls, p, mech, resolved, trials, iterations, ell_b)
        work = (work_utility if "utility" in checks else 0.0) + (work_audit + setup if "privacy-audit" in checks else 0)

        exact = None
        exact_note = None
        if "privacy-audit" in checks:
            if setup > AUDIT_SETUP_BUDGET:
                raise ParameterError.single(
                    "regularization" if cls in PHASED else "dataset_size",
                    f"the audit's exact phase-1 solutions would take about {setup:.3g} operations, above "
                    f"{AUDIT_SETUP_BUDGET:.3g}: reduce dataset_size or the dimensions"
                    + (", or raise regularization" if cls in ("c-c", "c-sc") else ""),
                    "a configuration whose audit set-up is cheaper",
                )
            if cls in ("c-c", "c-sc"):
                other = mech.regularization if cls == "c-c" else p.mu_y
                light = min(mech.releases[0].mu_k, other)  # type: ignore[type-var, arg-type]
                tol = 1e-11 * radius * synthetic.extragradient_constant(ell_b, light)
                resolved |= {
                    "audit_tol": tol,
                    "audit_cap": synthetic.ITERATION_CAP_FACTOR
                    * synthetic.extragradient_iterations(ell_b, light, radius, tol)
                    + 100,
                }
            audit = synthetic.audit_releases(cls, resolved, phases, pr.audit_solver == "worst-case", seed)
            resolved["audit"] = audit
            mu_sim = synthetic.audit_gdp(audit)
            exact = gdp_epsilon(mu_sim, delta) if mu_sim > 0 else 0.0
            exact_note = (
                f"analytic Gaussian (Balle & Wang 2018) of the simulated pair: μ = {mu_sim:.6g} (the accountant's "
                f"μ = {gdp_parameter(cls, z):.6g}); deterministic solver, so no δ_fail; {pr.audit_solver} base solver"
            )

        prediction = source = note = None
        if "utility" in checks:
            prediction, source = predicted_bound(p, mech, delta)
            note = _prediction_note(cls, resolved, mech, clamped)
        return Plan(
            algorithm=PhasedOutputPerturbation.id,
            params=p.model_dump() | {"noise_multiplier": z},
            problem=resolved,
            checks=checks,
            trials=trials,
            seed=seed,
            delta=delta,
            epsilon_accounted=report.epsilon,
            accountant=report.accountant,
            epsilon_exact=exact,
            exact_note=exact_note,
            utility_measure=_MEASURED[cls] if "utility" in checks else None,
            predicted_bound=prediction,
            predicted_source=source,
            prediction_note=note,
            audit_method=(
                "distinguishing record: the first record (block 1), replaced by a compliant one; score: log-likelihood "
                "ratio of the phase-1 release(s) that see it (most powerful test for these Gaussians)"
            )
            if "privacy-audit" in checks
            else None,
            work=work,
        )

    def run_block(self, plan: Plan, rng: np.random.Generator, trials: int) -> BlockResult:
        from ..synthetic import output_perturbation as synthetic

        problem = plan.problem
        result: dict[str, np.ndarray] = {}
        if "privacy-audit" in plan.checks:
            result["score_in"], result["score_out"] = synthetic.audit_scores(problem["audit"], rng, trials)
        if "utility" in plan.checks:
            result["utility"] = synthetic.run_utility(problem["problem_class"], problem, problem["phases"], rng, trials)
        return BlockResult(**result)


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
    from ..synthetic import output_perturbation as synthetic

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
    other = mech.regularization if cls == "c-c" else p.mu_y
    light = min(mech.releases[0].mu_k, other)  # type: ignore[type-var, arg-type]
    radius = float(problem.get("radius", 1.0))
    tol = 1e-11 * radius * synthetic.extragradient_constant(ell_b, light)
    exact_iterations = synthetic.extragradient_iterations(ell_b, light, radius, tol)
    setup = 10.0 * nbar * (dx + dy) + runs * exact_iterations * (2 * per_iteration + ITERATION_OVERHEAD)
    return utility, audit, setup


def _prediction_note(cls: str, problem: Mapping[str, Any], mech: Mechanism, clamped: bool) -> str:
    from ..synthetic import output_perturbation as synthetic

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


PhasedOutputPerturbation.simulator = PhasedOutputPerturbationSimulator()
