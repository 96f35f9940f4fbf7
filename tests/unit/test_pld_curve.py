"""Prefixes read off the whole run's tilted spectrum (accountants.pld.curve): the certified δ at knots against the
exactly composed discretised law, the answers against dp_accounting's PLD (optimistic below, pessimistic beside) and
against queries of their own, and the prefixes the run's plan does not suit (left to their own queries)."""

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution
from scipy import fft

from accountants.events import (
    ComposedEvent,
    GaussianEvent,
    PoissonSampledEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
)
from accountants.pld import PldAccountant
from accountants.pld.curve import PrefixCircle
from accountants.tight import tight_epsilon, tight_epsilons


def _run(q: float, z: float, steps: int) -> SelfComposedEvent:
    return SelfComposedEvent(PoissonSampledEvent(q, GaussianEvent(z)), steps)


def _exact_delta(probs: np.ndarray, offset: int, infinity: float, grid: float, count: int, knots: np.ndarray):
    """δ at each knot of the count-fold composition of one discretised leaf, composed on a line long enough that
    nothing wraps (untilted, float64: rounding ~1e-16 absolute)."""
    size = fft.next_fast_len(count * (probs.size - 1) + 1)
    law = fft.irfft(fft.rfft(probs, size) ** count, size)[: count * (probs.size - 1) + 1]
    law = np.maximum(law, 0.0)
    losses = (count * offset + np.arange(law.size)) * grid
    atoms = 1.0 - (1.0 - infinity) ** count
    out = []
    for eps in knots * grid:
        above = losses > eps
        out.append(float(np.sum(law[above] * -np.expm1(eps - losses[above]))) + atoms)
    return np.array(out)


@pytest.mark.slow
@pytest.mark.parametrize(("q", "z", "run", "prefix"), [(0.05, 1.0, 200, 50), (0.02, 0.8, 300, 120)])
def test_certified_delta_at_knots_bounds_the_exact_composition_tightly(q, z, run, prefix):
    accountant = PldAccountant("add-remove")
    _, plans = accountant.epsilon_and_plans(_run(q, z, run), 1e-5)
    for plan in plans:
        circle = PrefixCircle(plan, 1e-5)
        counts = np.array([[prefix]])
        kept, first, tail = circle._bins(counts, [0])
        assert kept > 0 and first == 0
        row = circle._rows(counts, [0], kept, tail)[0]
        start = int(circle._epsilon(row, 0, int(plan.value / plan.leaves[0].grid)).value / plan.leaves[0].grid) - 30
        knots, certified = circle._bounds(row, start, 0)
        leaf = plan.leaves[0]
        exact = _exact_delta(leaf.probs, leaf.offset, leaf.infinity, leaf.grid, prefix, knots)
        assert np.all(certified >= exact)  # an upper bound at every knot
        assert np.all(certified <= exact * (1 + 1e-5))  # and a tight one (its error terms within 1e-5 of δ here)


@pytest.mark.slow
@pytest.mark.parametrize(("q", "z", "steps"), [(0.01, 1.0, 2000), (0.05, 0.9, 400)])
def test_prefixes_against_dp_accounting(q, z, steps):
    points = [steps // 8, steps // 4, steps // 2, 3 * steps // 4]
    events = [_run(q, z, t) for t in [*points, steps]]
    accountant = PldAccountant("add-remove")
    _, plans = accountant.epsilon_and_plans(events[-1], 1e-6)
    read = accountant.prefix_epsilons(plans, events[:-1], 1e-6)
    assert all(answer is not None for answer in read)
    for t, answer in zip(points, read, strict=True):
        assert answer is not None
        values = {}
        for pessimistic in (True, False):
            pld = privacy_loss_distribution.from_gaussian_mechanism(
                z,
                sampling_prob=q,
                pessimistic_estimate=pessimistic,
                value_discretization_interval=1e-4,
                use_connect_dots=pessimistic,
            )
            values[pessimistic] = float(pld.self_compose(t).get_epsilon_for_delta(1e-6))
        # optimistic: a lower bound read off its own grid (up to one 1e-4 step above its own δ)
        assert answer.value >= values[False] - 1e-4
        assert answer.value == pytest.approx(values[True], rel=1e-3)


@pytest.mark.parametrize(
    ("q", "z", "steps", "delta", "relation"),
    [
        (256 / 60000, 1.1, 14062, 1e-5, "add-remove"),
        (0.01, 0.7, 3000, 1e-10, "add-remove"),
        (0.1, 2.0, 500, 1e-2, "add-remove"),
        (0.01, 1.0, 2000, 1e-6, "replace-one"),
    ],
)
def test_prefixes_equal_queries_of_their_own_within_the_stated_accuracy(q, z, steps, delta, relation):
    points = [steps // 10 * k for k in range(1, 10)]
    events = [_run(q, z, t) for t in [*points, steps]]
    curve = tight_epsilons(events, relation, delta)
    read = [result for result in curve[:-1] if "read off the whole run" in result.method]
    assert len(read) >= 8  # the plan suits nearly every prefix here
    for t, result in zip(points, curve, strict=False):
        alone = tight_epsilon(_run(q, z, t), relation, delta).epsilon
        assert result.epsilon == pytest.approx(alone, rel=1e-4)
    assert curve[-1].epsilon == tight_epsilon(events[-1], relation, delta).epsilon  # the run on its own, exactly


def test_prefixes_the_plan_does_not_suit_are_queried_on_their_own():
    q, z, steps = 0.01, 1.0, 1000
    run = _run(q, z, steps)
    accountant = PldAccountant("add-remove")
    _, plans = accountant.epsilon_and_plans(run, 1e-5)
    other_rate = _run(0.02, z, 10)  # a release the run does not have
    one_step = _run(q, z, 1)  # its spectrum does not decay: more bins than MAX_BINS
    without_replacement = SampledWithoutReplacementEvent(1000, 10, GaussianEvent(z))  # no add/remove PLD
    read = accountant.prefix_epsilons(plans, [other_rate, one_step, without_replacement, _run(q, z, 500)], 1e-5)
    assert read[:3] == [None, None, None]
    assert accountant.prefix_epsilons(plans, [other_rate], 1e-5) == [None]
    assert accountant.prefix_epsilons(plans, [_run(q, z, 4 * steps)], 1e-5) == [None]  # no prefix: ε above the run's
    assert read[3] is not None
    curve = tight_epsilons([one_step, _run(q, z, 2), _run(q, z, 500), run], "add-remove", 1e-5)
    for result, t in zip(curve, [1, 2, 500, steps], strict=True):
        assert result.epsilon == pytest.approx(tight_epsilon(_run(q, z, t), "add-remove", 1e-5).epsilon, rel=1e-4)


def test_prefixes_of_a_two_phase_run_and_out_of_order_prefixes():
    first, second = PoissonSampledEvent(0.01, GaussianEvent(1.0)), PoissonSampledEvent(0.04, GaussianEvent(1.5))
    run = ComposedEvent((SelfComposedEvent(first, 600), SelfComposedEvent(second, 200)))
    prefixes = [
        ComposedEvent((SelfComposedEvent(first, 600), SelfComposedEvent(second, 100))),
        SelfComposedEvent(first, 300),
        ComposedEvent((SelfComposedEvent(first, 200), SelfComposedEvent(second, 200))),  # fewer of the first phase
        SelfComposedEvent(first, 600),  # than the prefix before it (by size), then fewer of the second: from the start
    ]
    accountant = PldAccountant("add-remove")
    _, plans = accountant.epsilon_and_plans(run, 1e-5)
    read = accountant.prefix_epsilons(plans, prefixes, 1e-5)
    for event, answer in zip(prefixes, read, strict=True):
        assert answer is not None
        assert answer.value == pytest.approx(accountant.epsilon(event, 1e-5).value, rel=1e-4)
        assert math.isfinite(answer.error_allowance) and 0.0 <= answer.error_allowance <= 1e-4 * 1e-5 + 1e-12


def test_a_run_that_is_zero_epsilon_at_delta_has_zero_epsilon_prefixes():
    """δ at least the whole run's δ(0): every prefix is (0, δ)-DP too, answered without a PLD per prefix; each agrees
    with the prefix queried on its own, and with the closed form δ(0) = 2Φ(μ/2) − 1 of a Gaussian run."""
    run = SelfComposedEvent(PoissonSampledEvent(0.004, GaussianEvent(1.1)), 2000)
    delta = 1.0 - 1e-12
    prefixes = [SelfComposedEvent(PoissonSampledEvent(0.004, GaussianEvent(1.1)), t) for t in (1, 500, 1999)] + [run]
    answers = tight_epsilons(prefixes, "add-remove", delta)
    assert [a.epsilon for a in answers] == [0.0] * 4 and "every prefix" in (answers[0].method or "")
    assert all(tight_epsilon(event, "add-remove", delta).epsilon == 0.0 for event in prefixes[:-1])
    gaussian = [SelfComposedEvent(GaussianEvent(3.0), t) for t in (1, 10, 100)]
    mu = math.sqrt(100) / 3.0
    delta_zero = math.erf(mu / (2.0 * math.sqrt(2.0)))  # 2Φ(μ/2) − 1
    assert [a.epsilon for a in tight_epsilons(gaussian, "add-remove", delta_zero * (1 + 1e-9))] == [0.0] * 3
    assert tight_epsilons(gaussian, "add-remove", delta_zero * 0.9)[-1].epsilon > 0.0
