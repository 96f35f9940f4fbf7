"""The JSON event grammar of ``/v1/compose``: a tree of objects with a ``type``, read into a
:class:`~accountants.events.DpEvent` tree with every error naming its JSON path.

=================================  ==========================================================================
``type``                           fields
=================================  ==========================================================================
``gaussian``                       ``noise_multiplier`` z: noise std / L2 sensitivity
``laplace``                        ``noise_multiplier`` b: noise scale / L1 sensitivity
``randomized-response``            ``noise_parameter`` p ∈ (0, 1], ``num_buckets`` k ≥ 2
``pure``                           ``epsilon`` ε ≥ 0 (any ε-DP release)
``zcdp``                           ``rho`` ρ ≥ 0 (any ρ-zCDP release)
``poisson-sampled``                ``sampling_rate`` q ∈ (0, 1], ``mechanism``
``sampled-without-replacement``    ``dataset_size`` n, ``sample_size`` m ≤ n, ``mechanism``
``truncated-poisson-sampled``      ``dataset_size`` n, ``sampling_rate`` q, ``max_batch_size`` B, ``mechanism`` (a
                                   Gaussian: Poisson sampling, the batch cut to B; add-remove only)
``shuffled``, ``balls-in-bins``    ``epochs`` E, ``mechanism``: a loader that puts each record in exactly one batch
                                   per epoch; accounted as E runs of ``mechanism`` (no amplification claimed)
``repeated``                       ``count`` k, ``mechanism`` (run k times, adaptively)
``sequence``                       ``mechanisms``: a list of events, run in order
``algorithm``                      ``algorithm`` (a registered id), ``params``: that family's mechanism plan
=================================  ==========================================================================

A tree is bounded: at most :data:`MAX_DEPTH` levels, :data:`MAX_NODES` nodes and :data:`MAX_RELEASES` releases in
all; beyond, the error names the limit. An ``algorithm`` node is the family's plan at its parameters (noise
included) and δ; a family with a ``neighbouring`` parameter gets the composition's relation unless it names one,
and a plan under another relation than the composition's is refused (guarantees under different relations do not
compose).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .. import validation as check
from ..errors import FieldIssue, ParameterError, UnknownAlgorithmError
from ..events import (
    ComposedEvent,
    DpEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSampledEvent,
    PureDpEvent,
    RandomizedResponseEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    TruncatedPoissonSampledEvent,
    ZCdpEvent,
    release_count,
)
from ..rdp import Neighbouring

MAX_DEPTH = 16
"""Most levels of nesting in a tree."""
MAX_NODES = 256
"""Most nodes (objects with a ``type``) in a tree."""
MAX_RELEASES = 10**9
"""Most releases a tree may make in all (counts multiplied through)."""

Path = tuple[str | int, ...]

FIELDS: Mapping[str, tuple[str, ...]] = {
    "gaussian": ("noise_multiplier",),
    "laplace": ("noise_multiplier",),
    "randomized-response": ("noise_parameter", "num_buckets"),
    "pure": ("epsilon",),
    "zcdp": ("rho",),
    "poisson-sampled": ("sampling_rate", "mechanism"),
    "sampled-without-replacement": ("dataset_size", "sample_size", "mechanism"),
    "truncated-poisson-sampled": ("dataset_size", "sampling_rate", "max_batch_size", "mechanism"),
    "shuffled": ("epochs", "mechanism"),
    "balls-in-bins": ("epochs", "mechanism"),
    "repeated": ("count", "mechanism"),
    "sequence": ("mechanisms",),
    "algorithm": ("algorithm", "params"),
}
"""Every node type and its fields (all required; ``params`` of an algorithm defaults to {})."""
TYPES = tuple(FIELDS)


@dataclass(frozen=True)
class AlgorithmNode:
    """An ``algorithm`` node as read: where it is, the family, its plan's description and δ spent outside it."""

    path: Path
    algorithm: str
    releases: int
    reserved_delta: float
    description: str


@dataclass(frozen=True)
class Tree:
    """A read tree: the event, the δ its algorithm nodes spend outside their releases, and those nodes."""

    event: DpEvent
    reserved_delta: float
    algorithms: tuple[AlgorithmNode, ...]
    notes: tuple[str, ...] = ()
    """What the reader noticed that the answer must say (e.g. a loader accounted without amplification)."""

    @property
    def releases(self) -> int:
        return release_count(self.event)


def read_tree(tree: object, delta: float, neighbouring: Neighbouring, root: Path = ("mechanism",)) -> Tree:
    """The event tree of the JSON value ``tree``; :class:`ParameterError` naming the path of every problem."""
    reader = _Reader(delta, neighbouring)
    event = reader.node(tree, root, 1, 1)
    return Tree(event, reader.reserved_delta, tuple(reader.algorithms), tuple(dict.fromkeys(reader.notes)))


class _Reader:
    def __init__(self, delta: float, neighbouring: Neighbouring) -> None:
        self.delta, self.neighbouring = delta, neighbouring
        self.nodes = 0
        self.reserved_delta = 0.0
        self.algorithms: list[AlgorithmNode] = []
        self.notes: list[str] = []

    def node(self, value: object, path: Path, depth: int, multiplicity: int) -> DpEvent:
        """One node at ``path``; ``multiplicity``: how often it runs (the counts above it multiplied)."""
        if depth > MAX_DEPTH:
            raise _issue(path, f"nests deeper than the limit of {MAX_DEPTH} levels", f"at most {MAX_DEPTH} levels")
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _issue(path, f"makes the tree larger than the limit of {MAX_NODES} nodes", f"at most {MAX_NODES}")
        if not isinstance(value, Mapping):
            raise _issue(path, "must be an event: a JSON object with a 'type'", "an object with 'type'", value)
        kind = value.get("type")
        if not isinstance(kind, str) or kind not in FIELDS:
            message = "is required" if kind is None else f"unknown event type {kind!r}"
            raise _issue((*path, "type"), message, "one of: " + ", ".join(TYPES), kind)
        allowed = FIELDS[kind]
        extra = [k for k in value if k != "type" and k not in allowed]
        if extra:
            raise _issue((*path, extra[0]), f"is not a field of a {kind} event", "fields: " + ", ".join(allowed))
        missing = [k for k in allowed if k not in value and k != "params"]
        if missing:
            raise _issue((*path, missing[0]), f"is required for a {kind} event", None)
        event = self._event(kind, value, path, depth, multiplicity)
        if multiplicity * release_count(event) > MAX_RELEASES:
            raise _issue(path, f"makes more releases than the limit of {MAX_RELEASES:.0e}", f"<= {MAX_RELEASES}")
        return event

    def _event(self, kind: str, v: Mapping[str, Any], path: Path, depth: int, multiplicity: int) -> DpEvent:
        if kind == "gaussian":
            return _located(path, lambda: GaussianEvent(v["noise_multiplier"]))
        if kind == "laplace":
            return _located(path, lambda: LaplaceEvent(v["noise_multiplier"]))
        if kind == "randomized-response":
            return _located(path, lambda: RandomizedResponseEvent(v["noise_parameter"], v["num_buckets"]))
        if kind == "pure":
            return _located(path, lambda: PureDpEvent(v["epsilon"]))
        if kind == "zcdp":
            return _located(path, lambda: ZCdpEvent(v["rho"]))
        if kind == "poisson-sampled":
            rate = _located(path, lambda: check.probability("sampling_rate", v["sampling_rate"]))
            inner = self.node(v["mechanism"], (*path, "mechanism"), depth + 1, multiplicity)
            return PoissonSampledEvent(rate, inner)
        if kind == "sampled-without-replacement":
            n = _located(path, lambda: check.positive_int("dataset_size", v["dataset_size"]))
            m = _located(path, lambda: check.positive_int("sample_size", v["sample_size"], maximum=n))
            inner = self.node(v["mechanism"], (*path, "mechanism"), depth + 1, multiplicity)
            return SampledWithoutReplacementEvent(n, m, inner)
        if kind == "truncated-poisson-sampled":
            n = _located(path, lambda: check.positive_int("dataset_size", v["dataset_size"]))
            rate = _located(path, lambda: check.probability("sampling_rate", v["sampling_rate"]))
            cap = _located(path, lambda: check.positive_int("max_batch_size", v["max_batch_size"]))
            inner = self.node(v["mechanism"], (*path, "mechanism"), depth + 1, multiplicity)
            return _located(path, lambda: TruncatedPoissonSampledEvent(n, rate, cap, inner))
        if kind in ("shuffled", "balls-in-bins"):
            epochs = _located(path, lambda: check.positive_int("epochs", v["epochs"], maximum=MAX_RELEASES))
            inner = self.node(v["mechanism"], (*path, "mechanism"), depth + 1, multiplicity * epochs)
            self.notes.append(
                f"{pointer_path(path)} ({kind}): each record is in exactly one batch per epoch, accounted as one run "
                "of its mechanism per epoch; no amplification by the loader's randomness is claimed"
            )
            return inner if epochs == 1 else SelfComposedEvent(inner, epochs)
        if kind == "repeated":
            count = _located(path, lambda: check.positive_int("count", v["count"], maximum=MAX_RELEASES))
            inner = self.node(v["mechanism"], (*path, "mechanism"), depth + 1, multiplicity * count)
            return inner if count == 1 else SelfComposedEvent(inner, count)
        if kind == "sequence":
            return self._sequence(v["mechanisms"], (*path, "mechanisms"), depth, multiplicity)
        return self._algorithm(v, path, multiplicity)

    def _sequence(self, items: object, path: Path, depth: int, multiplicity: int) -> DpEvent:
        if not isinstance(items, Sequence) or isinstance(items, str | bytes) or not items:
            raise _issue(path, "must be a non-empty list of events", "a list of 1 or more events", items)
        events = [self.node(item, (*path, k), depth + 1, multiplicity) for k, item in enumerate(items)]
        return events[0] if len(events) == 1 else ComposedEvent(tuple(events))

    def _algorithm(self, v: Mapping[str, Any], path: Path, multiplicity: int) -> DpEvent:
        from ..registry import get  # the registry imports every family: only where an algorithm node is read

        name = v["algorithm"]
        try:
            family = get(name) if isinstance(name, str) else get(repr(name))
        except UnknownAlgorithmError as error:
            raise _issue((*path, "algorithm"), "unknown algorithm", "one of: " + ", ".join(error.known), name) from None
        params = v.get("params", {})
        if not isinstance(params, Mapping):
            raise _issue((*path, "params"), "must be an object of the algorithm's parameters", "an object", params)
        fields = family.params_model.model_fields
        given = dict(params)
        if "neighbouring" in fields and "neighbouring" not in given and "neighboring" not in given:
            given["neighbouring"] = self.neighbouring
        plan = _located((*path, "params"), lambda: family.plan(family.parse(given), self.delta))
        if plan is None:
            raise _issue(
                (*path, "algorithm"),
                f"{family.id} has no mechanism plan at these parameters (its accounting is not a composition of "
                "releases the accountants can read), so it cannot be composed",
                None,
                family.id,
            )
        if plan.neighbouring != self.neighbouring:
            raise _issue(
                (*path, "algorithm"),
                f"{family.id} is accounted under {plan.neighbouring} neighbours, the composition under "
                f"{self.neighbouring}: guarantees under different relations do not compose",
                f"neighbouring: {plan.neighbouring!r} for the whole request",
                family.id,
            )
        self.reserved_delta += multiplicity * plan.reserved_delta
        releases = release_count(plan.event)
        self.algorithms.append(AlgorithmNode(path, family.id, releases, plan.reserved_delta, plan.description))
        return plan.event


T = TypeVar("T")


def _located(path: Path, build: Callable[[], T]) -> T:
    """``build()``, with the fields of its :class:`ParameterError` placed under ``path``."""
    try:
        return build()
    except ParameterError as error:
        raise ParameterError([_under(path, issue) for issue in error.issues]) from None


def _under(path: Path, issue: FieldIssue) -> FieldIssue:
    return FieldIssue((*path, *issue.loc), issue.message, issue.allowed, issue.value)


def _issue(path: Path, message: str, allowed: str | None, value: object = None) -> ParameterError:
    return ParameterError(FieldIssue(path, message, allowed, value))


def pointer_path(path: Path) -> str:
    """The RFC 6901 JSON Pointer of a path (``~`` and ``/`` escaped)."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)
