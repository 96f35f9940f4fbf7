"""The per-requester token bucket (app.rates): a burst, then the rate; 429 with the seconds to wait; refilled
buckets forgotten."""

from __future__ import annotations

import pytest

from app.problems import ApiProblem
from app.rates import FORGET_ABOVE, RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_then_the_rate_then_429_with_the_wait():
    clock = Clock()
    limiter = RateLimiter(rate=2.0, burst=3, clock=clock)
    for _ in range(3):
        limiter.take("alice")
    with pytest.raises(ApiProblem) as refused:
        limiter.take("alice")
    assert refused.value.status == 429 and refused.value.headers["Retry-After"] == "1"
    assert "DPCAL_PRINCIPAL_RATE" in refused.value.detail
    limiter.take("bob")  # another requester has its own bucket
    clock.now += 0.5  # one token back at 2 per second
    limiter.take("alice")
    with pytest.raises(ApiProblem):
        limiter.take("alice")
    slow = RateLimiter(rate=0.1, burst=1, clock=clock)
    slow.take("carol")
    with pytest.raises(ApiProblem) as wait:
        slow.take("carol")
    assert wait.value.headers["Retry-After"] == "10"


def test_refilled_buckets_are_forgotten():
    clock = Clock()
    limiter = RateLimiter(rate=1.0, burst=2, clock=clock)
    for k in range(FORGET_ABOVE):
        limiter.take(f"client {k}")
    clock.now += 10  # every bucket refilled
    limiter.take("client new")
    assert len(limiter) == 1
