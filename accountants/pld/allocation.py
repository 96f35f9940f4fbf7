"""Dominating pairs of a random allocation of a Gaussian: a record in ``num_selected`` of ``num_steps`` steps.

**One of t.** :mod:`accountants.pld.allocation_law` brackets the likelihood ratio X = (1/t) Σ_j e^{ℓ_j} in the convex
order: X⁻ ≤ X ≤ X⁺. The pairs read the bracket in each direction:

====================  ======================================  ======================================================
direction             loss and its laws                       pair (upper: X⁺, lower: X⁻)
====================  ======================================  ======================================================
remove (P ‖ Q)        L = log X; P-mass x·q(x), Q-mass q(x)   H_s = E_Q (X − s)₊ (one base term N(μ, 2μ), t − 1 dual
                                                              terms N(−μ, 2μ) under P)
add (Q ‖ P)           L = −log X; P-mass q(x), Q-mass x·q(x)  H_s = E_Q (1 − sX)₊ (all t terms dual under P)
====================  ======================================  ======================================================

The upper pair's profile is at least the mechanism's at every s (the integrands are convex, X ≤_cx X⁺, plus the cut
tails' atoms at +∞); composed, it bounds every adaptive composition from above (Zhu, Dong & Wang 2022, Thm. 10). The
lower pair's profile is at most the mechanism's (a contraction of X), which is what
:func:`~accountants.pld.discrete.optimistic_leaf` needs (:meth:`AllocationPair.optimistic`). Both are exact for the
non-adaptive release of t Gaussian steps; the adaptive one is dominated by it (Feldman & Shenfeld 2025,
"Privacy amplification by random allocation", arXiv 2502.08202, the reduction to the non-adaptive Gaussian).

**k of t.** A record in k of t steps chosen uniformly is accounted as k records' worth of one-of-⌊t/k⌋ and
one-of-⌈t/k⌉ allocations over a partition of the steps (k − r of the first, r = t mod k of the second), composed
(Feldman & Shenfeld 2025, the decomposition of k-out-of-t allocation; the split for k ∤ t as in the exact PLD of
arXiv 2602.17284): each group of the partition receives the record once.

**Epochs.** A fresh allocation per epoch composes the epoch's pair E times. Persistent bins (the same steps every
epoch, jax_privacy's ``BallsInBinsSampling``) are one allocation whose steps each release E Gaussians: given the
bins, the record's E releases in its step form one Gaussian of multiplier z/√E (the Gaussian composition is exact),
and the other steps do not see it; so persistent bins over E epochs are exactly one epoch's allocation at z/√E.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..events import RandomAllocationEvent
from .allocation_law import LOWER_REFINEMENT, AllocationLaw, GeometricLaw, allocation_law, on_grid
from .pairs import MAX_LOSS, DominatingPair, Survivals, snapped_down

PER_OCTAVE = 192
"""Grid points per doubling of the likelihood ratio (Δ = log 2/192 ≈ 3.6e-3 in loss)."""


@dataclass(frozen=True, eq=False)
class _Atoms:
    """A direction's finite atoms, ascending in loss, with their P- and Q-masses and suffix sums."""

    losses: np.ndarray
    p: np.ndarray
    q: np.ndarray
    infinity: float

    @cached_property
    def tails(self) -> tuple[np.ndarray, np.ndarray]:
        p_tail = np.concatenate((np.cumsum(self.p[::-1])[::-1], [0.0])) + self.infinity
        q_tail = np.concatenate((np.cumsum(self.q[::-1])[::-1], [0.0]))
        return p_tail, q_tail


def _directed_atoms(law: GeometricLaw, add: bool, infinity: float) -> _Atoms:
    """The atoms of X's law read as one direction's loss: log X with P-mass x·q (remove), −log X with P-mass q (add)."""
    keep = law.masses > 0.0
    values, q, moments = law.atoms[keep], law.masses[keep], law.moments[keep]
    losses = np.log(values)
    if add:
        losses, p_mass, q_mass = -losses, q, moments
    else:
        p_mass, q_mass = moments, q
    order = np.argsort(losses, kind="stable")
    return _Atoms(losses[order], p_mass[order], q_mass[order], infinity)


@dataclass(frozen=True)
class AllocationPair(DominatingPair):
    """One Gaussian (μ = 1/z) allocated to one of ``steps`` steps, in one direction (``add``: a record added); the
    upper pair, or the lower one where ``lower`` (module docstring)."""

    mu: float
    steps: int
    add: bool = False
    lower: bool = False
    per_octave: int = PER_OCTAVE
    symmetric = False

    @property
    def law(self) -> AllocationLaw:
        return allocation_law(0.5 * self.mu * self.mu, self.steps, self.per_octave, lower=self.lower)

    @cached_property
    def _atoms(self) -> _Atoms:
        law = self.law
        if law.lower is not None:  # on the knots' spacing (:meth:`atoms`), however fine the lower chain's last stage
            return _directed_atoms(on_grid(law.lower, law.upper.per_octave * LOWER_REFINEMENT), self.add, 0.0)
        return _directed_atoms(law.upper, self.add, law.infinity_add if self.add else law.infinity_remove)

    def directed(self, add: bool) -> AllocationPair:
        return AllocationPair(self.mu, self.steps, add, self.lower, self.per_octave)

    def optimistic(self) -> DominatingPair:
        return AllocationPair(self.mu, self.steps, self.add, True, self.per_octave)

    def survival(self, losses: np.ndarray) -> Survivals:
        atoms = self._atoms
        first = np.searchsorted(atoms.losses, snapped_down(np.asarray(losses, dtype=float)), side="left")
        p_tail, q_tail = atoms.tails
        return p_tail[first], q_tail[first]

    def loss_range(self, tail: float) -> tuple[float, float]:
        atoms = self._atoms
        p_tail, q_tail = atoms.tails
        head_p, head_q = np.cumsum(atoms.p), np.cumsum(atoms.q)
        low = int(np.searchsorted(np.maximum(head_p, head_q), tail, side="right"))
        above = np.flatnonzero((p_tail[1:] - atoms.infinity > tail) | (q_tail[1:] > tail))
        high = int(above[-1]) + 1 if above.size else atoms.losses.size - 1
        lo = float(atoms.losses[min(low, atoms.losses.size - 1)])
        hi = float(atoms.losses[min(high, atoms.losses.size - 1)])
        return max(lo, -MAX_LOSS), min(max(hi, lo) + 1e-9, MAX_LOSS)

    def atoms(self) -> tuple[float, ...]:
        """The grid step of the laws' losses (every loss of the upper and the lower law a multiple of it): the
        accountant puts knots through them."""
        return (self.law.upper.grid / LOWER_REFINEMENT,)

    def largest_loss(self) -> float:
        atoms = self._atoms
        return math.inf if atoms.infinity > 0.0 else float(atoms.losses[-1])


def allocation_pairs(mu: float, event: RandomAllocationEvent) -> list[tuple[int, AllocationPair]]:
    """The (count, pair) leaves of one allocation of a record to ``num_selected`` of ``num_steps`` steps (module
    docstring: :meth:`~accountants.events.RandomAllocationEvent.groups`), direction not yet chosen."""
    return [(count, AllocationPair(mu, steps)) for count, steps in event.groups()]
