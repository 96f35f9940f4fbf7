"""The base models of the HTTP contract and the service's own answers (health, problem details)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from accountants.params import refuse_many_unknown


class Strict(BaseModel):
    """Request bodies: unknown fields rejected (many at once as one error), strict JSON types, finite numbers
    only."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _many_unknown(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            refuse_many_unknown(cls, data)
        return data


class Out(BaseModel):
    """Response bodies: built from the library's report objects."""

    model_config = ConfigDict(from_attributes=True)


class Health(BaseModel):
    status: Literal["ok"] = Field(description="Always ok when the service answers.", examples=["ok"])
    version: str = Field(description="dpcal version.", examples=["0.1.0"])
    store: str | None = Field(
        None, description="The job store: its kind and whether it answers (ok) or why not.", examples=["sqlite: ok"]
    )
    job_runner: str | None = Field(
        None,
        description="Who runs this process's accepted jobs: embedded (this host's worker pool) or external "
        "(`dpcal worker` processes; DPCAL_EMBEDDED_WORKERS=0).",
        examples=["embedded"],
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
