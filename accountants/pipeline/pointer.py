"""JSON Pointers (RFC 6901) into an event tree: read the number a calibration names, and write another in its place."""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from ..errors import ParameterError


def tokens(pointer: object, field: str = "calibrate") -> tuple[str, ...]:
    """The reference tokens of ``pointer`` (``~1`` is ``/``, ``~0`` is ``~``)."""
    if not isinstance(pointer, str) or not pointer.startswith("/"):
        raise ParameterError.single(
            field, "must be a JSON Pointer (RFC 6901) starting with '/'", "e.g. /noise_multiplier", pointer
        )
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/"))


def _step(node: Any, token: str, pointer: str, field: str) -> Any:
    if isinstance(node, Mapping) and token in node:
        return node[token]
    if isinstance(node, Sequence) and not isinstance(node, str) and token.isdigit() and int(token) < len(node):
        return node[int(token)]
    raise ParameterError.single(
        field, f"points nowhere in mechanism: no {token!r} at {pointer!r}", "an existing path", pointer
    )


def number_at(tree: object, pointer: str, field: str = "calibrate") -> float:
    """The number ``pointer`` names in ``tree`` (:class:`ParameterError` naming ``field`` if it names anything else)."""
    node: Any = tree
    for token in tokens(pointer, field):
        node = _step(node, token, pointer, field)
    if isinstance(node, bool) or not isinstance(node, int | float):
        raise ParameterError.single(
            field, f"must point to a number; {pointer!r} holds {type(node).__name__}", "a number", pointer
        )
    return float(node)


def with_number(tree: object, pointer: str, value: float | int) -> Any:
    """A copy of ``tree`` with ``value`` at ``pointer`` (checked by :func:`number_at` first)."""
    out = copy.deepcopy(tree)
    path = tokens(pointer)
    node: Any = out
    for token in path[:-1]:
        node = node[int(token)] if isinstance(node, list) else node[token]
    if isinstance(node, list):
        node[int(path[-1])] = value
    else:
        assert isinstance(node, MutableMapping)
        node[path[-1]] = value
    return out
