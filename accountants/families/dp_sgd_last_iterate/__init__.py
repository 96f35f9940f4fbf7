"""``dp-sgd-last-iterate``: cyclic, clipped DP-SGD on nonconvex composite losses, only the last iterate released.

Kong & Ribero, "Privacy of the last iterate in cyclically-traversed DP-SGD on nonconvex composite losses" (2024,
arXiv:2407.05237). Algorithm 1 visits the data in a fixed order
in disjoint batches of b (ℓ = k/b steps per pass), takes X_t = prox_{λh}(X_{t−1} − λ g_t + N_t) with g_t the mean of
per-example gradients clipped to C and N_t ~ N(0, σ²I) added to the *parameters*, and releases X_T only.

Conventions: swap (replace-one) neighbours at the same slot of the order; ``noise_multiplier`` z is the usual DP-SGD
multiplier, σ = λ·z·C/b (noise z·C on the summed clipped gradients), so a step's swap sensitivity 2λC/b equals 2σ/z.

Bounds (every one linear in α, so ε(α) = ρα and the answer is the smallest ρ among the applicable ones):

* Theorem 2.2 (bounded domain of diameter d_h): ε = α/(2σ²)·(L·d_h + 2λC/b)², with L = √2·L_λ when clipping may be
  active (erratum: Prop. 2.1(b) does not support the printed L_λ then) and λ ≤ 1/(2(M+m)); L = L_λ under
  condition (18) with λ ≤ 1/(M+m).
* Theorem 2.3, eq. (17), clipping allowed, λ ≤ 1/(2(M+m)): ε = 4α(λC/(bσ))²[1 + E·θ_{√2L_λ}(ℓ)], E = ⌊T/ℓ⌋.
* Theorem 2.3, eq. (19), clipping never active (18), λ ≤ 1/(M+m): the same with θ_{L_λ}(ℓ).
* Corollary C.3, (18) and λ ≤ min{1/√E, 1/(2(M+m))}: ε = 4α(C/(bσ))²[1 + θ_{L_λ}(ℓ)]. Its proof also needs λ ≤ 1,
  which the printed condition implies only for E ≥ 1: for T < ℓ we require λ ≤ 1 (without it the corollary
  under-reports, e.g. 3× below the exact RDP of the linear-Gaussian instance at λ = 3.3, T = 2, ℓ = 15).
* Composition under swap adjacency, always valid (it covers releasing every iterate): ε = 2α⌈T/ℓ⌉/z².

L_λ = √(1 + 2λm[1 + m/(2(M+m))]) (eq. 13; ``l_lambda_form="kappa4"`` uses 1 + m/(M+m), the remarks' form), and
θ_L(s) = L^{2(s−1)}/Σ_{j<s} L^{2j}, computed as (1 − L^{−2})/(1 − L^{−2s}) in log space. With
``constant="proof"`` eqs. (17) and (19) use the constant the paper's proof derives, 2α(λC/(bσ))²[1 + (⌈T/ℓ⌉−1)θ]
(re-derived here; sharp on the linear-Gaussian instance); the default is the printed 4α.

Modules: ``params``, ``bounds`` (the last-iterate theorems with their conditions), ``paper`` (Corollary C.2), ``text``
(wording), ``family``, ``simulate`` (linear-Gaussian and logistic problems), ``card.toml``.
"""

from __future__ import annotations

from .bounds import LinearBound, bounds_for, l_lambda_squared_minus_one, linear_gaussian_exact_rdp, theta
from .family import DpSgdLastIterate
from .paper import corollary_c2, corollary_c2_ell_bar, corollary_c2_sigma
from .params import LastIterateParams
from .simulate import LastIterateProblem, LastIterateSimulator

__all__ = [
    "DpSgdLastIterate",
    "LastIterateParams",
    "LastIterateProblem",
    "LastIterateSimulator",
    "LinearBound",
    "bounds_for",
    "corollary_c2",
    "corollary_c2_ell_bar",
    "corollary_c2_sigma",
    "l_lambda_squared_minus_one",
    "linear_gaussian_exact_rdp",
    "theta",
]
