"""Request bodies of ``/v1/compose`` and ``/v1/compose/calibrate``: an event tree in the JSON grammar of
:mod:`accountants.pipeline.grammar`, read by the library (so every error names its JSON path), documented here."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, WithJsonSchema

from accountants.pipeline import MAX_DEPTH, MAX_NODES, MAX_RELEASES

from .common import Strict
from .requests import PRIVACY_FIELDS, STATEMENT_FIELD, Checkpoints, Orders

_EVENT_REF = {"type": "object", "description": "An event (this same grammar, nested)."}
_NUMBER = {"type": "number"}


def _variant(kind: str, description: str, **properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "title": kind,
        "description": description,
        "properties": {"type": {"const": kind}, **properties},
        "required": ["type", *(p for p in properties if p != "params")],
        "additionalProperties": False,
    }


EVENT_SCHEMA: dict[str, Any] = {
    "title": "Event",
    "description": (
        "A mechanism as a JSON tree with a `type` (dp_accounting's DpEvent grammar). At most "
        f"{MAX_DEPTH} levels, {MAX_NODES} nodes and {MAX_RELEASES:.0e} releases; every error names its JSON path."
    ),
    "oneOf": [
        _variant(
            "gaussian", "One Gaussian release; noise_multiplier = std / L2 sensitivity.", noise_multiplier=_NUMBER
        ),
        _variant(
            "laplace", "One Laplace release; noise_multiplier = scale / L1 sensitivity.", noise_multiplier=_NUMBER
        ),
        _variant(
            "randomized-response",
            "k-ary randomized response: with probability noise_parameter a uniformly random bucket, else the true one.",
            noise_parameter=_NUMBER,
            num_buckets={"type": "integer", "minimum": 2},
        ),
        _variant("pure", "Any ε-DP release.", epsilon=_NUMBER),
        _variant("zcdp", "Any ρ-zCDP release.", rho=_NUMBER),
        _variant(
            "poisson-sampled",
            "Each record included independently with probability sampling_rate; mechanism runs on the sample.",
            sampling_rate=_NUMBER,
            mechanism=_EVENT_REF,
        ),
        _variant(
            "sampled-without-replacement",
            "A uniform subset of sample_size of dataset_size records (replace-one neighbours only).",
            dataset_size={"type": "integer"},
            sample_size={"type": "integer"},
            mechanism=_EVENT_REF,
        ),
        _variant(
            "truncated-poisson-sampled",
            "Poisson sampling at sampling_rate from dataset_size records, the batch cut to a uniformly random "
            "max_batch_size records where larger (add-remove neighbours only; mechanism: a Gaussian).",
            dataset_size={"type": "integer"},
            sampling_rate=_NUMBER,
            max_batch_size={"type": "integer"},
            mechanism=_EVENT_REF,
        ),
        _variant(
            "shuffled",
            "A shuffling loader over epochs: each record in exactly one batch per epoch; accounted as one run of "
            "mechanism per epoch (no amplification claimed).",
            epochs={"type": "integer"},
            mechanism=_EVENT_REF,
        ),
        _variant(
            "balls-in-bins",
            "Random allocation over epochs: each record in one uniformly random batch per epoch; accounted as one "
            "run of mechanism per epoch (no amplification claimed).",
            epochs={"type": "integer"},
            mechanism=_EVENT_REF,
        ),
        _variant("repeated", "mechanism run count times, adaptively.", count={"type": "integer"}, mechanism=_EVENT_REF),
        _variant("sequence", "mechanisms run in order.", mechanisms={"type": "array", "items": _EVENT_REF}),
        _variant(
            "algorithm",
            "A registered algorithm's mechanism plan at params (noise included; see GET /v1/algorithms).",
            algorithm={"type": "string"},
            params={"type": "object"},
        ),
    ],
}

Event = Annotated[dict[str, Any], WithJsonSchema(EVENT_SCHEMA)]

EXAMPLE_MECHANISM: dict[str, Any] = {
    "type": "sequence",
    "mechanisms": [
        {
            "type": "repeated",
            "count": 2000,
            "mechanism": {
                "type": "poisson-sampled",
                "sampling_rate": 0.004,
                "mechanism": {"type": "gaussian", "noise_multiplier": 1.0},
            },
        },
        {
            "type": "repeated",
            "count": 500,
            "mechanism": {
                "type": "poisson-sampled",
                "sampling_rate": 0.02,
                "mechanism": {"type": "gaussian", "noise_multiplier": 1.5},
            },
        },
        {"type": "laplace", "noise_multiplier": 20.0},
    ],
}


class ComposeRequest(Strict):
    """ε at δ of a composition of mechanisms."""

    mechanism: Event = Field(description="The mechanism: an event tree.", examples=[EXAMPLE_MECHANISM])
    delta: float = PRIVACY_FIELDS["delta"][1]
    accountant: Literal["best", "rdp", "tight"] = Field(
        "best",
        description="best (the smaller certified answer; default), rdp (Rényi curve, improved conversion), tight "
        "(exact Gaussian DP for trees of Gaussians, else the certified PLD accountant where it reads the tree).",
        examples=["best"],
    )
    neighbouring: Literal["add-remove", "replace-one"] = Field(
        "add-remove",
        description="Neighbouring relation of the guarantee; algorithm nodes with a neighbouring parameter get it.",
        examples=["add-remove"],
    )
    orders: Orders = None
    refine_order: bool = PRIVACY_FIELDS["refine_order"][1]
    checkpoints: Checkpoints = None
    statement: bool = STATEMENT_FIELD[1]


class ComposeCalibrateRequest(ComposeRequest):
    """The value of one number in the tree meeting a target ε."""

    target_epsilon: float = Field(gt=0, le=1e4, description="Target ε at δ.", examples=[3.0])
    calibrate: str = Field(
        description="JSON Pointer (RFC 6901) into `mechanism` to the number to calibrate: a noise (the smallest "
        "meeting the target), or a count, sampling rate, size or ε (the largest); integers stay integers.",
        examples=["/mechanisms/0/mechanism/mechanism/noise_multiplier"],
    )
    bounds: list[Annotated[float, Field(ge=0)]] | None = Field(
        None,
        min_length=2,
        max_length=2,
        description="[lo, hi]: the range the value is searched in (default: the field's valid range).",
        examples=[[0.1, 10.0]],
    )
