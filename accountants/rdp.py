"""The Rényi-DP accountant: interprets :mod:`accountants.events` as Rényi curves, composes them, converts them.

Stateless: ``RdpAccountant(neighbouring).epsilon(event, delta)`` builds the curve from the event each time, so there
is no ledger that can drift from the answer (dp_accounting's accountants keep one).

Supported events and the result each maps to:

============================================  ===============================================================
event                                         Rényi curve ε(α)
============================================  ===============================================================
``GaussianEvent(z)``                          α/(2z²)
``LaplaceEvent(b)``                           Mironov 2017, Prop. 6 (exact; :mod:`~accountants.mechanisms.laplace`)
``PoissonSampledEvent(q, Gaussian…)``         Mironov–Talwar–Zhang 2019, exact (add/remove); under replace-one
                                              the weak triangle inequality through the dataset without the
                                              record (Mironov 2017, Prop. 11, p = 2):
                                              ((α − ½)/(α − 1))·ε(2α) + ε(2α − 1)
``SampledWithoutReplacementEvent(n, m, G…)``  Wang–Balle–Kasiviswanathan 2019, Thm. 27 (replace-one only)
``RandomAllocationEvent(t, k, Gaussian…)``    both directions of one-of-t allocation, certified from above
                                              (:mod:`~accountants.mechanisms.allocation_gaussian`: exact series at
                                              integer orders for remove, a gamma integral for add); k of t as its
                                              one-of-⌊t/k⌋ / ⌈t/k⌉ groups; add/remove only; numerical
                                              (:func:`rdp_is_costly`)
``MixtureOfGaussiansEvent(z, s, p)``          both directions of Σ pᵢN(sᵢ/z, 1) against N(0, 1), certified
                                              from above by closed-form pieces on a grid (:mod:`~accountants.
                                              mechanisms.mixture_gaussian`); shifts {0, s} as the Poisson-sampled
                                              Gaussian (exact); add/remove only; numerical (:func:`rdp_is_costly`)
``TruncatedPoissonSampledEvent(n, q, B, G)``  mixture of the Poisson curve and a replace-one curve at the cut
                                              (arXiv 2508.15089; add/remove only; see :meth:`RdpAccountant._truncated`)
``PureDpEvent(ε)``                            exact RDP of randomized response with ε, the worst ε-DP
                                              mechanism at every order (Kairouz, Oh & Viswanath 2015;
                                              :func:`~accountants.mechanisms.pure_composition.pure_dp_rdp`)
``RandomizedResponseEvent(p, k)``             exact RDP of k-ary randomized response (:func:`~accountants.
                                              mechanisms.pure_composition.randomized_response_rdp`)
``BoundedRangeEvent(η, ε)``                   min(RDP of ε-DP, αη²/8) (Cesar & Rogers 2021, Lemma 3.2)
``ZCdpEvent(ρ, ξ)``                           ξ + ρα         (:mod:`~accountants.mechanisms.pure`)
``SelfComposedEvent(e, k)``                   k·ε_e(α)
``ComposedEvent(e₁, …)``                      Σ ε_{eᵢ}(α)  (heterogeneous composition)
============================================  ===============================================================

The Gaussian inside a sampling event may be a (self-)composition of Gaussians; it is replaced by the single
Gaussian with the same total, multiplier (Σ zᵢ⁻²)^{−1/2}.

:meth:`RdpAccountant.epsilon` converts the curve on the order grid (refined continuously) and takes two more
certified bounds where the tree has them (:meth:`RdpAccountant.bounded`), reporting the smallest:

* **the zCDP envelope**, where every leaf's curve lies below ξᵢ + ρᵢα (Gaussian: ρ = 1/(2z²), exact; zCDP: as
  given; an ε-DP release: ρ = ε²/2, Bun & Steinke 2016, Prop. 1.4; η-bounded range: ρ = η²/8, Cesar & Rogers 2021):
  ξ + ρα with the sums, converted exactly over real α > 1 (no grid edge: a tiny ε needs orders near 10⁸); exact for
  trees of Gaussians and zCDP releases;
* **the pure-DP sum**, where every leaf is ε₀-DP (pure, randomized response, Laplace with 1/b, bounded range):
  Σ count·ε₀, the limit α → ∞ of the curve, which no finite order reaches (a single Laplace would otherwise be
  reported above its own ε₀).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Literal, get_args

import numpy as np

from . import validation as check
from .conversions import Conversion, delta_from_rdp, epsilon_for_linear_rdp, epsilon_from_rdp
from .errors import DpcalError, ParameterError
from .events import (
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
    ZCdpEvent,
    gaussian_mu,
    leaves,
    non_gaussian_leaf,
)
from .mechanisms import allocation_gaussian, mixture_gaussian, poisson_gaussian, sampled_wor_gaussian
from .mechanisms.laplace import laplace_rdp
from .mechanisms.pure_composition import bounded_range_rdp, pure_dp_rdp, randomized_response_rdp

Neighbouring = Literal["add-remove", "replace-one"]
StatedNeighbouring = Literal["add-remove", "replace-one", "zero-out"]
"""The relations an answer may state: the accountants' two, and zero-out (a record's data replaced by zeros — the
convention of matrix mechanisms, dp_accounting's REPLACE_SPECIAL), which a family states where its releases give
the same pairs of output distributions as add-remove and its plan is read under add-remove."""
NEIGHBOURING_RELATIONS: tuple[str, ...] = get_args(Neighbouring)

Curve = Callable[[np.ndarray], np.ndarray]
SampledEvent = (
    PoissonSampledEvent | SampledWithoutReplacementEvent | TruncatedPoissonSampledEvent | RandomAllocationEvent
)


class UnsupportedEventError(DpcalError, ValueError):
    """The accountant cannot interpret this event (under this neighbouring relation)."""

    def __init__(self, event: DpEvent, reason: str, accountant: str = "RDP") -> None:
        self.event = event
        self.reason = reason
        self.accountant = accountant
        super().__init__(f"{type(event).__name__} is not supported by the {accountant} accountant: {reason}")

    def __reduce__(self) -> tuple[type[UnsupportedEventError], tuple[DpEvent, str, str]]:
        # picklable with its fields (the service computes heavy answers in worker processes)
        return type(self), (self.event, self.reason, self.accountant)


class RdpAccountant:
    """Rényi-DP accountant for one neighbouring relation (``"add-remove"`` or ``"replace-one"``)."""

    def __init__(self, neighbouring: Neighbouring = "add-remove") -> None:
        if neighbouring not in NEIGHBOURING_RELATIONS:
            raise ParameterError.single(
                "neighbouring", "must be one of " + ", ".join(NEIGHBOURING_RELATIONS), value=neighbouring
            )
        self.neighbouring: Neighbouring = neighbouring

    def curve(self, event: DpEvent) -> Curve:
        """The event's total Rényi curve as a function of an array of orders (validated: finite, > 1)."""
        parts = self._parts(event, 1)

        def total(orders: np.ndarray) -> np.ndarray:
            alphas = check.orders("orders", orders)
            out = np.zeros_like(alphas)
            for count, part in parts:
                out += count * part(alphas)
            return out

        return total

    def rdp(self, event: DpEvent, orders: np.ndarray) -> np.ndarray:
        """ε(α) of ``event`` at each order."""
        return self.curve(event)(orders)

    def epsilon(
        self, event: DpEvent, delta: float, orders: np.ndarray | None = None, refine: bool = True
    ) -> Conversion:
        """Smallest certified ε at ``delta``: the improved conversion on the orders, or, with ``refine`` (continuous
        orders), the tree's zCDP envelope or pure-DP sum where smaller (module docstring); with the optimal order (∞
        for the pure-DP sum) and warnings. Without ``refine`` the answer is the grid's alone (as dp_accounting's)."""
        conversion = epsilon_from_rdp(self.curve(event), delta, orders, refine)
        return self.bounded(event, conversion, delta) if refine else conversion

    def bounded(self, event: DpEvent, conversion: Conversion, delta: float) -> Conversion:
        """``conversion`` (of ``event``'s curve at ``delta``), or the envelope's or the pure-DP sum's bound where
        smaller."""
        envelope = self.envelope(event)
        if envelope is not None:
            xi, rho = envelope
            if xi == 0.0 or delta * delta + math.expm1(-min(rho, 745.0)) <= 0.0:  # (the TV shortcut needs ξ = 0)
                value, order = epsilon_for_linear_rdp(rho, delta)
                if xi + value <= conversion.value:
                    conversion = Conversion(xi + value, order, conversion.orders, conversion.rdp, (), ZCDP_ROUTE)
        pure = self.pure_epsilon(event)
        if pure is not None and pure < conversion.value:
            conversion = Conversion(pure, math.inf, conversion.orders, conversion.rdp, (), PURE_ROUTE)
        return conversion

    def delta(
        self, event: DpEvent, epsilon: float, orders: np.ndarray | None = None, refine: bool = True
    ) -> Conversion:
        """Smallest certified δ at ``epsilon``, with the optimal order and warnings (0 at or above the pure-DP sum)."""
        pure = self.pure_epsilon(event)
        conversion = delta_from_rdp(self.curve(event), epsilon, orders, refine)
        if pure is not None and epsilon >= pure:
            return Conversion(0.0, math.inf, conversion.orders, conversion.rdp, (), PURE_ROUTE)
        return conversion

    def envelope(self, event: DpEvent) -> tuple[float, float] | None:
        """(ξ, ρ) with ε(α) ≤ ξ + ρα at every order for the whole tree, where every leaf has one (else None)."""
        xi = rho = 0.0
        for count, leaf in leaves(event):
            part = _leaf_envelope(leaf, self._leaf_pure_epsilon(leaf))
            if part is None:
                return None
            xi, rho = xi + count * part[0], rho + count * part[1]
        return xi, rho

    def pure_epsilon(self, event: DpEvent) -> float | None:
        """Σ count·ε₀ where every leaf is an ε₀-DP release (else None)."""
        total = 0.0
        for count, leaf in leaves(event):
            eps = self._leaf_pure_epsilon(leaf)
            if eps is None:
                return None
            total += count * eps
        return total

    def _leaf_pure_epsilon(self, leaf: DpEvent) -> float | None:
        """ε₀ of a release that is ε₀-DP (pure, randomized response, Laplace, bounded range, a Poisson-sampled
        Laplace), else None."""
        if isinstance(leaf, PoissonSampledEvent) and isinstance(leaf.event, LaplaceEvent):
            return self._sampled_laplace_epsilon(leaf.sampling_rate, leaf.event.noise_multiplier)
        return _leaf_pure_epsilon(leaf)

    # -- interpretation -------------------------------------------------------------------------------------

    def _parts(self, event: DpEvent, count: int) -> list[tuple[int, Curve]]:
        if isinstance(event, SelfComposedEvent):
            return self._parts(event.event, count * event.count)
        if isinstance(event, ComposedEvent):
            return [part for e in event.events for part in self._parts(e, count)]
        if isinstance(event, GaussianEvent):
            z = event.noise_multiplier
            return [(count, lambda a: a / (2.0 * z * z))]
        if isinstance(event, LaplaceEvent):
            scale = event.noise_multiplier
            return [(count, lambda a: laplace_rdp(scale, a))]
        if isinstance(event, PureDpEvent):
            eps = event.epsilon
            return [(count, lambda a: pure_dp_rdp(eps, a))]
        if isinstance(event, RandomizedResponseEvent):
            p, k = event.noise_parameter, event.num_buckets
            return [(count, lambda a: randomized_response_rdp(p, k, a))]
        if isinstance(event, BoundedRangeEvent):
            eta = event.bounded_range
            eps = eta if event.epsilon is None else event.epsilon
            return [(count, lambda a: np.minimum(pure_dp_rdp(eps, a), bounded_range_rdp(eta, a)))]
        if isinstance(event, ZCdpEvent):
            rho, xi = event.rho, event.xi
            return [(count, lambda a: _affine(xi, rho, a))]
        if isinstance(event, MixtureOfGaussiansEvent):
            return [(count, self._mixture(event))]
        return self._sampled_parts(event, count)

    def _mixture(self, event: MixtureOfGaussiansEvent) -> Curve:
        """Shifts {0, s} (or {s}): the Poisson-sampled (or plain) Gaussian it is, exactly as that event; otherwise
        the certified curve of :mod:`~accountants.mechanisms.mixture_gaussian` (both directions)."""
        if self.neighbouring != "add-remove":
            raise UnsupportedEventError(event, MixtureOfGaussiansEvent.RELATION)
        poisson = event.poisson_form()
        if poisson is not None:
            q, z = poisson
            if q == 1.0:
                return lambda a: a / (2.0 * z * z)
            return lambda a: poisson_gaussian.rdp_kernel(q, z, a)
        shifts, weights = event.components()
        return functools.partial(mixture_gaussian.rdp_kernel, shifts, weights)

    def _sampled_parts(self, event: DpEvent, count: int) -> list[tuple[int, Curve]]:
        """The curves of a release on a random part of the data (Poisson, truncated, without replacement, random
        allocation)."""
        if isinstance(event, PoissonSampledEvent) and isinstance(event.event, LaplaceEvent):
            sampled = self._sampled_laplace_epsilon(event.sampling_rate, event.event.noise_multiplier)
            return [(count, lambda a: pure_dp_rdp(sampled, a))]
        if isinstance(event, PoissonSampledEvent):
            q, z = event.sampling_rate, self._gaussian_multiplier(event)
            if self.neighbouring == "add-remove":
                return [(count, lambda a: poisson_gaussian.rdp_kernel(q, z, a))]
            return [(count, lambda a: _replace_one_by_triangle(q, z, a))]
        if isinstance(event, TruncatedPoissonSampledEvent):
            return [(count, self._truncated(event))]
        if isinstance(event, RandomAllocationEvent):
            return self._allocated(event, count)
        if isinstance(event, SampledWithoutReplacementEvent):
            if self.neighbouring != "replace-one":
                raise UnsupportedEventError(
                    event,
                    "sampling without replacement is accounted under replace-one neighbours only (the dataset "
                    "size is public; Wang, Balle & Kasiviswanathan 2019): use neighbouring='replace-one'",
                )
            gamma, z = event.sample_size / event.dataset_size, self._gaussian_multiplier(event)
            return [(count, lambda a: sampled_wor_gaussian.rdp_kernel(gamma, z, a))]
        raise UnsupportedEventError(event, "no Rényi curve is known for this event type")

    def _truncated(self, event: TruncatedPoissonSampledEvent) -> Curve:
        """The revealed-coin mixture of arXiv 2508.15089 (dp_accounting 0.6.0): with probability 1 − p no cut (the
        Poisson-subsampled Gaussian, MTZ19), with probability p a cut (a replace-one Poisson-sampled Gaussian at q′
        whose contributions have norm 2C, i.e. multiplier z/2). Revealing the coin only helps the adversary, and the
        Rényi moment of a revealed mixture is the mixture of the moments:
        ε(α) = log[(1 − p)e^{(α−1)ε₁(α)} + p·e^{(α−1)ε₂(α)}]/(α − 1), each εᵢ bounding both directions."""
        if self.neighbouring != "add-remove":
            raise UnsupportedEventError(
                event, "truncated Poisson sampling is accounted under add/remove neighbours only"
            )
        q, z = event.sampling_rate, self._gaussian_multiplier(event)
        cut, q_cut = event.truncation()

        def curve(a: np.ndarray) -> np.ndarray:
            plain = poisson_gaussian.rdp_kernel(q, z, a)
            if cut == 0.0:
                return plain
            displaced = _replace_one_by_triangle(q_cut, 0.5 * z, a)
            with np.errstate(over="ignore", invalid="ignore"):
                log_moment = np.logaddexp(math.log1p(-cut) + (a - 1.0) * plain, math.log(cut) + (a - 1.0) * displaced)
            return np.asarray(log_moment / (a - 1.0))

        return curve

    def _allocated(self, event: RandomAllocationEvent, count: int) -> list[tuple[int, Curve]]:
        """k of t as its one-of-t′ groups (:meth:`~accountants.events.RandomAllocationEvent.groups`), each the
        certified curve of :mod:`~accountants.mechanisms.allocation_gaussian` (both directions)."""
        if self.neighbouring != "add-remove":
            raise UnsupportedEventError(event, "random allocation is accounted under add/remove neighbours only")
        z = self._gaussian_multiplier(event)
        return [
            (count * groups, functools.partial(allocation_gaussian.rdp_kernel, z, steps))
            for groups, steps in event.groups()
        ]

    def _sampled_laplace_epsilon(self, q: float, scale: float) -> float:
        """The pure ε₁ of a Poisson-sampled Laplace release: the largest privacy loss of its dominating pairs
        (:mod:`accountants.pld.sampled`), log(1 + q(e^{1/b} − 1)) under add/remove (the remove direction; the add
        one's is smaller), log(1 − q + qe^{1/b}) − log(1 − q + qe^{−1/b}) under replace-one. An ε₁-DP release."""
        if q == 1.0:
            return (1.0 if self.neighbouring == "add-remove" else 2.0) / scale
        low = math.log1p(-q)
        top = float(np.logaddexp(low, math.log(q) + 1.0 / scale))
        if self.neighbouring == "add-remove":
            return top
        return top - float(np.logaddexp(low, math.log(q) - 1.0 / scale))

    def _gaussian_multiplier(self, event: SampledEvent) -> float:
        """Multiplier of the single Gaussian equivalent to the sampled (composition of) Gaussian(s)."""
        leaf = non_gaussian_leaf(event.event)
        if leaf is not None:
            raise UnsupportedEventError(
                event, f"the sampled event must be a Gaussian or a composition of Gaussians, not {leaf!r}"
            )
        return 1.0 / gaussian_mu(event.event)


def rdp_is_costly(event: DpEvent) -> bool:
    """Whether the Rényi curve of ``event`` is numerical work (a random allocation's or a mixture of Gaussians':
    tens to hundreds of milliseconds per curve, seconds for a calibration) rather than closed forms and series of
    milliseconds. Reads the tree only."""
    return any(
        isinstance(leaf, RandomAllocationEvent)
        or (isinstance(leaf, MixtureOfGaussiansEvent) and leaf.poisson_form() is None)
        for _, leaf in leaves(event)
    )


def _affine(xi: float, rho: float, orders: np.ndarray) -> np.ndarray:
    """ξ + ρα, ∞ where it overflows (a valid, if useless, bound)."""
    with np.errstate(over="ignore"):
        return np.asarray(xi + rho * orders)


ZCDP_ROUTE = (
    "the tree's zCDP envelope ξ + ρα (each leaf's: Gaussian 1/(2z²), ε-DP ε²/2, bounded range η²/8, zCDP as given), "
    "converted exactly over real orders"
)
PURE_ROUTE = "the sum of the releases' pure ε₀ (the Rényi curve's limit as α → ∞)"


def _leaf_envelope(leaf: DpEvent, pure: float | None) -> tuple[float, float] | None:
    """(ξ, ρ) of one release's zCDP envelope, where it has one (``pure``: its ε₀ where it is ε₀-DP)."""
    if isinstance(leaf, GaussianEvent):
        return 0.0, 0.5 / leaf.noise_multiplier / leaf.noise_multiplier  # (z² overflows past 1e154)
    if isinstance(leaf, MixtureOfGaussiansEvent):
        form = leaf.poisson_form()
        if form is not None and form[0] == 1.0:  # one shift: a Gaussian at z/s
            return 0.0, 0.5 / form[1] / form[1]
        return None
    if isinstance(leaf, ZCdpEvent):
        return leaf.xi, leaf.rho
    if isinstance(leaf, BoundedRangeEvent):
        return 0.0, min(leaf.bounded_range**2 / 8.0, (pure or 0.0) ** 2 / 2.0)
    return None if pure is None else (0.0, pure * pure / 2.0)


def _leaf_pure_epsilon(leaf: DpEvent) -> float | None:
    """ε₀ of a release that is ε₀-DP (pure, randomized response, Laplace, bounded range), else None."""
    if isinstance(leaf, PureDpEvent | RandomizedResponseEvent):
        return leaf.epsilon
    if isinstance(leaf, LaplaceEvent):
        return 1.0 / leaf.noise_multiplier
    if isinstance(leaf, BoundedRangeEvent):
        return leaf.bounded_range if leaf.epsilon is None else leaf.epsilon
    return None


def _replace_one_by_triangle(q: float, z: float, orders: np.ndarray) -> np.ndarray:
    """Replace-one RDP of the Poisson-subsampled Gaussian from the add/remove curve (Mironov 2017, Prop. 11, p = 2).

    D_α(P‖R) ≤ ((α − ½)/(α − 1))·D_{2α}(P‖Q) + D_{2α−1}(Q‖R), with Q the output on the dataset without the
    replaced record; both legs are add/remove pairs, bounded in either direction by the MTZ19 curve. Conservative;
    capped by the unsampled Gaussian with sensitivity 2C (coupling by index, joint quasi-convexity of D_α).
    """
    alphas = np.asarray(orders, dtype=float)
    legs = poisson_gaussian.rdp_kernel(q, z, np.concatenate((2.0 * alphas, 2.0 * alphas - 1.0)))
    first, second = legs[: alphas.size], legs[alphas.size :]
    triangle = (alphas - 0.5) / (alphas - 1.0) * first + second
    # nor worse than the Gaussian itself with the replace-one sensitivity 2C (std z·C): α·(2C)²/(2(zC)²) = 2α/z²
    return np.asarray(np.minimum(triangle, 2.0 * alphas / (z * z)))
