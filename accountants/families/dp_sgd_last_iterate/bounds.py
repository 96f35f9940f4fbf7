"""The paper's last-iterate privacy theorems as bounds with their conditions (seed 004 Theorems 3.1–3.4, eq. 13),
and the exact Rényi curve of the linear Gaussian case."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...reports import (
    Assumption,
)
from .params import SOURCE, LastIterateParams

# -- the paper's quantities ------------------------------------------------------------------------------------------


def l_lambda_squared_minus_one(stepsize: float, m: float, M: float, form: str = "eq13") -> float:
    """L_λ² − 1 (eq. 13: 2λm[1 + m/(2(M+m))]; kappa4: 2λm[1 + m/(M+m)]); 0 for m = 0."""
    if m == 0.0:
        return 0.0
    return 2.0 * stepsize * m * (1.0 + m / ((2.0 if form == "eq13" else 1.0) * (M + m)))


def theta(x: float, s: int) -> float:
    """θ_L(s) with x = L² − 1 (eq. 15): L^{2(s−1)}/Σ_{j<s} L^{2j} = (1 − L^{−2})/(1 − L^{−2s}); no overflow."""
    if s <= 0:
        return 0.0
    if x == 0.0:
        return 1.0 / s
    log_l2 = math.log1p(x)
    return math.expm1(-log_l2) / math.expm1(-s * log_l2)


@dataclass(frozen=True)
class LinearBound:
    """One bound ε(α) = K·α/z² with its conditions; ``coefficient`` K is None when not applicable."""

    name: str
    source: str
    coefficient: float | None
    conditions: tuple[Assumption, ...]
    releases: str
    reason: str | None = None


def bounds_for(p: LastIterateParams, steps: int) -> list[LinearBound]:
    """Every bound of the family for these hyperparameters, as K in ε(α) = K·α/z² (z = noise multiplier)."""
    lam, C, b, m, M = p.stepsize, p.clip_norm, p.batch_size, p.weak_convexity, p.smoothness
    ell = p.steps_per_pass
    passes, uses = steps // ell, -(-steps // ell)
    x = l_lambda_squared_minus_one(lam, m, M, p.l_lambda_form)
    clipped_limit = math.inf if M + m == 0 else 1.0 / (2.0 * (M + m))
    unclipped_limit = math.inf if M + m == 0 else 1.0 / (M + m)
    inactive = p.clipping == "inactive"
    small_clipped = Assumption(
        f"stepsize ≤ 1/(2(M+m)) = {clipped_limit:.6g}", lam <= clipped_limit, f"stepsize = {lam:.6g}"
    )
    small_unclipped = Assumption(
        f"stepsize ≤ 1/(M+m) = {unclipped_limit:.6g}", lam <= unclipped_limit, f"stepsize = {lam:.6g}"
    )
    no_clipping = Assumption(
        "clipping never active along either trajectory (condition (18))",
        inactive,
        "asserted by clipping='inactive'" if inactive else "clipping='active'",
    )
    printed = p.constant == "printed"

    def thm23(theta_value: float) -> float:
        return 4.0 * (1.0 + passes * theta_value) if printed else 2.0 * (1.0 + (uses - 1) * theta_value)

    constant_text = "printed 4α" if printed else "proof-level 2α, 1 + (⌈T/ℓ⌉ − 1)θ"
    out: list[LinearBound] = []

    # Theorem 2.2: in z units, σ = λzC/b ⇒ α/(2σ²)(L d_h + 2λC/b)² = α/(2z²)·(L d_h b/(λC) + 2)²
    if p.diameter is None:
        out.append(
            LinearBound(
                "Theorem 2.2 (bounded domain)",
                f"{SOURCE}, Theorem 2.2, eq. (16)",
                None,
                (Assumption("dom h bounded with diameter d_h", False, "diameter not given"),),
                "last iterate",
                "needs a bounded domain: give diameter",
            )
        )
    else:
        step_ok, limit = (small_unclipped, unclipped_limit) if inactive else (small_clipped, clipped_limit)
        factor = math.sqrt(1.0 + x) * (1.0 if inactive else math.sqrt(2.0))
        ratio = factor * p.diameter * b / (lam * C)
        representable = Assumption(
            "coefficient ½(√(1+x)·d_h·b/(λC) + 2)² within floating point", ratio < 1e150, f"d_h·b/(λC) ≈ {ratio:.3g}"
        )
        conditions = (Assumption(f"dom h bounded with diameter d_h = {p.diameter:g}", True), step_ok, representable)
        failed = [f"stepsize {lam:.6g} > {limit:.6g}"] if not step_ok.holds else []
        if not representable.holds:
            failed.append("vacuous: its coefficient overflows floating point")
        label = "L_λ (condition (18))" if inactive else "√2·L_λ (clipping may be active; erratum 3)"
        out.append(
            LinearBound(
                f"Theorem 2.2 (bounded domain, {label})",
                f"{SOURCE}, Theorem 2.2, eq. (16)",
                None if failed else 0.5 * (ratio + 2.0) ** 2,
                conditions,
                "last iterate",
                "; ".join(failed) or None,
            )
        )

    k17 = thm23(theta(1.0 + 2.0 * x, ell))
    out.append(
        LinearBound(
            f"Theorem 2.3, eq. (17) (clipping allowed; {constant_text})",
            f"{SOURCE}, Theorem 2.3, eq. (17)",
            k17 if small_clipped.holds else None,
            (small_clipped,),
            "last iterate",
            None if small_clipped.holds else f"stepsize {lam:.6g} > 1/(2(M+m)) = {clipped_limit:.6g}",
        )
    )

    k19 = thm23(theta(x, ell))
    ok19 = inactive and small_unclipped.holds
    reason19 = (
        None
        if ok19
        else (
            "needs clipping='inactive' (condition (18))"
            if not inactive
            else f"stepsize {lam:.6g} > 1/(M+m) = {unclipped_limit:.6g}"
        )
    )
    out.append(
        LinearBound(
            f"Theorem 2.3, eq. (19) (no clipping; {constant_text})",
            f"{SOURCE}, Theorem 2.3, eq. (19)",
            k19 if ok19 else None,
            (no_clipping, small_unclipped),
            "last iterate",
            reason19,
        )
    )

    # Corollary C.3: 4α(C/(bσ))²(1+θ) = 4α(1+θ)/(λz)². Its proof bounds λ²(1 + Eθ) by 1 + θ, which needs λ ≤ 1/√E
    # and λ ≤ 1; the printed min{1/√E, …} says nothing when E = 0 (T < ℓ), where λ ≤ 1 is still required.
    e_limit = 1.0 / math.sqrt(max(passes, 1))
    small_e = Assumption(
        f"stepsize ≤ 1/√max(E, 1) = {e_limit:.6g}",
        lam <= e_limit,
        f"E = {passes}" + ("; for E = 0 the proof still needs stepsize ≤ 1" if passes == 0 else ""),
    )
    ok_c3 = inactive and small_clipped.holds and small_e.holds
    kc3 = 4.0 * (1.0 + theta(x, ell)) / (lam * lam)
    out.append(
        LinearBound(
            "Corollary C.3 (E-independent)",
            f"{SOURCE}, Corollary C.3",
            kc3 if ok_c3 else None,
            (no_clipping, small_clipped, small_e),
            "last iterate",
            None if ok_c3 else "; ".join(c.statement for c in (no_clipping, small_clipped, small_e) if not c.holds),
        )
    )

    out.append(
        LinearBound(
            "Composition of the Gaussian steps (swap adjacency)",
            "Gaussian mechanism per use of the record, sensitivity 2λC/b (Mironov 2017); not from seed 004",
            2.0 * uses,
            (Assumption("none (valid for every configuration)", True),),
            "every iterate",
        )
    )
    return out


def linear_gaussian_exact_rdp(
    curvature: float,
    stepsize: float,
    clip_norm: float,
    batch_size: int,
    dataset_size: int,
    steps: int,
    noise_multiplier: float,
) -> float:
    """Exact RDP coefficient ρ (ε(α) = ρα) of the last iterate on the 1-D linear-Gaussian instance (spec §8.4).

    f_i(x) = (a/2)x² + c_i x, h = 0, no clipping, neighbours differ by |c − c′| = 2C at one slot p. X_T is Gaussian
    with variance σ²Σ_{j<T}ρ^{2j} (ρ = 1 − λa) and mean shift (2λC/b)Σ_{t uses p} ρ^{T−t}; the exact RDP is
    α·shift²/(2·variance), maximised over the slot. It has m = max(0, −a), M = max(0, a); every bound must dominate
    it (the self-check of the tests and of verification jobs).
    """
    ell = dataset_size // batch_size
    sigma = stepsize * noise_multiplier * clip_norm / batch_size
    contraction = 1.0 - stepsize * curvature
    t = np.arange(1, steps + 1)
    weights = contraction ** (steps - t).astype(float)
    variance = sigma**2 * float(np.sum(contraction ** (2.0 * np.arange(steps))))
    shifts = np.bincount((t - 1) % ell, weights=weights, minlength=ell)  # Σ over the uses of each slot
    shift = 2.0 * stepsize * clip_norm / batch_size * float(np.max(np.abs(shifts)))
    return shift**2 / (2.0 * variance)
