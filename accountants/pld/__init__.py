"""The tight accountant: privacy-loss distributions (PLDs) over any event tree, certified.

Modules, in the order the computation runs:

* :mod:`~accountants.pld.pairs` — the dominating pair of each kind of release (Gaussian, Laplace, any ε-DP release,
  Poisson sampling in both add/remove directions and under replace-one, sampling without replacement);
* :mod:`~accountants.pld.discrete` — one release's loss on a grid: pessimistic connect-the-dots, rounding upward;
* :mod:`~accountants.pld.window` — the tilt and the window of a composition, from the leaves' K(θ);
* :mod:`~accountants.pld.composition` — the composition by one exponentially tilted circular FFT, and δ(ε), ε(δ)
  with every error bounded and added;
* :mod:`~accountants.pld.accountant` — :class:`PldAccountant`: events to pairs, directions, grid refinement;
* :mod:`~accountants.pld.curve` — ε over training: a run's prefixes read off the whole run's tilted spectrum.

Every reported ε is an upper bound: the pairs dominate, the discretisation and every rounding move mass up only or
add their bound to δ, and what the window leaves out is bounded or refused. The grid follows the answer
(Δ ≈ √(τε/2T)), so the error of the bound, not its soundness, depends on the accuracy asked for.
"""

from .accountant import PldAccountant, PldAccuracy, PldAnswer

__all__ = ["PldAccountant", "PldAccuracy", "PldAnswer"]
