"""Compositions (/v1/compose's library half): 30 seeded random pipelines against dp_accounting computed live, pointer
calibrations round-tripped, checkpoints against separate answers, and every bad tree named by its JSON path."""

from __future__ import annotations

import math

import dp_accounting as dpa
import mpmath as mp
import numpy as np
import pytest

from accountants.errors import CalibrationError, ParameterError
from accountants.pipeline import Composition, calibrate, privacy
from accountants.pipeline.grammar import MAX_DEPTH, MAX_NODES
from accountants.pipeline.pointer import with_number

from ..support.oracles import DPA_ORDERS, dpa_pld_epsilon, dpa_rdp_epsilon, exact_poisson_rdp

DELTA = 1e-5


def _phase(q: float, z: float, k: int) -> tuple[dict, dpa.DpEvent]:
    tree = {
        "type": "repeated",
        "count": k,
        "mechanism": {
            "type": "poisson-sampled",
            "sampling_rate": q,
            "mechanism": {"type": "gaussian", "noise_multiplier": z},
        },
    }
    return tree, dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), k)


def random_pipeline(seed: int) -> tuple[dict, dpa.DpEvent]:
    """A sequence of 1–4 parts: Poisson-sampled Gaussian phases, (repeated) Gaussians and Laplaces."""
    rng = np.random.default_rng(seed)
    trees, events = [], []
    for _ in range(int(rng.integers(1, 5))):
        kind = rng.choice(["phase", "gaussian", "laplace"], p=[0.6, 0.2, 0.2])
        if kind == "phase":
            q, z, k = float(rng.uniform(0.005, 0.05)), float(rng.uniform(0.8, 2.0)), int(rng.integers(10, 400))
            tree, event = _phase(q, z, k)
        elif kind == "gaussian":
            z, k = float(rng.uniform(5.0, 30.0)), int(rng.integers(1, 4))
            tree = {"type": "repeated", "count": k, "mechanism": {"type": "gaussian", "noise_multiplier": z}}
            event = dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(z), k)
        else:
            b = float(rng.uniform(5.0, 50.0))
            tree, event = {"type": "laplace", "noise_multiplier": b}, dpa.LaplaceDpEvent(b)
        trees.append(tree)
        events.append(event)
    return {"type": "sequence", "mechanisms": trees}, dpa.ComposedDpEvent(events)


def _exact_rdp(event: dpa.DpEvent, alpha: float) -> float:
    """ε(α) of one part, independently: 40-digit quadrature for the sampled Gaussian, closed forms otherwise."""
    count = 1
    if isinstance(event, dpa.SelfComposedDpEvent):
        event, count = event.event, event.count
    if isinstance(event, dpa.PoissonSampledDpEvent):
        return count * exact_poisson_rdp(event.sampling_probability, event.event.noise_multiplier, alpha)
    if isinstance(event, dpa.GaussianDpEvent):
        return count * alpha / (2 * event.noise_multiplier**2)
    b = event.noise_multiplier  # Laplace, Mironov 2017 Prop. 6
    with mp.workdps(40):
        a = mp.mpf(alpha)
        terms = a / (2 * a - 1) * mp.exp((a - 1) / b) + (a - 1) / (2 * a - 1) * mp.exp(-a / b)
        return count * float(mp.log(terms) / (a - 1))


@pytest.mark.parametrize("seed", [*range(10), *(pytest.param(s, marks=pytest.mark.slow) for s in range(10, 30))])
def test_random_pipelines_agree_with_dp_accounting(seed):
    tree, event = random_pipeline(seed)
    theirs, order = dpa_rdp_epsilon(event, DELTA)
    grid = privacy(Composition(tree, DELTA, "rdp", orders=tuple(DPA_ORDERS), refine=False))
    refined = privacy(Composition(tree, DELTA, "rdp"))
    if float(order).is_integer():
        assert grid.epsilon == pytest.approx(theirs, rel=1e-6)
    # never above dp_accounting's grid answer; never below the continuous optimum: it is the improved conversion of
    # the exact curve (quadrature for the sampled Gaussians, closed forms otherwise) at dpcal's own optimal order
    assert refined.epsilon <= theirs * (1 + 1e-9)
    alpha = refined.optimal_order
    exact = sum(_exact_rdp(leaf, alpha) for leaf in event.events)
    converted = exact + math.log1p(-1 / alpha) - (math.log(DELTA) + math.log(alpha)) / (alpha - 1)
    assert refined.epsilon == pytest.approx(converted, rel=1e-8)
    tight = privacy(Composition(tree, DELTA, "tight")).epsilon
    assert tight == pytest.approx(dpa_pld_epsilon(event, DELTA), rel=1e-3)


def test_randomized_response_is_exact_k_ary():
    p, k = 0.3, 4
    epsilon = math.log1p(k * (1 - p) / p)
    node = {"type": "randomized-response", "noise_parameter": p, "num_buckets": k}
    grid = privacy(Composition(node, DELTA, "rdp", neighbouring="replace-one", orders=tuple(DPA_ORDERS), refine=False))
    accountant = dpa.rdp.RdpAccountant(DPA_ORDERS, neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    accountant.compose(dpa.RandomizedResponseDpEvent(p, k))
    assert grid.epsilon == pytest.approx(accountant.get_epsilon(DELTA), rel=1e-9)
    pure = privacy(Composition({"type": "pure", "epsilon": epsilon}, DELTA, "rdp"))
    rr = privacy(Composition(node, DELTA, "rdp"))
    assert rr.epsilon <= pure.epsilon <= epsilon  # 4-ary is more private than the worst ε-DP release


def test_zcdp_leaf_makes_tight_not_applicable_and_best_uses_rdp():
    answer = privacy(Composition({"type": "zcdp", "rho": 0.1}, DELTA))
    tight = next(r for r in answer.accountants if r.name == "tight")
    assert not tight.applicable and "ZCdpEvent" in tight.reason
    assert answer.accountant == "rdp"
    rho = 0.1  # the exact conversion of a linear curve, within the grid-and-refine accuracy
    from accountants.conversions import epsilon_for_linear_rdp

    assert answer.epsilon == pytest.approx(epsilon_for_linear_rdp(rho, DELTA)[0], rel=1e-7)


PIPELINE = {
    "type": "sequence",
    "mechanisms": [
        _phase(0.01, 1.0, 1000)[0],
        {"type": "repeated", "count": 3, "mechanism": {"type": "laplace", "noise_multiplier": 20.0}},
    ],
}


@pytest.mark.parametrize(
    ("pointer", "accountant"),
    [
        ("/mechanisms/0/mechanism/mechanism/noise_multiplier", "rdp"),
        ("/mechanisms/0/mechanism/mechanism/noise_multiplier", "best"),
        ("/mechanisms/0/count", "rdp"),
        ("/mechanisms/0/count", "best"),
        ("/mechanisms/0/mechanism/sampling_rate", "rdp"),
        ("/mechanisms/0/mechanism/sampling_rate", "best"),
    ],
)
def test_calibration_through_a_pointer_round_trips(pointer, accountant):
    """The calibrated value gives ε ≤ target; a value just beyond it (noise −1e-4 relative, count + 1, rate
    +1e-4 relative) exceeds the target."""
    from accountants.pipeline.pointer import with_number

    target = 2.0
    c = Composition(PIPELINE, DELTA, accountant)
    found = calibrate(c, target, pointer)
    value = found.calibrated_value
    at = privacy(Composition(with_number(PIPELINE, pointer, value), DELTA, accountant))
    assert at.epsilon <= target
    assert found.epsilon <= target
    if pointer.endswith("count"):
        assert value == int(value) and found.beyond is not None and found.beyond.value == value + 1
        assert found.beyond.epsilon > target
        beyond = privacy(Composition(with_number(PIPELINE, pointer, int(value) + 1), DELTA, accountant)).epsilon
        assert beyond == pytest.approx(found.beyond.epsilon, rel=1e-12)
        assert beyond > target
    else:
        factor = 1 - 1e-3 if pointer.endswith("noise_multiplier") else 1 + 1e-3
        beyond = privacy(Composition(with_number(PIPELINE, pointer, value * factor), DELTA, accountant)).epsilon
        assert beyond > target


def test_a_sampling_rate_whose_every_value_meets_the_target_is_one():
    tree = _phase(0.01, 50.0, 10)[0]
    found = calibrate(Composition(tree, DELTA, "rdp"), 5.0, "/mechanism/sampling_rate")
    assert found.calibrated_value == 1.0


@pytest.mark.parametrize("accountant", ["rdp", "tight"])
def test_bounds_clamp_the_calibration_to_its_range(accountant):
    """Within bounds: the unbounded answer where it lies inside them; the least private end where the whole range
    meets the target (its ε below the target, checked by a privacy request there); an error naming the most private
    end and its ε where none does (that ε checked too), not the search's own range."""
    pointer = "/mechanisms/0/mechanism/mechanism/noise_multiplier"
    free = calibrate(Composition(PIPELINE, DELTA, accountant), 3.0, pointer).calibrated_value
    inside = calibrate(Composition(PIPELINE, DELTA, accountant), 3.0, pointer, (free / 2, free * 2))
    assert inside.calibrated_value == pytest.approx(free, rel=1e-9)
    at_end = calibrate(Composition(PIPELINE, DELTA, accountant), 3.0, pointer, (free * 1.5, free * 3))
    assert at_end.calibrated_value == free * 1.5 and at_end.epsilon < 3.0
    end = privacy(Composition(with_number(PIPELINE, pointer, free * 1.5), DELTA, accountant)).epsilon
    assert at_end.epsilon == pytest.approx(end, rel=1e-9)
    most = free / 2
    missed = privacy(Composition(with_number(PIPELINE, pointer, most), DELTA, accountant)).epsilon
    assert missed > 3.0
    with pytest.raises(CalibrationError, match=rf"within \[{free / 4:g}, {most:g}\].*={most:g} gives ε={missed:.6g}"):
        calibrate(Composition(PIPELINE, DELTA, accountant), 3.0, pointer, (free / 4, most))


def test_checkpoints_equal_separate_answers():
    c = Composition(PIPELINE, DELTA, "best", checkpoints=[1, 250, 999, 1000, 1001, 1003])
    answer = privacy(c)
    from accountants.events import prefix
    from accountants.pipeline.grammar import read_tree

    event = read_tree(PIPELINE, DELTA, "add-remove").event
    from accountants.rdp import RdpAccountant
    from accountants.tight import tight_epsilon

    for point in answer.curve:
        cut = prefix(event, point.steps)
        rdp = RdpAccountant().epsilon(cut, DELTA).value
        tight = tight_epsilon(cut, "add-remove", DELTA).epsilon
        # a checkpoint is read off the whole run's PLD (or queried starting near the previous one's answer): the
        # same certified guarantee, within the PLD's stated accuracy (1e-4 relative) of a query on its own
        assert point.accountant == ("tight" if tight < rdp else "rdp")
        if point.accountant == "rdp":
            assert point.epsilon == pytest.approx(rdp, rel=1e-9)
        else:
            assert point.epsilon == pytest.approx(tight, rel=1e-4)
    assert answer.curve[-1].epsilon == pytest.approx(answer.epsilon, rel=1e-4)
    rdp_curve = privacy(Composition(PIPELINE, DELTA, "rdp", checkpoints=[1, 250, 999, 1000, 1001, 1003])).curve
    for point in rdp_curve:
        assert point.epsilon == pytest.approx(
            RdpAccountant().epsilon(prefix(event, point.steps), DELTA).value, rel=1e-9
        )
    assert [p.epsilon for p in answer.curve] == sorted(p.epsilon for p in answer.curve)


G = {"type": "gaussian", "noise_multiplier": 1.0}


def _nested(depth: int) -> dict:
    tree: dict = G
    for _ in range(depth - 1):
        tree = {"type": "repeated", "count": 1, "mechanism": tree}
    return tree


@pytest.mark.parametrize(
    ("tree", "path"),
    [
        ({"type": "gausian", "noise_multiplier": 1.0}, ("mechanism", "type")),
        ({"noise_multiplier": 1.0}, ("mechanism", "type")),
        ({"type": "gaussian"}, ("mechanism", "noise_multiplier")),
        ({"type": "gaussian", "noise_multiplier": 1.0, "sigma": 2}, ("mechanism", "sigma")),
        ({"type": "poisson-sampled", "sampling_rate": 1.5, "mechanism": G}, ("mechanism", "sampling_rate")),
        (
            {"type": "sequence", "mechanisms": [G, {"type": "laplace", "noise_multiplier": -1}]},
            ("mechanism", "mechanisms", 1, "noise_multiplier"),
        ),
        ({"type": "sequence", "mechanisms": []}, ("mechanism", "mechanisms")),
        ({"type": "repeated", "count": 2.5, "mechanism": G}, ("mechanism", "count")),
        (_nested(MAX_DEPTH + 1), ("mechanism",) + ("mechanism",) * MAX_DEPTH),
        ({"type": "sequence", "mechanisms": [G] * MAX_NODES}, ("mechanism", "mechanisms", MAX_NODES - 1)),
        (
            {"type": "repeated", "count": 10**6, "mechanism": {"type": "repeated", "count": 10**6, "mechanism": G}},
            ("mechanism", "mechanism", "mechanism"),  # the first node whose releases, counts multiplied, pass 1e9
        ),
        ({"type": "algorithm", "algorithm": "dp-sdg", "params": {}}, ("mechanism", "algorithm")),
        (
            {
                "type": "algorithm",
                "algorithm": "dp-sgd",
                "params": {"dataset_size": 100, "batch_size": 1000, "steps": 5},
            },
            ("mechanism", "params", "batch_size"),
        ),
    ],
)
def test_a_bad_tree_is_named_by_its_path(tree, path):
    with pytest.raises(ParameterError) as caught:
        privacy(Composition(tree, DELTA, "rdp"))
    assert caught.value.issues[0].loc == path


@pytest.mark.parametrize(
    ("pointer", "message"),
    [("/type", "must point to a number"), ("/mechanism/nope", "points nowhere"), ("count", "JSON Pointer")],
)
def test_a_bad_pointer_is_refused(pointer, message):
    with pytest.raises(ParameterError, match=message) as caught:
        calibrate(Composition({"type": "repeated", "count": 3, "mechanism": G}, DELTA, "rdp"), 1.0, pointer)
    assert caught.value.issues[0].loc == ("calibrate",)


def test_an_unreachable_target_says_so():
    tree = {
        "type": "sequence",
        "mechanisms": [{"type": "pure", "epsilon": 5.0}, {"type": "repeated", "count": 2, "mechanism": G}],
    }
    with pytest.raises(CalibrationError, match="no /mechanisms/1/count in range meets"):
        calibrate(Composition(tree, DELTA, "rdp"), 1.0, "/mechanisms/1/count")


def test_an_algorithm_without_a_plan_is_refused_with_the_reason(monkeypatch):
    from accountants import registry
    from accountants.errors import ParameterError
    from accountants.family import AlgorithmFamily

    family = registry.get("dp-sgd-last-iterate")
    monkeypatch.setattr(type(family), "plan", AlgorithmFamily.plan)  # as a family whose accounting has no plan
    node = {"type": "algorithm", "algorithm": family.id, "params": dict(family.example)}
    with pytest.raises(ParameterError) as info:
        privacy(Composition(node, DELTA, "best", neighbouring="replace-one"))
    issue = info.value.issues[0]
    assert issue.loc == ("mechanism", "algorithm") and "no mechanism plan" in issue.message
