"""Amplification of a general C under Poisson sampling by conditional composition (the idea of MMCC: Choquette-Choo,
Ganesh, Steinke & Thakurta 2024, arXiv 2310.15526), with dpcal's own bounds: each release conditioned on the
earlier ones is dominated by a mixture of Gaussians, except on outputs of probability at most β.

**The release.** Steps t = 0 … T − 1; the record joins step t with probability q, independently (bₜ ~ Bernoulli(q)),
with a clipped gradient gₜ (‖gₜ‖ ≤ 1, chosen from the rows released before t). The rows of C released at step t
(one for a square C; the nodes whose range ends at t for the tree) are Yₜ = Σ_{j≤t} C[Bₜ, j] bⱼ gⱼ + Zₜ with Z of
std σ per entry (clip-norm units). Without the record every row is Z alone.

**1. Posterior odds (any prefix, any b₋ⱼ).** Given the rows R before t and every bₗ but bⱼ, the odds of bⱼ = 1 are
q/(1 − q) times the likelihood ratio exp((⟨Y_R − Σ_{l≠j} C_{R,l} bₗ gₗ, C_{R,j} gⱼ⟩ − ‖C_{R,j} gⱼ‖²/2)/σ²). Drawn
with the record (true b*): Y_R = Σₗ C_{R,l} b*ₗ gₗ + Z_R, so the inner product is b*ⱼ‖C_{R,j}gⱼ‖² + Σ_{l≠j}(b*ₗ − bₗ)
⟨C_{R,l}gₗ, C_{R,j}gⱼ⟩ + ⟨Z_R, C_{R,j}gⱼ⟩ ≤ ‖c‖² + Xⱼ + ⟨Z_R, C_{R,j}gⱼ⟩ with c = C_{R,j}, Xⱼ = Σ_{k∈R}|C_kj|Σ_{l≠j}
|C_kl|; drawn without it the same bound holds (b* = 0). gⱼ is fixed before row j, and ⟨Z_R, C_{R,j}gⱼ⟩ reads only
rows from j on: it is N(0, σ²‖c‖²‖gⱼ‖²), above σ‖c‖ζ with probability at most Φ(−ζ). So outside an event of
probability Φ(−ζ) (with or without the record), the log-odds are at most
τ = logit q + (‖c‖²/2 + Xⱼ)/σ² + ‖c‖ζ/σ for every b₋ⱼ, and Pr[bⱼ = 1 | Y_R, b₋ⱼ] ≤ q̃ = 1/(1 + e^{−τ}).

**2. Stochastic dominance.** Conditional odds bounded for every b₋ⱼ bound them given b₍<ⱼ₎ alone (an average), so
coupling by uniforms gives b ≤ b̃ coordinatewise with b̃ⱼ independent Bernoulli(q̃ⱼ) (and bₜ ~ Bernoulli(q),
independent of the past). The shift of Yₜ has norm ‖Σⱼ C[Bₜ, j] bⱼ gⱼ‖ ≤ Σⱼ aₜⱼ b̃ⱼ with aₜⱼ = ‖C[Bₜ, j]‖ (triangle
inequality).

**3. Mixtures.** A vector mixture of Gaussians is dominated by the scalar one of its shifts' norms (arXiv
2310.15526, Cor. 4.7). For shifts s ≥ 0 the likelihood ratio of Σ w N(s, σ²) to N(0, σ²) increases in the
outcome, so every hockey-stick divergence (either order) is attained on a half-line, where the mixture's mass is
monotone in each shift: a stochastically larger shift law dominates, in both directions. The law of Σⱼ aₜⱼ b̃ⱼ is
computed exactly (at most :data:`EXACT_TERMS` terms) or with every aₜⱼ rounded up to a grid (stochastically
larger), so Yₜ given the past is dominated by :class:`~accountants.events.MixtureOfGaussiansEvent` of that law.

**4. Conditional composition.** Let G be the outputs where every bound of step 1 holds (at most N of them, one per
pair (t, j) with j < t and aₜⱼ > 0, each failing with probability Φ(−ζ); ζ = Φ⁻¹(1 − β/N)): Pr[Gᶜ] ≤ β under either
dataset. Replace, off G, each conditional law with the record by the one without (the pair (N, N) is dominated by
any pair): the modified release is an adaptive composition whose every step is dominated by its mixture, hence by
their composition (Zhu, Dong & Wang 2022, Thm. 10), and it agrees with the true one on G. So for every S,
P(S) − e^ε Q(S) ≤ P′(S ∩ G) − e^ε Q(S ∩ G) + β in each direction: δ(ε) ≤ δ_mixtures(ε) + β. The plan reserves β
(:attr:`~accountants.plans.MechanismPlan.reserved_delta`) and the spine accounts the mixtures at δ − β.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from ...events import ComposedEvent, DpEvent, MixtureOfGaussiansEvent, SelfComposedEvent

FAILURE_SHARE = 0.25
"""β as a share of δ: the probability of the outputs on which a posterior bound may fail."""
EXACT_TERMS = 10
"""A release's shift law is enumerated exactly up to this many random terms (2¹⁰ sums), else put on a grid."""
SHIFT_GRID = 512
"""Grid cells over a release's largest shift Σⱼ aₜⱼ where its terms are too many to enumerate."""


Law = tuple[tuple[float, ...], tuple[float, ...]]
"""A shift law: (shifts, masses)."""


@dataclass(frozen=True)
class ConditionalPlan:
    """The mixtures of the conditional composition and the δ reserved for the failure of their bounds."""

    event: DpEvent
    reserved_delta: float
    bounds: int
    """N: the posterior bounds held jointly (their failures share β)."""


def conditional_plan(
    encoder: np.ndarray, times: np.ndarray, rate: float, sigma: float, delta: float
) -> ConditionalPlan:
    """The mixtures of every step's release (rows of ``encoder``, row r released at step ``times[r]``; T columns)
    for records sampled with probability ``rate`` per step, noise std ``sigma`` per entry (clip-norm units) and a
    failure probability β = :data:`FAILURE_SHARE`·δ (the module's argument)."""
    beta = FAILURE_SHARE * delta
    steps = encoder.shape[1]
    absolute = np.abs(encoder)
    blocks = [np.flatnonzero(times == t) for t in range(steps)]
    weights = [np.sqrt(np.sum(np.square(encoder[rows]), axis=0)) for rows in blocks]  # aₜⱼ (zero where no row)
    bounds = sum(int(np.count_nonzero(w[:t])) for t, w in enumerate(weights))
    zeta = float(-special.ndtri(beta / bounds)) if bounds else 0.0
    logit = math.log(rate) - math.log1p(-rate) if rate < 1.0 else math.inf
    squares = np.zeros(steps)  # ‖C_{R,j}‖² over the rows R released so far
    crosses = np.zeros(steps)  # Xⱼ over them
    laws: list[Law] = []  # in the order of the steps (a prefix of the tree is a prefix of the run)
    for t, rows in enumerate(blocks):
        support = np.flatnonzero(weights[t][: t + 1])
        if len(support):
            tau = (
                logit
                + (squares[support] / 2.0 + crosses[support]) / sigma**2
                + np.sqrt(squares[support]) * zeta / sigma
            )
            probabilities = np.where(support == t, rate, special.expit(tau))
            laws.append(_shift_law(weights[t][support], probabilities))
        squares += np.sum(np.square(encoder[rows]), axis=0)
        crosses += np.sum(absolute[rows] * (absolute[rows].sum(axis=1, keepdims=True) - absolute[rows]), axis=0)
    mixtures: dict[Law, MixtureOfGaussiansEvent] = {}  # one object per law: equal leaves are read once
    events = []
    for law, run in itertools.groupby(laws):
        mixture = mixtures.setdefault(law, MixtureOfGaussiansEvent(sigma, *law))
        events.append(_counted(mixture, sum(1 for _ in run)))
    tree = events[0] if len(events) == 1 else ComposedEvent(tuple(events))
    return ConditionalPlan(tree, beta if bounds else 0.0, bounds)  # no bound held: nothing can fail


def _counted(event: DpEvent, count: int) -> DpEvent:
    return event if count == 1 else SelfComposedEvent(event, count)


_SUBSETS = [np.array(list(itertools.product((0.0, 1.0), repeat=k))) for k in range(EXACT_TERMS + 1)]
"""Every subset of k terms as 0/1 rows."""


def _shift_law(coefficients: np.ndarray, probabilities: np.ndarray) -> Law:
    """The law of Σⱼ aⱼ b̃ⱼ (b̃ⱼ ~ Bernoulli(q̃ⱼ) independent), or of a stochastically larger sum: (shifts, masses)."""
    if len(coefficients) <= EXACT_TERMS:
        chosen = _SUBSETS[len(coefficients)]
        sums = chosen @ coefficients
        weights = np.prod(np.where(chosen > 0.0, probabilities, 1.0 - probabilities), axis=1)
        shifts, where = np.unique(sums, return_inverse=True)
        law = np.bincount(where, weights=weights)
        kept = law > 0.0
        return tuple(shifts[kept].tolist()), tuple(law[kept].tolist())
    cell = float(np.sum(coefficients)) / SHIFT_GRID
    cells = np.ceil(coefficients / cell).astype(np.int64)  # each term rounded up: the sum only grows
    masses = np.zeros(int(cells.sum()) + 1)
    masses[0] = 1.0
    top = 0
    for k, q in zip(cells, probabilities, strict=True):
        masses[k : top + k + 1] = (1.0 - q) * masses[k : top + k + 1] + q * masses[: top + 1]
        masses[:k] *= 1.0 - q
        top += k
    occupied = np.flatnonzero(masses > 0.0)
    return tuple(float(k * cell) for k in occupied), tuple(float(m) for m in masses[occupied] / masses.sum())
