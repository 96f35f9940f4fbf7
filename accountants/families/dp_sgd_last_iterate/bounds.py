"""The paper's last-iterate privacy theorems as bounds with their conditions (Kong & Ribero 2024, Theorems 2.2, 2.3,
Corollary C.3, eq. 13), and the exact Rényi curve of the linear Gaussian case."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...reports import Assumption
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
    s = _Setting.of(p, steps)
    return [
        _theorem_2_2(p, s),
        _theorem_2_3(s, "17", "clipping allowed", s.thm23(theta(1.0 + 2.0 * s.x, s.ell))),
        _theorem_2_3(s, "19", "no clipping", s.thm23(theta(s.x, s.ell))),
        _corollary_c3(s),
        LinearBound(
            "Composition of the Gaussian steps (swap adjacency)",
            "Gaussian mechanism per use of the record, sensitivity 2λC/b (Mironov 2017); not from Kong & Ribero 2024",
            2.0 * s.uses,
            (Assumption("none (valid for every configuration)", True),),
            "every iterate",
        ),
    ]


@dataclass(frozen=True)
class _Setting:
    """What the theorems share: stepsize λ, passes E = ⌊T/ℓ⌋ and uses ⌈T/ℓ⌉, x = L_λ² − 1, the stepsize limits
    and the clipping assertion."""

    stepsize: float
    ell: int
    passes: int
    uses: int
    x: float
    inactive: bool
    printed: bool
    clipped_limit: float
    unclipped_limit: float
    small_clipped: Assumption
    small_unclipped: Assumption
    no_clipping: Assumption

    @classmethod
    def of(cls, p: LastIterateParams, steps: int) -> _Setting:
        lam, m, M = p.stepsize, p.weak_convexity, p.smoothness
        ell = p.steps_per_pass
        clipped_limit = math.inf if M + m == 0 else 1.0 / (2.0 * (M + m))
        unclipped_limit = math.inf if M + m == 0 else 1.0 / (M + m)
        inactive = p.clipping == "inactive"
        return cls(
            stepsize=lam,
            ell=ell,
            passes=steps // ell,
            uses=-(-steps // ell),
            x=l_lambda_squared_minus_one(lam, m, M, p.l_lambda_form),
            inactive=inactive,
            printed=p.constant == "printed",
            clipped_limit=clipped_limit,
            unclipped_limit=unclipped_limit,
            small_clipped=Assumption(
                f"stepsize ≤ 1/(2(M+m)) = {clipped_limit:.6g}", lam <= clipped_limit, f"stepsize = {lam:.6g}"
            ),
            small_unclipped=Assumption(
                f"stepsize ≤ 1/(M+m) = {unclipped_limit:.6g}", lam <= unclipped_limit, f"stepsize = {lam:.6g}"
            ),
            no_clipping=Assumption(
                "clipping never active along either trajectory (condition (18))",
                inactive,
                "asserted by clipping='inactive'" if inactive else "clipping='active'",
            ),
        )

    def thm23(self, theta_value: float) -> float:
        """Theorem 2.3's coefficient: printed 4(1 + Eθ), or the proof's 2(1 + (⌈T/ℓ⌉ − 1)θ)."""
        if self.printed:
            return 4.0 * (1.0 + self.passes * theta_value)
        return 2.0 * (1.0 + (self.uses - 1) * theta_value)

    @property
    def constant_text(self) -> str:
        return "printed 4α" if self.printed else "proof-level 2α, 1 + (⌈T/ℓ⌉ − 1)θ"


def _theorem_2_2(p: LastIterateParams, s: _Setting) -> LinearBound:
    """Theorem 2.2: in z units, σ = λzC/b ⇒ α/(2σ²)(L d_h + 2λC/b)² = α/(2z²)·(L d_h b/(λC) + 2)²."""
    if p.diameter is None:
        return LinearBound(
            "Theorem 2.2 (bounded domain)",
            f"{SOURCE}, Theorem 2.2, eq. (16)",
            None,
            (Assumption("dom h bounded with diameter d_h", False, "diameter not given"),),
            "last iterate",
            "needs a bounded domain: give diameter",
        )
    lam = s.stepsize
    step_ok, limit = (s.small_unclipped, s.unclipped_limit) if s.inactive else (s.small_clipped, s.clipped_limit)
    factor = math.sqrt(1.0 + s.x) * (1.0 if s.inactive else math.sqrt(2.0))
    ratio = factor * p.diameter * p.batch_size / (lam * p.clip_norm)
    representable = Assumption(
        "coefficient ½(√(1+x)·d_h·b/(λC) + 2)² within floating point", ratio < 1e150, f"d_h·b/(λC) ≈ {ratio:.3g}"
    )
    conditions = (Assumption(f"dom h bounded with diameter d_h = {p.diameter:g}", True), step_ok, representable)
    failed = [f"stepsize {lam:.6g} > {limit:.6g}"] if not step_ok.holds else []
    if not representable.holds:
        failed.append("vacuous: its coefficient overflows floating point")
    label = "L_λ (condition (18))" if s.inactive else "√2·L_λ (clipping may be active; erratum)"
    return LinearBound(
        f"Theorem 2.2 (bounded domain, {label})",
        f"{SOURCE}, Theorem 2.2, eq. (16)",
        None if failed else 0.5 * (ratio + 2.0) ** 2,
        conditions,
        "last iterate",
        "; ".join(failed) or None,
    )


def _theorem_2_3(s: _Setting, equation: str, clipping: str, coefficient: float) -> LinearBound:
    """Theorem 2.3, eq. (17) (clipping allowed, λ ≤ 1/(2(M+m))) or eq. (19) (no clipping, λ ≤ 1/(M+m))."""
    lam = s.stepsize
    if equation == "17":
        ok = s.small_clipped.holds
        conditions: tuple[Assumption, ...] = (s.small_clipped,)
        reason = None if ok else f"stepsize {lam:.6g} > 1/(2(M+m)) = {s.clipped_limit:.6g}"
    else:
        ok = s.inactive and s.small_unclipped.holds
        conditions = (s.no_clipping, s.small_unclipped)
        reason = (
            None
            if ok
            else (
                "needs clipping='inactive' (condition (18))"
                if not s.inactive
                else f"stepsize {lam:.6g} > 1/(M+m) = {s.unclipped_limit:.6g}"
            )
        )
    return LinearBound(
        f"Theorem 2.3, eq. ({equation}) ({clipping}; {s.constant_text})",
        f"{SOURCE}, Theorem 2.3, eq. ({equation})",
        coefficient if ok else None,
        conditions,
        "last iterate",
        reason,
    )


def _corollary_c3(s: _Setting) -> LinearBound:
    """Corollary C.3: 4α(C/(bσ))²(1+θ) = 4α(1+θ)/(λz)². Its proof bounds λ²(1 + Eθ) by 1 + θ, which needs
    λ ≤ 1/√E and λ ≤ 1; the printed min{1/√E, …} says nothing when E = 0 (T < ℓ), where λ ≤ 1 is still required."""
    lam = s.stepsize
    e_limit = 1.0 / math.sqrt(max(s.passes, 1))
    small_e = Assumption(
        f"stepsize ≤ 1/√max(E, 1) = {e_limit:.6g}",
        lam <= e_limit,
        f"E = {s.passes}" + ("; for E = 0 the proof still needs stepsize ≤ 1" if s.passes == 0 else ""),
    )
    conditions = (s.no_clipping, s.small_clipped, small_e)
    ok = s.inactive and s.small_clipped.holds and small_e.holds
    return LinearBound(
        "Corollary C.3 (E-independent)",
        f"{SOURCE}, Corollary C.3",
        4.0 * (1.0 + theta(s.x, s.ell)) / (lam * lam) if ok else None,
        conditions,
        "last iterate",
        None if ok else "; ".join(c.statement for c in conditions if not c.holds),
    )


def linear_gaussian_exact_rdp(
    curvature: float,
    stepsize: float,
    clip_norm: float,
    batch_size: int,
    dataset_size: int,
    steps: int,
    noise_multiplier: float,
) -> float:
    """Exact RDP coefficient ρ (ε(α) = ρα) of the last iterate on the 1-D linear-Gaussian instance.

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
