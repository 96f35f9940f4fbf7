"""Parameter models shared by the algorithm families.

Each family declares its hyperparameters as a :class:`ParamsModel` (pydantic, no web imports): strict JSON types
(no ``"3"`` for 3, no ``true`` for 1; an integral float such as ``3.0`` is accepted where an integer is expected),
finite numbers only, unknown fields rejected. A field is declared with :func:`param` (the paper's symbol, a unit, an
example, its range), e.g. ``dataset_size: int = param(symbol="n", unit="records", example=60000, ge=1, le=MAX_COUNT)``,
and documented by the docstring under it, which the HTTP layer publishes as its JSON Schema description.

:func:`parse_params` turns pydantic's errors into :class:`~accountants.errors.ParameterError` with the allowed range of
each offending field, so the library and the service report bad input the same way.
"""

from __future__ import annotations

import ast
import difflib
import functools
import inspect
import re
import textwrap
import types
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from .errors import MAX_ISSUES, FieldIssue, ParameterError, more_issues

MAX_COUNT = 10**12
"""The largest count (records, steps, samples) a family accepts unless it says otherwise."""

SPELLING_ALIASES: Mapping[str, str] = {"neighboring": "neighbouring", "regularisation": "regularization"}
"""Other spellings of field names, accepted as the documented name (US ``neighboring``, UK ``regularisation``)."""


class ParamsModel(BaseModel):
    """Base of every family's parameter model: fields documented by the docstring under them, integral floats
    (``3.0``) accepted for integer fields, and field names also accepted in the spellings of
    :data:`SPELLING_ALIASES`."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)
    _integer_fields: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        docs = attribute_docstrings(cls)
        described = [name for name, info in cls.model_fields.items() if info.description is None and name in docs]
        for name in described:
            cls.model_fields[name].description = docs[name]
        if described:
            cls.model_rebuild(force=True)
        undocumented = [name for name, info in cls.model_fields.items() if not info.description]
        if undocumented:
            raise TypeError(f"{cls.__qualname__}: document {', '.join(undocumented)} (a docstring under the field)")
        cls._integer_fields = frozenset(name for name, info in cls.model_fields.items() if _integral(info.annotation))

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        """Documented names for other spellings; ``3.0`` as 3 for integer fields; many unknown names refused at
        once (:func:`refuse_many_unknown`)."""
        if not isinstance(data, Mapping):
            return data
        refuse_many_unknown(cls, data, SPELLING_ALIASES)
        renamed: dict[str, Any] = {}
        for name, value in data.items():
            documented = SPELLING_ALIASES.get(name)
            use = documented if documented in cls.model_fields and documented not in data else name
            integral = use in cls._integer_fields and isinstance(value, float) and value.is_integer()
            renamed[use] = int(value) if integral else value
        return renamed

    def check(self) -> list[FieldIssue]:
        """Rules between fields (e.g. batch_size <= dataset_size), each reported on the field it constrains."""
        return []


def refuse_many_unknown(model: type[BaseModel], data: Mapping[str, Any], aliases: Mapping[str, str] = {}) -> None:
    """More than :data:`MAX_ISSUES` names ``model`` does not have are one error naming the first few and the count,
    raised before validation: pydantic would build an error per name (10⁴ names: ~70 ms of the server's event loop
    for a 130 KB body), and nobody reads past the first."""
    fields = model.model_fields  # once: each read of this class property costs a lookup chain
    if len(data) <= len(fields) + MAX_ISSUES:
        return
    unknown = [name for name in data if name not in fields and aliases.get(name) not in fields]
    if len(unknown) > MAX_ISSUES:
        first = ", ".join(repr(name)[:40] for name in unknown[:10])
        raise PydanticCustomError(
            "too_many_unknown_fields",
            "has {count} unknown fields ({first}, …); allowed: only {known}",
            {"count": len(unknown), "first": first, "known": ", ".join(fields)},
        )


def _integral(annotation: Any) -> bool:
    """An ``int`` field, or an optional one."""
    if annotation is int:
        return True
    if get_origin(annotation) in (Union, types.UnionType):
        return all(arg is int or arg is type(None) for arg in get_args(annotation)) and int in get_args(annotation)
    return False


def attribute_docstrings(cls: type) -> dict[str, str]:
    """The docstrings under the annotated attributes of ``cls``, each on one line (empty without source)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    definition = ast.parse(source).body[0]
    assert isinstance(definition, ast.ClassDef)
    docs: dict[str, str] = {}
    for field, after in zip(definition.body, definition.body[1:], strict=False):
        if not (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)):
            continue
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
            docs[field.target.id] = " ".join(after.value.value.split())
    return docs


def param(
    description: str | None = None,
    *,
    symbol: str | None = None,
    unit: str | None = None,
    example: Any = None,
    **kw: Any,
) -> Any:
    """A documented field: paper symbol (``x-symbol``), unit (``x-unit``), an example and pydantic's ``Field``
    arguments (range, default). The description is the docstring under the field, or ``description`` for a field
    built by a function that several models share."""
    extra: dict[str, Any] = {}
    if symbol:
        extra["x-symbol"] = symbol
    if unit:
        extra["x-unit"] = unit
    examples = [example] if example is not None else None
    return Field(description=description, examples=examples, json_schema_extra=extra or None, **kw)


NOISE_MULTIPLIER_RANGE = (1e-12, 1e6)
"""The range families accept for a noise multiplier (below 1e-12 there is no meaningful privacy to account)."""


def noise_multiplier_param(*, symbol: str, unit: str, example: float) -> Any:
    """The privacy knob of the noise-adding families: optional (calibration computes it), within
    :data:`NOISE_MULTIPLIER_RANGE`."""
    lo, hi = NOISE_MULTIPLIER_RANGE
    return param(symbol=symbol, unit=unit, example=example, ge=lo, le=hi, default=None)


def noise_given_twice(noise_multiplier: float | None, noise_std: float | None) -> list[FieldIssue]:
    """The rule of the families that accept the noise in either unit: at most one of the two."""
    if noise_multiplier is None or noise_std is None:
        return []
    return [
        FieldIssue(
            ("noise_std",), "give noise_multiplier or noise_std, not both", "at most one of noise_multiplier, noise_std"
        )
    ]


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


def parse_params(model: type[Model], data: Mapping[str, Any] | ParamsModel) -> Model:
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
    """pydantic error dicts (locations relative to ``model``) as field issues with the allowed range of each field
    (the first :data:`~accountants.errors.MAX_ISSUES`, then one issue counting the rest)."""
    properties = _properties(model)
    issues = []
    errors = list(errors)
    for error in errors[:MAX_ISSUES]:
        loc = tuple(error["loc"])
        field = str(loc[0]) if loc else ""
        allowed = allowed_range(properties.get(field, {})) if field in properties else None
        message = _message(error)
        if error["type"] == "extra_forbidden":
            allowed = "one of: " + ", ".join(sorted(properties))
            message = "unknown field" + did_you_mean(field, properties)
        elif error["type"] == "literal_error" and isinstance(error.get("input"), str):
            expected = re.findall(r"'([^']*)'", str((error.get("ctx") or {}).get("expected", "")))
            message += did_you_mean(error["input"], expected)
        issues.append(FieldIssue(loc=loc, message=message, allowed=allowed, value=_shown(error)))
    if len(errors) > MAX_ISSUES:
        issues.append(more_issues(len(errors) - MAX_ISSUES))
    return issues


@functools.lru_cache(maxsize=512)
def _properties(model: type[BaseModel]) -> Mapping[str, Any]:
    """The JSON-schema properties of ``model``, built once per model (a schema takes milliseconds to build)."""
    return MappingProxyType(model.model_json_schema().get("properties", {}))


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
