"""The Laplace mechanism: scale b over the L1 sensitivity (b = 1/ε₀ gives ε₀-DP).

Its Rényi curve is exact (Mironov 2017, "Rényi differential privacy", Prop. 6; Table II):

    ε(α) = (1/(α − 1)) · log( α/(2α − 1) · e^{(α−1)/b} + (α − 1)/(2α − 1) · e^{−α/b} ),   α > 1,

evaluated here in log space (no overflow at large α/b); it increases to 1/b as α → ∞.
"""

from __future__ import annotations

import numpy as np


def laplace_rdp(scale: float, orders: np.ndarray) -> np.ndarray:
    """ε(α) of one Laplace release with scale ``scale`` (L1 sensitivity 1) at each order α > 1."""
    alpha = np.asarray(orders, dtype=float)
    inverse = 1.0 / scale
    first = np.log(alpha / (2.0 * alpha - 1.0)) + (alpha - 1.0) * inverse
    second = np.log((alpha - 1.0) / (2.0 * alpha - 1.0)) - alpha * inverse
    return np.asarray(np.minimum(np.logaddexp(first, second) / (alpha - 1.0), inverse))
