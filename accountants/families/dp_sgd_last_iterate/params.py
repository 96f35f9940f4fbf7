"""Hyperparameters of Kong & Ribero's (2024) cyclic, clipped, last-iterate DP-SGD and its step count."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

from ...errors import FieldIssue
from ...params import ParamsModel, noise_given_twice, noise_multiplier_param, param

ALGORITHM_ID = "dp-sgd-last-iterate"

MAX_COUNT = 10**12
SOURCE = "Kong & Ribero 2024 (last iterate of cyclically-traversed DP-SGD, arXiv:2407.05237)"


class LastIterateParams(ParamsModel):
    """Hyperparameters of Algorithm 1 of Kong & Ribero 2024 (cyclic batches, clipping, prox step, last iterate)."""

    dataset_size: int = param(symbol="k", unit="records", example=10000, ge=1, le=MAX_COUNT)
    """Number of per-example losses."""
    batch_size: int = param(symbol="b", unit="records", example=10, ge=1, le=MAX_COUNT)
    """Batch size; must divide dataset_size (disjoint batches, ℓ = k/b steps per pass)."""
    steps: int | None = param(symbol="T", unit="steps", example=100000, default=None, ge=1, le=MAX_COUNT)
    """Total iterations. Give steps or epochs, not both."""
    epochs: float | None = param(symbol="E", unit="passes", example=100, gt=0, le=1e6, default=None)
    """Passes over the data, converted to steps = epoch_rounding(epochs·k/b). Give steps or epochs, not both."""
    epoch_rounding: Literal["ceil", "floor"] = param(example="ceil", default="ceil")
    """How epochs become steps: ceil (counts a final partial pass) or floor."""
    stepsize: float = param(symbol="λ", unit="parameter units per gradient unit", example=1e-5, gt=0, le=1e6)
    """Step size of the SGD step (the paper's λ; not a regularisation weight)."""
    clip_norm: float = param(symbol="C", unit="gradient L2-norm units", example=10.0, gt=0, le=1e12)
    """Per-example L2 clipping norm (under clipping='inactive': a bound on every per-example gradient norm along both
    trajectories, condition (18))."""
    smoothness: float = param(symbol="M", unit="1/parameter units²", example=1.0, ge=0, le=1e12)
    """Upper curvature constant of every f_i, assumption (A2)."""
    weak_convexity: float = param(symbol="m", unit="1/parameter units²", example=0.0, ge=0, le=1e12)
    """Weak-convexity constant of every f_i, assumption (A2); 0 for convex losses."""
    diameter: float | None = param(symbol="d_h", unit="parameter units", example=1e-4, gt=0, le=1e12, default=None)
    """Diameter of dom h (bounded domain); enables Theorem 2.2. Omit for an unbounded domain."""
    clipping: Literal["active", "inactive"] = param(example="active", default="active")
    """active (default): clipping may act. inactive: you assert every per-example gradient norm stays ≤ clip_norm along
    both trajectories (condition (18)); enables eq. (19) and Corollary C.3."""
    noise_multiplier: float | None = noise_multiplier_param(symbol="z = bσ/(λC)", unit="multiples of λC/b", example=1.0)
    """Noise multiplier z: per-coordinate noise std σ = stepsize·z·clip_norm/batch_size added to the parameters (noise
    z·C on the summed clipped gradients). Required for privacy accounting (or give noise_std)."""
    noise_std: float | None = param(symbol="σ", unit="parameter units", example=1e-5, gt=0, le=1e12, default=None)
    """Per-coordinate std of the Gaussian noise added to the parameters (the paper's σ); an alternative to
    noise_multiplier."""
    constant: Literal["printed", "proof"] = param(example="printed", default="printed")
    """Constant of eqs. (17)/(19): printed (4α, as stated; default) or proof (2α with ⌈T/ℓ⌉ − 1 passes, what the paper's
    proof derives)."""
    l_lambda_form: Literal["eq13", "kappa4"] = param(example="eq13", default="eq13")
    """Expression of L_λ: eq13 (eq. 13, default) or kappa4 (the remarks after Prop. 2.1 and App. C; larger)."""

    def check(self) -> list[FieldIssue]:
        issues = []
        if (self.steps is None) == (self.epochs is None):
            issues.append(FieldIssue(("steps",), "give exactly one of steps and epochs", "one of steps, epochs"))
        if self.dataset_size % self.batch_size:
            issues.append(
                FieldIssue(
                    ("batch_size",),
                    "must divide dataset_size (Algorithm 1 uses disjoint batches)",
                    f"a divisor of {self.dataset_size}",
                    self.batch_size,
                )
            )
        issues += noise_given_twice(self.noise_multiplier, self.noise_std)
        scale = self.stepsize * self.clip_norm / self.batch_size
        if not (self.stepsize * self.stepsize > 1e-300 and scale > 1e-300):
            issues.append(
                FieldIssue(
                    ("stepsize",),
                    "stepsize² and the noise unit stepsize·clip_norm/batch_size underflow the floating-point range",
                    f"a number ≥ {max(1e-150, 1e-300 * self.batch_size / self.clip_norm):.3g}",
                    self.stepsize,
                )
            )
        if self.epochs is not None and self.steps is None and steps_and_rule(self)[0] < 1:
            issues.append(FieldIssue(("epochs",), "gives zero steps", "epochs ≥ batch_size/dataset_size", self.epochs))
        return issues

    @property
    def steps_per_pass(self) -> int:
        return self.dataset_size // self.batch_size


def steps_and_rule(p: LastIterateParams) -> tuple[int, str]:
    if p.steps is not None:
        return p.steps, f"steps as given: {p.steps}"
    exact = Fraction(repr(p.epochs)) * p.dataset_size / p.batch_size
    steps = math.ceil(exact) if p.epoch_rounding == "ceil" else math.floor(exact)
    return steps, (
        f"steps = {p.epoch_rounding}(epochs·k/b) = {p.epoch_rounding}({p.epochs:g}·{p.dataset_size}/"
        f"{p.batch_size}) = {steps}"
    )
