"""Immutable descriptions of what a private algorithm releases (in the style of dp_accounting's ``DpEvent``).

Events only *describe* mechanisms; accountants (:mod:`accountants.rdp`, :mod:`accountants.pld`,
:mod:`accountants.gdp`) interpret them.
Unlike dp_accounting, every event validates its fields on construction, so a malformed event cannot exist.

An event that requests may write declares its :class:`Syntax` once, beside its fields: its ``type`` name in the JSON
grammar of ``/v1/compose``, one sentence, and its fields. The grammar (:mod:`accountants.pipeline.grammar`) reads it
and the HTTP schema documents it from that declaration alone (:data:`DECLARED`); an event without one is internal.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from scipy import stats

from . import validation as check
from .errors import FieldIssue, ParameterError


class FieldKind(enum.Enum):
    """What a field of the JSON grammar holds (and how the HTTP schema documents it)."""

    NUMBER = "number"
    INTEGER = "integer"
    EVENT = "event"
    EVENTS = "events"
    NUMBERS = "numbers"
    STRING = "string"
    OBJECT = "object"


@dataclass(frozen=True)
class SyntaxField:
    """A field of an event's JSON form: its JSON ``name``, what it holds, the event's ``attribute`` it sets (default:
    the same name) and, for integers, the smallest value the schema documents. Values are checked by the event."""

    name: str
    kind: FieldKind
    attribute: str | None = None
    minimum: int | None = None

    @property
    def target(self) -> str:
        return self.attribute or self.name


@dataclass(frozen=True)
class Syntax:
    """An event's JSON form: ``{"type": name, <fields>}`` (every field required), described in one sentence."""

    name: str
    description: str
    fields: tuple[SyntaxField, ...]

    def field_named(self, attribute: str) -> str:
        """The JSON name of the field that sets ``attribute`` (the attribute itself where none does)."""
        return next((f.name for f in self.fields if f.target == attribute), attribute)


def number(name: str) -> SyntaxField:
    return SyntaxField(name, FieldKind.NUMBER)


def numbers(name: str) -> SyntaxField:
    return SyntaxField(name, FieldKind.NUMBERS)


def integer(name: str, minimum: int | None = None) -> SyntaxField:
    return SyntaxField(name, FieldKind.INTEGER, minimum=minimum)


MECHANISM = SyntaxField("mechanism", FieldKind.EVENT, attribute="event")
"""The inner event of a sampled release, written ``mechanism``."""

DECLARED: dict[str, type[DpEvent]] = {}
"""The events a request may write, by their grammar ``type``, in the order they are defined."""


class DpEvent:
    """Base class of all events. A subclass with a :class:`Syntax` in ``syntax`` is readable from JSON."""

    syntax: ClassVar[Syntax | None] = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        syntax = cls.__dict__.get("syntax")
        if syntax is not None:
            if syntax.name in DECLARED:
                raise TypeError(f"two events declare the grammar type {syntax.name!r}")
            DECLARED[syntax.name] = cls


@dataclass(frozen=True)
class GaussianEvent(DpEvent):
    """One Gaussian release; ``noise_multiplier`` z = noise std / L2 sensitivity under the neighbouring relation
    in force (for a clipped sum: C under add/remove-one, 2C under replace-one)."""

    syntax = Syntax(
        "gaussian", "One Gaussian release; noise_multiplier = std / L2 sensitivity.", (number("noise_multiplier"),)
    )

    noise_multiplier: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", check.noise_multiplier("noise_multiplier", self.noise_multiplier))


@dataclass(frozen=True)
class LaplaceEvent(DpEvent):
    """One Laplace release; ``noise_multiplier`` b = noise scale / L1 sensitivity under the neighbouring relation in
    force (the release is (1/b)-DP)."""

    syntax = Syntax(
        "laplace", "One Laplace release; noise_multiplier = scale / L1 sensitivity.", (number("noise_multiplier"),)
    )

    noise_multiplier: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", check.noise_multiplier("noise_multiplier", self.noise_multiplier))


@dataclass(frozen=True)
class PoissonSampledEvent(DpEvent):
    """Each record is included independently with probability ``sampling_rate``; ``event`` runs on the sample.

    The inner Gaussian's (or Laplace's) multiplier is relative to the **add/remove-one** sensitivity of the summed
    contributions (the clip norm C for DP-SGD), whichever neighbouring relation the accountant uses.
    """

    syntax = Syntax(
        "poisson-sampled",
        "Each record included independently with probability sampling_rate; mechanism runs on the sample.",
        (number("sampling_rate"), MECHANISM),
    )

    sampling_rate: float
    event: DpEvent

    def __post_init__(self) -> None:
        object.__setattr__(self, "sampling_rate", check.probability("sampling_rate", self.sampling_rate))
        _require_event("event", self.event)


@dataclass(frozen=True)
class TruncatedPoissonSampledEvent(DpEvent):
    """Poisson sampling with rate ``sampling_rate`` from ``dataset_size`` records, the sample cut to a uniformly random
    subset of ``max_batch_size`` records where it is larger; ``event`` (a Gaussian, multiplier relative to the
    add/remove sensitivity, as in :class:`PoissonSampledEvent`) runs on the batch. dp_accounting 0.6.0's
    ``TruncatedSubsampledGaussianDpEvent`` (arXiv 2508.15089); accounted under add/remove neighbours."""

    syntax = Syntax(
        "truncated-poisson-sampled",
        "Poisson sampling at sampling_rate from dataset_size records, the batch cut to a uniformly random "
        "max_batch_size records where larger (add-remove neighbours only; mechanism: a Gaussian).",
        (integer("dataset_size"), number("sampling_rate"), integer("max_batch_size"), MECHANISM),
    )

    dataset_size: int
    sampling_rate: float
    max_batch_size: int
    event: DpEvent

    def __post_init__(self) -> None:
        n = check.positive_int("dataset_size", self.dataset_size)
        object.__setattr__(self, "dataset_size", n)
        object.__setattr__(self, "sampling_rate", check.probability("sampling_rate", self.sampling_rate))
        object.__setattr__(self, "max_batch_size", check.positive_int("max_batch_size", self.max_batch_size))
        _require_event("event", self.event)

    def truncation(self) -> tuple[float, float]:
        """(p, q′): the probability that the batch is cut given the record is sampled, P(Bin(n − 1, q) ≥ B), and the
        record's inclusion probability given a cut, P(Bin(n, q) > B)·B/(p·n) (arXiv 2508.15089; dp_accounting
        0.6.0's ``from_truncated_subsampled_gaussian_mechanism``). p = 0 where B ≥ n."""
        n, q, b = self.dataset_size, self.sampling_rate, self.max_batch_size
        cut = float(stats.binom.sf(b - 1, n - 1, q)) if b <= n - 1 else 0.0
        if cut <= 0.0:
            return 0.0, 0.0
        return cut, min(1.0, float(stats.binom.sf(b, n, q)) * b / (cut * n))


@dataclass(frozen=True)
class SampledWithoutReplacementEvent(DpEvent):
    """A uniformly random subset of exactly ``sample_size`` of ``dataset_size`` records; ``event`` runs on it.

    Accounted under replace-one neighbours only (Wang, Balle & Kasiviswanathan 2019); the inner Gaussian's
    multiplier is relative to the **replace-one** sensitivity (2C for a clipped sum).
    """

    syntax = Syntax(
        "sampled-without-replacement",
        "A uniform subset of sample_size of dataset_size records (replace-one neighbours only).",
        (integer("dataset_size"), integer("sample_size"), MECHANISM),
    )

    dataset_size: int
    sample_size: int
    event: DpEvent

    def __post_init__(self) -> None:
        n = check.positive_int("dataset_size", self.dataset_size)
        m = check.positive_int("sample_size", self.sample_size, maximum=n)
        object.__setattr__(self, "dataset_size", n)
        object.__setattr__(self, "sample_size", m)
        _require_event("event", self.event)


@dataclass(frozen=True)
class SampledWithReplacementEvent(DpEvent):
    """``sample_size`` draws with replacement from ``dataset_size`` records (a record may be drawn up to
    ``sample_size`` times); ``event`` runs on the batch. No accountant of dpcal reads it yet: each says so, and the
    plan it belongs to has only its paper's statement."""

    dataset_size: int
    sample_size: int
    event: DpEvent

    def __post_init__(self) -> None:
        object.__setattr__(self, "dataset_size", check.positive_int("dataset_size", self.dataset_size))
        object.__setattr__(self, "sample_size", check.positive_int("sample_size", self.sample_size))
        _require_event("event", self.event)


MAX_ALLOCATION_STEPS = 1_000_000
"""Most steps of one random allocation (its accounting works in about log₂ t convolutions)."""


@dataclass(frozen=True)
class RandomAllocationEvent(DpEvent):
    """Random allocation ("balls in bins"): ``event`` (a Gaussian, multiplier relative to the add/remove sensitivity
    of the summed contributions, as in :class:`PoissonSampledEvent`) is released in each of ``num_steps`` steps, and
    each record takes part in ``num_selected`` of them, chosen uniformly and independently of the other records
    (Feldman & Shenfeld 2025, arXiv 2502.08202). One event is one epoch of ``num_steps`` releases; accounted under
    add/remove neighbours."""

    syntax = Syntax(
        "random-allocation",
        "A Gaussian released in each of num_steps steps, each record in num_selected of them chosen uniformly "
        "(balls in bins; one epoch; add-remove neighbours; mechanism: a Gaussian).",
        (integer("num_steps", minimum=1), integer("num_selected", minimum=1), MECHANISM),
    )

    num_steps: int
    num_selected: int
    event: DpEvent

    def __post_init__(self) -> None:
        t = check.positive_int("num_steps", self.num_steps, maximum=MAX_ALLOCATION_STEPS)
        object.__setattr__(self, "num_steps", t)
        object.__setattr__(self, "num_selected", check.positive_int("num_selected", self.num_selected, maximum=t))
        _require_event("event", self.event)

    def groups(self) -> tuple[tuple[int, int], ...]:
        """(count, steps) of the one-of-``steps`` allocations a k-of-t allocation is accounted as: k − r of ⌊t/k⌋
        steps and r = t mod k of ⌈t/k⌉, a partition of the t steps in which each group receives the record once
        (Feldman & Shenfeld 2025, the decomposition of k-out-of-t allocation)."""
        short, longer = divmod(self.num_steps, self.num_selected)
        return ((self.num_selected - longer, short),) + (((longer, short + 1),) if longer else ())


MAX_MIXTURE_COMPONENTS = 1001
"""Most components of one mixture of Gaussians (a user with up to 1,000 examples, and none)."""
MAX_MIXTURE_SHIFT = 1e100
"""Largest sensitivity of a mixture in noise standard deviations (its square must stay far inside the float range)."""


@dataclass(frozen=True)
class MixtureOfGaussiansEvent(DpEvent):
    """A Gaussian release whose sensitivity is random: ``sensitivities[i]`` with probability ``probabilities[i]``
    (dp_accounting's ``MixtureOfGaussiansDpEvent``; Choquette-Choo, Ganesh, Steinke & Thakurta 2024, arXiv
    2310.15526). Without the record (or user) the output is N(0, z²); with it, Σᵢ pᵢ N(sᵢ, z²), ``noise_multiplier``
    z the noise std in the units the sensitivities are measured in (e.g. the clip norm). A vector release whose
    random shift has norm sᵢ is dominated by this scalar one (arXiv 2310.15526, Cor. 4.7). DP-SGD with Poisson
    sampling of examples and a user of K examples is the mixture of Binomial(K, q) counts, each moving the sum by at
    most count·C (Ganesh 2024, arXiv 2401.10294). Accounted under add/remove neighbours, both directions."""

    syntax = Syntax(
        "mixture-of-gaussians",
        "A Gaussian release (noise_multiplier = std in the sensitivities' units) whose sensitivity is "
        "sensitivities[i] with probability probabilities[i] (add-remove neighbours).",
        (number("noise_multiplier"), numbers("sensitivities"), numbers("probabilities")),
    )

    noise_multiplier: float
    sensitivities: tuple[float, ...]
    probabilities: tuple[float, ...]

    RELATION: ClassVar[str] = (
        "a mixture of Gaussians is the law of adding or removing a record (or a user) whose sensitivity is random: "
        "it is accounted under add/remove neighbours only"
    )
    """Why every accountant refuses it under replace-one (one sentence, said by each)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", check.noise_multiplier("noise_multiplier", self.noise_multiplier))
        sens = _numbers("sensitivities", self.sensitivities, check.non_negative)
        probs = _numbers("probabilities", self.probabilities, _mass)
        if len(probs) != len(sens):
            raise ParameterError.single(
                "probabilities",
                f"must have one probability per sensitivity ({len(sens)})",
                f"a list of {len(sens)} numbers",
                len(probs),
            )
        total = math.fsum(probs)
        if abs(total - 1.0) > 1e-9:
            raise ParameterError.single("probabilities", "must add up to 1 (within 1e-9)", "a sum of 1", total)
        if not any(s > 0.0 and p > 0.0 for s, p in zip(sens, probs, strict=True)):
            raise ParameterError.single(
                "sensitivities",
                "must give a positive sensitivity positive probability (else nothing is released)",
                "some sensitivities[i] > 0 with probabilities[i] > 0",
                list(sens),
            )
        smallest = min((x for x in sens if x > 0.0), default=1.0)
        if not smallest / self.noise_multiplier >= 1.0 / MAX_MIXTURE_SHIFT:
            raise ParameterError.single(
                "sensitivities",
                f"must be 0 or at least {1.0 / MAX_MIXTURE_SHIFT:g} times noise_multiplier (a smaller shift is lost "
                "in the noise's floating point)",
                f"0 or >= {1.0 / MAX_MIXTURE_SHIFT:g}·noise_multiplier",
                smallest,
            )
        top = max(sens)
        if not top / self.noise_multiplier <= MAX_MIXTURE_SHIFT:
            raise ParameterError.single(
                "sensitivities",
                f"must be at most {MAX_MIXTURE_SHIFT:g} times noise_multiplier (a shift of more noise standard "
                "deviations releases the record outright)",
                f"<= {MAX_MIXTURE_SHIFT:g}·noise_multiplier",
                top,
            )
        object.__setattr__(self, "sensitivities", sens)
        object.__setattr__(self, "probabilities", probs)

    def components(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(μ, w): the distinct shifts μ = s/z in increasing order and their probabilities (normalised to add up to
        1; components of zero probability dropped, equal sensitivities merged) — the mixture in noise units."""
        merged: dict[float, float] = {}
        for s, p in zip(self.sensitivities, self.probabilities, strict=True):
            if p > 0.0:
                merged[s] = merged.get(s, 0.0) + p
        total = math.fsum(merged.values())
        shifts = sorted(merged)
        return tuple(s / self.noise_multiplier for s in shifts), tuple(merged[s] / total for s in shifts)

    def poisson_form(self) -> tuple[float, float] | None:
        """(q, z′) where the mixture is a Poisson-sampled Gaussian — shifts {0, s} (q the probability of s) or {s}
        (q = 1) — with multiplier z′ = z/s; else None. The accountants read such a mixture as that event."""
        mus, weights = self.components()
        if len(mus) == 1:
            return 1.0, 1.0 / mus[0]
        if len(mus) == 2 and mus[0] == 0.0:
            return weights[1], 1.0 / mus[1]
        return None


def _mass(name: str, value: object) -> float:
    x = check.non_negative(name, value)
    if x > 1.0:
        raise ParameterError.single(name, "must be in [0, 1]", "in [0, 1]", value)
    return x


def _numbers(name: str, values: object, each: Callable[[str, object], float]) -> tuple[float, ...]:
    """A non-empty list of at most :data:`MAX_MIXTURE_COMPONENTS` numbers, each checked by ``each``."""
    allowed = f"a list of 1 to {MAX_MIXTURE_COMPONENTS} numbers"
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise ParameterError.single(name, f"must be {allowed}", allowed, values)
    if not 1 <= len(values) <= MAX_MIXTURE_COMPONENTS:
        raise ParameterError.single(name, f"must be {allowed}", allowed, len(values))
    checked = []
    for i, value in enumerate(values):
        try:
            checked.append(each(name, value))
        except ParameterError as error:
            raise ParameterError([FieldIssue((name, i), *_issue_text(error))]) from None
    return tuple(checked)


def _issue_text(error: ParameterError) -> tuple[str, str | None, object]:
    issue = error.issues[0]
    return issue.message, issue.allowed, issue.value


@dataclass(frozen=True)
class SelfComposedEvent(DpEvent):
    """``event`` run ``count`` times (adaptively)."""

    event: DpEvent
    count: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "count", check.positive_int("count", self.count))
        _require_event("event", self.event)


@dataclass(frozen=True)
class ComposedEvent(DpEvent):
    """Several (possibly different) events run in sequence (heterogeneous composition)."""

    events: tuple[DpEvent, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "events", tuple(self.events))
        if not self.events:
            raise ParameterError.single("events", "must contain at least one event")
        for k, e in enumerate(self.events):
            _require_event(f"events.{k}", e)


@dataclass(frozen=True)
class PureDpEvent(DpEvent):
    """A mechanism that is ε-DP (pure differential privacy)."""

    syntax = Syntax("pure", "Any ε-DP release.", (number("epsilon"),))

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check.non_negative("epsilon", self.epsilon))


@dataclass(frozen=True)
class RandomizedResponseEvent(DpEvent):
    """k-ary randomized response (dp_accounting's ``RandomizedResponseDpEvent``): with probability
    ``noise_parameter`` p the output is a uniformly random one of ``num_buckets`` k values, else the true value.

    It is ε-DP with ε = log(1 + k(1 − p)/p) (the ratio (1 − p + p/k)/(p/k)) under a change of one record's value;
    the accountants treat it as that pure-ε release (exact for k = 2, an upper bound for k > 2)."""

    syntax = Syntax(
        "randomized-response",
        "k-ary randomized response: with probability noise_parameter a uniformly random bucket, else the true one.",
        (number("noise_parameter"), integer("num_buckets", minimum=2)),
    )

    noise_parameter: float
    num_buckets: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_parameter", check.probability("noise_parameter", self.noise_parameter))
        object.__setattr__(self, "num_buckets", check.positive_int("num_buckets", self.num_buckets))
        if self.num_buckets < 2:
            raise ParameterError.single("num_buckets", "must be >= 2", ">= 2", self.num_buckets)

    @property
    def epsilon(self) -> float:
        p, k = self.noise_parameter, self.num_buckets
        return math.log1p(k * (1.0 - p) / p)


@dataclass(frozen=True)
class BoundedRangeEvent(DpEvent):
    """A mechanism with ``bounded_range`` η (its privacy loss lies in an interval of width η for every neighbouring
    pair, e.g. an exponential mechanism; Durfee & Rogers 2019) that is also ``epsilon``-DP (η-bounded range implies
    η-DP; a mixture such as Algorithm 5 of González, Guzmán & Paquette 2024 can be ε₀-DP with range 2ε₀). ``epsilon``
    defaults to η."""

    bounded_range: float
    epsilon: float | None = None

    def __post_init__(self) -> None:
        eta = check.non_negative("bounded_range", self.bounded_range)
        object.__setattr__(self, "bounded_range", eta)
        eps = eta if self.epsilon is None else check.non_negative("epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", min(eps, eta))


@dataclass(frozen=True)
class ZCdpEvent(DpEvent):
    """A mechanism that is (ξ, ρ)-zCDP: RDP ε(α) ≤ ξ + ρα for every α > 1 (Bun & Steinke 2016)."""

    syntax = Syntax("zcdp", "Any ρ-zCDP release.", (number("rho"),))

    rho: float
    xi: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", check.non_negative("rho", self.rho))
        object.__setattr__(self, "xi", check.non_negative("xi", self.xi))


def leaves(event: DpEvent, count: int = 1) -> list[tuple[int, DpEvent]]:
    """The non-composition events of a tree, each with how many times it runs (compositions flattened)."""
    if isinstance(event, SelfComposedEvent):
        return leaves(event.event, count * event.count)
    if isinstance(event, ComposedEvent):
        return [item for e in event.events for item in leaves(e, count)]
    return [(count, event)]


def release_count(event: DpEvent) -> int:
    """How many releases the tree makes (a composition's leaves, each counted as often as it runs)."""
    return sum(count for count, _ in leaves(event))


def prefix(event: DpEvent, releases: int) -> DpEvent | None:
    """The tree cut after its first ``releases`` releases in execution order (children of a sequence in order, the
    runs of a repeated event one after the other); None for zero releases. ε over training is the ε of prefixes."""
    if releases <= 0:
        return None
    if isinstance(event, SelfComposedEvent):
        if not isinstance(event.event, SelfComposedEvent | ComposedEvent):  # runs of one release (DP-SGD's steps)
            return event.event if releases == 1 else SelfComposedEvent(event.event, min(releases, event.count))
        size = release_count(event.event)
        whole, rest = divmod(min(releases, size * event.count), size)
        parts: list[DpEvent] = []
        if whole:
            parts.append(event.event if whole == 1 else SelfComposedEvent(event.event, whole))
        tail = prefix(event.event, rest)
        if tail is not None:
            parts.append(tail)
        return parts[0] if len(parts) == 1 else ComposedEvent(tuple(parts))
    if isinstance(event, ComposedEvent):
        kept: list[DpEvent] = []
        left = releases
        for inner in event.events:
            if left <= 0:
                break
            part = prefix(inner, left)
            if part is not None:
                kept.append(part)
            left -= release_count(inner)
        return kept[0] if len(kept) == 1 else ComposedEvent(tuple(kept))
    return event


def non_gaussian_leaf(event: DpEvent) -> DpEvent | None:
    """The first leaf of the tree that is not a Gaussian release, or None for a tree of Gaussians."""
    return next((leaf for _, leaf in leaves(event) if not isinstance(leaf, GaussianEvent)), None)


def gaussian_mu(event: DpEvent) -> float:
    """μ = (Σ count/z²)^½ of a tree of Gaussian releases (check :func:`non_gaussian_leaf` first): the single
    Gaussian with multiplier 1/μ releases as much (Dong, Roth & Su 2022, Cor. 3.3)."""
    total = sum(count / leaf.noise_multiplier / leaf.noise_multiplier for count, leaf in leaves(event))  # type: ignore[attr-defined]  # Gaussian leaves (z² overflows past 1e154)
    return math.sqrt(total)


def _require_event(name: str, value: object) -> None:
    if not isinstance(value, DpEvent):
        raise ParameterError.single(name, "must be a DpEvent", "a DpEvent instance", type(value).__name__)
