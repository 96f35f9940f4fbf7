"""``private-mirror-descent``: DP stochastic saddle points on simplices by mirror descent with vertex sampling.

Seed 001 (González, Guzmán & Paquette, "Mirror descent algorithms with nearly dimension-independent rates for
differentially-private stochastic saddle-point problems"); specification
``shared/spec/seed001-private-mirror-descent.md``. The seed text lost every formula: constants carry the spec's
provenance tags, **[R]** reconstructed from the surviving text (form constrained by the proofs, constants not) and
**[D]** derived by the spec's author along the paper's proofs (not the paper's constants).

No noise is added. The entropic mirror step keeps x_t ∝ exp(−η Σ_{s<t} g_{x,s}), so each vertex drawn from P(x_t) is
an exponential mechanism; only vertex samples (and post-processings of them) are released. The privacy knob is the
stepsize η. Variants:

* ``first-order`` / ``second-order``: Algorithm 1 [R] (first- or second-order-smooth analysis; quadratic when
  ``second_order_smoothness`` = 0). T ≤ ⌊n/B⌋ steps on disjoint batches, 2K vertex samples per step (K for x, K for
  y), each an ε₀-DP and ε₀-bounded-range exponential mechanism with ε₀ = 4ηL₀/B (Prop. 3.3 [R]): one replaced record
  moves a batch-mean gradient by ≤ 2L₀/B in ℓ∞, hence the score −η Σ g by ≤ 2ηL₀/B. The paper counts k = 2TK
  samples; the step-1 samples are data-independent and the last batch's gradient is never used, so the rigorous
  accountants count k = 2(T − 1)K.
* ``bias-reduced``: Algorithm 3 [R] with the multilevel oracle (Algorithm 2): ε₀ = 10ηL₀/B and k ≤ 3M samples [D].
* ``sco``: Algorithm 5 [R] (DP-SCO, anytime online-to-batch with α_t = t): the sampled distribution is a mixture of
  softmaxes whose log-probabilities move by ≤ Δ' = 4ηTL₀/B [D], so each sample is Δ'-DP and 2Δ'-bounded-range
  (paper-style ε₀ = 8ηTL₀/B [R]); k = K·t₀ + K·⌊(T − t₀)/p⌋ + K' samples.

Accountants (k adaptively composed mechanisms):

* ``paper``: Proposition 3.3 through Corollary 3.6 as printed [R]: ε = 2√(2k log(1/δ))·ε₀ with the paper's count,
  valid only when ε ≤ 8 log(1/δ).
* ``rdp``: per order the minimum of the bounded-range zCDP bound α·ε_BR²/8 (Cesar & Rogers 2021) and the exact RDP of
  ε₀-DP (randomized response), times k; improved conversion (Balle et al. 2020) on the order grid, or over real α
  for the bounded-range part alone where that is smaller (tiny ρ have optimal orders beyond any grid).
* ``tight``: the smaller of two optimal compositions, both valid adaptively. (a) For ε₀-bounded-range samples
  (Algorithms 1 and 3), the optimal *adaptive* composition of k ε₀-BR mechanisms, evaluated numerically and
  pessimistically (:mod:`accountants.mechanisms.bounded_range_composition`: exact Bellman recursion over the
  generalised randomised responses on blocks of 64 samples, blocks composed by FFT); it is below ``rdp`` (an
  upper bound for the same class) up to its discretisation, a few per cent of the gap (spec §5, k = 1000:
  0.374 vs rdp 0.400; the non-adaptive t = ½ strategy, KOV at ε₀/2, gives 0.369 from below). (b) The optimal
  composition of k ε₀-DP mechanisms (Kairouz, Oh & Viswanath 2015), which is optimal for the larger class of pure
  ε₀-DP mechanisms and answers where (a) does not apply: Algorithm 5's samples are ε₀-DP with bounded range 2ε₀,
  which adds nothing to pure DP, so there (b) is already optimal for the class.

Modules: ``params``, ``plan`` (the sampling schedule), ``privacy`` (every accountant and its calibration), ``utility``,
``text`` (wording), ``family``, ``simulate`` (matrix games and linear losses with a transcript audit), ``card.toml``.
"""

from __future__ import annotations

from .family import PrivateMirrorDescent
from .params import PrivateMirrorDescentParams
from .plan import Schedule, schedule
from .privacy import _bounded_range_epsilon, account, bounded_range_optimum, paper_epsilon, paper_stepsize, rdp_curve
from .simulate import MirrorDescentProblem, MirrorDescentSimulator, game_value, gap
from .utility import (
    explicit_gap_bound,
    lower_bound_ssp,
    paper_parameters,
    rate_algorithm1,
    rate_algorithm3,
    rate_algorithm5,
    tune_algorithm1,
    tune_algorithm3,
)

__all__ = [
    "MirrorDescentProblem",
    "MirrorDescentSimulator",
    "PrivateMirrorDescent",
    "PrivateMirrorDescentParams",
    "Schedule",
    "_bounded_range_epsilon",
    "account",
    "bounded_range_optimum",
    "explicit_gap_bound",
    "game_value",
    "gap",
    "lower_bound_ssp",
    "paper_epsilon",
    "paper_parameters",
    "paper_stepsize",
    "rate_algorithm1",
    "rate_algorithm3",
    "rate_algorithm5",
    "rdp_curve",
    "schedule",
    "tune_algorithm1",
    "tune_algorithm3",
]
