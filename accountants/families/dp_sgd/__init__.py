"""``dp-sgd``: DP-SGD on random batches (Abadi et al. 2016), every iterate released.

Each step clips per-example gradients to L2 norm C, sums a random batch and adds N(0, (z·Δ)² I), where Δ is the
sensitivity of the clipped sum under the neighbouring relation: Δ = C (add/remove-one), Δ = 2C (replace-one).
``noise_multiplier`` z is therefore noise std / Δ, and ``noise_std`` = z·Δ. (opacus and TF-Privacy define the
multiplier as std/C; under replace-one their multiplier is 2z.)

Batches, and the accountant for each:

* ``sampling="poisson"``, add/remove-one: each record joins each batch independently with q = b/n.
  RDP: Mironov, Talwar & Zhang 2019 (exact, integer and fractional orders). Tight: for q = 1 (full batch) the
  composition of T Gaussians is one Gaussian with μ = √T/z, exact by the analytic Gaussian (Balle & Wang 2018);
  for q < 1 the spine's PLD accountant (:mod:`accountants.pld`, through :mod:`accountants.tight`) on both add/remove
  directions: a certified upper bound within ~1e-4 relative of the exact ε.
* ``sampling="poisson"``, replace-one: RDP through the dataset without the record (Mironov 2017, Prop. 11, p = 2),
  conservative; tight: the PLD of the replace-one pair ((1−q)N(0) + qN(−C), (1−q)N(0) + qN(C)) (dp_accounting's).
* ``sampling="fixed-size"`` (uniformly random batches of exactly b), replace-one only: RDP by Wang, Balle &
  Kasiviswanathan 2019, Thm. 27; tight: the PLD of the symmetrised remove pair at γ = b/n (Balle, Barthe & Gaboardi
  2018, Thm. 10; Zhu, Dong & Wang 2022).
* ``sampling="shuffle"`` (a permutation per epoch cut into batches) and ``"balls-in-bins"`` (each record in one
  uniformly random batch per epoch): accounted without amplification, one Gaussian release per example per epoch
  begun (⌈T/⌊n/b⌋⌉, at most ⌈E⌉), exact GDP; the neighbour is read at the same position of the permutation or
  allocation (Chua et al. 2024). The Poisson ε at q = b/n is shown beside it (``poisson-assumed``), marked not valid
  for the loader. Amplification by random allocation (Feldman & Shenfeld 2025) is not applied yet.
* ``sampling="truncated-poisson"`` with ``max_batch_size`` B, add/remove only: the revealed-coin mixture of the
  Poisson pair (no cut) and a replace-one pair at the cut (arXiv 2508.15089; dp_accounting 0.6.0's
  ``TruncatedSubsampledGaussianDpEvent``), RDP and PLD.
  Cyclic passes in a fixed order are ``dp-sgd-last-iterate``.

Steps: ``steps`` as given, or from ``epochs`` as ceil(E·n/b) (TF-Privacy's rule, the conservative one; opacus uses
floor: set ``epoch_rounding="floor"``), computed in exact decimal arithmetic.

Modules: ``params`` (parameters, step rule), ``privacy`` (the event tree of the steps, the Poisson-assumed row),
``text`` (wording), ``family``, ``simulate`` (logistic regression and a gradient-canary audit), ``card.toml``.
"""

from __future__ import annotations

from .family import DpSgd
from .params import DpSgdParams, steps_and_rule
from .simulate import DpSgdProblem, DpSgdSimulator

__all__ = ["DpSgd", "DpSgdParams", "DpSgdProblem", "DpSgdSimulator", "steps_and_rule"]
