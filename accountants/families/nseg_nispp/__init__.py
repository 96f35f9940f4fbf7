"""NSEG (``nseg``) and NISPP (``nispp``), the noisy stochastic methods of Boob & Guzmán, "Optimal algorithms for
differentially private stochastic monotone variational inequalities and saddle-point problems" (Math. Program. 2023,
arXiv:2104.02988), and what they share.

Modules: ``params`` (the parameters both share, :class:`~.params.NoisyViParams`), ``releases`` (what a record is
exposed to, its plan and the paper's statements), ``paper`` (the paper's statements as rows beside the spine's
accountants, and the Rényi bounds shown), ``answers`` (the multiplier from either unit, finite utility bounds),
``family`` (the plan and the paper's rows written once, :class:`~.family.NoisyViFamily`, on the spine), ``simulate``
(bilinear games), ``nseg`` and ``nispp_params`` + ``nispp`` (what each method adds: its parameters, the paper's
quantities and statements, utility theorems, wording and simulator); ``card.toml`` (their cards).

Both methods add N(0, σ²I) to a quantity computed on a batch (NSEG: a batch-mean operator value; NISPP: the inexact
prox point) whose replace-one sensitivity is Δ (NSEG 2M/B; NISPP 4M/(λB) or the general-ν form). The noise
multiplier is z = σ/Δ. Neighbouring datasets differ in one record (replace-one, n public; Boob & Guzmán 2023, §1).

Single pass (disjoint batches): every record enters exactly one release, every other release has zero sensitivity to
it, so by parallel composition (Prop. 4) the record's privacy loss over the whole transcript is that of
**one** Gaussian mechanism with μ = Δ/σ = 1/z — never summed over the steps.

* ``tight``: the analytic Gaussian (Balle & Wang 2018, Thm. 8), exact.
* ``rdp``: α/(2z²), converted exactly over real α.

Multi pass: ``count`` releases K, each on a random batch (NSEG: K = 2T evaluations; NISPP: one per iteration).

* ``sampling="poisson"``: each record joins each batch independently with probability q = B/n (the batch mean is
  normalised by B). ``rdp``: the weak triangle inequality through the dataset without the record (Mironov 2017,
  Prop. 11): both legs are add/remove pairs with shift Δ/2, each bounded by the exact Poisson-subsampled Gaussian
  curve (Mironov, Talwar & Zhang 2019); capped per release by the unsampled Gaussian α/(2z²). Rigorous. For
  comparison the answer also lists the same MTZ19 curve at the replace-one sensitivity Δ
  (the usual DP-SGD practice and what the paper's appeal to Abadi et al. amounts to); no theorem covers it for
  replace-one neighbours, so it is shown, not used (at the paper's typical configurations it is the larger one anyway).
* ``sampling="uniform"``: each batch is a uniformly random set of B distinct records (the paper's scheme; for B = 1
  a uniform index). ``rdp``: Wang, Balle & Kasiviswanathan 2019, Thm. 27 (replace-one), rigorous and looser.
* ``tight``: the spine's certified PLD accountant on the same releases under replace-one (Poisson-subsampled or
  sampled-without-replacement Gaussians, composed), an upper bound with a certified lower one.

``paper``: the printed statements, ε = c(η)/z — Prop. 3 (the Gaussian mechanism in the Dwork–Roth form without the
1.25, valid only where the exact profile confirms it, ε ≲ 7–9) and Theorem 1 (the moments accountant with
Abadi et al.'s unspecified constant replaced by √2; not rigorous). A paper statement joins ``best``
only where a rigorous accountant confirms it, so ``best`` ≤ ``paper`` whenever the paper is valid.
"""

from __future__ import annotations

from .nispp import Nispp
from .nispp_params import NisppParams
from .nseg import Nseg, NsegParams

__all__ = ["Nispp", "NisppParams", "Nseg", "NsegParams"]
