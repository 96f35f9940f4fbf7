"""Hyperparameters of Zhang, Thekumparampil, Oh & He 2022's phased output perturbation: problem classes, solver
constants and the rules between them."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Literal

from ...errors import FieldIssue, ParameterError
from ...params import ParamsModel, noise_multiplier_param, param

ALGORITHM_ID = "phased-output-perturbation"

SOURCE = "Zhang, Thekumparampil, Oh & He 2022 (bring your own algorithm for DP stochastic minimax, arXiv:2206.00363)"
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
    """Hyperparameters of Zhang, Thekumparampil, Oh & He 2022's output-perturbation algorithms (Algorithms 1–5 and the
    C-SC variant)."""

    problem_class: ProblemClass = param(example="convex")
    """The setting, which selects the algorithm: strongly-convex (Algorithm 1), convex (Algorithm 2, phased), sc-sc
    (Algorithm 3, strongly-convex–strongly-concave minimax), c-c (Algorithms 4 + 5, phased, convex–concave minimax),
    c-sc (§4.3: convex–strongly-concave minimax, phased Algorithm 4 variant)."""
    dataset_size: int = param(symbol="n", unit="records", example=4096, ge=1, le=MAX_COUNT)
    """Number of records (the base solver sees one block of ⌊n/K⌋ records per phase)."""
    dimension: int | None = param(symbol="d", unit="coordinates", example=10, default=None, ge=1, le=MAX_DIMENSION)
    """Dimension d of x (strongly-convex, convex). For minimax classes: d_x = d_y = dimension (c-sc: d_x), unless
    dimension_x/dimension_y are given instead."""
    dimension_x: int | None = param(symbol="d_x", unit="coordinates", example=5, default=None, ge=1, le=MAX_DIMENSION)
    """Dimension of the minimisation variable x (minimax classes; with dimension_y, instead of dimension)."""
    dimension_y: int | None = param(symbol="d_y", unit="coordinates", example=5, default=None, ge=1, le=MAX_DIMENSION)
    """Dimension of the maximisation variable y (sc-sc, c-c; optional for c-sc, where only the simulator uses it:
    default d_x)."""
    lipschitz: float = param(
        symbol="L", unit="loss units per parameter unit", example=1.0, ge=CONSTANT_RANGE[0], le=CONSTANT_RANGE[1]
    )
    """Lipschitz constant of every loss f(·; ξ) on the domain (minimax: jointly in (x, y), |f(x₁,y₁) − f(x₂,y₂)|² ≤
    L²(‖x₁−x₂‖² + ‖y₁−y₂‖²))."""
    smoothness: float | None = param(
        symbol="ℓ", unit="loss units per parameter unit²", example=1.0, ge=0, le=CONSTANT_RANGE[1], default=None
    )
    """Gradient Lipschitz constant ℓ of every loss (jointly for minimax). Required for strongly-convex and sc-sc (κ =
    ℓ/μ enters their utility bounds); must be at least the strong convexity. Optional otherwise (used by the
    simulator's synthetic problem)."""
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
    phases: int | None = param(symbol="K", unit="phases", example=12, default=None, ge=1, le=MAX_PHASES)
    """Number of phases K of the phased classes (convex, c-c, c-sc); at most dataset_size. Default ⌈log₂ n⌉ (the paper's
    K = log n)."""
    regularization: float | None = _constant(
        "Base regulariser μ of the phased classes (phase k adds (μ_k/2)‖x − x̃_{k−1}‖², μ_k = μ·2^k; c-c also "
        "(μ/2)‖y‖²). Default: the theorem's choice (Theorem 3.7, 4.8, Corollary 4.9) at the noise used, i.e. with "
        "√(log(c/δ))/ε replaced by its value at the paper's calibration for this noise multiplier.",
        "μ",
        "loss units per parameter unit²",
        0.46,
    )
    noise_multiplier: float | None = noise_multiplier_param(
        symbol="z = σ_k/Δ_k", unit="multiples of each release's L2 sensitivity", example=4.9
    )
    """Noise std over sensitivity, the same for every release: σ_k = z·Δ_k (the plan lists each Δ_k and σ_k). Required
    for privacy accounting and utility; computed by calibration."""
    solver_failure_probability: float | None = param(
        symbol="p", unit="probability", example=0.0, ge=0, le=MAX_SOLVER_FAILURE, default=None
    )
    """Probability p that one base-solver run misses the accuracy the privacy proof requires (the plan's
    solver_accuracy_required). Adds δ_fail = 2p (4p for c-c) to δ. 0: the accuracy is certified deterministically
    (e.g. by an a-posteriori certificate ‖z − z*‖ ≤ C‖z − prox_{ηg}(z − ηB(z))‖ on its residual). Default: the paper's
    p = δ/4 (δ/8 for sc-sc and c-c), reached by running the solver to the in-expectation gap solver_expected_gap."""
    target_delta: float | None = param(symbol="δ", unit="probability", example=1e-5, gt=0, lt=1, default=None)
    """δ of the privacy guarantee the run targets. Required by /v1/utility (the theorems' constants and the paper's
    solver accuracy γ depend on δ); /v1/privacy, /v1/calibrate and verification jobs use the request's delta, and
    reject a different value here."""

    def check(self) -> list[FieldIssue]:
        rules = _Rules(self)
        self._check_dimensions(rules)
        self._check_convexity(rules)
        self._check_phases(rules)
        if not rules.issues:
            self._check_smoothness(rules)
        return rules.issues

    def _check_dimensions(self, rules: _Rules) -> None:
        cls = self.problem_class
        if cls not in MINIMAX:
            rules.require("dimension", "the dimension d of x")
            for name in ("dimension_x", "dimension_y"):
                rules.forbid(name, "a minimisation problem has only x: give dimension")
        elif self.dimension is not None and (self.dimension_x is not None or self.dimension_y is not None):
            if self.dimension_x is not None or cls != "c-sc":
                rules.issues.append(
                    FieldIssue(
                        ("dimension",),
                        "give dimension or dimension_x/dimension_y, not both",
                        "either dimension or dimension_x and dimension_y",
                    )
                )
        elif self.dimension is None:
            rules.require("dimension_x", "give dimension_x and dimension_y, or dimension for both")
            if cls != "c-sc":
                rules.require("dimension_y", "give dimension_x and dimension_y, or dimension for both")

    def _check_convexity(self, rules: _Rules) -> None:
        cls = self.problem_class
        if cls == "strongly-convex":
            rules.require("strong_convexity", "Assumption 3.2: μ-strongly convex losses")
            rules.require("smoothness", "κ = ℓ/μ enters Theorem 3.4")
            for name in ("strong_convexity_x", "strong_convexity_y"):
                rules.forbid(name, "a minimisation problem has one strong convexity: give strong_convexity")
        elif cls == "sc-sc":
            given_xy = self.strong_convexity_x is not None or self.strong_convexity_y is not None
            if self.strong_convexity is not None and given_xy:
                rules.issues.append(
                    FieldIssue(
                        ("strong_convexity",),
                        "give strong_convexity or strong_convexity_x/strong_convexity_y, not both",
                        "either strong_convexity or strong_convexity_x and strong_convexity_y",
                    )
                )
            elif self.strong_convexity is None:
                for name in ("strong_convexity_x", "strong_convexity_y"):
                    rules.require(name, "Assumption 4.2: give strong_convexity_x and _y, or strong_convexity for both")
            rules.require("smoothness", "κ_x = ℓ/μ_x and κ_y = ℓ/μ_y enter Theorem 4.4")
        elif cls == "c-sc":
            rules.require("strong_convexity_y", "§4.3: f(x, ·; ξ) is μ_y-strongly concave")
            rules.forbid("strong_convexity", "x is only convex; the strong concavity in y is strong_convexity_y")
            rules.forbid("strong_convexity_x", "x is only convex; use problem_class sc-sc if it is strongly convex")
        else:
            why = "the losses are only convex; the phases' regulariser is regularization"
            for name in ("strong_convexity", "strong_convexity_x", "strong_convexity_y"):
                rules.forbid(name, why)

    def _check_phases(self, rules: _Rules) -> None:
        if self.problem_class in PHASED:
            rules.require("diameter", "the theorem's regulariser and utility bound use D")
        else:
            rules.forbid("diameter", "the algorithm needs no domain bound")
            rules.forbid("phases", "it is not phased")
            rules.forbid("regularization", "it is not phased: the losses' own strong convexity is used")
        if self.phases is not None and self.phases > self.dataset_size:
            rules.issues.append(
                FieldIssue(
                    ("phases",),
                    "must not exceed dataset_size (each phase needs a block of ⌊n/K⌋ ≥ 1 records)",
                    f"an integer in [1, {min(self.dataset_size, MAX_PHASES)}]",
                    self.phases,
                )
            )

    def _check_smoothness(self, rules: _Rules) -> None:
        if self.smoothness is None:
            return
        strongest = max(
            [v for v in (self.strong_convexity, self.strong_convexity_x, self.strong_convexity_y) if v is not None],
            default=0.0,
        )
        if self.smoothness < strongest:
            rules.issues.append(
                FieldIssue(
                    ("smoothness",),
                    "must be at least the strong convexity (an ℓ-smooth μ-strongly convex function has ℓ ≥ μ)",
                    f"a finite number in [{strongest:g}, {CONSTANT_RANGE[1]:g}]",
                    self.smoothness,
                )
            )

    # resolved constants (the class rules of check() make every one the class needs present)
    @property
    def d_x(self) -> int:
        return int(_given(self.dimension_x if self.dimension_x is not None else self.dimension, "dimension"))

    @property
    def d_y(self) -> int:
        if self.dimension_y is not None:
            return self.dimension_y
        return self.d_x

    @property
    def mu_x(self) -> float:
        x = self.strong_convexity_x
        return float(_given(x if x is not None else self.strong_convexity, "strong_convexity"))

    @property
    def mu_y(self) -> float:
        y = self.strong_convexity_y
        return float(_given(y if y is not None else self.strong_convexity, "strong_convexity"))

    @property
    def given_diameter(self) -> float:
        """D, which the phased classes and the minimax utility bounds need."""
        return float(_given(self.diameter, "diameter"))

    @property
    def given_smoothness(self) -> float:
        """ℓ, which the strongly convex utility bounds need."""
        return float(_given(self.smoothness, "smoothness"))

    @property
    def given_noise_multiplier(self) -> float:
        return float(_given(self.noise_multiplier, "noise_multiplier"))


def _given(value: float | None, field: str) -> float:
    """A constant this problem class requires (ParameterError naming it where it is missing)."""
    if value is None:
        raise ParameterError.single(field, "is required for this problem_class", "a finite number")
    return value


class _Rules:
    """The field issues found for one problem class: fields it requires and fields it does not use."""

    def __init__(self, params: PhasedOutputPerturbationParams) -> None:
        self.params = params
        self.issues: list[FieldIssue] = []

    def require(self, name: str, why: str) -> None:
        if getattr(self.params, name) is None:
            cls = self.params.problem_class
            self.issues.append(FieldIssue((name,), f"is required for problem_class {cls!r} ({why})", _allowed(name)))

    def forbid(self, name: str, why: str) -> None:
        if getattr(self.params, name) is not None:
            cls = self.params.problem_class
            self.issues.append(
                FieldIssue((name,), f"is not used by problem_class {cls!r} ({why}); omit it", "omit it", None)
            )


def _allowed(name: str) -> str:
    if name.startswith("dimension"):
        return f"an integer in [1, {MAX_DIMENSION}]"
    return f"a finite number in [{CONSTANT_RANGE[0]:g}, {CONSTANT_RANGE[1]:g}]"
