"""Hyperparameters of Kornowski's (2024) DP bilevel optimization (full-batch Algorithms 1–2, mini-batch Algorithms
3–4)."""

from __future__ import annotations

from typing import Literal

from ...errors import FieldIssue, ParameterError
from ...params import NOISE_MULTIPLIER_RANGE, ParamsModel, noise_multiplier_param, param

ALGORITHM_ID = "dp-bilevel"
SOURCE = "Kornowski 2024 (Differentially Private Bilevel Optimization, arXiv:2409.19800)"
MAX_COUNT = 10**12
MAX_STEPS = 10**9
MAX_CONSTANT = 1e12
MIN_CONSTANT = 1e-12
MAX_ROUNDS = 64
MAX_MULTIPLIER = 1e100
"""Calibrated multipliers beyond this are refused: the target is below what floating point resolves."""

Variant = Literal["full-batch", "mini-batch"]
Sampling = Literal["without-replacement", "with-replacement"]


class BilevelParams(ParamsModel):
    """Hyperparameters of Algorithms 1–4 of Kornowski 2024 (full-batch or mini-batch DP bilevel optimization)."""

    variant: Variant = param(example="full-batch", default="full-batch")
    """full-batch (Algorithm 1, inner solver DP-Loc-GD, Algorithm 2) or mini-batch (Algorithm 3, DP-Loc-SGD, Algorithm
    4)."""
    dataset_size: int = param(symbol="n", unit="records", example=100000, ge=1, le=MAX_COUNT)
    """Number of records (training and validation together, footnote 1)."""
    dimension_x: int = param(symbol="d_x", unit="coordinates", example=10, ge=1, le=10**9)
    """Dimension of the upper-level variable x (d_up)."""
    dimension_y: int = param(symbol="d_y", unit="coordinates", example=10, ge=1, le=10**9)
    """Dimension of the lower-level variable y (d_low)."""
    steps: int = param(symbol="T", unit="outer steps", example=30, ge=1, le=MAX_STEPS)
    """Outer iterations (each: two private inner solves and one noisy penalty hypergradient)."""
    inner_steps: int = param(symbol="T_GD", unit="steps per round", example=1000, ge=1, le=MAX_COUNT)
    """Noisy gradient steps per localisation round of each inner solve (the paper takes T_GD = n²)."""
    inner_rounds: int = param(symbol="M", unit="rounds", example=2, default=1, ge=1, le=MAX_ROUNDS)
    """Localisation rounds of each inner solve; an inner solve makes K = M·T_GD noisy gradient steps."""
    batch_size_outer: int | None = param(symbol="b_out", unit="records", example=5000, default=None, ge=1, le=MAX_COUNT)
    """Outer batch size (mini-batch only): records per noisy penalty hypergradient. At most dataset_size."""
    batch_size_inner: int | None = param(symbol="b_in", unit="records", example=1000, default=None, ge=1, le=MAX_COUNT)
    """Inner batch size (mini-batch only): records per noisy inner gradient step. At most dataset_size."""
    sampling: Sampling | None = param(example="without-replacement", default=None)
    """How batches are drawn (mini-batch only): without-replacement (default: b distinct records uniformly at random,
    independently at every step; certified) or with-replacement (b i.i.d. uniform draws, Algorithms 3/4 as printed;
    only the paper's own accounting exists for it)."""
    regularization: float = param(symbol="λ", unit="dimensionless", example=20.0, ge=MIN_CONSTANT, le=MAX_CONSTANT)
    """Penalty parameter λ of the value-function reformulation L_λ = f + λ(g − g*) (Section 4.1)."""
    stepsize: float = param(
        symbol="η", unit="x units per hypergradient unit", example=0.25, ge=MIN_CONSTANT, le=MAX_CONSTANT
    )
    """Outer stepsize η of the projected step x_{t+1} = Proj_𝒳(x_t − η g̃_t); Proposition 4.6 takes η = 1/(2L) with L
    the smoothness of L*_λ."""
    strong_convexity: float = param(symbol="μ_g", unit="1/y units²", example=1.0, ge=MIN_CONSTANT, le=MAX_CONSTANT)
    """Strong convexity of g(x, ·) for every x (Assumption 2.5.5)."""
    lipschitz_f: float = param(symbol="L₀^f", example=5.0, ge=MIN_CONSTANT, le=MAX_CONSTANT)
    """Per-sample Lipschitz constant of f(·, ·; ξ), jointly in (x, y) (Assumption 2.5.4)."""
    smoothness_f: float = param(symbol="L₁^f", example=1.0, ge=MIN_CONSTANT, le=MAX_CONSTANT)
    """Smoothness of f (gradient Lipschitz constant, Assumption 2.5.3)."""
    lipschitz_g: float = param(symbol="L₀^g", example=6.0, ge=MIN_CONSTANT, le=MAX_CONSTANT)
    """Per-sample Lipschitz constant of g(x, ·; ξ) over the domain of interest 𝒴 (Assumption 2.6)."""
    smoothness_g: float = param(symbol="L₁^g", example=2.0, ge=MIN_CONSTANT, le=MAX_CONSTANT)
    """Per-sample smoothness of g(·, ·; ξ) (Assumption 2.5.6); at least strong_convexity."""
    hessian_lipschitz_g: float = param(symbol="L₂^g", example=0.0, ge=0, le=MAX_CONSTANT)
    """Hessian-Lipschitz constant of g (Assumption 2.5.5); enters only ℓ = max of the five constants."""
    outer_clip_norm: float | None = param(
        symbol="G", unit="hypergradient units", example=50.0, ge=MIN_CONSTANT, le=MAX_CONSTANT, default=None
    )
    """Clipping norm of the per-sample penalty hypergradients φ_i (the outer sensitivity is 2G/n). Default: the proof
    constant of Lemma 4.5, G = 5·L₁^g·L₀^f/μ_g, which bounds φ_i at the exact y*(x), y^λ(x) only, not at the
    private ỹ's the algorithm uses: the algorithm must clip at G."""
    noise_multiplier: float | None = noise_multiplier_param(
        symbol="z = σ/(2G/n)", unit="multiples of the outer sensitivity", example=2.0
    )
    """Noise multiplier z of the outer release: σ = z·2G/n (z·2G/b_out) per coordinate on the penalty hypergradient.
    Required for privacy accounting; computed by calibration."""
    inner_noise_multiplier: float | None = param(
        symbol="z_in",
        unit="multiples of the inner sensitivity",
        example=100.0,
        ge=NOISE_MULTIPLIER_RANGE[0],
        le=1e12,
        default=None,
    )
    """Noise multiplier z_in of every inner gradient step: σ_GD = z_in·(2L/n) with L = L₀^g (ỹ problem) or L₀^f + λL₀^g
    (ỹ^λ problem). Default z·√(M·T_GD): each inner solve gets the Rényi budget of one outer release (the paper's
    equal split). Calibration keeps a given value fixed and calibrates noise_multiplier."""
    initial_suboptimality: float | None = param(
        symbol="Δ_F", unit="objective units", example=1.0, ge=MIN_CONSTANT, le=MAX_CONSTANT, default=None
    )
    """Bound on F(x₀) − inf F (utility bounds only; Assumption 2.5.2)."""
    failure_probability: float = param(symbol="γ", example=0.05, ge=1e-300, lt=1, default=0.05)
    """Failure probability γ of the high-probability utility bounds (utility bounds only)."""
    epsilon: float | None = param(symbol="ε", example=1.0, ge=1e-12, le=1e4, default=None)
    """ε of the run's (ε, δ) guarantee, used only by the Õ rate forms of Theorems 4.1, 5.1 and 6.1 in /v1/utility
    (/v1/calibrate uses its target)."""

    def check(self) -> list[FieldIssue]:
        issues = []
        n = self.dataset_size
        if self.variant == "full-batch":
            for name in ("batch_size_outer", "batch_size_inner", "sampling"):
                if getattr(self, name) is not None:
                    issues.append(
                        FieldIssue(
                            (name,),
                            "applies to variant='mini-batch' only (full batch uses all n records)",
                            "omit it, or set variant='mini-batch'",
                            getattr(self, name),
                        )
                    )
        else:
            for name in ("batch_size_outer", "batch_size_inner"):
                value = getattr(self, name)
                if value is None:
                    issues.append(
                        FieldIssue((name,), "is required for variant='mini-batch'", f"an integer in [1, {n}]")
                    )
                elif value > n:
                    issues.append(FieldIssue((name,), "must not exceed dataset_size", f"an integer in [1, {n}]", value))
        if self.smoothness_g < self.strong_convexity:
            issues.append(
                FieldIssue(
                    ("smoothness_g",),
                    "must be at least strong_convexity: a μ_g-strongly convex g(x, ·) has smoothness ≥ μ_g",
                    f">= {self.strong_convexity:g}",
                    self.smoothness_g,
                )
            )
        return issues

    # -- derived quantities ----------------------------------------------------------------------------------------

    @property
    def inner_total(self) -> int:
        """K = M·T_GD: noisy gradient steps of one inner solve."""
        return self.inner_rounds * self.inner_steps

    @property
    def mini(self) -> bool:
        return self.variant == "mini-batch"

    @property
    def inner_batch(self) -> int:
        """b_in: the inner batch of a mini-batch run (check() requires it), the dataset for full batches."""
        return self._batch(self.batch_size_inner)

    @property
    def outer_batch(self) -> int:
        """b_out: the outer batch of a mini-batch run (check() requires it), the dataset for full batches."""
        return self._batch(self.batch_size_outer)

    def _batch(self, size: int | None) -> int:
        if not self.mini:
            return self.dataset_size
        if size is None:
            raise ParameterError.single("batch_size_outer", "is required for variant='mini-batch'", "an integer >= 1")
        return size

    @property
    def given_initial_suboptimality(self) -> float:
        """Δ_F, which the explicit and rate bounds need."""
        if self.initial_suboptimality is None:
            raise ParameterError.single("initial_suboptimality", "is required for this bound", "a finite number >= 0")
        return self.initial_suboptimality

    @property
    def batch_sampling(self) -> str:
        return self.sampling or "without-replacement"

    @property
    def clip(self) -> float:
        """G: the outer per-sample bound (given, or 5L₁^gL₀^f/μ_g, Lemma 4.5's proof constant)."""
        if self.outer_clip_norm is not None:
            return self.outer_clip_norm
        return 5.0 * self.smoothness_g * self.lipschitz_f / self.strong_convexity

    @property
    def lipschitz_lambda(self) -> float:
        """Per-sample Lipschitz constant of f + λg in y: L₀^f + λL₀^g (triangle inequality)."""
        return self.lipschitz_f + self.regularization * self.lipschitz_g

    @property
    def ell(self) -> float:
        """ℓ = max{L₀^f, L₁^f, L₀^g, L₁^g, L₂^g}."""
        return max(self.lipschitz_f, self.smoothness_f, self.lipschitz_g, self.smoothness_g, self.hessian_lipschitz_g)

    @property
    def kappa(self) -> float:
        return self.ell / self.strong_convexity

    @property
    def regularization_floor(self) -> float:
        """max{2L₁^f/μ_g, 2L₁^g/μ_g, L₀^f/L₀^g, L₁^f/L₁^g}: the λ Lemmas 4.4, 8.1 and 8.8 need."""
        mu = self.strong_convexity
        return max(
            2.0 * self.smoothness_f / mu,
            2.0 * self.smoothness_g / mu,
            self.lipschitz_f / self.lipschitz_g,
            self.smoothness_f / self.smoothness_g,
        )
