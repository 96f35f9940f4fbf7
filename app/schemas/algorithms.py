"""What ``GET /v1/algorithms`` answers: each family described from its card, parameter model and simulator."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from accountants.family import AlgorithmFamily

from .common import Out


class AlgorithmSummary(Out):
    id: str = Field(description="Algorithm id, used in requests and URLs.", examples=["dp-sgd"])
    title: str = Field(description="Human-readable name.", examples=["DP-SGD (subsampled or shuffled batches)"])
    summary: str = Field(description="What the algorithm is and what is accounted.", examples=["Noisy clipped SGD …"])
    source: str = Field(description="Papers and theorems the accounting rests on.", examples=["Abadi et al. 2016 …"])
    accountants: list[str] = Field(
        description="Accountants offered (best is always first).", examples=[["best", "rdp", "tight"]]
    )
    calibrated_parameter: str = Field(description="What calibration solves for.", examples=["noise_multiplier"])

    @classmethod
    def from_family(cls, family: AlgorithmFamily[Any]) -> AlgorithmSummary:
        return cls.model_validate(_summary(family))


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


class AlgorithmExamples(BaseModel):
    """Valid requests for this algorithm (from its card): what a form starts from."""

    privacy: dict[str, Any] = Field(
        description="`params` of a POST /v1/privacy request (the privacy knob included).",
        examples=[{"dataset_size": 60000, "batch_size": 256, "epochs": 60, "noise_multiplier": 1.1}],
    )
    calibrate: dict[str, Any] = Field(
        description="`params` of a POST /v1/calibrate request (without the calibrated knob).",
        examples=[{"dataset_size": 60000, "batch_size": 256, "epochs": 60}],
    )
    target_epsilon: float = Field(description="The example's target ε.", examples=[3.0])
    utility: dict[str, Any] = Field(
        description="`params` of a POST /v1/utility request.", examples=[{"dataset_size": 60000}]
    )
    job: dict[str, Any] | None = Field(
        description="A small POST /v1/jobs body without `algorithm` (null: no simulator).",
        examples=[{"params": {"steps": 50}, "delta": 1e-5, "trials": 1000}],
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
    checkpoints: bool = Field(
        description="Whether POST /v1/privacy takes `checkpoints` (ε over training) for this algorithm.",
        examples=[True],
    )
    examples: AlgorithmExamples = Field(description="Valid requests for this algorithm, from its card.")

    @classmethod
    def from_family(cls, family: AlgorithmFamily[Any]) -> AlgorithmDetail:
        simulator = family.simulator
        verification = None
        if simulator is not None:
            verification = {"checks": list(simulator.checks), "problem": simulator.problem_model.model_json_schema()}
        return cls.model_validate(
            _summary(family)
            | {
                "parameters": family.params_model.model_json_schema(),
                "assumptions": list(family.assumptions),
                "bounds": [BoundOut.model_validate(bound) for bound in family.bounds],
                "verification": verification,
                "checkpoints": family.offers_checkpoints,
                "examples": {
                    "privacy": dict(family.example),
                    "calibrate": family.calibration_example(),
                    "target_epsilon": family.example_target_epsilon,
                    "utility": {**family.example, **family.utility_example_extra},
                    "job": None if family.job_example is None else dict(family.job_example),
                },
            }
        )


def _summary(family: AlgorithmFamily[Any]) -> dict[str, Any]:
    return {
        "id": family.id,
        "title": family.title,
        "summary": family.summary,
        "source": family.source,
        "accountants": list(family.supported_accountants()),
        "calibrated_parameter": family.calibrated_parameter,
    }
