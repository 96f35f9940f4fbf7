"""What a verification job found: the utility measured against the prediction, the audit, and the result of a job."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field
from scipy import stats

from .audit import AuditSummary, audit
from .simulator import BlockResult, JobPlan


class UtilitySummary(BaseModel):
    """The utility measured over the trials against the predicted bound."""

    measure: str = Field(description="What was measured.", examples=["excess loss φ(X_T) − φ* of the last iterate"])
    measured: dict[str, float | int] = Field(
        description="mean, standard_error, ci95_low, ci95_high (Student t) and trials.",
        examples=[{"mean": 0.0266, "standard_error": 0.0003, "ci95_low": 0.0260, "ci95_high": 0.0271, "trials": 20000}],
    )
    predicted_bound: float | None = Field(
        description="The prediction (null when the algorithm has none).", examples=[0.0264]
    )
    predicted_source: str | None = Field(
        description="Where the prediction comes from.", examples=["exact expectation of the Gaussian last iterate"]
    )
    within_bound: bool | None = Field(
        description="The measurement does not refute the prediction: the lower end of the 95 % interval is at most "
        "the predicted bound (null without a prediction).",
        examples=[True],
    )
    ratio: float | None = Field(description="Measured mean over the prediction.", examples=[1.008])
    note: str | None = Field(description="Caveats.", examples=[None])


def summarize_utility(plan: JobPlan, values: np.ndarray) -> UtilitySummary:
    """Mean, standard error and 95 % interval of the per-trial utility; the prediction is not refuted when the lower
    end of the interval is at most the predicted bound."""
    n = int(values.size)
    mean = float(values.mean())
    se = float(values.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    half = float(stats.t.ppf(0.975, n - 1)) * se if n > 1 else math.inf
    measured: dict[str, float | int] = {
        "mean": mean,
        "standard_error": se,
        "ci95_low": mean - half,
        "ci95_high": mean + half,
        "trials": n,
    }
    bound = plan.predicted_bound
    within = None if bound is None else bool(mean - half <= bound)
    ratio = None if bound is None or bound == 0 else mean / bound
    return UtilitySummary(
        measure=plan.utility_measure or "utility",
        measured=_finite(measured),
        predicted_bound=bound,
        predicted_source=plan.predicted_source,
        within_bound=within,
        ratio=ratio,
        note=plan.prediction_note,
    )


def _finite(values: dict[str, float | int]) -> dict[str, float | int]:
    return {k: (v if math.isfinite(v) else 0.0) for k, v in values.items()}


class VerificationResult(BaseModel):
    """What a verification job found."""

    utility: UtilitySummary | None = Field(description="The utility check (null if not requested).")
    privacy_audit: AuditSummary | None = Field(description="The privacy audit (null if not requested).")
    trials: int = Field(description="Trials run.", examples=[20000])
    seed: int = Field(description="The seed (the result depends on it and the parameters only).", examples=[0])
    problem: dict[str, Any] = Field(
        description="The synthetic problem, every setting resolved.",
        examples=[{"kind": "linear-gaussian", "curvature": 1.0}],
    )
    noise_multiplier: float | None = Field(
        description="The noise multiplier simulated (calibrated when the job gave a target ε).", examples=[2.0]
    )
    params: dict[str, Any] = Field(description="The hyperparameters simulated.", examples=[{"steps": 50}])


def summarize(plan: JobPlan, blocks: Sequence[BlockResult]) -> VerificationResult:
    """The verification result from every block, in block order."""
    utility = audit_summary = None
    if "utility" in plan.checks:
        utility = summarize_utility(plan, np.concatenate([b.utility for b in blocks]))
    if "privacy-audit" in plan.checks:
        audit_summary = audit(
            plan, np.concatenate([b.score_in for b in blocks]), np.concatenate([b.score_out for b in blocks])
        )
    return VerificationResult(
        utility=utility,
        privacy_audit=audit_summary,
        trials=plan.trials,
        seed=plan.seed,
        problem=plan.problem,
        noise_multiplier=plan.params.get("noise_multiplier"),
        params=plan.params,
    )
