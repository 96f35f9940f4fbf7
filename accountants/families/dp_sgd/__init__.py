"""``dp-sgd``: Poisson-subsampled DP-SGD (Abadi et al. 2016), every iterate released.

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
  2018, Thm. 10; Zhu, Dong & Wang 2022). Shuffled or cyclic passes are *not* this: see ``dp-sgd-last-iterate``.

Steps: ``steps`` as given, or from ``epochs`` as ceil(E·n/b) (TF-Privacy's rule, the conservative one; opacus uses
floor: set ``epoch_rounding="floor"``), computed in exact decimal arithmetic.

Modules: ``params`` (parameters, step rule), ``privacy`` (the event, RDP and the PLD with their calibrations), ``text``
(wording), ``family``, ``simulate`` (logistic regression and a gradient-canary audit), ``card.toml``.
"""

from __future__ import annotations

from .family import DpSgd
from .params import DpSgdParams, steps_and_rule
from .simulate import DpSgdProblem, DpSgdSimulator

__all__ = ["DpSgd", "DpSgdParams", "DpSgdProblem", "DpSgdSimulator", "steps_and_rule"]
