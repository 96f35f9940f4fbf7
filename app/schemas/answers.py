"""Answer bodies of /v1/privacy, /v1/calibrate and /v1/utility: they mirror :mod:`accountants.reports` field for
field (built from the report objects, ``from_attributes``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from accountants.rdp import StatedNeighbouring
from accountants.reports import Guarantee

from .common import Out


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
    epsilon_lower: float | None = Field(
        None,
        description="For the tight accountant: a certified lower bound on the exact ε of what it accounts (the "
        "mechanism's own ε wherever its dominating pairs are attained), so that [epsilon_lower, epsilon] brackets it: "
        "the optimistic discretisation on the same grid, or the root's bracket for an exact Gaussian (null elsewhere).",
        examples=[2.5962],
    )
    guarantee: str | None = Field(
        description="What the number is: certified upper bound, exact, or a paper's statement.",
        examples=["certified upper bound"],
    )
    method: str | None = Field(
        description="How it was computed.", examples=["RDP of the Poisson-subsampled Gaussian …"]
    )
    reason: str | None = Field(description="Why it does not apply (when not applicable).", examples=[None])
    kind: Guarantee = Field(
        Guarantee.CERTIFIED,
        description="What the number is, as data: exact, certified (a proven upper bound), paper-valid (a paper's "
        "statement the accountants confirm), paper-as-printed (not certified: never chosen by best) or not-valid "
        "(shown for comparison only, e.g. the Poisson ε of a shuffling loader: it does not hold for this "
        "configuration).",
        examples=["certified"],
    )
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
    sensitivity_exact: bool = Field(
        description="Whether the sensitivity is exact; false: a certified upper bound (dp-mf's strategy sensitivity "
        "where the bracket does not close).",
        examples=[True],
    )
    sensitivity_attained: float | None = Field(
        description="Where the sensitivity is a maximum over participation patterns (dp-mf): what the worst pattern "
        "found attains (equal to the sensitivity when exact); null otherwise.",
        examples=[None],
    )
    worst_pattern: list[int] | None = Field(
        description="The steps (0-based) of that pattern (dp-mf); null otherwise.", examples=[None]
    )


class ConventionsOut(Out):
    neighbouring: StatedNeighbouring = Field(
        description="Neighbouring relation of the guarantee (the value a request's neighbouring takes).",
        examples=["add-remove"],
    )
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
    protects: Literal["example", "user"] = Field(
        description="The unit of privacy: one example (record), or one user (a record that is a user, or all of a "
        "user's examples).",
        examples=["example"],
    )
    examples_per_user: int = Field(
        description="Under user-level privacy, the most examples of one user the guarantee covers (1: each record is "
        "the user, or example-level).",
        examples=[1],
    )
    sampling_rate: float | None = Field(
        description="The sampling rate q of one optimizer step (from the effective batch: gradient accumulation "
        "included), where the sampling has one.",
        examples=[0.004266666666666667],
    )


class AssumptionOut(Out):
    statement: str = Field(description="The assumption.", examples=["loss is convex"])
    holds: bool | None = Field(
        description="Whether it holds for these parameters (null: cannot be checked).", examples=[True]
    )
    detail: str | None = Field(description="Why.", examples=[None])


class BoundResultOut(Out):
    name: str = Field(description="The bound.", examples=["Theorem 2.3, eq. (19)"])
    source: str = Field(description="Paper and theorem.", examples=["Kong & Ribero 2024, Theorem 2.3, eq. (19)"])
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
    source: str = Field(description="Theorem it comes from.", examples=["Boob & Guzmán 2023, Corollary 1"])
    assumptions: list[AssumptionOut] = Field(description="Its assumptions and whether they hold.")
    applicable: bool = Field(description="Whether all checkable assumptions hold.", examples=[True])


class RecommendationOut(Out):
    name: str = Field(description="The parameter, named as in params.", examples=["stepsize"])
    value: float | int | str = Field(description="The recommended value.", examples=[0.0123])
    rule: str = Field(
        description="Formula and source.",
        examples=["γ = min(D/(M√(7T(1+dσ²/M²))), 1/(√3L)) (Boob & Guzmán 2023, Corollary 1)"],
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


class CurvePointOut(Out):
    steps: int = Field(description="Steps (releases) after which ε is given.", examples=[14063])
    epochs: float | None = Field(description="The same in epochs (where the algorithm has epochs).", examples=[60.0])
    epsilon: float = Field(description="Certified ε at δ after these steps.", examples=[2.38])
    accountant: str = Field(description="Accountant that gives it.", examples=["tight"])


class BeyondOut(Out):
    value: float = Field(description="The calibrated value one step beyond the answer.", examples=[92])
    epsilon: float = Field(description="Its ε, above the target.", examples=[3.0156])
    accountant: str = Field(description="Accountant that gives it.", examples=["tight"])


CurveField = Annotated[
    list[CurvePointOut],
    Field(description="ε over training: ε after each requested checkpoint (empty unless `checkpoints` was sent)."),
]
StatementField = Annotated[
    str | None,
    Field(
        description="The privacy statement in plain language (null unless `statement` was true).",
        examples=[
            "Privacy statement for dp-sgd with these hyperparameters. What is protected: each individual example …"
        ],
    ),
]


class UtilityResponse(Out):
    algorithm: str = Field(description="Algorithm id.", examples=["dp-sgd"])
    bounds: list[UtilityBoundOut] = Field(description="Predicted utility bounds (empty if the algorithm has none).")
    reason: str | None = Field(description="Why there is no bound.", examples=["DP-SGD has no utility guarantee …"])
    recommended: list[RecommendationOut] = Field(
        description="Hyperparameters the bounds used that were left to their defaults (applied), and advised values."
    )


class PaperOut(Out):
    source: str = Field(
        description="The paper's calibration statement.", examples=["Boob & Guzmán 2023, Proposition 5"]
    )
    noise_multiplier: float | None = Field(description="Noise the paper prescribes.", examples=[3.2])
    epsilon_claimed: float | None = Field(description="ε the paper claims for it.", examples=[1.0])
    epsilon_certified: float | None = Field(description="ε our rigorous accountant certifies for it.", examples=[1.23])
    certified_by: str | None = Field(description="Accountant that certified it.", examples=["rdp"])
    valid: bool | None = Field(description="Whether the paper's claim holds.", examples=[False])
    note: str | None = Field(description="Conditions, errata.", examples=[None])


BoundsConsidered = Annotated[
    list[BoundResultOut],
    Field(
        description="Every privacy bound considered for this configuration (where the algorithm has several): "
        "applicable or why not, its curve and ε, and which one the answer uses."
    ),
]
ConventionsField = Annotated[
    ConventionsOut, Field(description="Neighbouring relation, steps, sampling, multiplier definition.")
]


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
    conventions: ConventionsField
    warnings: list[str] = Field(description="Grid-edge optimal orders, errata, unmet conditions.", examples=[[]])
    bounds: BoundsConsidered
    releases: list[ReleaseOut] = Field(
        description="The noisy releases of the run (the mechanism plan), where the algorithm makes several kinds."
    )
    curve: CurveField
    statement: StatementField


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
    conventions: ConventionsField
    utility: UtilityResponse | None = Field(description="Predicted utility at this noise (null if none).")
    utility_reason: str | None = Field(description="Why there is no utility prediction.", examples=[None])
    paper: PaperOut | None = Field(description="The paper's own calibration and what it really certifies.")
    paper_reason: str | None = Field(description="Why there is no paper calibration.", examples=[None])
    warnings: list[str] = Field(description="Conventions to double-check, errata, grid edges.", examples=[[]])
    bounds: BoundsConsidered
    releases: list[ReleaseOut] = Field(
        description="The noisy releases of the run at the calibrated value (the mechanism plan)."
    )
    recommended: list[RecommendationOut] = Field(
        description="Hyperparameters recommended for this target (by the paper or dpcal), with their rules."
    )
    curve: CurveField
    statement: StatementField
    beyond: BeyondOut | None = Field(
        description="For an integer calibrated parameter (steps, epochs, a count): the next value and its ε, which "
        "exceeds the target (null for noise-like parameters and where the range's end was reached)."
    )
