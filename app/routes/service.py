"""``GET /healthz`` (liveness: the process answers, with the job store's state), ``GET /readyz`` (readiness: 503
while the job store cannot be reached, or the process that starts heavy computations is still starting) and
``GET /metrics`` (Prometheus; not in the OpenAPI document)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from fastapi import APIRouter
from fastapi.responses import Response

from .. import __version__, metrics
from ..deps import ComputeDep, JobManagerDep
from ..jobs.manager import JobManager
from ..problems import ApiProblem
from ..schemas import Health
from .responses import PROBLEM_CONTENT

router = APIRouter(tags=["service"])


def _health(jobs: JobManager) -> tuple[Health, bool]:
    kind = "sqlite" if jobs.store.sqlite else "postgresql"
    try:
        jobs.store.ping()
        store, reachable = f"{kind}: ok", True
    except Exception as error:  # any driver error means "not reachable"; its text says why
        store, reachable = f"{kind}: unreachable ({type(error).__name__})", False
    backend = "" if jobs.settings.job_backend == "local" else f", {jobs.settings.job_backend} backend"
    runner = ("embedded" if jobs.settings.api_runs_jobs else "external (dpcal worker)") + backend
    return Health(status="ok", version=__version__, store=store, job_runner=runner), reachable


PROBES = ThreadPoolExecutor(max_workers=2, thread_name_prefix="dpcal-probe")
"""Threads of their own for the store's ping: /healthz and /readyz never wait behind the thread pool that answers
cheap computations."""


async def _probed(jobs: JobManager) -> tuple[Health, bool]:
    return await asyncio.get_running_loop().run_in_executor(PROBES, _health, jobs)


@router.get("/healthz", response_model=Health, summary="Liveness")
async def healthz(jobs: JobManagerDep) -> Health:
    """The service is up; its version, whether the job store answers, and who runs jobs."""
    return (await _probed(jobs))[0]


@router.get(
    "/readyz",
    response_model=Health,
    summary="Readiness",
    responses={
        503: {
            "content": PROBLEM_CONTENT,
            "description": "The job store cannot be reached, or heavy computations cannot start yet.",
        }
    },
)
async def readyz(jobs: JobManagerDep, compute: ComputeDep) -> Health:
    """Ready to accept requests and jobs: 503 while the job store cannot be reached, and while the fork server that
    starts heavy computations is starting (a second or two after the process starts)."""
    health, reachable = await _probed(jobs)
    if not reachable:
        raise ApiProblem(
            503, "store-unreachable", "Job store unreachable", f"the job store does not answer: {health.store}"
        )
    if not compute.ready.is_set():
        compute.warm()  # where the host skipped the lifespan events
        raise ApiProblem(
            503,
            "starting",
            "Starting",
            "the process that starts heavy computations is starting; retry in a second",
            headers={"Retry-After": "1"},
        )
    return health


@router.get("/metrics", include_in_schema=False)
def prometheus_metrics() -> Response:
    """This server process in Prometheus's text format (:mod:`app.metrics`)."""
    return Response(metrics.exposition(), media_type=metrics.CONTENT_TYPE)
