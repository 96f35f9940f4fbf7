"""``GET /metrics``: the service in Prometheus's text format (prometheus-client), for this server process.

Series: ``dpcal_requests_total`` and ``dpcal_request_duration_seconds`` by route template (``unmatched`` for a path
no route serves, so a scanner cannot grow the label set), method and status class; ``dpcal_overloaded_total`` by
reason (``busy``: 503, no heavy slot; ``share``: 503, the requester's share of them in use; ``cheap``: 503, too many
cheap computations waiting; ``rate``: 429, the requester's request rate; ``timeout``: 504, over the time budget);
``dpcal_heavy_running`` and ``dpcal_cheap_running`` (computations this process runs now); ``dpcal_jobs`` by status (from
the job store at scrape time); ``dpcal_job_duration_seconds`` by algorithm and outcome (jobs this process's worker
finished), and the process's own (CPU, memory, file descriptors). Under ``dpcal serve --workers N`` each server
process counts its own requests.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from .jobs.store import STATUSES

CONTENT_TYPE = CONTENT_TYPE_LATEST
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
JOB_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0)

REQUESTS = Counter("dpcal_requests", "HTTP requests answered", ("route", "method", "status"))
LATENCY = Histogram(
    "dpcal_request_duration_seconds", "Time to answer an HTTP request", ("route", "method"), buckets=LATENCY_BUCKETS
)
OVERLOADED_REASONS = ("busy", "share", "cheap", "rate", "timeout")
OVERLOADED = Counter(
    "dpcal_overloaded", "Requests refused (busy, share, cheap: 503; rate: 429) or stopped (timeout: 504)", ("reason",)
)
for _reason in OVERLOADED_REASONS:  # every series from the start (0), so a rate over them is defined
    OVERLOADED.labels(_reason)
HEAVY_DIED = Counter(
    "dpcal_heavy_died", "Heavy computations whose process ended without an answer (503 computation-process-died)"
)
HEAVY_RUNNING = Gauge("dpcal_heavy_running", "Heavy computations this server process runs now")
CHEAP_RUNNING = Gauge("dpcal_cheap_running", "Cheap computations this server process runs now (DPCAL_MAX_CHEAP)")
JOB_DURATION = Histogram(
    "dpcal_job_duration_seconds", "Run time of finished jobs", ("algorithm", "outcome"), buckets=JOB_BUCKETS
)


def observe_request(route: str | None, method: str, status: int, seconds: float) -> None:
    """One answered request (``route``: the matched path template, None where no route matched)."""
    template = route or "unmatched"
    REQUESTS.labels(template, method, f"{status // 100}xx").inc()
    LATENCY.labels(template, method).observe(seconds)


def observe_job(algorithm: str, outcome: str, seconds: float | None) -> None:
    JOB_DURATION.labels(algorithm, outcome).observe(seconds or 0.0)


class JobCounts(Collector):
    """``dpcal_jobs{status}`` read from the job store when scraped (nothing where it cannot be read)."""

    def __init__(self, count: Callable[[str], int]) -> None:
        self.count = count

    def collect(self):  # type: ignore[no-untyped-def]  # prometheus-client's Collector protocol
        family = GaugeMetricFamily("dpcal_jobs", "Jobs in the store by status", labels=["status"])
        try:
            for status in STATUSES:
                family.add_metric([status], float(self.count(status)))
        except Exception:  # the store is down: /readyz says so; the scrape still answers
            return
        yield family


_job_counts: JobCounts | None = None


def count_jobs_with(count: Callable[[str], int]) -> None:
    """Read ``dpcal_jobs`` with ``count`` (the job store of the app created last in this process)."""
    global _job_counts
    if _job_counts is None:
        _job_counts = JobCounts(count)
        REGISTRY.register(_job_counts)
    _job_counts.count = count


def exposition() -> bytes:
    return generate_latest(REGISTRY)
