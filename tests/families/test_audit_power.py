"""Audits that say what they can prove (issue 18): every family's example audit reports its power
(``max_detectable_epsilon``, the closed form at zero errors) and whether it is informative, with the reason where not."""

from __future__ import annotations

import math
from typing import Any

import pytest

from accountants import registry
from accountants.planning import plan_job
from accountants.verification import (
    CONFIDENCE,
    INFORMATIVE_FRACTION,
    block_sizes,
    max_detectable_epsilon,
    run_block,
    summarize,
)

AUDITED = [f.id for f in registry.families() if f.simulator is not None and "privacy-audit" in f.simulator.checks]


def _audit(algorithm: str, example: dict[str, Any], trials: int | None = None) -> Any:
    family = registry.get(algorithm)
    trials = trials or int(example["trials"])
    plan = plan_job(
        family,
        example["params"],
        example["delta"],
        ("privacy-audit",),
        trials,
        int(example["seed"]),
        example.get("problem"),
        example.get("target_epsilon"),
    )
    blocks = [run_block(family.simulator, plan, block) for block in range(len(block_sizes(trials)))]
    audit = summarize(plan, blocks).privacy_audit
    assert audit is not None
    return audit


def _closed_form(trials: int, delta: float) -> float:
    """log((TPR_low − δ)/FPR_high) at zero errors on the odd-numbered half: (α/2)^{1/n} and 1 − (α/2)^{1/n}."""
    half = trials // 2
    a = (1.0 - CONFIDENCE) / 2
    return math.log(((a ** (1 / half)) - delta) / (1.0 - a ** (1 / half)))


@pytest.mark.parametrize("algorithm", AUDITED)
def test_every_example_audit_reports_its_power(algorithm):
    example = dict(registry.get(algorithm).job_example or {})
    audit = _audit(algorithm, example, trials=min(int(example["trials"]), 2048))
    assert audit.max_detectable_epsilon >= audit.epsilon_lower_bound
    assert audit.max_detectable_epsilon == pytest.approx(_closed_form(audit.trials, example["delta"]), rel=1e-9)
    assert audit.informative == (audit.informative_reason is None)
    floor = INFORMATIVE_FRACTION * audit.epsilon_accounted
    assert audit.informative == (audit.epsilon_lower_bound >= floor and audit.max_detectable_epsilon >= floor)


def test_a_perfect_test_reaches_exactly_the_power():
    assert max_detectable_epsilon(1000, 1000, 1e-5) == pytest.approx(_closed_form(2000, 1e-5), rel=1e-12)
    assert max_detectable_epsilon(0, 10, 1e-5) == 0.0


def test_dp_bilevel_and_mirror_descent_sco_examples_are_not_informative():
    bilevel = _audit("dp-bilevel", dict(registry.get("dp-bilevel").job_example or {}))
    assert not bilevel.informative and bilevel.informative_reason
    example = dict(registry.get("private-mirror-descent").job_example or {})
    params = {k: v for k, v in example["params"].items() if k != "dimension_y"} | {"variant": "sco"}
    sco = _audit("private-mirror-descent", example | {"params": params})
    assert not sco.informative and sco.informative_reason


def test_the_dp_sgd_full_batch_example_is_informative():
    """The full-batch Gaussian with its most powerful test: 20000 trials reach most of the exact ε."""
    audit = _audit("dp-sgd", dict(registry.get("dp-sgd").job_example or {}))
    assert audit.informative, audit.informative_reason
