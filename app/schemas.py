"""The HTTP contract: request and response bodies (pydantic models, published as OpenAPI).

Request bodies are generated from the registry: for every algorithm family, a model whose ``params`` is that family's
parameter model, joined into a union discriminated by ``algorithm``. A new family module therefore appears in the
documented request schema with no edit here. Response bodies mirror :mod:`accountants.reports` field for field.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce
from operator import or_
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from accountants import registry
from accountants.family import AlgorithmFamily
from accountants.verification import VerificationResult

AccountantName = Literal["best", "rdp", "tight", "paper"]

_ACCOUNTANT_DOC = (
    "Which accountant answers: best (the minimum over every valid accountant; default), rdp (Rényi curve with the "
    "improved conversion), tight (numerically tight accounting of the same mechanism), paper (the paper's own "
    "statement, reported together with what the rigorous accountant certifies)."
)
_DELTA_DOC = "Target δ of the (ε, δ) guarantee, in the open interval (0, 1)."
MAX_ORDERS = 200
MAX_ORDER_VALUE = 1e4


class Strict(BaseModel):
    """Request bodies: unknown fields rejected, strict JSON types, finite numbers only."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class Out(BaseModel):
    """Response bodies: built from the library's report objects."""

    model_config = ConfigDict(from_attributes=True)


Orders = Annotated[
    list[Annotated[float, Field(gt=1, le=MAX_ORDER_VALUE)]] | None,
    Field(
        min_length=1,
        max_length=MAX_ORDERS,
        description=(
            f"Rényi orders α at which to report the curve and search for ε (at most {MAX_ORDERS}, each in "
            f"(1, {MAX_ORDER_VALUE:g}]). Default: a superset of dp_accounting's 156 orders."
        ),
        examples=[[1.5, 2, 4, 8, 16, 32, 64]],
    ),
]


def _title(family: AlgorithmFamily) -> str:
    return "".join(part.capitalize() for part in family.id.split("-"))


def _variant(family: AlgorithmFamily, kind: str, fields: dict[str, Any]) -> type[Strict]:
    return create_model(  # type: ignore[call-overload, no-any-return]
        f"{_title(family)}{kind}Request",
        __base__=Strict,
        __doc__=f"{kind} request for `{family.id}`: {family.title}.",
        algorithm=(
            Literal[family.id],  # type: ignore[valid-type]
            Field(description="Algorithm id (see GET /v1/algorithms).", examples=[family.id]),
        ),
        params=(family.params_model, Field(description=f"Hyperparameters of {family.id}.")),
        **fields,
    )


class RequestBody:
    """One endpoint's request body: a model per algorithm, joined into a union discriminated by ``algorithm``.

    ``fields`` are the fields besides algorithm and params, or a function giving them for a family."""

    def __init__(self, kind: str, fields: dict[str, Any] | Callable[[AlgorithmFamily], dict[str, Any]]) -> None:
        self.variants: dict[str, type[Strict]] = {
            f.id: _variant(f, kind, fields(f) if callable(fields) else fields) for f in registry.families()
        }
        models = list(self.variants.values())
        self.annotation: Any = (
            models[0] if len(models) == 1 else Annotated[reduce(or_, models), Field(discriminator="algorithm")]
        )


PRIVACY_FIELDS: dict[str, Any] = {
    "delta": (float, Field(gt=0, lt=1, description=_DELTA_DOC, examples=[1e-5])),
    "accountant": (AccountantName, Field("best", description=_ACCOUNTANT_DOC, examples=["best"])),
    "orders": (Orders, None),
    "refine_order": (
        bool,
        Field(
            True,
            description="Also optimise the Rényi order continuously near the best grid order (never increases ε). "
            "Set false to reproduce a grid-only accountant such as dp_accounting's.",
            examples=[True],
        ),
    ),
}
CALIBRATE_FIELDS: dict[str, Any] = {
    "target_epsilon": (
        float,
        Field(
            gt=0,
            le=1e4,
            description="Target ε: the answer is the smallest noise whose ε is at most this.",
            examples=[3.0],
        ),
    ),
    "delta": PRIVACY_FIELDS["delta"],
    "accountant": PRIVACY_FIELDS["accountant"],
    "orders": (Orders, None),
}
UTILITY_FIELDS: dict[str, Any] = {}

JobCheck = Literal["utility", "privacy-audit"]


def job_fields(family: AlgorithmFamily) -> dict[str, Any]:
    """Fields of a verification-job request; ``problem`` is the family simulator's problem model."""
    problem_model: Any = family.simulator.problem_model if family.simulator is not None else dict[str, Any]
    return {
        "delta": PRIVACY_FIELDS["delta"],
        "target_epsilon": (
            float | None,
            Field(
                None,
                gt=0,
                le=1e4,
                examples=[1.0],
                description="Calibrate the noise for this ε at δ first (the noise in params is then ignored); "
                "without it, params must carry the noise.",
            ),
        ),
        "checks": (
            list[JobCheck],
            Field(
                ["utility", "privacy-audit"],
                min_length=1,
                max_length=2,
                examples=[["utility", "privacy-audit"]],
                description="utility: measured against the predicted bound; privacy-audit: an empirical lower "
                "bound on ε from a membership test on neighbouring datasets.",
            ),
        ),
        "trials": (
            int,
            Field(
                1000,
                ge=2,
                examples=[1000],
                description="Trials; each runs the algorithm once on D and once on its neighbour D′. At most "
                "DPCAL_JOB_MAX_TRIALS (default 200000), and the estimated work at most DPCAL_JOB_MAX_WORK.",
            ),
        ),
        "seed": (
            int,
            Field(
                0,
                ge=0,
                le=2**63 - 1,
                examples=[0],
                description="Seed of every random stream: the result depends on it and the request only.",
            ),
        ),
        "problem": (
            problem_model | None,
            Field(None, description="Settings of the synthetic problem (defaults for every one).", examples=[{}]),
        ),
    }


JobStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]


# -- responses ------------------------------------------------------------------------------------------------------


class Health(BaseModel):
    status: Literal["ok"] = Field(description="Always ok when the service answers.", examples=["ok"])
    version: str = Field(description="dpcal version.", examples=["0.1.0"])


class AlgorithmSummary(Out):
    id: str = Field(description="Algorithm id, used in requests and URLs.", examples=["dp-sgd"])
    title: str = Field(description="Human-readable name.", examples=["Poisson-subsampled DP-SGD"])
    summary: str = Field(description="What the algorithm is and what is accounted.", examples=["Noisy clipped SGD …"])
    source: str = Field(description="Papers and theorems the accounting rests on.", examples=["Abadi et al. 2016 …"])
    accountants: list[str] = Field(
        description="Accountants offered (best is always first).", examples=[["best", "rdp", "tight"]]
    )
    calibrated_parameter: str = Field(description="What calibration solves for.", examples=["noise_multiplier"])


class BoundOut(Out):
    name: str = Field(description="The bound.", examples=["RDP of the Poisson-subsampled Gaussian"])
    kind: str = Field(description="privacy or utility.", examples=["privacy"])
    source: str = Field(description="Paper and theorem.", examples=["Mironov, Talwar & Zhang 2019, §3.3"])
    conditions: list[str] = Field(description="When the bound applies.", examples=[["sampling = poisson"]])
    accountant: str | None = Field(description="Accountant that uses it.", examples=["rdp"])


class VerificationInfo(BaseModel):
    checks: list[str] = Field(description="Checks a job can run.", examples=[["utility", "privacy-audit"]])
    problem: dict[str, Any] = Field(
        description="JSON Schema of the job's `problem` field (the synthetic problem's settings).",
        examples=[{"type": "object", "properties": {"kind": {"type": "string"}}}],
    )


class AlgorithmDetail(AlgorithmSummary):
    parameters: dict[str, Any] = Field(
        description="JSON Schema of `params`: each property has a description, the paper's symbol (x-symbol), a "
        "unit (x-unit) and an example.",
        examples=[{"type": "object", "properties": {"dataset_size": {"type": "integer", "x-symbol": "n"}}}],
    )
    assumptions: list[str] = Field(
        description="What the accounting assumes about the training run.",
        examples=[["Per-example gradients are clipped."]],
    )
    bounds: list[BoundOut] = Field(description="Every bound offered, with its source and conditions.")
    verification: VerificationInfo | None = Field(
        description="What a verification job (POST /v1/jobs) can check for this algorithm, and the JSON Schema of its "
        "synthetic problem (null: the algorithm has no simulator)."
    )


class RdpCurveOut(Out):
    orders: list[float] = Field(description="Rényi orders α.", examples=[[2.0, 4.0, 8.0]])
    epsilons: list[float | None] = Field(
        description="ε(α) of the whole run at each order (null where no finite bound exists).",
        examples=[[0.24, 0.51, 1.12]],
    )
    bounds: list[str] | None = Field(
        None,
        description="Where several bounds compete: the one that gives ε(α) at each order.",
        examples=[["Theorem 2.3, eq. (19)", "Theorem 2.3, eq. (19)", "Theorem 2.3, eq. (19)"]],
    )


class AccountantOut(Out):
    name: str = Field(description="Accountant.", examples=["rdp"])
    applicable: bool = Field(description="Whether it applies to this configuration.", examples=[True])
    epsilon: float | None = Field(description="Its ε (null if not applicable).", examples=[2.5965])
    guarantee: str | None = Field(
        description="What the number is: certified upper bound, exact, or a paper's statement.",
        examples=["certified upper bound"],
    )
    method: str | None = Field(
        description="How it was computed.", examples=["RDP of the Poisson-subsampled Gaussian …"]
    )
    reason: str | None = Field(description="Why it does not apply (when not applicable).", examples=[None])
    optimal_order: float | None = Field(description="Optimal Rényi order, for RDP accountants.", examples=[8.12])
    noise_multiplier: float | None = Field(
        description="For calibration: the noise multiplier this accountant needs.", examples=[1.1]
    )
    calibrated_value: float | None = Field(
        description="For calibration: the value of the calibrated parameter (see calibrated_parameter) this "
        "accountant needs.",
        examples=[1.1],
    )


class NoiseOut(Out):
    noise_multiplier: float = Field(description="Noise std divided by the sensitivity.", examples=[1.1])
    noise_std: float | None = Field(description="Absolute noise std in the algorithm's units.", examples=[1.1])
    sensitivity: float | None = Field(description="L2 sensitivity the multiplier is relative to.", examples=[1.0])
    sensitivity_rule: str = Field(
        description="How the sensitivity follows from the parameters.",
        examples=["sensitivity = clip_norm (one clipped gradient added or removed)"],
    )
    units: str = Field(description="Units of noise_std.", examples=["units of the summed clipped gradients"])


class ConventionsOut(Out):
    neighbouring: str = Field(description="Neighbouring relation of the guarantee.", examples=["add-remove"])
    steps: int = Field(description="Number of steps (compositions) accounted.", examples=[14063])
    step_rule: str = Field(
        description="How the step count was obtained.",
        examples=["steps = ceil(epochs·dataset_size/batch_size) = 14063"],
    )
    sampling: str = Field(description="Batch sampling the accounting assumes.", examples=["Poisson: …"])
    noise_multiplier_definition: str = Field(
        description="Definition of the noise multiplier used.", examples=["noise_multiplier = noise std / sensitivity"]
    )
    released: str = Field(description="Which iterates the analysis assumes released.", examples=["every iterate"])


class AssumptionOut(Out):
    statement: str = Field(description="The assumption.", examples=["loss is convex"])
    holds: bool | None = Field(
        description="Whether it holds for these parameters (null: cannot be checked).", examples=[True]
    )
    detail: str | None = Field(description="Why.", examples=[None])


class BoundResultOut(Out):
    name: str = Field(description="The bound.", examples=["Theorem 2.3, eq. (19)"])
    source: str = Field(description="Paper and theorem.", examples=["seed 004, Theorem 2.3, eq. (19)"])
    applicable: bool = Field(description="Whether its conditions hold.", examples=[True])
    reason: str | None = Field(description="Why it does not apply.", examples=[None])
    conditions: list[AssumptionOut] = Field(description="Its conditions and whether each holds.")
    rdp: list[float] | None = Field(
        description="Its ε(α) at the reported orders (null when not applicable).", examples=[[0.0088, 0.0176]]
    )
    epsilon: float | None = Field(description="Its own ε at δ.", examples=[17.55])
    selected: bool = Field(description="Whether the answer uses it (the smallest applicable).", examples=[True])
    releases: str = Field(
        description="Which iterates it covers: last iterate, or every iterate.", examples=["last iterate"]
    )


class UtilityBoundOut(Out):
    measure: str = Field(description="What is bounded.", examples=["expected strong VI gap"])
    value: float = Field(description="The bound.", examples=[0.12])
    kind: str = Field(description="explicit bound, or rate with unit constants.", examples=["explicit bound"])
    source: str = Field(description="Theorem it comes from.", examples=["seed 000, Corollary 1"])
    assumptions: list[AssumptionOut] = Field(description="Its assumptions and whether they hold.")
    applicable: bool = Field(description="Whether all checkable assumptions hold.", examples=[True])


class RecommendationOut(Out):
    name: str = Field(description="The parameter, named as in params.", examples=["stepsize"])
    value: float | int | str = Field(description="The recommended value.", examples=[0.0123])
    rule: str = Field(
        description="Formula and source.", examples=["γ = min(D/(M√(7T(1+dσ²/M²))), 1/(√3L)) (seed 000, Corollary 1)"]
    )
    applied: bool = Field(
        description="Whether the answer used it (the parameter was omitted) or it is advice only.", examples=[True]
    )


class ReleaseOut(Out):
    name: str = Field(description="The release.", examples=["phase 1: x-block output perturbation"])
    count: int = Field(description="How many such releases the run makes.", examples=[1])
    sensitivity: float | None = Field(description="Its L2 sensitivity.", examples=[0.04])
    noise_std: float | None = Field(description="Its noise std.", examples=[0.12])
    noise_multiplier: float | None = Field(description="Noise std over sensitivity.", examples=[3.0])
    composition: str = Field(
        description="How it composes with the other releases.", examples=["parallel: disjoint blocks of samples"]
    )
    details: dict[str, float | int | str] = Field(
        description="Further quantities of the release (block of samples, phase constants, required accuracy).",
        examples=[{"samples": "1..500", "solver_accuracy": 1e-6}],
    )


class UtilityResponse(Out):
    algorithm: str = Field(description="Algorithm id.", examples=["dp-sgd"])
    bounds: list[UtilityBoundOut] = Field(description="Predicted utility bounds (empty if the algorithm has none).")
    reason: str | None = Field(description="Why there is no bound.", examples=["DP-SGD has no utility guarantee …"])
    recommended: list[RecommendationOut] = Field(
        description="Hyperparameters the bounds used that were left to their defaults (applied), and advised values."
    )


class PaperOut(Out):
    source: str = Field(description="The paper's calibration statement.", examples=["seed 000, Proposition 5"])
    noise_multiplier: float | None = Field(description="Noise the paper prescribes.", examples=[3.2])
    epsilon_claimed: float | None = Field(description="ε the paper claims for it.", examples=[1.0])
    epsilon_certified: float | None = Field(description="ε our rigorous accountant certifies for it.", examples=[1.23])
    certified_by: str | None = Field(description="Accountant that certified it.", examples=["rdp"])
    valid: bool | None = Field(description="Whether the paper's claim holds.", examples=[False])
    note: str | None = Field(description="Conditions, errata.", examples=[None])


class PrivacyResponse(Out):
    algorithm: str = Field(description="Algorithm id.", examples=["dp-sgd"])
    epsilon: float = Field(description="Certified ε at δ (from `accountant`).", examples=[2.5965])
    delta: float = Field(description="δ.", examples=[1e-5])
    accountant: str = Field(description="Accountant that produced `epsilon`.", examples=["rdp"])
    optimal_order: float | None = Field(description="Optimal Rényi order of the RDP accountant.", examples=[8.12])
    rdp: RdpCurveOut | None = Field(description="Rényi curve of the whole run (null where none exists).")
    accountants: list[AccountantOut] = Field(description="Every accountant's answer, or why it does not apply.")
    noise: NoiseOut | None = Field(
        description="The noise in both units and its sensitivity (null where the privacy knob is not a noise scale)."
    )
    conventions: ConventionsOut = Field(description="Neighbouring relation, steps, sampling, multiplier definition.")
    warnings: list[str] = Field(description="Grid-edge optimal orders, errata, unmet conditions.", examples=[[]])
    bounds: list[BoundResultOut] = Field(
        description="Every privacy bound considered for this configuration (where the algorithm has several): "
        "applicable or why not, its curve and ε, and which one the answer uses.",
    )
    releases: list[ReleaseOut] = Field(
        description="The noisy releases of the run (the mechanism plan), where the algorithm makes several kinds."
    )


class CalibrationResponse(Out):
    algorithm: str = Field(description="Algorithm id.", examples=["dp-sgd"])
    target_epsilon: float = Field(description="Requested ε.", examples=[3.0])
    delta: float = Field(description="δ.", examples=[1e-5])
    calibrated_parameter: str = Field(description="The privacy knob calibrated.", examples=["noise_multiplier"])
    calibrated_value: float = Field(description="Its value.", examples=[1.0139])
    noise_multiplier: float | None = Field(
        description="Smallest noise multiplier meeting the target (null when the calibrated parameter is not a noise "
        "scale).",
        examples=[1.0139],
    )
    noise_std: float | None = Field(description="Absolute noise std in the algorithm's units.", examples=[1.0139])
    epsilon: float = Field(description="ε achieved at that noise (≤ target).", examples=[2.99999])
    accountant: str = Field(description="Accountant that needs the least noise.", examples=["rdp"])
    optimal_order: float | None = Field(description="Optimal Rényi order at that noise.", examples=[7.23])
    rdp: RdpCurveOut | None = Field(description="Rényi curve at the calibrated noise.")
    accountants: list[AccountantOut] = Field(
        description="Each accountant's calibrated noise, or why it does not apply."
    )
    noise: NoiseOut | None = Field(
        description="The calibrated noise in both units (null when the calibrated parameter is not a noise scale)."
    )
    conventions: ConventionsOut = Field(description="Neighbouring relation, steps, sampling, multiplier definition.")
    utility: UtilityResponse | None = Field(description="Predicted utility at this noise (null if none).")
    utility_reason: str | None = Field(description="Why there is no utility prediction.", examples=[None])
    paper: PaperOut | None = Field(description="The paper's own calibration and what it really certifies.")
    paper_reason: str | None = Field(description="Why there is no paper calibration.", examples=[None])
    warnings: list[str] = Field(description="Conventions to double-check, errata, grid edges.", examples=[[]])
    bounds: list[BoundResultOut] = Field(
        description="Every privacy bound considered for this configuration (where the algorithm has several): "
        "applicable or why not, its curve and ε, and which one the answer uses.",
    )
    releases: list[ReleaseOut] = Field(
        description="The noisy releases of the run at the calibrated value (the mechanism plan)."
    )
    recommended: list[RecommendationOut] = Field(
        description="Hyperparameters recommended for this target (by the paper or dpcal), with their rules."
    )


class ProblemField(BaseModel):
    loc: list[str | int] = Field(
        description="Where the offending value is in the request body.", examples=[["params", "batch_size"]]
    )
    message: str = Field(description="What is wrong.", examples=["must not exceed dataset_size"])
    allowed: str | None = Field(description="What is allowed.", examples=["an integer in [1, 60000]"])


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = Field(description="URI identifying the problem type.", examples=["urn:dpcal:problem:invalid-request"])
    title: str = Field(description="Short summary of the problem type.", examples=["Invalid request"])
    status: int = Field(description="HTTP status code.", examples=[422])
    detail: str = Field(description="Explanation of this occurrence.", examples=["params.batch_size: must not …"])
    instance: str | None = Field(None, description="The request path.", examples=["/v1/privacy"])
    errors: list[ProblemField] | None = Field(
        None,
        description="Each offending field.",
        examples=[
            [
                {
                    "loc": ["params", "batch_size"],
                    "message": "must not exceed dataset_size",
                    "allowed": "an integer in [1, 60000]",
                }
            ]
        ],
    )
    algorithms: list[str] | None = Field(
        None, description="Valid algorithm ids (for unknown algorithms).", examples=[["dp-sgd"]]
    )
    supported: list[str] | None = Field(
        None, description="Accountants that apply (for an unsupported accountant).", examples=[["best", "rdp"]]
    )


class Progress(BaseModel):
    completed: int = Field(description="Trials finished.", examples=[512])
    total: int = Field(description="Trials in the job.", examples=[1000])


class JobAccounting(BaseModel):
    """What the job simulates and what was predicted before the first trial."""

    noise_multiplier: float | None = Field(
        description="Noise multiplier simulated (calibrated first when the job gave a target ε).", examples=[2.0]
    )
    epsilon_accounted: float = Field(description="ε the accountant certifies at δ.", examples=[9.01])
    accountant: str = Field(description="The accountant that certified it.", examples=["rdp"])
    epsilon_exact: float | None = Field(
        description="Exact ε of the simulated mechanism, where closed-form.", examples=[2.75]
    )
    predicted_bound: float | None = Field(description="Predicted utility (null where none).", examples=[0.0264])
    problem: dict[str, Any] = Field(
        description="The synthetic problem, every setting resolved.", examples=[{"kind": "linear-gaussian"}]
    )


class JobOut(BaseModel):
    id: str = Field(description="Job id.", examples=["3f9c2e54a1b84d9f8f5a2c1e0b7d6a43"])
    status: JobStatus = Field(description="queued, running, succeeded, failed or cancelled.", examples=["queued"])
    progress: Progress = Field(description="Trials finished so far (written after every chunk).")
    created_at: str = Field(
        description="When the job was accepted (UTC, ISO 8601).", examples=["2026-11-22T10:00:00.000000Z"]
    )
    started_at: str | None = Field(description="When it first started running.", examples=[None])
    updated_at: str = Field(description="Last change.", examples=["2026-11-22T10:00:00.000000Z"])
    finished_at: str | None = Field(description="When it reached a final status.", examples=[None])
    attempts: int = Field(description="How many times it was started (a crashed run is restarted).", examples=[1])
    cancel_requested: bool = Field(
        description="Cancellation was requested (a running job stops between chunks).", examples=[False]
    )
    request: dict[str, Any] = Field(description="The request, as validated.", examples=[{"algorithm": "dp-sgd"}])
    accounting: JobAccounting = Field(description="Accounted and exact ε, predicted utility, the problem.")
    result: VerificationResult | None = Field(description="The result, once succeeded.")
    error: Problem | None = Field(description="Problem details, once failed.")


class JobList(BaseModel):
    jobs: list[JobOut] = Field(description="Jobs, newest first.")
    next_cursor: str | None = Field(
        description="Pass as cursor for the next page (null on the last page).", examples=[None]
    )
