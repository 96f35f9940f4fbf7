"""``phased-output-perturbation``: (phased) output perturbation for DP-SCO and DP minimax with any base solver.

Zhang, Thekumparampil, Oh & He, "Bring your own algorithm for optimal differentially private stochastic minimax
optimization" (NeurIPS 2022, arXiv:2206.00363). Every algorithm solves a
(regularised) empirical problem with *any* base solver to a prescribed accuracy and adds isotropic Gaussian noise:

=================  ===============================================  =============================================
``problem_class``  algorithm                                        noisy releases (σ = z·Δ for each)
=================  ===============================================  =============================================
strongly-convex    Algorithm 1 (Theorem 3.4)                        x̃, Δ = 4L/(μn)
convex             Algorithm 2, K phases (Theorem 3.7)              x̃_k, Δ_k = 4L/(μ_k n̄), μ_k = μ·2^k
sc-sc              Algorithm 3 (Theorem 4.4)                        x̃, ỹ: Δ_x = 4L/(n√(μ_x μ)), Δ_y = 4L/(n√(μ_y μ))
c-c                Algorithms 4 + 5, K phases each (Theorem 4.8)    x̃_k, ỹ_k: Δ_k = 4L/(n̄√(μ_k μ))
c-sc               §4.3 variant of Algorithm 4 (Corollary 4.9)      x̃_k, Δ_k = 4L/(n̄√(μ_k m_k)), m_k = min{μ_k, μ_y}
=================  ===============================================  =============================================

Phases use disjoint contiguous blocks of n̄ = ⌊n/K⌋ records, K = ⌈log₂ n⌉ by default (the paper's log n read as
⌈log₂ n⌉), and compose in parallel (Lemma A.1): a record influences one phase of each phased run.

Conventions: replace-one neighbours (Def. 1). ``noise_multiplier`` z is σ_k/Δ_k, the same for every release, so the
privacy of the run depends on z alone: a record's releases form a Gaussian mechanism with GDP parameter μ = √c/z,
c = 1 (Alg. 1, 2, C-SC) or c = 2 (x and y of Alg. 3; Alg. 4 and Alg. 5 on the same records: exact GDP composition).
σ never depends on the base solver's step size, batch size or iterations: only on the solver meeting its accuracy
(the sensitivity bound holds only then). A solver that misses it with probability p per run adds δ_fail = 2p (4p for
c-c: two runs see the record) to δ, rigorously (a union bound over the solver runs): the Gaussian part is accounted
at δ − δ_fail.

Accountants: ``tight`` (analytic Gaussian of μ-GDP, Balle & Wang 2018), ``rdp`` (ρα with ρ = c/(2z²), improved
conversion), ``paper`` (the printed classical calibration, Def. 2: σ = Δ√(2 ln(1.25/δ'))/ε', valid for ε' < 1, with
the paper's δ split: ε = √(2 ln(2.5/δ))/z, or 2√(2 ln(5/δ))/z for sc-sc and c-c where each release gets (ε/2, δ/4)).

Utility (Sections 3–4): the theorems' closed forms are stated at the paper's σ for (ε, δ); they are evaluated at ε_z,
the ε the paper attaches to z, so that σ_k = z·Δ_k is the paper's σ. The proofs' exact sums hold for every noise level,
K ≥ 1 and μ > 0, so a closed form is reported as a bound where it is at least the exact sum (the paper's ε ≤ 1,
δ < 1/n are sufficient, not necessary). Solver terms use the paper's in-expectation accuracy (failure δ/4, δ/8).

Errata and resolutions (found here, checked numerically in the tests): K = ⌈log₂ n⌉, n̄ = ⌊n/K⌋; natural logs in the
privacy terms; Corollary 4.9's last term is reported as stated (65·d_x·log(2.5n/δ)) and corrected
(65·(K−1)·d_x·log(2.5/δ)), with the proof's exact sum. Found here: the proofs bound F(x̃) − F(x̂*) through L‖x̃ − x̂*‖
(or ℓ‖·‖²), which needs the constants where the noisy x̃ lands, possibly outside 𝒳 where Assumption 3.1/4.1 is stated;
the bounds hold as stated for Π_𝒳(x̃) (projection is non-expansive post-processing), and every utility bound lists this
assumption. Not used: Algorithm 3's x and y come from one solver run whose error and stability are bounded in the
weighted norm μ_x‖·‖² + μ_y‖·‖², which would make (x̃, ỹ) a single Gaussian with μ = 1/z instead of the composition's
√2/z; we compose, the conservative choice.

Modules: ``params``, ``plan`` (phases, blocks and releases), ``privacy`` (the paper's statement as a row, the
solver's failure δ), ``calibration`` (the paper's printed noise for a target as a row and beside the tight one, the
recommendations), ``utility`` (the theorems and their proofs' exact sums), ``text`` (wording), ``family``,
``simulate`` (E1–E5 with audits), ``card.toml``.
"""

from __future__ import annotations

from .family import PhasedOutputPerturbation
from .params import PhasedOutputPerturbationParams
from .plan import Mechanism, mechanism, theorem_regularization
from .privacy import default_phases, paper_epsilon, paper_noise_multiplier
from .simulate import PhasedOutputPerturbationProblem, PhasedOutputPerturbationSimulator
from .utility import utility_values

__all__ = [
    "Mechanism",
    "PhasedOutputPerturbation",
    "PhasedOutputPerturbationParams",
    "PhasedOutputPerturbationProblem",
    "PhasedOutputPerturbationSimulator",
    "default_phases",
    "mechanism",
    "paper_epsilon",
    "paper_noise_multiplier",
    "theorem_regularization",
    "utility_values",
]
