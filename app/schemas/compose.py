"""Request bodies of ``/v1/compose`` and ``/v1/compose/calibrate``: an event tree in the JSON grammar of
:mod:`accountants.pipeline.grammar`, read by the library (so every error names its JSON path), documented here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, WithJsonSchema

from accountants import registry
from accountants.events import MAX_MIXTURE_COMPONENTS, FieldKind, Syntax, SyntaxField
from accountants.pipeline import ACCOUNTANTS, MAX_DEPTH, MAX_NODES, MAX_RELEASES, node_syntax

from .common import Strict
from .requests import PRIVACY_FIELDS, STATEMENT_FIELD, Checkpoints, Orders

if TYPE_CHECKING:
    ComposeAccountant = str
else:  # the accountants of a composition, from the library's one list (best, the plan accountants, paper)
    ComposeAccountant = Literal[ACCOUNTANTS]

_EVENT_REF = {"type": "object", "description": "An event (this same grammar, nested)."}


def _field_schema(field: SyntaxField) -> dict[str, Any]:
    if field.kind is FieldKind.EVENT:
        return _EVENT_REF
    if field.kind is FieldKind.EVENTS:
        return {"type": "array", "items": _EVENT_REF}
    if field.kind is FieldKind.NUMBERS:
        return {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": MAX_MIXTURE_COMPONENTS}
    if field.kind is FieldKind.INTEGER and field.minimum is not None:
        return {"type": "integer", "minimum": field.minimum}
    return {"type": field.kind.value}


def _node_field(syntax: Syntax, field: SyntaxField) -> dict[str, Any]:
    """A node field's schema; an ``algorithm`` node's ``algorithm`` is one of the registered ids."""
    if syntax.name == "algorithm" and field.name == "algorithm":
        return {"type": "string", "enum": sorted(f.id for f in registry.families())}
    return _field_schema(field)


def _variant(syntax: Syntax) -> dict[str, Any]:
    """One node type's schema, from its declaration (:func:`accountants.pipeline.node_syntax`)."""
    return {
        "type": "object",
        "title": syntax.name,
        "description": syntax.description,
        "properties": {"type": {"const": syntax.name}, **{f.name: _node_field(syntax, f) for f in syntax.fields}},
        "required": ["type", *(f.name for f in syntax.fields if f.name != "params")],
        "additionalProperties": False,
    }


def event_schema() -> dict[str, Any]:
    """The JSON schema of an event tree: one variant per node type the grammar reads."""
    return {
        "title": "Event",
        "description": (
            "A mechanism as a JSON tree with a `type` (dp_accounting's DpEvent grammar). At most "
            f"{MAX_DEPTH} levels, {MAX_NODES} nodes and {MAX_RELEASES:.0e} releases; every error names its JSON path."
        ),
        "oneOf": [_variant(syntax) for syntax in node_syntax().values()],
    }


EVENT_SCHEMA = event_schema()

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
    accountant: ComposeAccountant = Field(
        "best",
        description="best (the smaller certified answer; default), rdp (Rényi curve, improved conversion), tight "
        "(exact Gaussian DP for trees of Gaussians, else the certified PLD accountant where it reads the tree), "
        "paper (an algorithm's own statement: only for a mechanism that is one algorithm node whose family has one; "
        "the answer is the family's, as /v1/privacy and /v1/calibrate give it).",
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
