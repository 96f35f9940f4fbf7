"""A new event needs its class and the accountants that read it, nothing else: the toy exponential-mechanism event
(tests/unit/toy_event.py) declares its syntax and is read by the grammar of /v1/compose, documented by the HTTP
schema and accounted by rdp and tight, with no edit to the grammar or the schema. Values are checked against closed
forms: the bounded-range zCDP bound kε²/8 converted exactly, and the pure-DP sum kε."""

from __future__ import annotations

import math

import pytest

from accountants.conversions import epsilon_for_linear_rdp
from accountants.errors import ParameterError
from accountants.pipeline import Composition, node_syntax, privacy
from app.schemas.compose import event_schema

from .toy_event import NAME, declared

DELTA = 1e-6


def tree(epsilon: float, count: int) -> dict[str, object]:
    return {"type": "repeated", "count": count, "mechanism": {"type": NAME, "epsilon": epsilon}}


@pytest.mark.parametrize(("epsilon", "count"), [(0.1, 100), (0.5, 20), (2.0, 1)])
def test_the_grammar_reads_it_and_the_accountants_answer(epsilon, count):
    with declared() as event:
        report = privacy(Composition(tree(epsilon, count), DELTA))
        assert NAME in node_syntax() and event.syntax is not None
    answers = {a.name: a for a in report.accountants}
    closed_form = min(epsilon_for_linear_rdp(count * epsilon**2 / 8, DELTA)[0], count * epsilon)
    assert answers["rdp"].applicable and answers["rdp"].epsilon <= closed_form * (1 + 1e-9)
    assert answers["tight"].applicable and answers["tight"].epsilon <= answers["rdp"].epsilon * (1 + 1e-9)
    assert report.epsilon == min(answers["rdp"].epsilon, answers["tight"].epsilon)
    assert 0 < report.epsilon <= count * epsilon and math.isfinite(report.epsilon)


def test_the_http_schema_documents_it_from_the_declaration():
    with declared():
        variants = {v["title"]: v for v in event_schema()["oneOf"]}
    toy = variants[NAME]
    assert toy["properties"] == {"type": {"const": NAME}, "epsilon": {"type": "number"}}
    assert toy["required"] == ["type", "epsilon"] and toy["additionalProperties"] is False
    assert NAME not in {v["title"] for v in event_schema()["oneOf"]}  # gone with its declaration


def test_its_errors_name_the_json_field():
    with declared(), pytest.raises(ParameterError) as raised:
        privacy(Composition(tree(-1.0, 3), DELTA))
    (issue,) = raised.value.issues
    assert issue.loc == ("mechanism", "mechanism", "epsilon") and "must be" in issue.message
    with pytest.raises(ParameterError, match="unknown event type"):
        privacy(Composition(tree(0.1, 3), DELTA))
