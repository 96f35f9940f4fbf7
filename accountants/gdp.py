"""The Gaussian-DP accountant: exact for event trees made of Gaussian releases only.

k Gaussian releases with multipliers zᵢ (noise std over the sensitivity under the relation in force) compose to
μ-GDP with μ = (Σ zᵢ⁻²)^{1/2} (Dong, Roth & Su 2022, Cor. 3.3), and μ-GDP is (ε, δ)-DP exactly where
δ ≥ Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018, Thm. 8). Adaptive composition is covered. Trees with
any other event (subsampling, pure DP, zCDP) are not Gaussian: :class:`~accountants.rdp.UnsupportedEventError`.
"""

from __future__ import annotations

import math

from .events import ComposedEvent, DpEvent, GaussianEvent, SelfComposedEvent
from .mechanisms.gaussian import gdp_epsilon
from .rdp import UnsupportedEventError


def gdp_mu(event: DpEvent) -> float:
    """μ of the tree (raises :class:`UnsupportedEventError` if a leaf is not a Gaussian release)."""
    return math.sqrt(_inverse_square_sum(event, 1))


def epsilon(event: DpEvent, delta: float) -> float:
    """The exact ε at ``delta`` of a tree of Gaussian releases (one-sided: never below the true value)."""
    return gdp_epsilon(gdp_mu(event), delta)


def is_gaussian(event: DpEvent) -> bool:
    """Whether every leaf of the tree is a Gaussian release."""
    try:
        gdp_mu(event)
    except UnsupportedEventError:
        return False
    return True


def _inverse_square_sum(event: DpEvent, count: int) -> float:
    if isinstance(event, SelfComposedEvent):
        return _inverse_square_sum(event.event, count * event.count)
    if isinstance(event, ComposedEvent):
        return sum(_inverse_square_sum(e, count) for e in event.events)
    if isinstance(event, GaussianEvent):
        return count / event.noise_multiplier**2
    raise UnsupportedEventError(event, "it reads trees of Gaussian releases only", accountant="Gaussian-DP")
