"""Independent reference computations used by the tests (never by the library).

* dp_accounting 0.6.0 and prv-accountant 0.2.0, computed live (they are test-only dependencies);
* 40-digit mpmath quadrature of the sampled-Gaussian moment A_α.
"""

from __future__ import annotations

import dp_accounting as dpa
import mpmath as mp
import numpy as np
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

DPA_ORDERS = np.array(rdp_privacy_accountant.DEFAULT_RDP_ORDERS, dtype=float)


def dpa_poisson_event(q: float, z: float, steps: int) -> dpa.DpEvent:
    return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps)


def dpa_rdp_epsilon(event: dpa.DpEvent, delta: float, neighbouring=None) -> tuple[float, float]:
    """(ε, optimal order) from dp_accounting's RdpAccountant on its default grid."""
    kwargs = {} if neighbouring is None else {"neighboring_relation": neighbouring}
    accountant = rdp_privacy_accountant.RdpAccountant(**kwargs)
    accountant.compose(event)
    eps, order = accountant.get_epsilon_and_optimal_order(delta)
    return float(eps), float(order)


def dpa_pld_epsilon(
    event: dpa.DpEvent, delta: float, vdi: float = 1e-4, neighbouring: dpa.NeighboringRelation | None = None
) -> float:
    """dp_accounting's pessimistic PLD ε (an upper bound within ~2e-4 of the truth at vdi = 1e-4)."""
    relation = neighbouring or dpa.NeighboringRelation.ADD_OR_REMOVE_ONE
    accountant = pld_privacy_accountant.PLDAccountant(relation, value_discretization_interval=vdi)
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))


def exact_poisson_rdp(q: float, z: float, alpha: float, digits: int = 40) -> float:
    """RDP of the Poisson-subsampled Gaussian by quadrature: log(A_α)/(α − 1) with
    A_α − 1 = E_{x∼N(0,z²)}[(1 + u)^α − 1 − αu], u = q(e^{(2x−1)/(2z²)} − 1) (a positive integrand, since E[u] = 0)."""
    with mp.workdps(digits):
        qq, zz, a = mp.mpf(q), mp.mpf(z), mp.mpf(alpha)

        def integrand(x):
            u = qq * mp.expm1((2 * x - 1) / (2 * zz * zz))
            return mp.npdf(x, 0, zz) * ((1 + u) ** a - 1 - a * u)

        split = mp.mpf(0.5) + zz * zz * mp.log(1 / qq - 1) if q < 1 else mp.mpf(0)
        points = sorted({-mp.inf, -20 * zz, mp.mpf(0), split, a, a + 10 * zz, mp.inf})
        return float(mp.log1p(mp.quad(integrand, points)) / (a - 1))
