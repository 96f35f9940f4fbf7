"""A new accountant needs its module and one row in the table, nothing else: the pure-DP sum
(tests/unit/toy_accountant.py) answers compositions and families on the spine, by name and within best, in privacy,
calibration and ε over training, and steps aside with its reason where it cannot read a tree. Values are the closed
form k/b of k Laplace releases of scale b (basic composition), written out here."""

from __future__ import annotations

import pytest

from accountants import registry
from accountants.pipeline import Composition, calibrate, privacy

from .toy_accountant import NAME, registered

DELTA = 1e-6


def laplace(count: int, scale: float) -> dict[str, object]:
    return {"type": "repeated", "count": count, "mechanism": {"type": "laplace", "noise_multiplier": scale}}


@pytest.mark.parametrize(("count", "scale"), [(1, 1.0), (10, 4.0), (250, 100.0)])
def test_a_composition_answers_with_it_by_name_and_within_best(count, scale):
    with registered():
        named = privacy(Composition(laplace(count, scale), DELTA, NAME))
        best = privacy(Composition(laplace(count, scale), DELTA))
    assert named.accountant == NAME and named.epsilon == pytest.approx(count / scale, rel=1e-12)
    answers = {a.name: a for a in best.accountants}
    assert answers[NAME].epsilon == pytest.approx(count / scale, rel=1e-12)
    assert best.epsilon == min(a.epsilon for a in best.accountants if a.applicable and a.epsilon is not None)
    assert NAME not in {a.name for a in privacy(Composition(laplace(count, scale), DELTA)).accountants}  # gone


def test_calibration_and_checkpoints_use_it():
    with registered():
        report = calibrate(Composition(laplace(20, 1.0), DELTA, NAME), 2.0, "/mechanism/noise_multiplier")
        curve = privacy(Composition(laplace(20, 1.0), DELTA, NAME, checkpoints=[5, 10, 20]))
    assert report.accountant == NAME and report.calibrated_value == pytest.approx(10.0, rel=1e-5)
    assert report.calibrated_value >= 10.0 * (1 - 1e-12)  # one-sided: k/b ≤ target
    assert [(p.steps, p.accountant) for p in curve.curve] == [(5, NAME), (10, NAME), (20, NAME)]
    assert [p.epsilon for p in curve.curve] == pytest.approx([5.0, 10.0, 20.0], rel=1e-12)


def test_a_family_on_the_spine_lists_it_and_it_steps_aside_where_it_cannot_read_the_plan():
    family = registry.get("dp-sgd")
    params = {"dataset_size": 1000, "batch_size": 10, "steps": 100, "noise_multiplier": 1.0}
    with registered():
        assert NAME in family.supported_accountants()
        answers = {a.name: a for a in family.privacy(params, DELTA).accountants}
    assert not answers[NAME].applicable and "not a pure-DP release" in (answers[NAME].reason or "")
    assert NAME not in family.supported_accountants()
