"""An event written the way a new one is: a class in the style of :mod:`accountants.events` with its ``syntax``.

The exponential mechanism at privacy parameter ε (score sensitivity Δ, weight exp(ε·score/(2Δ))) has bounded range ε
(Durfee & Rogers 2019), so it *is* a :class:`~accountants.events.BoundedRangeEvent`: the accountants read it as one,
and its declaration is all the grammar of ``/v1/compose`` and the HTTP schema need. :func:`declared` adds it for a
test and removes it afterwards (a real event is declared in ``accountants/events.py`` and stays)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from accountants import events
from accountants.events import BoundedRangeEvent, FieldKind, Syntax, SyntaxField

NAME = "exponential-mechanism"


@contextmanager
def declared() -> Iterator[type[BoundedRangeEvent]]:
    """The toy event declared for the duration of the block."""

    @dataclass(frozen=True)
    class ExponentialMechanismEvent(BoundedRangeEvent):
        """The exponential mechanism at privacy parameter ε: ε-bounded range and ε-DP."""

        syntax = Syntax(
            NAME,
            "The exponential mechanism at privacy parameter epsilon (bounded range epsilon).",
            (SyntaxField("epsilon", FieldKind.NUMBER, attribute="bounded_range"),),
        )

    try:
        yield ExponentialMechanismEvent
    finally:
        events.DECLARED.pop(NAME, None)
