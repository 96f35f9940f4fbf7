"""Parameter models shared by the algorithm families.

Each family declares its hyperparameters as a :class:`ParamsModel` (pydantic, no web imports): strict JSON types
(no ``"3"`` for 3, no ``true`` for 1; an integral float such as ``3.0`` is accepted where an integer is expected),
finite numbers only, unknown fields rejected. Every field carries a description, the paper's symbol, a unit and an
example, which the HTTP layer publishes as JSON Schema.

:func:`parse_params` turns pydantic's errors into :class:`~accountants.errors.ParameterError` with the allowed range of
each offending field, so the library and the service report bad input the same way.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from .errors import FieldIssue, ParameterError


def _integral(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Count = Annotated[int, BeforeValidator(_integral)]
"""An integer field that also accepts integral floats (``3.0``) but not strings or booleans."""


def bounded_count(minimum: int = 1, maximum: int | None = None) -> Any:
    """:data:`Count` with its range inside the type, so that ``bounded_count(...) | None`` keeps a valid JSON Schema.

    The bounds must precede the ``BeforeValidator``: after it, pydantic emits non-standard ``ge``/``le`` keys."""
    return Annotated[int, Field(ge=minimum, le=maximum), BeforeValidator(_integral)]


SPELLING_ALIASES: Mapping[str, str] = {"neighboring": "neighbouring", "regularisation": "regularization"}
"""Other spellings of field names, accepted as the documented name (US ``neighboring``, UK ``regularisation``)."""


class ParamsModel(BaseModel):
    """Base of every family's parameter model (field names also accepted in the spellings of
    :data:`SPELLING_ALIASES`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _other_spellings(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        renamed = {}
        for name, value in data.items():
            documented = SPELLING_ALIASES.get(name)
            use = documented if documented in cls.model_fields and documented not in data else name
            renamed[use] = value
        return renamed

    def check(self) -> list[FieldIssue]:
        """Rules between fields (e.g. batch_size <= dataset_size), each reported on the field it constrains."""
        return []


def param(description: str, *, symbol: str | None = None, unit: str | None = None, example: Any = None, **kw: Any):
    """A documented field: description, paper symbol (``x-symbol``), unit (``x-unit``) and an example."""
    extra: dict[str, Any] = {}
    if symbol:
        extra["x-symbol"] = symbol
    if unit:
        extra["x-unit"] = unit
    examples = [example] if example is not None else None
    return Field(description=description, examples=examples, json_schema_extra=extra or None, **kw)


NOISE_MULTIPLIER_RANGE = (1e-12, 1e6)
"""The range families accept for a noise multiplier (below 1e-12 there is no meaningful privacy to account)."""


def resolve_noise_multiplier(noise_multiplier: float | None, noise_std: float | None, unit: float) -> float:
    """The noise multiplier given directly, or as ``noise_std / unit`` (``unit``: the std of multiplier 1)."""
    lo, hi = NOISE_MULTIPLIER_RANGE
    if noise_multiplier is not None:
        return noise_multiplier
    if noise_std is not None:
        z = noise_std / unit
        if not lo <= z <= hi:
            raise ParameterError.single(
                "noise_std",
                f"gives noise_multiplier = noise_std/{unit:.6g} = {z:.6g}, outside [{lo:g}, {hi:g}]",
                f"a finite number in [{lo * unit:.6g}, {hi * unit:.6g}]",
                noise_std,
            )
        return z
    raise ParameterError.single(
        "noise_multiplier",
        "is required for privacy accounting (or give noise_std)",
        f"a finite number in [{lo:g}, {hi:g}]",
    )


Model = TypeVar("Model", bound=ParamsModel)


def parse_params(model: type[Model], data: Mapping[str, Any] | Model) -> Model:
    """Validate ``data`` against ``model``; raise :class:`ParameterError` naming each field and its allowed range."""
    if isinstance(data, model):
        parsed = data
    elif not isinstance(data, Mapping):
        raise ParameterError.single("params", "must be an object", "a JSON object of hyperparameters")
    else:
        try:
            parsed = model.model_validate(dict(data))
        except ValidationError as exc:
            raise ParameterError(field_issues(model, exc.errors(include_url=False))) from None
    cross_field = parsed.check()
    if cross_field:
        raise ParameterError(cross_field)
    return parsed


def field_issues(model: type[BaseModel], errors: Iterable[Mapping[str, Any]]) -> list[FieldIssue]:
    """pydantic error dicts (locations relative to ``model``) as field issues with the allowed range of each field."""
    properties = model.model_json_schema().get("properties", {})
    issues = []
    for error in errors:
        loc = tuple(error["loc"])
        field = str(loc[0]) if loc else ""
        allowed = allowed_range(properties.get(field, {})) if field in properties else None
        message = _message(error)
        if error["type"] == "extra_forbidden":
            allowed = "one of: " + ", ".join(sorted(properties))
            message = "unknown field" + did_you_mean(field, properties)
        issues.append(FieldIssue(loc=loc, message=message, allowed=allowed, value=_shown(error)))
    return issues


def did_you_mean(given: str, valid: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest valid name, or nothing when none is close."""
    close = difflib.get_close_matches(given, list(valid), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _message(error: Mapping[str, Any]) -> str:
    msg = str(error["msg"])
    if error["type"] == "value_error":  # raised by a model validator: pydantic prefixes "Value error, "
        msg = msg.removeprefix("Value error, ")
    return msg[0].lower() + msg[1:] if msg else msg


def _shown(error: Mapping[str, Any]) -> object:
    value = error.get("input")
    return value if isinstance(value, (int, float, str, bool)) or value is None else None


def allowed_range(schema: Mapping[str, Any]) -> str | None:
    """A human-readable allowed range from a JSON Schema property (``> 0 and <= 1e6``, ``one of: a, b``)."""
    options = schema.get("anyOf", [schema])
    parts: list[str] = []
    for option in options:
        if option.get("type") == "null":
            continue
        if "enum" in option:
            parts.append("one of: " + ", ".join(map(str, option["enum"])))
            continue
        if "const" in option:
            parts.append(f"exactly {option['const']!r}")
            continue
        bounds = []
        if "exclusiveMinimum" in option:
            bounds.append(f"> {option['exclusiveMinimum']:g}")
        if "minimum" in option:
            bounds.append(f">= {option['minimum']:g}")
        if "exclusiveMaximum" in option:
            bounds.append(f"< {option['exclusiveMaximum']:g}")
        if "maximum" in option:
            bounds.append(f"<= {option['maximum']:g}")
        kind = {"integer": "an integer", "number": "a finite number", "string": "a string"}.get(option.get("type", ""))
        text = " and ".join(bounds)
        parts.append(f"{kind} {text}".strip() if kind else text)
    return "; or ".join(p for p in parts if p) or None
