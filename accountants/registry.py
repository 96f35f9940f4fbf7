"""The algorithm registry: one family package per algorithm, discovered automatically.

A family package in :mod:`accountants.families` defines a subclass of :class:`~accountants.family.AlgorithmFamily`
decorated with :func:`register`; importing the package registers it, and the HTTP API lists it with no edits
elsewhere. A family defined elsewhere (a test's, a user's) is registered the same way and removed with
:func:`unregister`.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, TypeVar

from .errors import UnknownAlgorithmError
from .family import AlgorithmFamily

F = TypeVar("F", bound=type[AlgorithmFamily[Any]])

_REGISTRY: dict[str, AlgorithmFamily[Any]] = {}
_DISCOVERED = False


def register(cls: F) -> F:
    """Class decorator: make a family available under ``cls.id``."""
    if cls.id in _REGISTRY and type(_REGISTRY[cls.id]) is not cls:
        raise RuntimeError(f"algorithm id {cls.id!r} registered twice")
    _REGISTRY[cls.id] = cls()
    return cls


def unregister(algorithm: str) -> None:
    """Remove a family registered with :func:`register` (tests that register their own)."""
    _REGISTRY.pop(algorithm, None)


def _discover() -> None:
    global _DISCOVERED
    if _DISCOVERED:
        return
    from . import families

    for module in pkgutil.iter_modules(families.__path__):
        importlib.import_module(f"{families.__name__}.{module.name}")
    _DISCOVERED = True


def families() -> list[AlgorithmFamily[Any]]:
    """Every registered family, in id order."""
    _discover()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def ids() -> list[str]:
    return [f.id for f in families()]


def get(algorithm: str) -> AlgorithmFamily[Any]:
    """The family registered under ``algorithm`` (raises :class:`UnknownAlgorithmError` listing the valid ids)."""
    _discover()
    try:
        return _REGISTRY[algorithm]
    except KeyError:
        raise UnknownAlgorithmError(algorithm, ids()) from None
