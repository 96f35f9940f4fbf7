"""Compositions of any mechanisms (``/v1/compose``): the JSON event grammar, JSON Pointers into it, and the answers.

* :mod:`~accountants.pipeline.grammar` — JSON trees to :class:`~accountants.events.DpEvent` trees, bounded, with
  every error at its JSON path; ``algorithm`` nodes are registered families' mechanism plans;
* :mod:`~accountants.pipeline.pointer` — RFC 6901 pointers: the number a calibration moves;
* :mod:`~accountants.pipeline.compose` — privacy (every accountant, checkpoints, statement) and calibration.
"""

from .compose import ACCOUNTANTS, COMPOSE, Composition, calibrate, cost, privacy
from .grammar import MAX_DEPTH, MAX_NODES, MAX_RELEASES, node_syntax, read_tree

__all__ = [
    "ACCOUNTANTS",
    "COMPOSE",
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_RELEASES",
    "Composition",
    "calibrate",
    "cost",
    "node_syntax",
    "privacy",
    "read_tree",
]
