"""Mechanism plans: what an algorithm releases about one record, as an event tree, and the knob that scales it.

A family compiles its hyperparameters to a :class:`MechanismPlan` (:meth:`AlgorithmFamily.plan`); the generic
accountants (:mod:`accountants.rdp`, :mod:`accountants.gdp`) interpret its event, so privacy and calibration are
written once (:mod:`accountants.family`). The plan also states the neighbouring relation its multipliers refer to
and any δ spent outside the tree (e.g. a solver's failure probability in phased output perturbation).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import validation as check
from .errors import ParameterError
from .events import DpEvent
from .params import NOISE_MULTIPLIER_RANGE
from .rdp import NEIGHBOURING_RELATIONS, Neighbouring


@dataclass(frozen=True)
class Knob:
    """The hyperparameter that sets the privacy level, and in which direction.

    ``noise_multiplier`` (larger is more private) for the noise-adding families; ``stepsize`` (smaller is more
    private) for private mirror descent, whose vertex samples are ε₀ = 4ηL₀/B exponential mechanisms (González, Guzmán &
    Paquette 2024)."""

    field: str
    symbol: str
    larger_is_more_private: bool = True
    accepted: tuple[float, float] | None = None
    """The values a request may give (a calibration outside them is not an answer one could send back)."""

    def accepts(self, value: float) -> bool:
        return self.accepted is None or self.accepted[0] <= value <= self.accepted[1]

    def from_noise(self, noise: float) -> float:
        """The knob's value at ``noise`` on the scale the generic calibrator searches, where larger is more private
        (the value itself, or its reciprocal for a knob where smaller is more private)."""
        return noise if self.larger_is_more_private else 1.0 / noise


NOISE_MULTIPLIER = Knob("noise_multiplier", "σ (std over sensitivity)", accepted=NOISE_MULTIPLIER_RANGE)


@dataclass(frozen=True)
class MechanismPlan:
    """The releases about one record (``event``) under ``neighbouring``, with δ spent outside the tree."""

    event: DpEvent
    neighbouring: Neighbouring
    reserved_delta: float = 0.0
    """δ the algorithm spends outside the event tree (a failure probability); accountants get δ − reserved_delta."""
    description: str = ""

    def __post_init__(self) -> None:
        if self.neighbouring not in NEIGHBOURING_RELATIONS:
            raise ParameterError.single(
                "neighbouring", "must be one of " + ", ".join(NEIGHBOURING_RELATIONS), value=self.neighbouring
            )
        object.__setattr__(self, "reserved_delta", check.non_negative("reserved_delta", self.reserved_delta))

    def accounted_delta(self, delta: float) -> float:
        """δ left for the event tree; ParameterError if the reserved part takes all of it."""
        remaining = delta - self.reserved_delta
        if not remaining > 0.0:
            raise ParameterError.single(
                "delta",
                f"must exceed the δ the algorithm spends outside its releases ({self.reserved_delta:g})",
                f"> {self.reserved_delta:g}",
                delta,
            )
        return remaining
