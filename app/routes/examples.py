"""The OpenAPI document's examples: one request per algorithm for every POST endpoint (from each family's card) and
the service's own recorded answers to them (``dpcal openapi --record-examples``; a test compares them to live
answers)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from accountants import registry
from accountants.family import AlgorithmFamily, Operation

RESPONSE_EXAMPLES_FILE = Path(__file__).parent.parent / "openapi_examples.json"
"""Answers of the service to its own request examples, shown as the response examples of the POST endpoints."""


def _families_dp_sgd_first() -> list[AlgorithmFamily[Any]]:
    """The families in the order the docs show them: the baseline first (ReDoc opens on the first example)."""
    return sorted(registry.families(), key=lambda f: (f.id != "dp-sgd", f.id))


def request_examples(operation: Operation) -> dict[str, dict[str, Any]]:
    """One request example per algorithm for ``operation`` (from each family's own example hyperparameters)."""
    out = {}
    for family in _families_dp_sgd_first():
        if operation is Operation.PRIVACY:
            value = {"algorithm": family.id, "params": dict(family.example), "delta": 1e-5}
            summary = f"{family.id}: ε at δ = 1e-5"
        elif operation is Operation.CALIBRATE:
            target = family.example_target_epsilon
            value = {
                "algorithm": family.id,
                "params": family.calibration_example(),
                "target_epsilon": target,
                "delta": 1e-5,
            }
            summary = f"{family.id}: {family.calibrated_parameter} for (ε, δ) = ({target:g}, 1e-5)"
        else:
            value = {"algorithm": family.id, "params": {**family.example, **family.utility_example_extra}}
            summary = f"{family.id}: predicted utility"
        out[family.id] = {"summary": summary, "value": value}
    return out


def job_examples() -> dict[str, dict[str, Any]]:
    return {
        family.id: {
            "summary": f"{family.id}: a small verification job",
            "value": {"algorithm": family.id, **family.job_example},
        }
        for family in _families_dp_sgd_first()
        if family.job_example is not None
    }


@functools.cache
def recorded_answers() -> dict[str, dict[str, Any]]:
    """The recorded answers, by path and algorithm (read once; empty before ``dpcal openapi --record-examples``)."""
    if not RESPONSE_EXAMPLES_FILE.exists():
        return {}
    answers: dict[str, dict[str, Any]] = json.loads(RESPONSE_EXAMPLES_FILE.read_text(encoding="utf-8"))
    return answers


def response_examples(path: str) -> dict[int | str, dict[str, Any]]:
    """The 200 response's examples for ``path`` (the service's recorded answers to the request examples)."""
    answers = recorded_answers().get(path, {})
    examples = {
        family.id: {"summary": f"{family.id}: the answer to its request example", "value": answers[family.id]}
        for family in _families_dp_sgd_first()
        if family.id in answers
    }
    return {200: {"content": {"application/json": {"examples": examples}}}} if examples else {}
