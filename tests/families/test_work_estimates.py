"""A verification job's estimated running time (the service refuses jobs above DPCAL_JOB_MAX_SECONDS by it) is
stored with its plan and scales with the trials. How close the estimates are to the time on this machine is measured by
``python benchmarks/jobs.py --calibrate`` (timings belong in benchmarks/, not in tests)."""

from __future__ import annotations

import pytest

from accountants import registry
from accountants.planning import plan_example


def test_the_estimate_is_stored_and_scales_with_trials():
    family = registry.get("dp-sgd")
    small, large = (plan_example(family, ("utility",), trials) for trials in (640, 6400))
    assert large.estimated_seconds == pytest.approx(10 * small.estimated_seconds, rel=0.01)
    assert set(small.work_by_check) == {"utility"} and small.estimated_seconds > 0
    assert small.scaled(6400).estimated_seconds == pytest.approx(large.estimated_seconds, rel=0.01)
