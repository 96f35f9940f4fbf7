"""``private-mirror-descent``: DP stochastic saddle points on simplices by mirror descent with vertex sampling.

González, Guzmán & Paquette, "Mirror descent algorithms with nearly dimension-independent rates for
differentially-private stochastic saddle-point problems" (2024, arXiv:2403.02912; COLT 2024). The text we worked
from lost the paper's formulas, so constants carry provenance tags: **[R]** reconstructed from the surviving text
(the form is constrained by the proofs, the constants are not) and **[D]** derived here along the paper's proofs
(not the paper's constants).

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
  ε₀-DP (randomized response), times k; improved conversion (Balle et al. 2020) on the order grid, or the zCDP
  envelope over real α (tiny ρ have optimal orders beyond any grid), or kε₀, whichever is smallest (the spine's RDP
  accountant).
* ``tight``: the spine's PLD accountant on the plan (:mod:`accountants.pld.bounded_range`): the samples as blocks of
  64 adaptive steps of the class (ε₀-DP, bounded range (range ratio)·ε₀), each block's dominating pair from the exact
  Bellman recursion over the generalised randomised responses, composed with every other release. For Algorithms 1
  and 3 this is the optimal adaptive composition of ε₀-bounded-range mechanisms up to its lattice and blocks
  (k = 1000: 0.374 vs rdp 0.400; the non-adaptive t = ½ strategy, KOV at ε₀/2, gives 0.369 from below); for
  Algorithm 5, whose samples are ε₀-DP with bounded range 2ε₀ (which adds nothing to pure DP), it is the optimal
  composition of ε₀-DP mechanisms (Kairouz, Oh & Viswanath 2015).

``/v1/privacy`` and ``/v1/compose`` with an ``algorithm`` node give the same rdp, tight and best: both are the
spine's accountants on :func:`~.privacy.mechanism_plan`.

Modules: ``params``, ``plan`` (the sampling schedule), ``privacy`` (the plan and the paper's accountant), ``utility``,
``text`` (wording), ``family``, ``simulate`` (matrix games and linear losses with a transcript audit), ``card.toml``.
"""

from __future__ import annotations

from .family import PrivateMirrorDescent
from .params import PrivateMirrorDescentParams
from .plan import Schedule, schedule
from .privacy import mechanism_plan, paper_epsilon, paper_stepsize, rdp_curve
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
    "explicit_gap_bound",
    "game_value",
    "gap",
    "lower_bound_ssp",
    "mechanism_plan",
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
