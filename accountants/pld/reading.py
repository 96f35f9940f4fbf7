"""How the PLD accountant reads an event tree: the dominating pair of every release, in each direction.

=====================================================  ==============================================================
event                                                  pair(s) (:mod:`~accountants.pld.pairs`, :mod:`~accountants.
                                                       pld.sampled`, :mod:`~accountants.pld.bounded_range`)
=====================================================  ==============================================================
``GaussianEvent(z)``                                   N(1/z, 1) vs N(0, 1); the tree's Gaussians are merged into one
``LaplaceEvent(b)``                                    Lap(1, b) vs Lap(0, b)
``MixtureOfGaussiansEvent(z, s, p)``                    add/remove only: Σ pᵢN(sᵢ/z, 1) vs N(0, 1), remove and add
                                                       (:mod:`~accountants.pld.mixture`; shifts {0, s}: the Poisson
                                                       pair itself)
``RandomizedResponseEvent(p, k)``                      the k-ary output laws (exact)
``PureDpEvent(ε)``                                     randomized response with ε (the worst ε-DP release)
``BoundedRangeEvent(η, ε)``                            its run's blocks: the pair of 64 adaptive steps of the class
                                                       (η-bounded range and ε-DP; exact Bellman recursion), and one
                                                       block of the rest; equal releases anywhere in the tree are
                                                       counted together
``PoissonSampledEvent(q, Gaussian… | Laplace)``        add/remove: the remove pair and, separately, the add pair;
                                                       replace-one: the replace pair
``SampledWithoutReplacementEvent(n, m, Gaussian…)``    replace-one only: the least dominating pair (symmetrized
                                                       remove pair at γ = m/n)
``TruncatedPoissonSampledEvent(n, q, B, Gaussian…)``   add/remove only: the mixture (revealed coin) of the Poisson
                                                       pair (no cut, 1 − p) and the replace-one pair at q′ with
                                                       multiplier z/2 (a cut, p) (arXiv 2508.15089)
``RandomAllocationEvent(t, k, Gaussian…)``             add/remove only: k one-of-⌊t/k⌋ / one-of-⌈t/k⌉ allocation
                                                       pairs, remove and add (:mod:`~accountants.pld.allocation`)
``SelfComposedEvent``, ``ComposedEvent``               counts and heterogeneous composition
=====================================================  ==============================================================

Under add/remove, every release of a composition sees the same ordered pair of datasets, so the composition is
accounted once with every leaf's remove pair and once with every add pair, and δ is the larger (ZDW22). Symmetric
pairs serve both directions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..events import (
    BoundedRangeEvent,
    ComposedEvent,
    DpEvent,
    GaussianEvent,
    LaplaceEvent,
    MixtureOfGaussiansEvent,
    PoissonSampledEvent,
    PureDpEvent,
    RandomAllocationEvent,
    RandomizedResponseEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    TruncatedPoissonSampledEvent,
    gaussian_mu,
    non_gaussian_leaf,
)
from ..rdp import Neighbouring, UnsupportedEventError
from .allocation import AllocationPair, allocation_pairs
from .bounded_range import bounded_range_leaves
from .mixture import mixture_pair
from .pairs import BasePair, DominatingPair, GaussianPair, LaplacePair, pure_pair, randomized_response_pair
from .sampled import (
    MixturePair,
    PoissonAddPair,
    PoissonRemovePair,
    ReplaceOneLaplacePair,
    ReplaceOnePoissonPair,
    SymmetrizedPair,
)

Leaves = list[tuple[int, DominatingPair]]


@dataclass(frozen=True)
class BoundedRangeRun:
    """Releases of the class (η-bounded range, ε-DP), counted across the tree before they are cut into blocks."""

    width: float
    epsilon: float


def directed_leaves(event: DpEvent, neighbouring: Neighbouring) -> list[Leaves]:
    """The (count, pair) leaves of each direction to account: one list for symmetric pairs, two (remove, add) for
    add/remove sampling. Equal pairs are counted together, the tree's plain Gaussians merged into one."""
    pairs: Leaves = []
    runs: dict[BoundedRangeRun, int] = {}
    for count, leaf in _leaves(event, 1, neighbouring):
        if isinstance(leaf, BoundedRangeRun):
            runs[leaf] = runs.get(leaf, 0) + count
        else:
            pairs.append((count, leaf))
    for run, count in runs.items():
        pairs.extend(bounded_range_leaves(run.width, run.epsilon, count))
    if all(pair.symmetric for _, pair in pairs):
        return [_merged(pairs)]
    remove = [(c, p if p.symmetric else _as_remove(p)) for c, p in pairs]
    add = [(c, p if p.symmetric else _as_add(p)) for c, p in pairs]
    return [_merged(remove), _merged(add)]


def _leaves(
    event: DpEvent, count: int, neighbouring: Neighbouring
) -> Iterable[tuple[int, DominatingPair | BoundedRangeRun]]:
    if isinstance(event, SelfComposedEvent):
        yield from _leaves(event.event, count * event.count, neighbouring)
    elif isinstance(event, ComposedEvent):
        for inner in event.events:
            yield from _leaves(inner, count, neighbouring)
    elif isinstance(event, GaussianEvent):
        yield count, GaussianPair(1.0 / event.noise_multiplier)
    elif isinstance(event, LaplaceEvent):
        yield count, LaplacePair(event.noise_multiplier)
    elif isinstance(event, MixtureOfGaussiansEvent):
        yield count, _mixture(event, neighbouring)
    elif isinstance(event, RandomizedResponseEvent | PureDpEvent | BoundedRangeEvent) and event.epsilon == 0.0:
        return  # nothing about the record is released (p = 1, ε = 0 or range 0)
    elif isinstance(event, RandomizedResponseEvent):
        yield count, randomized_response_pair(event.noise_parameter, event.num_buckets)
    elif isinstance(event, PureDpEvent):
        yield count, pure_pair(event.epsilon)
    elif isinstance(event, BoundedRangeEvent):
        epsilon = event.bounded_range if event.epsilon is None else event.epsilon
        yield count, BoundedRangeRun(event.bounded_range, epsilon)
    elif isinstance(
        event,
        PoissonSampledEvent | TruncatedPoissonSampledEvent | RandomAllocationEvent | SampledWithoutReplacementEvent,
    ):
        yield from _sampled(event, count, neighbouring)
    else:
        raise UnsupportedEventError(event, "no dominating pair is known for this event type", "PLD")


def _sampled(
    event: PoissonSampledEvent | TruncatedPoissonSampledEvent | RandomAllocationEvent | SampledWithoutReplacementEvent,
    count: int,
    neighbouring: Neighbouring,
) -> Iterable[tuple[int, DominatingPair]]:
    """The leaves of a release on a random sample of the records."""
    if isinstance(event, PoissonSampledEvent):
        yield count, _poisson(event, neighbouring)
    elif isinstance(event, TruncatedPoissonSampledEvent):
        yield count, _truncated(event, neighbouring)
    elif isinstance(event, RandomAllocationEvent):
        yield from _allocated(event, count, neighbouring)
    else:
        if neighbouring != "replace-one":
            raise UnsupportedEventError(
                event,
                "sampling without replacement fixes the sample size, which is only defined with the dataset size "
                "public: it is accounted under replace-one neighbours (use neighbouring='replace-one')",
                "PLD",
            )
        mu = _gaussian_tree_mu(event, event.event)
        gamma = event.sample_size / event.dataset_size
        yield count, SymmetrizedPair(PoissonRemovePair(GaussianPair(mu), gamma))


def _allocated(
    event: RandomAllocationEvent, count: int, neighbouring: Neighbouring
) -> Iterable[tuple[int, DominatingPair]]:
    if neighbouring != "add-remove":
        raise UnsupportedEventError(event, "random allocation is accounted under add/remove neighbours only", "PLD")
    mu = _gaussian_tree_mu(event, event.event)
    for groups, pair in allocation_pairs(mu, event):
        yield count * groups, pair


def _mixture(event: MixtureOfGaussiansEvent, neighbouring: Neighbouring) -> DominatingPair:
    """A mixture with shifts {0, s} (or {s}) as the Poisson-sampled (or plain) Gaussian it is, so both readings give
    the same number; else the pair of each direction (:mod:`~accountants.pld.mixture`)."""
    if neighbouring != "add-remove":
        raise UnsupportedEventError(event, MixtureOfGaussiansEvent.RELATION, "PLD")
    poisson = event.poisson_form()
    if poisson is not None:
        rate, multiplier = poisson
        gaussian = GaussianPair(1.0 / multiplier)
        return gaussian if rate == 1.0 else _SampledPair(gaussian, rate)
    return _MixturePair(*event.components())


@dataclass(frozen=True)
class _MixturePair(DominatingPair):
    """A mixture of Gaussians before the direction is chosen (add/remove)."""

    shifts: tuple[float, ...]
    weights: tuple[float, ...]
    symmetric = False

    def directed(self, add: bool) -> DominatingPair:
        return mixture_pair(self.shifts, self.weights, add)

    def survival(self, losses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.directed(add=False).survival(losses)

    def loss_range(self, tail: float) -> tuple[float, float]:
        return self.directed(add=False).loss_range(tail)


def _truncated(event: TruncatedPoissonSampledEvent, neighbouring: Neighbouring) -> DominatingPair:
    if neighbouring != "add-remove":
        raise UnsupportedEventError(
            event, "truncated Poisson sampling is accounted under add/remove neighbours only", "PLD"
        )
    mu = _gaussian_tree_mu(event, event.event)
    cut, q_cut = event.truncation()
    plain = _SampledPair(GaussianPair(mu), event.sampling_rate)
    if cut == 0.0:
        return plain
    return _TruncatedPair(plain, cut, ReplaceOnePoissonPair(q_cut, 0.5 / mu))


def _poisson(event: PoissonSampledEvent, neighbouring: Neighbouring) -> DominatingPair:
    base: BasePair
    if isinstance(event.event, LaplaceEvent):
        if neighbouring == "replace-one":
            return ReplaceOneLaplacePair(event.sampling_rate, event.event.noise_multiplier)
        base = LaplacePair(event.event.noise_multiplier)
    else:
        mu = _gaussian_tree_mu(event, event.event)
        if neighbouring == "replace-one":
            return ReplaceOnePoissonPair(event.sampling_rate, 1.0 / mu)
        base = GaussianPair(mu)
    return _SampledPair(base, event.sampling_rate)


@dataclass(frozen=True)
class _SampledPair(DominatingPair):
    """A Poisson-sampled base pair before the direction is chosen (add/remove)."""

    base: BasePair
    sampling_rate: float
    symmetric = False

    def survival(self, losses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return PoissonRemovePair(self.base, self.sampling_rate).survival(losses)

    def loss_range(self, tail: float) -> tuple[float, float]:
        return PoissonRemovePair(self.base, self.sampling_rate).loss_range(tail)


@dataclass(frozen=True)
class _TruncatedPair(DominatingPair):
    """A truncated Poisson-sampled Gaussian before the direction is chosen: no cut (the Poisson pair) with probability
    1 − ``cut``, else the symmetric replace-one pair ``displaced``."""

    plain: _SampledPair
    cut: float
    displaced: DominatingPair
    symmetric = False

    def directed(self, add: bool) -> DominatingPair:
        inner = _as_add(self.plain) if add else _as_remove(self.plain)
        return MixturePair(((1.0 - self.cut, inner), (self.cut, self.displaced)))

    def survival(self, losses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.directed(add=False).survival(losses)

    def loss_range(self, tail: float) -> tuple[float, float]:
        return self.directed(add=False).loss_range(tail)


def _as_remove(pair: DominatingPair) -> DominatingPair:
    if isinstance(pair, _TruncatedPair | AllocationPair | _MixturePair):
        return pair.directed(add=False)
    assert isinstance(pair, _SampledPair)
    return PoissonRemovePair(pair.base, pair.sampling_rate)


def _as_add(pair: DominatingPair) -> DominatingPair:
    if isinstance(pair, _TruncatedPair | AllocationPair | _MixturePair):
        return pair.directed(add=True)
    assert isinstance(pair, _SampledPair)
    return PoissonAddPair(pair.base, pair.sampling_rate)


def _gaussian_tree_mu(event: DpEvent, inner: DpEvent) -> float:
    leaf = non_gaussian_leaf(inner)
    if leaf is not None:
        raise UnsupportedEventError(
            event, f"the sampled event must be a Gaussian or a composition of Gaussians, not {leaf!r}", "PLD"
        )
    return gaussian_mu(inner)


def _merged(leaves: Leaves) -> Leaves:
    """Equal pairs' counts added; all plain Gaussians merged into one (μ = (Σ c μ²)^½, count 1: exact)."""
    counts: dict[DominatingPair, int] = {}
    gaussian = 0.0
    for count, pair in leaves:
        if isinstance(pair, GaussianPair):
            gaussian += count * pair.mu * pair.mu
        else:
            counts[pair] = counts.get(pair, 0) + count
    merged = [(count, pair) for pair, count in counts.items()]
    if gaussian > 0.0:
        merged.append((1, GaussianPair(math.sqrt(gaussian))))
    return merged
