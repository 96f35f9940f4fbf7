"""Pure ε-DP mechanisms and zCDP guarantees as Rényi curves.

* ε-DP ⇒ RDP ε(α) ≤ min(ε, αε²/2): the first is immediate (D_α ≤ D_∞ = ε), the second is ε-DP ⇒ (ε²/2)-zCDP
  (Bun & Steinke 2016, Prop. 3.3).
* (ξ, ρ)-zCDP is by definition RDP ε(α) ≤ ξ + ρα for all α > 1 (Bun & Steinke 2016, Def. 1.1).
"""

from __future__ import annotations

import numpy as np

from .. import validation as check


def pure_dp_rdp(epsilon: float, orders: np.ndarray) -> np.ndarray:
    """RDP of an ε-DP mechanism: min(ε, αε²/2)."""
    eps = check.non_negative("epsilon", epsilon)
    alphas = check.orders("orders", orders)
    return np.minimum(eps, alphas * eps * eps / 2.0)


def zcdp_rdp(rho: float, orders: np.ndarray, xi: float = 0.0) -> np.ndarray:
    """RDP of a (ξ, ρ)-zCDP mechanism: ξ + ρα."""
    r = check.non_negative("rho", rho)
    x = check.non_negative("xi", xi)
    alphas = check.orders("orders", orders)
    return x + r * alphas
