"""Hyperparameters of González, Guzmán & Paquette 2024's algorithms (private-mirror-descent): variants, counts, and the
rules between them."""

from __future__ import annotations

import math
from typing import Literal

from ...errors import FieldIssue
from ...params import ParamsModel, param

ALGORITHM_ID = "private-mirror-descent"
MAX_COUNT = 10**12
MAX_SAMPLES = 10**6
SOURCE = "González, Guzmán & Paquette 2024 (private stochastic mirror descent with vertex sampling, arXiv:2403.02912)"
Variant = Literal["first-order", "second-order", "bias-reduced", "sco"]
SADDLE_VARIANTS = ("first-order", "second-order", "bias-reduced")


class PrivateMirrorDescentParams(ParamsModel):
    """Hyperparameters of Algorithms 1, 3 and 5 of González, Guzmán & Paquette 2024 (vertex sampling; the privacy knob
    is the stepsize)."""

    variant: Variant = param(example="first-order", default="first-order")
    """first-order (default) / second-order: Algorithm 1 [R] analysed under first- or second-order smoothness
    (second_order_smoothness = 0 is the quadratic/bilinear case); bias-reduced: Algorithm 3 [R] (multilevel gradient
    oracle, random number of steps; needs second_order_smoothness); sco: Algorithm 5 [R] (DP-SCO on the simplex: no
    y-player)."""
    dataset_size: int = param(symbol="n", unit="records", example=32000, ge=1, le=MAX_COUNT)
    """Number of records n; Algorithm 1 uses them in one pass of disjoint batches."""
    dimension_x: int = param(symbol="d₁", unit="vertices", example=32, ge=2, le=MAX_COUNT)
    """Vertices of the x-simplex Δ_{d₁} (for a polytope: its number of vertices, the paper's footnote 1)."""
    dimension_y: int | None = param(symbol="d₂", unit="vertices", example=32, default=None, ge=2, le=MAX_COUNT)
    """Vertices of the y-simplex Δ_{d₂}. Required by the saddle-point variants; omit for sco."""
    lipschitz: float = param(symbol="L₀", unit="loss units per ℓ1 unit", example=1.0, ge=1e-12, le=1e12)
    """L₀: bound on ‖∇_x f(x, y; ξ)‖∞ and ‖∇_y f(x, y; ξ)‖∞ for every record ξ (Lipschitz constant w.r.t. ℓ1). The
    privacy guarantee rests on it: clip gradient coordinates to [−L₀, L₀] if it may fail."""
    smoothness: float = param(symbol="L₁", unit="loss units per ℓ1 unit²", example=1.0, ge=0, le=1e12)
    """L₁: Lipschitz constant of the gradient, ‖∇f(z) − ∇f(z')‖∞ ≤ L₁‖z − z'‖₁ (utility bounds only)."""
    second_order_smoothness: float | None = param(
        symbol="L₂", unit="loss units per ℓ1 unit³", example=0.0, ge=0, le=1e12, default=None
    )
    """L₂: every partial derivative ∂_i f is L₂-smooth w.r.t. ℓ1 (0 for quadratic or bilinear objectives). Required by
    the second-order and bias-reduced variants (utility bounds only)."""
    batch_size: int = param(symbol="B", unit="records", example=12, ge=1, le=MAX_COUNT)
    """Batch size B: records per step (Algorithm 3: the base batch, a step uses 2^N·B). At most dataset_size."""
    steps: int | None = param(symbol="T", unit="steps", example=2666, default=None, ge=1, le=MAX_COUNT)
    """Iterations T of Algorithms 1 and 5 (default ⌊n/B⌋, one pass); steps·batch_size ≤ dataset_size. Not used by
    bias-reduced (its number of steps is random; see stopping_parameter)."""
    samples_per_step: int | None = param(symbol="K", unit="samples", example=1, default=None, ge=1, le=MAX_SAMPLES)
    """Vertex samples K per player and step of Algorithm 1 (x̃_t is the mean of K draws from P(x_t)), or per refresh of
    Algorithm 5. Default 1. Not used by bias-reduced (it draws 2^{N_t} per step)."""
    stepsize: float | None = param(symbol="η", unit="1/loss units", example=0.0125, gt=0, le=1e12, default=None)
    """Mirror-descent stepsize η: the privacy knob (ε₀ = 4ηL₀/B per vertex sample for Algorithm 1). Required for privacy
    accounting; computed by calibration."""
    stopping_parameter: int | None = param(
        symbol="M", unit="base batches", example=2666, default=None, ge=2, le=MAX_COUNT
    )
    """bias-reduced only: the stopping parameter M of Algorithm 3 (it stops before Σ_t 2^{N_t} exceeds M; M·B ≤ n).
    Default ⌊n/B⌋."""
    max_level: int | None = param(symbol="N_max", unit="levels", example=10, default=None, ge=1, le=60)
    """bias-reduced only: N_max of the truncated geometric level N_t ∈ {1, …, N_max}; 2^{N_max} ≤ M. Default max(1,
    ⌊log₂ M⌋ − 1) [D]."""
    warmup_steps: int | None = param(symbol="t₀", unit="steps", example=1, default=None, ge=1, le=MAX_COUNT)
    """sco only: steps t₀ at whose every step the private estimate x̃ is refreshed (K samples); default 1. t₀ ≤ T."""
    refresh_period: int | None = param(symbol="p", unit="steps", example=1, default=None, ge=1, le=MAX_COUNT)
    """sco only: after the warm-up, x̃ is refreshed every p steps; default 1 (every step)."""
    final_samples: int | None = param(symbol="K'", unit="samples", example=1, default=None, ge=1, le=MAX_SAMPLES)
    """sco only: samples K' of the final sparsification of x_T; default K."""

    def check(self) -> list[FieldIssue]:
        n, b = self.dataset_size, self.batch_size
        if b > n:
            return [FieldIssue(("batch_size",), "must not exceed dataset_size", f"an integer in [1, {n}]", b)]
        issues = self._variant_field_issues()
        if self.steps is not None and self.variant != "bias-reduced" and self.steps * b > n:
            issues.append(
                FieldIssue(
                    ("steps",),
                    "steps·batch_size must not exceed dataset_size (disjoint batches, one pass)",
                    f"an integer in [1, {n // b}]",
                    self.steps,
                )
            )
        if self.variant == "bias-reduced":
            issues += self._level_budget_issues()
        if self.variant == "sco":
            steps = self.steps if self.steps is not None else n // b
            if self.warmup_steps is not None and self.warmup_steps > steps:
                issues.append(
                    FieldIssue(
                        ("warmup_steps",), "must not exceed steps", f"an integer in [1, {steps}]", self.warmup_steps
                    )
                )
        return issues

    def _variant_field_issues(self) -> list[FieldIssue]:
        """Fields the variant requires, and fields it does not use."""
        issues: list[FieldIssue] = []
        v = self.variant
        if v in SADDLE_VARIANTS and self.dimension_y is None:
            issues.append(
                FieldIssue(("dimension_y",), f"is required by variant {v} (a saddle point)", "an integer ≥ 2")
            )
        if v == "sco" and self.dimension_y is not None:
            issues.append(
                FieldIssue(("dimension_y",), "is not used by variant sco (DP-SCO has no y-player): omit it", "omitted")
            )
        if v in ("second-order", "bias-reduced") and self.second_order_smoothness is None:
            issues.append(
                FieldIssue(
                    ("second_order_smoothness",),
                    f"is required by variant {v} (give 0 for quadratic or bilinear objectives)",
                    "a finite number ≥ 0",
                )
            )
        for name in _UNUSED_BY_VARIANT[v]:
            if getattr(self, name) is not None:
                issues.append(FieldIssue((name,), f"is not a parameter of variant {v}: omit it", "omitted"))
        return issues

    def _level_budget_issues(self) -> list[FieldIssue]:
        """Algorithm 3's levels fit its sample budget: M = ⌊n/B⌋ ≥ 2 base batches, M·B ≤ n, 2^{N_max} ≤ M."""
        n, b = self.dataset_size, self.batch_size
        m = self.stopping_parameter if self.stopping_parameter is not None else n // b
        if m < 2:
            return [
                FieldIssue(
                    ("batch_size",),
                    "leaves fewer than 2 base batches (Algorithm 3 needs M = ⌊n/B⌋ ≥ 2 for 2^{N_max} ≤ M)",
                    f"an integer in [1, {n // 2}]",
                    b,
                )
            ]
        if m * b > n:
            return [
                FieldIssue(
                    ("stopping_parameter",),
                    "stopping_parameter·batch_size must not exceed dataset_size (fresh samples only)",
                    f"an integer in [2, {n // b}]",
                    m,
                )
            ]
        if self.max_level is not None and 2**self.max_level > m:
            return [
                FieldIssue(
                    ("max_level",),
                    "2^max_level must not exceed stopping_parameter (one step must fit the budget)",
                    f"an integer in [1, {int(math.log2(m))}]",
                    self.max_level,
                )
            ]
        return []


_UNUSED_BY_VARIANT = {
    "first-order": ("stopping_parameter", "max_level", "warmup_steps", "refresh_period", "final_samples"),
    "second-order": ("stopping_parameter", "max_level", "warmup_steps", "refresh_period", "final_samples"),
    "bias-reduced": ("steps", "samples_per_step", "warmup_steps", "refresh_period", "final_samples"),
    "sco": ("stopping_parameter", "max_level"),
}
"""The fields each variant does not use (a request that gives one is told to omit it)."""
