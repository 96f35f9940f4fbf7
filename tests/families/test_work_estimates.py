"""A verification job's estimated running time (the service refuses jobs above DPCAL_JOB_MAX_SECONDS by it) is
calibrated per family and check: each family's example job (and the bilinear simulators at dimensions 2 and 64), run
here block by block, takes its estimate within a factor 3 — up to one speed factor of this machine, common to all families (the median of measured/estimated), so that
a slower or busy machine tests the calibration between families, not its own speed."""

from __future__ import annotations

import statistics
import time

import pytest

from accountants import registry
from accountants.planning import plan_example, plan_job
from accountants.verification import block_sizes, run_block

FAMILIES = [f for f in registry.families() if f.simulator is not None and f.job_example is not None]


DIMENSIONS = [("nseg", 2), ("nseg", 64), ("nispp", 2), ("nispp", 64)]
"""Setups beside the examples (dimension 10): the bilinear simulators' work grows with d as their time does."""


def _at_dimension(family, dimension):
    example = family.job_example
    params = dict(example["params"]) | {"dimension": dimension}
    return plan_job(family, params, example["delta"], ("utility",), 64, 0, None, example.get("target_epsilon"))


def _measured(family, checks, plan=None):
    plan = plan or plan_example(family, checks)
    run_block(family.simulator, plan, 0)  # warm (imports, caches)
    start = time.perf_counter()
    for block in range(len(block_sizes(plan.trials))):
        run_block(family.simulator, plan, block)
    return time.perf_counter() - start, plan


@pytest.fixture(scope="module")
def ratios():
    """measured / estimated seconds of each family's example job (its own checks) and of each check alone."""
    out = {}
    for family in FAMILIES:
        own = tuple(family.job_example.get("checks", family.simulator.checks))
        for checks in {own, *((c,) for c in family.simulator.checks)}:
            seconds, plan = _measured(family, checks)
            if seconds > 0.005:  # shorter runs measure the timer and the cache more than the simulation
                out[(family.id, checks)] = seconds / plan.estimated_seconds
    for family_id, dimension in DIMENSIONS:
        family = registry.get(family_id)
        seconds, plan = _measured(family, ("utility",), _at_dimension(family, dimension))
        out[(family_id, f"utility at d = {dimension}")] = seconds / plan.estimated_seconds
    return out


def test_every_family_and_check_is_estimated_within_3x_of_its_time(ratios):
    assert {family for family, _ in ratios} == {f.id for f in FAMILIES}
    speed = statistics.median(ratios.values())  # this machine against the reference one
    assert 0.1 < speed < 10, f"estimates are off by {speed:.2g}× on every family: units, not speed"
    off = {key: round(r / speed, 2) for key, r in ratios.items() if not 1 / 3 <= r / speed <= 3}
    assert not off, f"estimates off by more than 3× (machine factor {speed:.2f}): {off}"


def test_the_estimate_is_stored_and_scales_with_trials():
    family = registry.get("dp-sgd")
    small, large = (plan_example(family, ("utility",), trials) for trials in (640, 6400))
    assert large.estimated_seconds == pytest.approx(10 * small.estimated_seconds, rel=0.01)
    assert set(small.work_by_check) == {"utility"} and small.estimated_seconds > 0
    assert small.scaled(6400).estimated_seconds == pytest.approx(large.estimated_seconds, rel=0.01)
