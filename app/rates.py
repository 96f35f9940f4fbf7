"""Per-requester request rates (``DPCAL_AUTH`` other than none): a token bucket per principal, or per client address
for a keyless accounting client, in each server process.

A requester may send ``DPCAL_PRINCIPAL_BURST`` requests at once and ``DPCAL_PRINCIPAL_RATE`` per second after that;
a request beyond is 429 with ``Retry-After`` (the whole seconds until a token is back). Health, readiness and
metrics are never limited. Buckets that have refilled are forgotten, so the table stays as small as the set of
requesters active in the last ``burst / rate`` seconds. Used from the event loop only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from . import metrics
from .problems import ApiProblem

FORGET_ABOVE = 1024
"""Past this many buckets, the refilled ones are dropped at the next request."""


class RateLimiter:
    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst = rate, burst
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # requester → (tokens, when)

    def take(self, requester: str) -> None:
        """Spend one of ``requester``'s tokens, or raise 429 naming the limit and when to retry."""
        now = self._clock()
        tokens, then = self._buckets.get(requester, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - then) * self.rate)
        if tokens < 1.0:
            metrics.OVERLOADED.labels("rate").inc()
            wait = math.ceil((1.0 - tokens) / self.rate)
            raise ApiProblem(
                429,
                "rate-limited",
                "Too many requests",
                f"{requester} sent more than {self.burst} requests at once or {self.rate:g} per second "
                f"(DPCAL_PRINCIPAL_BURST, DPCAL_PRINCIPAL_RATE); retry after {wait} s",
                headers={"Retry-After": str(wait)},
            )
        self._buckets[requester] = (tokens - 1.0, now)
        if len(self._buckets) > FORGET_ABOVE:
            self._forget_refilled(now)

    def _forget_refilled(self, now: float) -> None:
        full = [r for r, (tokens, then) in self._buckets.items() if tokens + (now - then) * self.rate >= self.burst]
        for requester in full:
            del self._buckets[requester]

    def __len__(self) -> int:
        return len(self._buckets)
