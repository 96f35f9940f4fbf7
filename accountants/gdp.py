"""The Gaussian-DP accountant: exact for event trees made of Gaussian releases only.

k Gaussian releases with multipliers zᵢ (noise std over the sensitivity under the relation in force) compose to
μ-GDP with μ = (Σ zᵢ⁻²)^{1/2} (Dong, Roth & Su 2022, Cor. 3.3), and μ-GDP is (ε, δ)-DP exactly where
δ ≥ Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018, Thm. 8). Adaptive composition is covered. Trees with
any other event (subsampling, pure DP, zCDP) are not Gaussian: :class:`~accountants.rdp.UnsupportedEventError`.
"""

from __future__ import annotations

from typing import Any

from .events import DpEvent, gaussian_mu, non_gaussian_leaf
from .mechanisms.gaussian import gdp_epsilon, gdp_epsilon_lower
from .rdp import UnsupportedEventError
from .reports import AccountantResult, Guarantee


def gdp_mu(event: DpEvent) -> float:
    """μ of the tree (raises :class:`UnsupportedEventError` if a leaf is not a Gaussian release)."""
    if non_gaussian_leaf(event) is not None:
        raise UnsupportedEventError(event, "it reads trees of Gaussian releases only", accountant="Gaussian-DP")
    return gaussian_mu(event)


def epsilon(event: DpEvent, delta: float) -> float:
    """The exact ε at ``delta`` of a tree of Gaussian releases (one-sided: never below the true value)."""
    return gdp_epsilon(gdp_mu(event), delta)


def is_gaussian(event: DpEvent) -> bool:
    """Whether every leaf of the tree is a Gaussian release."""
    return non_gaussian_leaf(event) is None


def exact_result(mu: float, delta: float, method: str, guarantee: str = "exact", **details: Any) -> AccountantResult:
    """The tight accountant's exact answer for μ-GDP at δ, with its certified lower bound (the root's bracket)."""
    epsilon = gdp_epsilon(mu, delta)
    lower = gdp_epsilon_lower(mu, delta, epsilon)
    return AccountantResult(
        "tight", True, epsilon, guarantee, method, kind=Guarantee.EXACT, epsilon_lower=lower, **details
    )
