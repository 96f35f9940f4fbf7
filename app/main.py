"""The dpcal service: ``app.main:app``."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response

from . import __version__, api, docs, problems
from .jobs.manager import JobManager
from .schemas import Health
from .settings import Settings

DESCRIPTION = """\
Privacy accounting and noise calibration for differentially private machine learning.

* `POST /v1/calibrate` — the smallest noise for a target (ε, δ), with the achieved ε, the Rényi curve and what it
  rests on;
* `POST /v1/privacy` — ε at δ for given hyperparameters and noise, from every applicable accountant;
* `POST /v1/utility` — predicted utility bounds with their theorems;
* `GET /v1/algorithms` — what is supported, with each algorithm's parameters documented;
* `POST /v1/jobs` — a verification job: the algorithm simulated on a synthetic problem, its utility measured and its
  privacy audited (an empirical lower bound on ε) against the predictions.

Every answer names its conventions: the accountant, the neighbouring relation, the sensitivity, the noise in both units
and the step count. Errors are RFC 9457 problem details naming each offending field.
"""


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.from_env()
    lock = threading.Lock()

    def manager_of(request: Request) -> JobManager:
        """The job manager, started with the app (or on first use where the host skips lifespan events)."""
        state = request.app.state
        with lock:
            if getattr(state, "jobs", None) is None:
                state.jobs = JobManager(settings)
                state.jobs.start()
            return state.jobs

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with lock:
            app.state.jobs = JobManager(settings)
            app.state.jobs.start()
        yield
        with lock:
            app.state.jobs.stop()
            app.state.jobs = None

    app = FastAPI(
        lifespan=lifespan,
        title="dpcal",
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
        license_info={"name": "Apache-2.0"},
    )
    app.state.settings = settings
    bodies = api.request_bodies()
    problems.install(app, {path: body.variants for path, body in bodies.items()})
    docs.install(app)
    app.include_router(api.build_router(bodies))
    app.include_router(api.build_jobs_router(bodies["/v1/jobs"], manager_of))

    @app.get("/healthz", response_model=Health, tags=["service"], summary="Liveness")
    def healthz() -> Health:
        """The service is up; its version."""
        return Health(status="ok", version=__version__)

    @app.middleware("http")
    async def limit_body(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > settings.max_body_bytes):
            problem = problems.ApiProblem(
                413,
                "too-large",
                "Request body too large",
                f"the body is limited to {settings.max_body_bytes} bytes (DPCAL_MAX_BODY_BYTES)",
            )
            return problems.problem_response(request, problem)
        return await call_next(request)

    return app


app = create_app()
