"""The JSON event grammar of ``/v1/compose``: a tree of objects with a ``type``, read into a
:class:`~accountants.events.DpEvent` tree with every error naming its JSON path.

Each event a request may write declares its form once, beside its fields in :mod:`accountants.events` (its
``syntax``, e.g. ``gaussian`` or ``poisson-sampled``); this module adds the compositions
(:data:`COMPOSITIONS`: ``shuffled`` and ``balls-in-bins`` loaders accounted as one run per epoch, ``repeated``,
``sequence``, ``algorithm``) and reads both; the HTTP schema is built from the same declarations (:func:`node_syntax`).

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
    DECLARED,
    MECHANISM,
    ComposedEvent,
    DpEvent,
    FieldKind,
    SelfComposedEvent,
    Syntax,
    SyntaxField,
    integer,
    release_count,
)
from ..params import did_you_mean
from ..rdp import Neighbouring

MAX_DEPTH = 16
"""Most levels of nesting in a tree."""
MAX_NODES = 256
"""Most nodes (objects with a ``type``) in a tree."""
MAX_RELEASES = 10**9
"""Most releases a tree may make in all (counts multiplied through)."""

Path = tuple[str | int, ...]

COMPOSITIONS: tuple[Syntax, ...] = (
    Syntax(
        "shuffled",
        "A shuffling loader over epochs: each record in exactly one batch per epoch; accounted as one run of "
        "mechanism per epoch (no amplification claimed).",
        (integer("epochs"), MECHANISM),
    ),
    Syntax(
        "balls-in-bins",
        "Random allocation over epochs: each record in one uniformly random batch per epoch; accounted as one run of "
        "mechanism per epoch (no amplification claimed; random-allocation accounts the amplification).",
        (integer("epochs"), MECHANISM),
    ),
    Syntax("repeated", "mechanism run count times, adaptively.", (integer("count"), MECHANISM)),
    Syntax("sequence", "mechanisms run in order.", (SyntaxField("mechanisms", FieldKind.EVENTS),)),
    Syntax(
        "algorithm",
        "A registered algorithm's mechanism plan at params (noise included; see GET /v1/algorithms).",
        (SyntaxField("algorithm", FieldKind.STRING), SyntaxField("params", FieldKind.OBJECT)),
    ),
)
"""The grammar's own nodes, which compose events rather than declare one: loaders without amplification,
repetition, sequences and registered algorithms' plans."""


def node_syntax() -> dict[str, Syntax]:
    """Every node type of the grammar: the events that declare a :class:`~accountants.events.Syntax` (read when
    asked, so an event declared later is readable), then the compositions (all fields required; ``params`` of an
    algorithm defaults to {})."""
    declared = {name: event.syntax for name, event in DECLARED.items() if event.syntax is not None}
    return declared | {syntax.name: syntax for syntax in COMPOSITIONS}


@dataclass(frozen=True)
class AlgorithmNode:
    """An ``algorithm`` node as read: where it is, the family, its plan's description, δ spent outside it, and the
    parameters the family was given (the composition's relation added where the family has one and none was named)."""

    path: Path
    algorithm: str
    releases: int
    reserved_delta: float
    description: str
    params: Mapping[str, Any]


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
        syntax = node_syntax()
        if not isinstance(kind, str) or kind not in syntax:
            message = "is required" if kind is None else f"unknown event type {kind!r}"
            if isinstance(kind, str):
                message += did_you_mean(kind, syntax)
            raise _issue((*path, "type"), message, "one of: " + ", ".join(syntax), kind)
        allowed = [f.name for f in syntax[kind].fields]
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
        if kind in DECLARED:
            return self._declared(DECLARED[kind], v, path, depth, multiplicity)
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

    def _declared(
        self, event: type[DpEvent], v: Mapping[str, Any], path: Path, depth: int, multiplicity: int
    ) -> DpEvent:
        """An event read from its declared syntax: nested mechanisms first, then the event, which checks its values
        (each error under this node's path, at the field's JSON name)."""
        syntax = event.syntax
        assert syntax is not None  # DECLARED holds only events with a syntax
        arguments = {
            f.target: self.node(v[f.name], (*path, f.name), depth + 1, multiplicity)
            if f.kind is FieldKind.EVENT
            else v[f.name]
            for f in syntax.fields
        }
        try:
            return event(**arguments)
        except ParameterError as error:
            issues = [
                FieldIssue((syntax.field_named(str(i.loc[0])), *i.loc[1:]), i.message, i.allowed, i.value)
                if i.loc
                else i
                for i in error.issues
            ]
            raise ParameterError([_under(path, issue) for issue in issues]) from None

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
        self.algorithms.append(AlgorithmNode(path, family.id, releases, plan.reserved_delta, plan.description, given))
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
