"""Corollary C.2 of Kong & Ribero 2024 (arXiv:2407.05237): the paper's own noise calibration, and what the rigorous
bound certifies for it."""

from __future__ import annotations

import math

from ...conversions import epsilon_for_linear_rdp
from ...params import NOISE_MULTIPLIER_RANGE
from ...reports import PaperCalibration
from .bounds import bounds_for
from .params import SOURCE, LastIterateParams
from .text import coefficient, smallest_bound

# -- Corollary C.2 ---------------------------------------------------------------------------------------------------


def corollary_c2_ell_bar(m: float, M: float) -> float:
    """ℓ̄(m) = log 2 / log(1 + m·λ̄), λ̄ = 1/(2(M+m)): Corollary C.2 needs at least this many steps per pass."""
    rate = math.log1p(m / (2.0 * (M + m)))
    return math.log(2.0) / rate if rate > 0.0 else math.inf  # m·λ̄ underflows: no finite ℓ̄


def corollary_c2_sigma(alpha: float, epsilon: float, p: LastIterateParams, passes: int) -> tuple[float, float]:
    """(corrected σ̄, printed σ̄) of Corollary C.2 for a target (α, ε)-RDP, with λ̄ = 1/(2(M+m)) (erratum).

    Corrected: σ̄ = (2Cλ̄/b)·√(α(1 + 4mE/(M+m))/ε). Printed: (Cλ̄/(2b))·√((1 + 4mE/(M+m))/(αε)), which yields
    16α²ε instead of ε."""
    m, M, C, b = p.weak_convexity, p.smoothness, p.clip_norm, p.batch_size
    lam = 1.0 / (2.0 * (M + m))
    factor = 1.0 + 4.0 * m * passes / (M + m)
    return (2.0 * C * lam / b) * math.sqrt(alpha * factor / epsilon), (C * lam / (2.0 * b)) * math.sqrt(
        factor / (alpha * epsilon)
    )


def corollary_c2(p: LastIterateParams, steps: int, alpha: float, rdp_epsilon: float, delta: float) -> PaperCalibration:
    """The paper's own calibration (Cor. C.2) for the RDP point (α, ε_α) our calibration reaches, and what the rdp
    accountant certifies at the noise it prescribes (with its stepsize λ̄ = 1/(2(M+m)))."""
    m, M = p.weak_convexity, p.smoothness
    source = f"{SOURCE}, Corollary C.2 (corrected σ̄, erratum)"
    if m <= 0.0 or not math.isfinite(alpha):
        return PaperCalibration.not_applicable(
            source,
            "Corollary C.2 needs m > 0 (ℓ̄ → ∞ as m → 0) and a finite optimal order",
        )
    ell, passes = p.steps_per_pass, steps // p.steps_per_pass
    lam = 1.0 / (2.0 * (M + m))
    ell_bar = corollary_c2_ell_bar(m, M)
    sigma, printed = corollary_c2_sigma(alpha, rdp_epsilon, p, passes)
    z = sigma * p.batch_size / (lam * p.clip_norm)
    if not (math.isfinite(ell_bar) and NOISE_MULTIPLIER_RANGE[0] <= z <= NOISE_MULTIPLIER_RANGE[1]):
        return PaperCalibration.not_applicable(
            source,
            f"Corollary C.2's prescription (ℓ̄ = {ell_bar:.3g}, noise multiplier {z:.3g}) is outside the range dpcal "
            "evaluates at these constants",
        )
    prescribed = p.model_copy(
        update={"stepsize": lam, "noise_multiplier": z, "noise_std": None, "clipping": "inactive"}
    )
    found = bounds_for(prescribed, steps)
    certified = epsilon_for_linear_rdp(coefficient(smallest_bound(found)) / (z * z), delta)[0]
    valid = p.clipping == "inactive" and ell >= ell_bar
    conditions = [
        f"stepsize λ̄ = 1/(2(M+m)) = {lam:.6g} (yours: {p.stepsize:.6g})",
        f"ℓ = {ell} ≥ ℓ̄ = {ell_bar:.6g}: {'yes' if ell >= ell_bar else 'no'}",
        f"clipping inactive: {'yes' if p.clipping == 'inactive' else 'no'}",
    ]
    # what the paper claims: the single RDP point (α, ε_α) converted at δ (this is the target ε)
    claimed = rdp_epsilon + math.log1p(-1.0 / alpha) - (math.log(delta) + math.log(alpha)) / (alpha - 1.0)
    note = (
        f"for the target ({alpha:.6g}, {rdp_epsilon:.6g})-RDP: σ̄ = {sigma:.6g} (noise multiplier {z:.6g}); the "
        f"printed σ̄ = {printed:.6g} would give 16α²ε = {16 * alpha**2 * rdp_epsilon:.6g}, not ε. "
        + "; ".join(conditions)
    )
    return PaperCalibration(source, z, claimed, certified, "rdp", valid, note)
