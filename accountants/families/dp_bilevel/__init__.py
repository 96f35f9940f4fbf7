"""``dp-bilevel``: differentially private bilevel optimization, Algorithms 1–4 of Kornowski, "Differentially Private
Bilevel Optimization" (2024, arXiv:2409.19800; ALT 2026). Each of the T outer steps makes **three Gaussian mechanisms**
(Algorithm 1, line 3–4; Algorithm 3 for mini-batches):

1. a private inner solve ỹ_t ≈ argmin_y g(x_t, y) by DP-Loc-GD (Algorithm 2; DP-Loc-SGD, Algorithm 4, on batches):
   K = M·T_GD noisy gradient steps, per-sample gradient bound L₀^g, sensitivity 2L₀^g/n (2L₀^g/b_in);
2. a private inner solve ỹ^λ_t ≈ argmin_y f(x_t, y) + λg(x_t, y): K steps, per-sample bound L₀^f + λL₀^g (the
   triangle inequality; the paper's 2λL₀^g when λ ≥ L₀^f/L₀^g), sensitivity 2(L₀^f + λL₀^g)/n;
3. the noisy penalty hypergradient g̃_t = ∇_x f(x_t, ỹ^λ_t) + λ(∇_x g(x_t, ỹ^λ_t) − ∇_x g(x_t, ỹ_t)) + N(0, σ²I), its
   per-sample terms φ_i clipped at G (default the proof constant of Lemma 4.5, 5L₁^gL₀^f/μ_g), sensitivity 2G/n.

Conventions. Replace-one neighbours (Section 2). ``noise_multiplier`` z is the multiplier of the outer release,
σ = z·2G/n (z·2G/b_out). ``inner_noise_multiplier`` z_in is that of every inner gradient step, σ_in = z_in·(its
sensitivity); by default z_in = z·√K, so that one K-step inner solve has the same Rényi budget as one outer release:
the paper's equal three-way split of each outer step (proof of Theorem 4.1), in Rényi form.

Accountants.

* ``paper``: the paper's own chain (proofs of Theorems 4.1/5.1): Lemma 2.2 (classic Gaussian, needs ε < 1) for every
  release, Lemma 2.3 amplification for batches, Lemma 2.1 (advanced composition) over the K inner steps, basic
  composition of the three mechanisms, Lemma 2.1 over the T outer steps, with δ split δ/(T+1), then /3, then /(K+1). Its
  calibration is the printed split ε/√(18T), δ/(3(T+1)) per mechanism, which by Lemma 2.1 really totals ε√(ln((T+1)/δ))
  + ε² (an erratum found here), reported beside the corrected split that inverts Lemma 2.1 exactly.
* ``rdp``: the Gaussian mechanisms composed in RDP (not in the paper): α/(2z²) per full-batch release; for
  batches drawn without replacement, the sampled Gaussian of Wang, Balle & Kasiviswanathan 2019 (Thm. 27).
* ``tight`` (full batch): the T(2K + 1) adaptive Gaussian releases compose exactly to μ-GDP with μ² = T(2K/z_in² +
  1/z²) (Dong, Roth & Su 2019), converted by the analytic Gaussian (Balle & Wang 2018).

Batches drawn **with replacement** (the paper's literal Algorithms 3/4) have only the paper's accounting: Lemma 2.3 as
printed keeps δ = δ₀ although a record can be drawn several times (an erratum found here), and the Rényi curve of such
batches has a heavy tail (all b draws hitting the record shifts the mean by its whole contribution), so dpcal
certifies nothing there; ``sampling="without-replacement"`` (the default; same utility up to constants, Remark 5.2)
is certified, its paper chain amplified by ln(1 + (b/n)(e^ε̃ − 1)), δ = (b/n)δ̃ (Balle, Barthe & Gaboardi 2018).
``best`` is the minimum over the certified accountants; in calibration, the least outer noise among rdp and tight
(which keep the inner rule), the paper's split (its own inner noise) only where neither applies. Mini-batch
calibrations whose batches are below what the paper's argument needs at the target (Lemma 2.2 on the unamplified
batch, ε̃ = ln(1 + (e^ε₁ − 1)/q) < 1) are refused with the minimum named.

Utility (Section 4): the explicit bound ‖G_{L*_λ,η}(x_out)‖ ≤ 4D + √(12·L·Δ_λ/T) of Proposition 4.6's proof
(deterministic form) with L = 1/(2η), Δ_λ ≤ Δ_F + (L₀^f)²/(2λμ_g) and D predicted from Lemma 4.4 and the explicit
inner radius (proof of Theorem 8.2, constants reconstructed here); the Õ rates of Theorems 4.1, 5.1, 6.1 with unit
constants, corrected (K₂ with ℓ^{5/6}, K₃/√b_out, K₁ with ℓ^{3/4}) beside the printed ones. The simulator runs
Algorithm 1/3 on a closed-form quadratic bilevel problem (:mod:`.problems`) or the Section 7 ridge-tuning problem
(closed forms for L*_λ, F, Δ_F).

Modules: ``params``, ``plan`` (the three mechanisms of an outer step), ``paper`` (the lemma chain and its budget
splits), ``privacy`` (the run as events for the spine, the paper's chain as a row, the splits' calibration rows and
notes), ``utility``, ``text`` (wording), ``family``, ``problems`` (synthetic data), ``simulate``, ``card.toml``.
"""

from __future__ import annotations

from .family import DpBilevel
from .params import BilevelParams
from .plan import inner_multiplier, mechanisms
from .simulate import BilevelSimulator
from .utility import error_budget, utility_report

__all__ = [
    "BilevelParams",
    "BilevelSimulator",
    "DpBilevel",
    "error_budget",
    "inner_multiplier",
    "mechanisms",
    "utility_report",
]
