"""What ``GET /v1/algorithms`` answers: each family described from its card, parameter model and simulator."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from accountants.family import AlgorithmFamily

from .common import Out


class AlgorithmSummary(Out):
    id: str = Field(description="Algorithm id, used in requests and URLs.", examples=["dp-sgd"])
    title: str = Field(description="Human-readable name.", examples=["Poisson-subsampled DP-SGD"])
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
