"""The algorithm registry: one family module per algorithm, discovered automatically.

A family module in :mod:`accountants.families` defines a subclass of :class:`AlgorithmFamily` decorated with
:func:`register`; importing the package registers it, and the HTTP API lists it with no edits elsewhere.
"""

from __future__ import annotations

import importlib
import pkgutil
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .errors import ParameterError, UnknownAlgorithmError, UnsupportedAccountantError
from .params import ParamsModel, parse_params
from .reports import CalibrationReport, PrivacyReport, UtilityReport

if TYPE_CHECKING:
    from .verification import Simulator

ACCOUNTANT_NAMES: tuple[str, ...] = ("best", "rdp", "tight", "paper")
"""``best``: the minimum over the valid accountants; ``rdp``: Rényi curve + improved conversion; ``tight``: numerically
tight accounting of the same mechanism; ``paper``: the paper's own statement, as printed."""


@dataclass(frozen=True)
class BoundInfo:
    """A privacy or utility bound an algorithm offers, where it comes from, and what it needs."""

    name: str
    kind: str
    """"privacy" or "utility"."""
    source: str
    conditions: tuple[str, ...] = ()
    accountant: str | None = None


class AlgorithmFamily(ABC):
    """One algorithm: its parameter model, privacy accounting, calibration and utility bounds."""

    id: ClassVar[str]
    title: ClassVar[str]
    summary: ClassVar[str]
    source: ClassVar[str]
    params_model: ClassVar[type[ParamsModel]]
    accountants: ClassVar[tuple[str, ...]]
    """Concrete accountants this family implements (``best`` is always offered on top)."""
    accountant_notes: ClassVar[Mapping[str, str]] = {}
    """Why an accountant the family does not implement does not apply to it."""
    assumptions: ClassVar[tuple[str, ...]] = ()
    bounds: ClassVar[tuple[BoundInfo, ...]] = ()
    calibrated_parameter: ClassVar[str] = "noise_multiplier"
    simulator: ClassVar[Simulator | None] = None
    """Runs the algorithm on synthetic problems for verification jobs (None: the algorithm has no simulator)."""
    noise_fields: ClassVar[tuple[str, ...]] = ("noise_multiplier",)
    """Fields that carry the privacy knob: required by :meth:`privacy`, ignored by :meth:`calibrate`."""

    def parse(self, params: Mapping[str, Any] | ParamsModel) -> ParamsModel:
        """Validate hyperparameters (raises :class:`ParameterError` naming each field and its allowed range)."""
        return parse_params(self.params_model, params)

    def supported_accountants(self) -> tuple[str, ...]:
        return ("best", *self.accountants)

    def check_accountant(self, accountant: str) -> str:
        if accountant not in ACCOUNTANT_NAMES:
            raise ParameterError.single(
                "accountant", "unknown accountant", "one of: " + ", ".join(ACCOUNTANT_NAMES), accountant
            )
        if accountant not in self.supported_accountants():
            reason = self.accountant_notes.get(accountant, f"{self.id} does not implement it")
            raise UnsupportedAccountantError(accountant, list(self.supported_accountants()), reason)
        return accountant

    @abstractmethod
    def privacy(
        self,
        params: Mapping[str, Any] | ParamsModel,
        delta: float,
        accountant: str = "best",
        orders: Sequence[float] | np.ndarray | None = None,
        refine: bool = True,
    ) -> PrivacyReport:
        """ε at ``delta`` for these hyperparameters (noise included), from every applicable accountant."""

    @abstractmethod
    def calibrate(
        self,
        params: Mapping[str, Any] | ParamsModel,
        target_epsilon: float,
        delta: float,
        accountant: str = "best",
        orders: Sequence[float] | np.ndarray | None = None,
    ) -> CalibrationReport:
        """The smallest noise (or other privacy knob) meeting (target_epsilon, delta)."""

    @abstractmethod
    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        """Predicted utility bounds with their theorems and assumptions (empty with a reason if none)."""

    def describe(self) -> dict[str, Any]:
        """Parameter schema, assumptions and bounds, for ``GET /v1/algorithms/{id}``."""
        return {
            "id": self.id,
            "title": self.title,
            "summary": self.summary,
            "source": self.source,
            "accountants": list(self.supported_accountants()),
            "calibrated_parameter": self.calibrated_parameter,
            "parameters": self.params_model.model_json_schema(),
            "assumptions": list(self.assumptions),
            "bounds": [b.__dict__ | {"conditions": list(b.conditions)} for b in self.bounds],
            "verification": None
            if self.simulator is None
            else {"checks": list(self.simulator.checks), "problem": self.simulator.problem_model.model_json_schema()},
        }


_REGISTRY: dict[str, AlgorithmFamily] = {}
_DISCOVERED = False


def register(cls: type[AlgorithmFamily]) -> type[AlgorithmFamily]:
    """Class decorator: make a family available under ``cls.id``."""
    if cls.id in _REGISTRY and type(_REGISTRY[cls.id]) is not cls:
        raise RuntimeError(f"algorithm id {cls.id!r} registered twice")
    _REGISTRY[cls.id] = cls()
    return cls


def _discover() -> None:
    global _DISCOVERED
    if _DISCOVERED:
        return
    from . import families

    for module in pkgutil.iter_modules(families.__path__):
        importlib.import_module(f"{families.__name__}.{module.name}")
    _DISCOVERED = True


def families() -> list[AlgorithmFamily]:
    """Every registered family, in id order."""
    _discover()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def ids() -> list[str]:
    return [f.id for f in families()]


def get(algorithm: str) -> AlgorithmFamily:
    """The family registered under ``algorithm`` (raises :class:`UnknownAlgorithmError` listing the valid ids)."""
    _discover()
    try:
        return _REGISTRY[algorithm]
    except KeyError:
        raise UnknownAlgorithmError(algorithm, ids()) from None
