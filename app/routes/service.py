"""``GET /healthz`` (liveness: the process answers, with the job store's state) and ``GET /readyz`` (readiness: 503
while the job store cannot be reached)."""

from __future__ import annotations

from fastapi import APIRouter

from .. import __version__
from ..deps import JobManagerDep
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


@router.get("/healthz", response_model=Health, summary="Liveness")
def healthz(jobs: JobManagerDep) -> Health:
    """The service is up; its version, whether the job store answers, and who runs jobs."""
    return _health(jobs)[0]


@router.get(
    "/readyz",
    response_model=Health,
    summary="Readiness",
    responses={503: {"content": PROBLEM_CONTENT, "description": "The job store cannot be reached."}},
)
def readyz(jobs: JobManagerDep) -> Health:
    """Ready to accept requests and jobs: 503 while the job store cannot be reached."""
    health, reachable = _health(jobs)
    if not reachable:
        raise ApiProblem(
            503, "store-unreachable", "Job store unreachable", f"the job store does not answer: {health.store}"
        )
    return health
